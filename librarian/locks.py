"""Per-key mutual exclusion for threads of this process and for other processes on the same disk."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock


class KeyedLocks:
    """One lock per key: a thread lock (threads of this process queue in order, without polling) and
    a file lock under `lock_dir` (other processes over the same data directory, e.g. the CLI beside a
    running server). File names are hashes, so any key (paths with slashes, any length) is safe."""

    def __init__(self, lock_dir: Path) -> None:
        self._lock_dir = lock_dir
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        self._lock_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        with lock, FileLock(str(self._lock_dir / f"{digest}.lock")):
            yield
