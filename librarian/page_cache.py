"""Rendered page images on local disk, bounded per organization and overall, least recently used first.

The page route (`webapi.pages`) renders a PDF page once per document version, page and width, and
keeps the PNG here, at `{data_dir}/page-cache/{org}/{document digest}/{name}`. Two bounds hold after
every write: the organization's images take at most `LIBRARIAN_PAGE_CACHE_MAX_BYTES_PER_ORG` and all
of them at most `LIBRARIAN_PAGE_CACHE_MAX_BYTES`; over either, the least recently read or written
images go first (of that organization, then of anyone). So one reader asking for many pages or
widths only pushes out older images, their own first, and the disk use stays where the settings put it.

Recency is the file's modification time (a read touches it), so the order survives a restart, and
the index is read back from the disk at first use and again at most every `RESCAN_S` seconds, which
also takes in what other processes sharing the directory wrote. It is a cache: a lost or evicted
image is rendered again. The document's version is in the image's name, so a replaced file never
shows an old page; writing a page of a new version drops the document's older ones, and `forget`
drops all of a document's images (a deleted document).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from librarian.settings import Settings

if TYPE_CHECKING:
    from librarian.stack import Stack

SUFFIX = ".png"
RESCAN_S = 60.0
STALE_TEMPORARY_S = 600.0


def cache_dir(settings: Settings) -> Path:
    return settings.data_dir / "page-cache"


def page_cache(stack: Stack) -> PageCache:
    """The stack's page cache (one per stack, so per settings); e.g. `page_cache(get_stack())`."""
    return stack.memo("page-cache", lambda: PageCache.from_settings(stack.settings))


def image_name(page: int, width: int, size: int, modified_us: int) -> str:
    """An image's name: the page, its width and the version of the document's file (size, mtime)."""
    return f"page-{page}-w{width}-{size}-{modified_us}{SUFFIX}"


@dataclass
class _Entry:
    size: int
    used: float  # time of the last read or write (the file's mtime)


