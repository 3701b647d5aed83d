"""File store on a local directory: the embedded default (DESIGN §3).

Layout under `root`:

    orgs/{org}/docs/{filename}                documents (what `list` shows)
    orgs/{org}/derived/docs/{filename}/{name} sidecars such as the parse cache, outside `docs/`
    orgs/{org}/.staging/                      temporary files of in-flight writes

Writes go to a temporary file on the same file system and are renamed over the target, so a reader
sees the old bytes or the new ones and concurrent writers of one path never tear a file. The
staging directory is a sibling of `docs/` rather than `docs/` itself so that a listing never shows a
half-written upload and no legitimate file name can collide with a temporary one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from librarian.errors import InvalidPathError
from librarian.files.base import StoredFile
from librarian.files.paths import DOCS_PREFIX, sanitize_filename, validate_document_path
from librarian.tenancy import validate_organization_id

_STAGING = ".staging"


def _as_bytes(data: object) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"file data must be bytes, not {type(data).__name__}")
    return bytes(data)


def _is_addressable(name: str) -> bool:
    try:
        return validate_document_path(DOCS_PREFIX + name) == DOCS_PREFIX + name
    except InvalidPathError:
        return False


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable; some platforms cannot open directories, which is then a no-op."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class LocalFileStore:
    """`FileStore` over a directory tree, one subtree per organization."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # --- where things are

    def _org_dir(self, org: str) -> Path:
        """The organization's directory, built lexically from the resolved root (symlinks not followed)."""
        return self.root.resolve() / "orgs" / validate_organization_id(org)

    def _contained(self, org_dir: Path, candidate: Path) -> Path:
        """Return `candidate` if, with every symlink resolved, it still lies inside `org_dir`.

        Names are validated before they get here; this is defence in depth against symlinks planted in
        the tree (or a validation bug), so that no path can reach another organization's files.
        """
        if not candidate.resolve().is_relative_to(org_dir):
            raise InvalidPathError("document path resolves outside the organization's directory")
        return candidate

    def _doc_file(self, org: str, path: str) -> tuple[Path, str]:
        org_dir = self._org_dir(org)
        path = validate_document_path(path)
        return self._contained(org_dir, org_dir / path), path

    def _sidecar_dir(self, org: str, path: str) -> Path:
        org_dir = self._org_dir(org)
        path = validate_document_path(path)
        return self._contained(org_dir, org_dir / "derived" / path)

    def _stat(self, path: str, file: Path) -> StoredFile | None:
        try:
            st = file.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return StoredFile(path=path, size=st.st_size, modified=datetime.fromtimestamp(st.st_mtime, UTC))

    def _atomic_write(self, org: str, target: Path, data: bytes) -> None:
        staging = self._contained(self._org_dir(org), self._org_dir(org) / _STAGING)
        staging.mkdir(parents=True, exist_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=staging, prefix="write-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        _fsync_dir(target.parent)

    # --- FileStore

    def write(self, org: str, path: str, data: bytes) -> StoredFile:
        """Atomically create or replace; concurrent writers of one path: the last rename wins whole."""
        payload = _as_bytes(data)
        file, path = self._doc_file(org, path)
        self._atomic_write(org, file, payload)
        stored = self._stat(path, file)
        if stored is None or stored.size != len(payload):
            # Another writer or a delete got in after our rename; report what we wrote.
            return StoredFile(path=path, size=len(payload), modified=datetime.now(UTC))
        return stored

    def read(self, org: str, path: str) -> bytes:
        file, path = self._doc_file(org, path)
        try:
            return file.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(f"document {path!r} not found in organization {org!r}") from None

    def exists(self, org: str, path: str) -> bool:
        file, _ = self._doc_file(org, path)
        return file.is_file()

    def stat(self, org: str, path: str) -> StoredFile | None:
        file, path = self._doc_file(org, path)
        return self._stat(path, file)

    def delete(self, org: str, path: str) -> bool:
        """Remove the document and its sidecars; a derived cache without its file is meaningless."""
        file, path = self._doc_file(org, path)
        sidecars = self._sidecar_dir(org, path)
        shutil.rmtree(sidecars, ignore_errors=True)
        try:
            file.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def list(self, org: str, prefix: str = DOCS_PREFIX) -> list[StoredFile]:
        """Documents whose path starts with `prefix` (which must lie within `docs/`), sorted by path."""
        if not isinstance(prefix, str) or not prefix.startswith(DOCS_PREFIX):
            raise InvalidPathError("list prefix must start with 'docs/'")
        name_prefix = prefix[len(DOCS_PREFIX) :]
        if any(sep in name_prefix for sep in ("/", "\\", "\x00")):
            raise InvalidPathError("list prefix must not contain a path separator after 'docs/'")
        org_dir = self._org_dir(org)
        docs = self._contained(org_dir, org_dir / "docs")
        try:
            entries = list(os.scandir(docs))
        except FileNotFoundError:
            return []
        found: list[StoredFile] = []
        for entry in entries:
            if not entry.name.startswith(name_prefix) or not entry.is_file(follow_symlinks=False):
                continue
            if not _is_addressable(entry.name):
                continue  # dropped in by hand under a name no caller could read back
            stored = self._stat(DOCS_PREFIX + entry.name, Path(entry.path))
            if stored is not None:
                found.append(stored)
        return sorted(found, key=lambda f: f.path)

    def write_sidecar(self, org: str, path: str, name: str, data: bytes) -> None:
        payload = _as_bytes(data)
        directory = self._sidecar_dir(org, path)
        target = self._contained(self._org_dir(org), directory / sanitize_filename(name))
        self._atomic_write(org, target, payload)

    def read_sidecar(self, org: str, path: str, name: str) -> bytes | None:
        directory = self._sidecar_dir(org, path)
        target = self._contained(self._org_dir(org), directory / sanitize_filename(name))
        try:
            return target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
