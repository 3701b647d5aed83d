"""Running a coroutine from synchronous code (CLI commands, notebook `invoke`)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to the end and return its result.

    Outside an event loop this is `asyncio.run`. Inside one (a notebook cell calling a sync API),
    `asyncio.run` refuses, and blocking that loop on itself would deadlock, so the coroutine gets its
    own loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="librarian-sync") as pool:
        return pool.submit(asyncio.run, coroutine).result()
