"""Cheap detection of new table versions, so every query can see other processes' commits.

Asking LanceDB for the latest version costs 0.3-0.6 ms here (a round trip to its event loop and a
look at the manifests), which is more than scoring a small namespace. Every commit adds a manifest
to `_versions/`, which changes that directory's mtime, and a `stat` costs microseconds. So the
full check runs only when the mtime moved, or while it is too recent to trust.

Why "too recent": file timestamps come from a coarse kernel clock (a few ms per tick), so a commit
landing in the same tick as the last one leaves the mtime unchanged. Once the full check started
more than `margin` after the mtime, every commit carrying that mtime had finished before the check
and is included in its answer; any later commit must carry a later mtime.

This relies on local-filesystem semantics. For a remote URI or a failed `stat`, every call does
the full check. (Network filesystems that cache attributes would need the same treatment.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path


class VersionProbe:
    """Returns the table's latest version, skipping the expensive check when nothing can have changed."""

    def __init__(self, read_version: Callable[[], int], versions_dir: Path | None, margin: float = 0.1):
        self._read_version = read_version
        self._dir = versions_dir
        self._margin_ns = int(margin * 1e9)
        self._lock = threading.Lock()
        self._state: tuple[tuple[int, int], int, int] | None = None  # (stamp, version, checked_at)

    def current(self) -> int:
        if self._dir is None:
            return self._read_version()
        try:
            st = os.stat(self._dir)
        except OSError:
            return self._read_version()
        stamp = (st.st_ino, st.st_mtime_ns)
        state = self._state
        if state is not None and state[0] == stamp and state[2] - st.st_mtime_ns > self._margin_ns:
            return state[1]
        # The stamp was taken before the version is read: a commit in between moves the mtime
        # past the stamp, so the next call checks again rather than trusting a stale answer.
        checked_at = time.time_ns()
        version = self._read_version()
        with self._lock:
            self._state = (stamp, version, checked_at)
        return version


def local_versions_dir(table_uri: str) -> Path | None:
    """The `_versions` directory of a table stored on the local filesystem, else None."""
    if "://" in table_uri and not table_uri.startswith("file://"):
        return None
    path = Path(table_uri.removeprefix("file://")) / "_versions"
    return path if path.is_dir() else None
