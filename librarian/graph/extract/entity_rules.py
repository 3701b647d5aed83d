"""Which names of technical text are worth a graph node: the offline extractor's hand-written rules.

spaCy's small model reads manuals and reports badly: table cells become people ("Header 0.1"), a line
break glues a heading to the next sentence ("Purpose\\n\\nLock files"), and every "following files" is
a noun phrase. These rules, measured on `evals/graph_entities/labelled.jsonl` by
`bench/graph_entity_precision.py`, decide what the extractor (`librarian.graph.extract.local`) keeps:

1. **Technical shapes first** (`technical_spans`, regular expressions on the sentence text): file paths
   ("/usr/bin", "/opt/<package>"), inline code and one-word bold commands ("`ldconfig`", "**sln**"),
   function calls ("read.table()"), commands with an option ("ls -l"), CamelCase and snake_case
   identifiers ("BaseChunker", "SESSION_USER", "HR_SCHEMA.MASK_TAX_ID"). They are kept whole, typed
   PATH, CODE or IDENTIFIER, and spaCy's pieces of them ("sbin", "local` hierarchy") are not.
2. **Edges are trimmed** (`trim`): leading numbering ("7.3.1", "4.7.", "113k"), punctuation, symbols,
   conjunctions and prepositions ("and test commands" → "test commands"), trailing punctuation.
3. **Debris is dropped** (`is_debris`): a name that still holds a blank line, a table pipe, markup
   (backticks, asterisks, angle brackets, brackets, colons) or leader dots, or that is letter soup from
   OCR ("t o b e"), or whose words are all layout words and generic modifiers ("Header 0.1",
   "Description", "Specific Options").
4. **Generic modifiers** (`strip_modifiers`) are removed from the front of a common-noun phrase, after
   which a lone common noun is not a node: with the `stoplist` setting the words of
   `GENERIC_MODIFIERS` ("following files" → "files", "different releases"), with `all` every leading
   adjective, adverb and past participle ("static nature", "publicly accessible commands").
5. **Lone lowercase words** ("optional", "demos", "linux" cut from "/usr/src/linux") are dropped; a word
   with a digit ("man3") or a capital ("mAP") is kept, as are commands found by rule 1.
6. A **named entity written as common words** is not a person, organisation or product: one word not
   tagged as a proper noun ("Wear", "Temporary", "Description"), or words none of which is a
   capitalised proper noun ("lib directory", "respective metadata"); acronyms and words with digits
   stay. Only languages, nationalities and places may be adjectives ("French", "English").
7. A **noun phrase is a name only through a written proper noun** (`has_written_proper_noun`): a token
   tagged PROPN that is capitalised where capitals are not automatic (not the first word of a line,
   table cell or sentence: "Game data", "Manual pages") or that is an acronym or has a digit or an
   inner capital ("POSIX compatibility", "X11 fonts", "LlamaIndex"). Lowercase words tagged PROPN
   ("lib directory", "respective metadata") do not count. Common-noun phrases ("boot time", "open
   door") are emitted only with `RuleConfig.common_phrases`.
8. **Given names of citations** (`is_citation_given_name`): in "Carboneras, Carlos (1992)" or "Christidis,
   Les; Boles" the one-word person after "Surname," and before "(", ";" or "." is half a name; so is
   one before ", eds." ("Sibley, David, eds."), whatever spaCy tagged it as.

Round 2 (rules version 5, tuned on `labelled.jsonl` and `labelled_after_tuning.jsonl`, measured out of
sample on `labelled_round2.jsonl`):

9. **A lone capitalised word that opens a block** (`is_block_initial_word`) is a heading or a table
   header, not a name: one word, not an acronym and without a digit or inner capital, that is the first
   word of a list item or a paragraph ("3. Templates :", "Hmm, what else"), a table header ("| Command |"
   above "| --- |") or the first of a cell's description ("| Binaries run by ..."). Its capital says
   nothing, and the small model tags it ORG. A cell that holds just a name ("| Dewey |") is kept.
10. **Glued and cut names** (`is_glued_or_cut`): a person of four or more capitalised words is a list
   of authors run together ("Tom McKinley Kent Milligan"); a name glued to the word before it (no space
   and that word ends in a letter or digit, or in "/" before one or two letters: "M operating system"
   from "CP/M") is a piece of it.
   Paths are found over the whole chunk text, not per sentence, so a sentence split inside
   "/var/lib/hwclock" does not yield "/lib/hwclock".
11. **Edges of named entities** are trimmed like noun phrases: a trailing footnote number ("Identity
   Theft Resource Center 1"), and a generic modifier that opens a line ("| Simple Tcl/Tk" → "Tcl/Tk",
   "| Global X11" → "X11"). Names of one letter repeated ("XXX-XX-XXXX", a mask) and names with "="
   (SQL) are debris.

Round 3 (rules version 6, tuned on `labelled_round2.jsonl` too):

12. **Pieces of citations and code**: a name strictly inside an italic title (`is_inside_title`:
   "Complete Guide" of "*A Complete Guide to Antarctic Wildlife*"), a name with an upper-case SQL
   keyword ("RETURN CASE", "THEN C"), "=" or "@" ("enc=6", "CPU @2.45 GHz"), a named entity's trailing
   layout word ("Daniel Quinlan Copyright") or leading one-letter lowercase word ("i Row and Column
   Access Control"), an inline-code placeholder glued to the path before it ("/lib*`<qual>`*"). Relative
   file paths ("pdf/docling/multi_page.pdf", "../examples/x.ipynb") are found whole (type PATH), so
   their file names are not cut out as identifiers.

`RuleConfig` holds the switches the bench chooses between by k-fold cross-validation over documents;
its defaults are the shipped rules. Everything else is fixed and hand-written, not fitted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

ModifierRule = Literal["keep", "stoplist", "all"]


@dataclass(frozen=True)
class RuleConfig:
    """The switches of the rules (defaults = shipped; the bench tries the others per fold)."""

    modifiers: ModifierRule = "stoplist"
    lone_lowercase: bool = True
    patterns: bool = True
    max_phrase_tokens: int = 5
    common_phrases: bool = False  # emit noun phrases without a proper noun ("boot time", "open door")


DEFAULT_RULES = RuleConfig()

# Adjectives (and a few determiner-like words) that describe *which* or *how good* rather than *what*:
# general English, not words of the labelled documents.
_GENERIC_MODIFIER_WORDS = """
    following different various other another new old older newer good better best bad large small big
    little great high low long short possible specific particular given major minor main interesting
    unique early earlier late later modern advanced respective relevant corresponding appropriate
    required certain several many much such similar same additional further typical general generic
    preferred default approximate essential important simple complex difficult easy whole entire
    separate existing current previous initial final actual real common usual normal proper suitable
    necessary potential numerous few multiple own next last above below overall significant valuable
    useful full open hard local individual respective related relevant desired actual extra global
    miscellaneous senior"""
GENERIC_MODIFIERS = frozenset(_GENERIC_MODIFIER_WORDS.split())
# Words of document furniture: a name made only of these (and numbers, generic modifiers) is a header.
_LAYOUT_WORDS = """
    header headers footer cell cells row rows column columns table tables figure fig page pages section
    chapter note notes description file files list purpose requirements options option contents
    copyright example examples appendix footnote caption title item items step part summary merged
    rationale"""
LAYOUT_WORDS = frozenset(_LAYOUT_WORDS.split())
# Upper-case SQL statement words: a name holding one is a piece of SQL code (common in manuals). Not
# "BY", "AS", "OR", "ON": they are words of names too ("CC BY-SA").
_SQL_KEYWORDS = "SELECT WHERE CASE WHEN THEN ELSE RETURN INSERT UPDATE DELETE VALUES JOIN HAVING"
SQL_KEYWORDS = frozenset(_SQL_KEYWORDS.split())
NAME_LIKE_LABELS = frozenset({"LANGUAGE", "NORP", "GPE", "LOC"})  # may be tagged ADJ: "French"
_NUMBERING = re.compile(r"^\(?\d+(?:[.,]\d+)*[.)]?[kKmMbBgG%]?$")
_DEBRIS_TOKENS = frozenset(
    {"|", "`", "``", "''", "*", "**", "<", ">", "(", ")", "[", "]", "{", "}", ":", ";", "•", "="}
)
_EDGE_POS = frozenset({"PUNCT", "SYM", "SPACE", "X", "CCONJ", "SCONJ", "ADP", "DET", "PART", "INTJ"})
_MODIFIER_TAGS = frozenset({"JJ", "JJR", "JJS", "RB", "RBR", "RBS", "VBN"})

# --- rule 1: technical shapes -----------------------------------------------------------------------
_PIECE = r"(?:[A-Za-z0-9_.+-]+|<[\w-]+>)"
_PATH = re.compile(rf"(?<![\w/.~:<>-])/(?:[A-Za-z_]|<[\w-]+>){_PIECE}*(?:/{_PIECE}+)*/?")
_CODE = re.compile(r"(?<!`)`([^`\n]{2,40})`(?!`)")
_BOLD = re.compile(r"\*\*([a-z][\w.+-]{1,30})\*\*")
_CALL = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\(\)")
_COMMAND = re.compile(r"(?<![\w/.-])[a-z][a-z0-9]{1,15} --?[a-zA-Z][\w-]*\b")
_CAMEL = re.compile(r"(?<![\w.])(?!Mc[A-Z]|Mac[A-Z])[A-Z][a-z0-9]{2,}(?:[A-Z][a-z0-9]+)+(?![\w])")
_SNAKE = re.compile(r"(?<![\w./])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?![\w])")
_RELATIVE_FILE = re.compile(r"(?<![\w/.~-])(?:\.{1,2}/)*[\w.-]+(?:/[\w.<>-]+)+\.[A-Za-z]\w{0,5}(?![\w/])")
_URL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+")
_TYPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_PATH, "PATH"),
    (_RELATIVE_FILE, "PATH"),
    (_CALL, "CODE"),
    (_COMMAND, "CODE"),
    (_SNAKE, "IDENTIFIER"),
    (_CAMEL, "IDENTIFIER"),
)


@dataclass(frozen=True)
class TechnicalSpan:
    """A name found by its shape: characters [start, end) of the text, its display and its type."""

    start: int
    end: int
    display: str
    type: str


def _path_display(text: str) -> str:
    return text.rstrip("/.") if len(text.rstrip("/.")) > 1 else text


def technical_spans(text: str) -> list[TechnicalSpan]:
    """Paths, code, commands and identifiers in `text`, longest first where they overlap (rule 1)."""
    found: list[TechnicalSpan] = []
    urls = [m.span() for m in _URL.finditer(text)]
    for match in _CODE.finditer(text):
        inner = match.group(1).strip()
        if sum(c.isalpha() for c in inner) < 2 or len(inner.split()) > 3:
            continue
        before = text[: match.start()].rstrip("*")
        if before and (before[-1].isalnum() or before[-1] == "/"):
            continue  # "/lib*`<qual>`*": the placeholder is part of the path before it
        kind = "PATH" if _PATH.fullmatch(inner) else "CODE"
        start = match.start(1) + match.group(1).index(inner)  # "` Za`": the span starts at "Za"
        found.append(TechnicalSpan(start, start + len(inner), _path_display(inner), kind))
    for match in _BOLD.finditer(text):
        found.append(TechnicalSpan(match.start(1), match.end(1), match.group(1), "CODE"))
    for pattern, kind in _TYPES:
        for match in pattern.finditer(text):
            display = _path_display(match.group(0)) if kind == "PATH" else match.group(0)
            if kind == "PATH" and len(display) < 3:
                continue
            found.append(TechnicalSpan(match.start(), match.start() + len(display), display, kind))
    found = [s for s in found if not any(a <= s.start < b for a, b in urls)]
    found.sort(key=lambda s: (s.start, -(s.end - s.start)))
    kept: list[TechnicalSpan] = []
    for span in found:
        if kept and span.start < kept[-1].end:
            continue  # inside (or overlapping) a longer, earlier span
        kept.append(span)
    return kept


# --- rules 2-6: spaCy spans ---------------------------------------------------------------------------
def _numbering(token: Any) -> bool:
    return bool(_NUMBERING.match(token.text)) or token.like_num


def _edge(token: Any) -> bool:
    return (
        token.pos_ in _EDGE_POS
        or token.is_punct
        or token.is_space
        or token.text in _DEBRIS_TOKENS
        or _numbering(token)
    )


def trim(tokens: Sequence[Any]) -> list[Any]:
    """Rule 2: the tokens without leading numbering, punctuation, conjunctions, prepositions and
    determiners, nor trailing punctuation and spaces."""
    start, end = 0, len(tokens)
    while start < end and _edge(tokens[start]):
        start += 1
    while end > start and (
        tokens[end - 1].is_punct or tokens[end - 1].is_space or tokens[end - 1].text in _DEBRIS_TOKENS
    ):
        end -= 1
    return list(tokens[start:end])


def is_debris(tokens: Sequence[Any]) -> bool:
    """Rule 3: line breaks, table pipes, markup, leader dots, OCR letter soup, layout-only names."""
    for token in tokens:
        text = token.text
        if token.is_space:
            if text.count("\n") >= 2:  # a blank line: a heading or table glued to the next block
                return True
            continue  # a hard-wrapped line ("Belinda\nCratchit")
        if "\n" in text or "|" in text or "`" in text or "**" in text or text in _DEBRIS_TOKENS:
            return True
        if "=" in text or "@" in text:  # "enc=6", "CPU @2.45 GHz": code and measurements
            return True
        if ".." in text or (token.is_punct and text == "." and token.whitespace_):
            return True
    words = [t.text for t in tokens if any(c.isalpha() for c in t.text)]
    if len(words) >= 2 and all(len(w) == 1 for w in words):
        return True  # "t o b e"
    if any(w in SQL_KEYWORDS for w in words):
        return True  # "RETURN CASE", "THEN C": SQL read as names
    letters = {c.lower() for w in words for c in w if c.isalpha()}
    if len(letters) == 1 and sum(c.isalpha() for w in words for c in w) >= 3:
        return True  # "XXX-XX-XXXX": a mask, not a name
    lowered = [w.lower() for w in words if not _NUMBERING.match(w)]
    return bool(lowered) and all(w in LAYOUT_WORDS or w in GENERIC_MODIFIERS for w in lowered)


def strip_modifiers(tokens: Sequence[Any], rule: ModifierRule) -> list[Any]:
    """Rule 4: a common-noun phrase without its leading generic modifiers (never a proper noun)."""
    out = list(tokens)
    if rule == "keep":
        return out
    while len(out) > 1 and out[0].pos_ != "PROPN":
        word = out[0]
        adverb = word.tag_ in ("RB", "RBR", "RBS") and word.lower_.endswith("ly")
        if not (
            word.lower_ in GENERIC_MODIFIERS or adverb or (rule == "all" and word.tag_ in _MODIFIER_TAGS)
        ):
            break
        out = out[1:]
        while len(out) > 1 and (out[0].is_punct or out[0].pos_ == "CCONJ"):
            out = out[1:]
    return out


def is_lone_lowercase(tokens: Sequence[Any]) -> bool:
    """Rule 5: one lowercase word of letters only ("optional", "demos")."""
    words = [t for t in tokens if not t.is_punct]
    return len(words) == 1 and words[0].text.isalpha() and words[0].text.islower()


def is_common_word_named(tokens: Sequence[Any], label: str) -> bool:
    """Rule 6: a person/organisation/product that spaCy tags as common words: one word not tagged PROPN
    ("Wear"), or words none of which is a capitalised PROPN ("lib directory", "respective metadata")."""
    words = [t for t in tokens if not t.is_punct]
    if not words or label in NAME_LIKE_LABELS:
        return False
    if not any(t.pos_ == "PROPN" and any(c.isupper() for c in t.text) for t in words):
        return not any(t.text.isupper() or any(c.isdigit() for c in t.text) for t in words)
    if len(words) != 1:
        return False
    word = words[0]
    return word.pos_ != "PROPN" and not word.text.isupper() and not any(c.isdigit() for c in word.text)


_LINE_STARTS = frozenset({"|", "•", "-", "*", ":", "(", '"', "“"})


def _line_initial(token: Any) -> bool:
    """Whether `token` starts a sentence, line, table cell or list item (where capitals are automatic)."""
    if token.i == token.sent.start:
        return True
    previous = token.doc[token.i - 1]
    return "\n" in previous.text or previous.text in _LINE_STARTS or _numbering(previous)


def has_written_proper_noun(tokens: Sequence[Any]) -> bool:
    """Rule 7: a token tagged PROPN that is written as a name (see the module docstring)."""
    for token in tokens:
        if token.pos_ != "PROPN" or not any(c.isalpha() for c in token.text):
            continue
        text = token.text
        marked = text.isupper() or any(c.isdigit() for c in text) or any(c.isupper() for c in text[1:])
        if marked or (text[0].isupper() and not _line_initial(token)):
            return True
    return False


def is_citation_given_name(tokens: Sequence[Any], label: str) -> bool:
    """Rule 8: "Surname, Given (" / "Surname, G.;" — the given-name half of a cited author."""
    if not tokens or len(tokens) > 2 or (label != "PERSON" and len(tokens) != 1):
        return False
    first, last = tokens[0], tokens[-1]
    if len(tokens) == 2 and not (len(last.text) == 2 and last.text.endswith(".")):
        return False  # "Frank C." is a given name and an initial; "Jim Denton" is a whole name
    doc = first.doc
    if first.i < 2 or doc[first.i - 1].text != "," or not doc[first.i - 2].text.istitle():
        return False
    after = doc[last.i + 1].text if last.i + 1 < len(doc) else "."
    if after == "," and last.i + 2 < len(doc) and doc[last.i + 2].lower_ in ("eds", "ed", "eds.", "ed."):
        return True  # "Sibley, David, eds."
    return after in ("(", ";", ".") or (after == "," and last.text.endswith("."))


# --- round 2: rules 9-11 --------------------------------------------------------------------------------
_ITEM_STARTS = frozenset({"•", "-", "*", "–", "—"})
_HEADER_RULE = re.compile(r"\|\s*:?-{3,}")


def _is_header_row(token: Any) -> bool:
    """Whether `token` sits on the header line of a pipe table (the next line is "| --- | --- |")."""
    text = token.doc.text
    end = text.find("\n", token.idx)
    return end >= 0 and bool(_HEADER_RULE.match(text, end + 1))


def _opens_block(token: Any) -> bool:
    """Whether `token` opens a list item or a paragraph (not merely a sentence or a wrapped line:
    "Scrooge" after a single line break is a name in hard-wrapped prose)."""
    if token.i == 0:
        return True
    previous = token.doc[token.i - 1]
    if "\n\n" in previous.text or previous.text in _ITEM_STARTS:
        return True
    before = token.doc[previous.i - 1] if previous.i > 0 else None
    numbered = previous.text == "." and before is not None and before.like_num
    if numbered:  # "3. Templates": the number is a token of its own
        previous, before = before, token.doc[before.i - 1] if before.i > 0 else None
    return (numbered or _numbering(previous)) and (before is None or "\n" in before.text)


def _describes_in_cell(token: Any) -> bool:
    """Whether `token` opens a table cell and is either a header or the first word of a description
    ("| Binaries run by other programs |"), not a cell that holds a name ("| Dewey |")."""
    if token.i == 0 or token.doc[token.i - 1].text != "|":
        return False
    if _is_header_row(token):
        return True
    following = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
    return following is not None and following.text.isalpha() and following.text.islower()


def is_block_initial_word(tokens: Sequence[Any]) -> bool:
    """Rule 9: one capitalised word, not marked as a name, that heads a table column, opens a cell's
    description, a list item or a paragraph."""
    words = [t for t in tokens if not t.is_punct]
    if len(words) != 1:
        return False
    word = words[0]
    text = word.text
    marked = text.isupper() or any(c.isdigit() for c in text) or any(c.isupper() for c in text[1:])
    if not text[:1].isupper() or marked:
        return False
    return _opens_block(word) or _describes_in_cell(word)


def is_glued_or_cut(tokens: Sequence[Any], label: str) -> bool:
    """Rule 10: four or more capitalised words as one person, or a name glued to the word before it."""
    words = [t for t in tokens if not t.is_punct]
    if label == "PERSON" and len(words) >= 4 and all(t.text[:1].isupper() for t in words):
        return True
    first = tokens[0] if tokens else None
    if first is None or first.i == 0:
        return False
    previous = first.doc[first.i - 1]
    if previous.whitespace_ or previous.is_space:
        return False
    return previous.text[-1].isalnum() or (previous.text[-1] == "/" and len(first.text) <= 2)


def trim_named(tokens: Sequence[Any]) -> list[Any]:
    """Rule 11: a named entity without a trailing footnote number, and without generic modifiers that
    open a line (where their capital is automatic: "| Simple Tcl/Tk")."""
    out = list(tokens)
    while len(out) > 1 and (
        (out[-1].text.isdigit() and len(out[-1].text) <= 2) or out[-1].lower_ == "copyright"
    ):
        out = out[:-1]  # "Identity Theft Resource Center 1", "Daniel Quinlan Copyright"
    if len(out) > 1 and len(out[0].text) == 1 and out[0].text.islower():
        out = out[1:]  # "i Row and Column Access Control" (from "DB2 for i")
    if out and _line_initial(out[0]):
        while len(out) > 1 and out[0].lower_ in GENERIC_MODIFIERS:
            out = out[1:]
    return out


_ITALIC = re.compile(r"(?<![*\w])\*(?!\*)([^*\n]{3,200}?)(?<!\*)\*(?![*\w])")


def is_inside_title(tokens: Sequence[Any], label: str) -> bool:
    """Rule 12: a name strictly inside an italic title of a citation ("*A Complete Guide to Antarctic
    Wildlife*" gives "Complete Guide", "*Ducks, Geese and Swans*" gives "Swans") is a piece of the work's
    name. The whole title, or a name that fills it, is kept, and so are places ("Hawaii")."""
    if not tokens or label in NAME_LIKE_LABELS - {"NORP"}:
        return False
    doc = tokens[0].doc
    start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1].text)
    line_start = doc.text.rfind("\n", 0, start) + 1
    line_end = doc.text.find("\n", end)
    line = doc.text[line_start : line_end if line_end >= 0 else len(doc.text)]
    for match in _ITALIC.finditer(line):
        a, b = line_start + match.start(1), line_start + match.end(1)
        inner = doc.text[a:b].strip(" .,:;")
        for article in ("The ", "A ", "An "):
            inner = inner.removeprefix(article)
        if a <= start and end <= b and doc.text[start:end] != inner:
            return True
    return False
