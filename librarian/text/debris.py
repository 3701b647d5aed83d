"""Is this line layout debris rather than prose? One predicate for every reader that quotes text.

Parsers of manuals and reports leave lines that are made of layout, not sentences: table-of-contents
entries with dot leaders ("Specific Options ........ 20"), TOC lines without leaders that end in a
page number ("4.7. /usr/libexec : Binaries run by other programs 20"), pipe-table rows ("| a | b |")
and their rules ("|---|---|", "+----+"), and lines that are mostly digits and punctuation. Quoted in
a theme or an answer they read as noise, so community summaries, global answers (and anyone else who
wants) drop them here. The parser removes tables of contents too; this filter holds anyway, for
chunks parsed before that and for layouts it misses (defence in depth).

- `is_debris(line)`: one line is layout debris.
- `clean_lines(text)`: `text` without its debris lines (other lines kept verbatim, in order).
- `is_readable_sentence(sentence)`: a sentence a reader would accept as a quote: not debris, a
  sensible length, starts like a sentence, ends with a full stop, and is mostly words.

Pure functions of `re` only, so any module may import this without pulling in the project.
"""

from __future__ import annotations

import re

# four or more dots (possibly spaced ". . . ."), ellipsis runs, middle dots or underscores: leaders
_LEADER = re.compile(r"(?:\.\s?){4,}|…{2,}|(?:·\s?){3,}|_{4,}|(?:-\s?){6,}")
# a table rule: only pipes, dashes, pluses, colons, equals and spaces ("|---|:--|", "+----+", "====")
_RULE = re.compile(r"^[\s|+:=\-]{3,}$")
# a TOC entry without leaders: section number, title, page number at the end
# ("4.7. /usr/libexec : Binaries run by other programs 20", "Chapter 3 The Root Filesystem 7")
_TOC_ENTRY = re.compile(
    r"^\s*(?:(?i:chapter|section|appendix|part)\s+[0-9A-Z]{1,3}\.?|\d{1,3}(?:\.\d{1,3})*\.?|[A-Z]\.(?:\d{1,3}\.?)*)"
    r"\s+\S.*?\s(?:\d{1,4}|[ivxlc]{1,6})\s*$"
)
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:\s*\[\d+(?:\s*,\s*\d+)*\])?$")
# a heading run into the next section's number ("Editor backup files and state (optional) 5.8.4.1.")
_TRAILING_SECTION_NUMBER = re.compile(r"\s\d{1,3}(?:\.\d{1,3}){1,}\.?$")
# a list run into a sentence ("Optional files: - Static binaries: - **ldconfig** - **sln**")
_INLINE_BULLETS = re.compile(r"(?:\s[-*•]\s.*){3,}|[.:;]\s+[-*•]\s")
# a footnote mark ("[30] Much of this data ..."): read as a citation marker by the answer checker
_FOOTNOTE = re.compile(r"\[\d+\]")
# a capital, digit or path; or anything inside code ("`ldconfig` is optional ...")
_SENTENCE_START = re.compile(r"^[\"'(\[“‘*_]*(?:[A-Z0-9/]|`)")

_NUMBERED = re.compile(r"^\s*(?:#+\s*)?\d{1,3}(?:\.\d{1,3})*\.?\s+\S")
HEADING_MAX_WORDS = 14
MIN_SENTENCE_WORDS = 6
MAX_SENTENCE_WORDS = 60
MIN_LETTER_SHARE = 0.6  # of non-space characters; "4.7. 20 / 21 | 3.2" is far below


def _letter_share(text: str) -> float:
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return 0.0
    return sum(c.isalpha() for c in visible) / len(visible)


def is_debris(line: str) -> bool:
    """True when `line` is layout (TOC entry, dot leaders, table row or rule, digit/punctuation soup).

    A blank line is not debris (it is nothing); callers that want prose only use
    `is_readable_sentence`. A line with a single pipe ("a | b") is kept: prose uses it rarely, but
    shell examples do, and one pipe is not a table.
    """
    text = line.strip()
    if not text:
        return False
    if _LEADER.search(text):
        return True
    if _RULE.match(text):
        return True
    if text.count("|") >= 2:
        return True
    if _TOC_ENTRY.match(text) and not _SENTENCE_END.search(text):
        return True
    return _letter_share(text) < 0.5


def is_heading_line(line: str) -> bool:
    """A short line that titles a section: numbered ("4.5. /usr/include : Directory for standard
    include files."), or without a sentence's final punctuation ("Specific Options")."""
    text = " ".join(line.split())
    if not text or is_debris(text) or len(text.split()) > HEADING_MAX_WORDS:
        return False
    if sum(c.isalpha() for c in text) < 3:
        return False
    return bool(_NUMBERED.match(text)) or not text.endswith((".", "!", "?", ",", ";", ":"))


def drop_leading_headings(text: str) -> str:
    """`text` without the heading lines that open it: a sentence splitter that cuts at full stops
    runs a section's heading into its first sentence ("Specific Options\n\nThe following ...");
    what is left is still verbatim document text."""
    lines = text.splitlines(keepends=True)
    while len(lines) > 1 and (not lines[0].strip() or is_heading_line(lines[0])):
        lines.pop(0)
    return "".join(lines)  # a suffix of `text`


def clean_lines(text: str) -> str:
    """`text` without its debris lines; every other line is kept verbatim and in order."""
    return "\n".join(line for line in text.splitlines() if not is_debris(line))


def is_readable_sentence(
    sentence: str, *, min_words: int = MIN_SENTENCE_WORDS, max_words: int = MAX_SENTENCE_WORDS
) -> bool:
    """A sentence worth quoting to a reader: prose of sensible length, not a heading or a fragment.

    Headings ("7.3.1 Loading data"), list fragments ("and test commands") and bare name lists have
    no final full stop or too few words; overlong "sentences" are run-together layout.
    """
    text = " ".join(sentence.split())
    if not text or is_debris(text):
        return False
    words = text.split()
    if not min_words <= len(words) <= max_words:
        return False
    if not _SENTENCE_START.match(text) or not _SENTENCE_END.search(text):
        return False
    if _TRAILING_SECTION_NUMBER.search(text) or _INLINE_BULLETS.search(text) or _FOOTNOTE.search(text):
        return False
    return _letter_share(text) >= MIN_LETTER_SHARE