class PageCache:
    """Images by (organization, document path, name); thread-safe within a process."""

    def __init__(self, root: Path, max_bytes: int, max_bytes_per_org: int) -> None:
        self.root = Path(root)
        self.max_bytes, self.max_bytes_per_org = max_bytes, max_bytes_per_org
        self._lock = threading.Lock()
        self._orgs: dict[str, OrderedDict[str, _Entry]] = {}  # org -> key -> entry, oldest first
        self._org_bytes: dict[str, int] = {}
        self._total = 0
        self._scanned_at: float | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> PageCache:
        return cls(cache_dir(settings), settings.page_cache_max_bytes, settings.page_cache_max_bytes_per_org)

    # --- reading and writing

    def get(self, org: str, path: str, name: str) -> bytes | None:
        """The image, or None; a hit makes it the organization's most recently used."""
        key = _key(path, name)
        file = self.root / org / key
        try:
            data = file.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            with self._lock:
                self._drop(org, key)
            return None
        now = time.time()
        try:
            os.utime(file, (now, now))
        except OSError:
            return data  # evicted since it was read: still the image, but no longer kept
        with self._lock:
            self._ensure_index()
            self._add(org, key, len(data), now)
        return data

    def put(self, org: str, path: str, name: str, data: bytes) -> None:
        """Keep the image, then drop the least recently used ones until both bounds hold again.

        An image larger than a bound is not kept (it would only push everything else out)."""
        if len(data) > min(self.max_bytes, self.max_bytes_per_org):
            return
        key = _key(path, name)
        file = self.root / org / key
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, file)
        with self._lock:
            self._ensure_index()
            self._drop_other_versions(org, key)
            self._add(org, key, len(data), time.time())
            self._evict(org)

    def forget(self, org: str, path: str) -> None:
        """Drop every image of one document (it was deleted)."""
        folder = _document_folder(path)
        with self._lock:
            for key in [k for k in self._orgs.get(org, {}) if k.startswith(folder + "/")]:
                self._drop(org, key)
            shutil.rmtree(self.root / org / folder, ignore_errors=True)

    def images_of(self, org: str, path: str) -> int:
        """How many images of one document are on disk (a delete's receipt counts them)."""
        folder = self.root / org / _document_folder(path)
        return len(list(folder.glob(f"*{SUFFIX}"))) if folder.is_dir() else 0

    def usage(self) -> tuple[int, dict[str, int]]:
        """Bytes kept: overall, and per organization."""
        with self._lock:
            self._ensure_index()
            return self._total, {org: size for org, size in self._org_bytes.items() if size}

    # --- the index

    def _ensure_index(self) -> None:
        if self._scanned_at is None or time.monotonic() - self._scanned_at > RESCAN_S:
            self._scan()

    def _scan(self) -> None:
        """Rebuild the index from the disk, oldest first (what other processes wrote included)."""
        found: list[tuple[float, str, str, int]] = []
        for file in self.root.glob(f"*/*/*{SUFFIX}") if self.root.is_dir() else []:
            try:
                stat = file.stat()
            except FileNotFoundError:
                continue
            found.append(
                (stat.st_mtime, file.parent.parent.name, f"{file.parent.name}/{file.name}", stat.st_size)
            )
        for leftover in self.root.glob("*/*/.*.tmp") if self.root.is_dir() else []:
            with contextlib.suppress(OSError):  # a write cut short by a crash, long ago
                if time.time() - leftover.stat().st_mtime > STALE_TEMPORARY_S:
                    leftover.unlink()
        self._orgs, self._org_bytes, self._total = {}, {}, 0
        for used, org, key, size in sorted(found):
            self._add(org, key, size, used)
        self._scanned_at = time.monotonic()

    def _add(self, org: str, key: str, size: int, used: float) -> None:
        entries = self._orgs.setdefault(org, OrderedDict())
        old = entries.pop(key, None)
        if old is not None:
            self._org_bytes[org] -= old.size
            self._total -= old.size
        entries[key] = _Entry(size, used)
        self._org_bytes[org] = self._org_bytes.get(org, 0) + size
        self._total += size

    def _drop(self, org: str, key: str, *, delete: bool = False) -> None:
        entry = self._orgs.get(org, {}).pop(key, None)
        if entry is not None:
            self._org_bytes[org] -= entry.size
            self._total -= entry.size
        if delete:
            with contextlib.suppress(FileNotFoundError):
                (self.root / org / key).unlink()

    def _drop_other_versions(self, org: str, key: str) -> None:
        """Images of the same document made from another version of its file (replaced meanwhile)."""
        folder, name = key.split("/", 1)
        version = _version(name)
        stale = [
            k
            for k in self._orgs.get(org, {})
            if k.startswith(folder + "/") and _version(k.split("/", 1)[1]) != version
        ]
        for other in stale:
            self._drop(org, other, delete=True)

    def _evict(self, org: str) -> None:
        entries = self._orgs.get(org, OrderedDict())
        while self._org_bytes.get(org, 0) > self.max_bytes_per_org and entries:
            self._drop(org, next(iter(entries)), delete=True)
        while self._total > self.max_bytes:
            oldest = min(
                (org_ for org_, items in self._orgs.items() if items),
                key=lambda org_: next(iter(self._orgs[org_].values())).used,
                default=None,
            )
            if oldest is None:
                break
            self._drop(oldest, next(iter(self._orgs[oldest])), delete=True)


def _document_folder(path: str) -> str:
    """One folder per document, named by a digest: no file-name rules to satisfy twice."""
    return hashlib.sha256(path.encode()).hexdigest()[:32]


def _key(path: str, name: str) -> str:
    if "/" in name or not name.endswith(SUFFIX) or name.startswith("."):
        raise ValueError(f"not an image name: {name!r}")
    return f"{_document_folder(path)}/{name}"


def _version(name: str) -> str:
    """The document version an image name ends with (`image_name`: `...-{size}-{modified_us}.png`)."""
    return "-".join(name[: -len(SUFFIX)].split("-")[-2:])
