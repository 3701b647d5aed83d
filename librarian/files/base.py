"""File store interface. Files are the source of truth; vectors are derived from them.

Keys are document paths relative to an organization (`docs/{filename}`); the store roots every key
under `orgs/{org}/` itself, so a caller can never address another organization's prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class StoredFile:
    path: str  # "docs/report.pdf", relative to the organization
    size: int
    modified: datetime


class FileStore(Protocol):
    def write(self, org: str, path: str, data: bytes) -> StoredFile:
        """Atomically create or replace: readers see the old bytes or the new, never a mix."""
        ...

    def read(self, org: str, path: str) -> bytes:
        """Raises FileNotFoundError when the document does not exist."""
        ...

    def exists(self, org: str, path: str) -> bool: ...

    def stat(self, org: str, path: str) -> StoredFile | None: ...

    def delete(self, org: str, path: str) -> bool:
        """Returns whether something was deleted; missing is not an error."""
        ...

    def list(self, org: str, prefix: str = "docs/") -> list[StoredFile]: ...

    def write_sidecar(self, org: str, path: str, name: str, data: bytes) -> None:
        """Store derived data beside a document (e.g. the parse cache), outside `docs/`."""
        ...

    def read_sidecar(self, org: str, path: str, name: str) -> bytes | None: ...
