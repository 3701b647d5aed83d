"""Worker processes that never outlive the server.

`langgraph dev` re-raises SIGTERM once it has shut down, so neither `atexit` nor an executor's
shutdown runs, and spawned workers (the ingest worker, the page renderer) would be reparented to
PID 1 and keep their memory. Each worker watches its parent instead.
"""

from __future__ import annotations

import os
import threading
import time

#: How often a worker checks that the process that started it is still there.
PARENT_POLL_S = 1.0


def exit_with_parent(interval_s: float = PARENT_POLL_S) -> None:
    """In a worker process: exit as soon as the process that started it is gone (its parent pid
    changes when it is reparented). A daemon thread polls, so it costs nothing between checks.
    Usable as a `ProcessPoolExecutor` initializer."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval_s)
        os._exit(0)  # nothing to flush: results only ever go back to the parent

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
