"""The parse result cached beside its file, keyed by content hash and parser settings (invariant 5).

Parsing is the slow (and, with Reducto, paid) step; a retry or a re-embed must not repeat it. The
sidecar name carries the content hash and a short hash of the parser key, so a new upload or a new
parser setting is simply a different name: stale entries can never be read, only left behind.
"""

from __future__ import annotations

import hashlib
import json
import logging

from librarian.files.base import FileStore
from librarian.parsing.types import ParseResult

log = logging.getLogger(__name__)

FORMAT = 1


def content_hash(data: bytes) -> str:
    """sha256 hex of the file's bytes: the identity of a document version."""
    return hashlib.sha256(data).hexdigest()


def sidecar_name(content_hash: str, parser_key: str) -> str:
    key_hash = hashlib.sha256(parser_key.encode("utf-8")).hexdigest()[:12]
    return f"parse-{content_hash}-{key_hash}.json"


class ParseCache:
    """Read and write cached ParseResults through the file store's sidecars."""

    def __init__(self, files: FileStore) -> None:
        self.files = files

    def get(self, org: str, path: str, content_hash: str, parser_key: str) -> ParseResult | None:
        """The cached result, or None on a miss or an unreadable entry (which is re-parsed, not fatal)."""
        raw = self.files.read_sidecar(org, path, sidecar_name(content_hash, parser_key))
        if raw is None:
            return None
        try:
            entry = json.loads(raw)
            if (
                entry.get("format") != FORMAT
                or entry.get("content_hash") != content_hash
                or entry.get("parser_key") != parser_key
            ):
                return None
            result = entry["result"]
            if not isinstance(result, dict) or not isinstance(result.get("chunks"), list):
                return None
        except (ValueError, KeyError, AttributeError):
            log.warning("ignoring unreadable parse cache entry for %s in %s", path, org)
            return None
        return ParseResult(**result)  # type: ignore[typeddict-item]

    def put(self, org: str, path: str, content_hash: str, parser_key: str, result: ParseResult) -> None:
        entry = {"format": FORMAT, "content_hash": content_hash, "parser_key": parser_key, "result": result}
        data = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self.files.write_sidecar(org, path, sidecar_name(content_hash, parser_key), data)
