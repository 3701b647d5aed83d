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


def exit_with_parent(server_pid: int, interval_s: float = PARENT_POLL_S) -> None:
    """In a worker process: exit as soon as `server_pid`, the process that started it, is gone.

    A ProcessPoolExecutor initializer (`initargs=(os.getpid(),)`). The expected pid is passed in,
    not read with `getppid()` at start: a worker still starting when the server dies starts as
    init's child and would watch init forever. A daemon thread polls, so it costs nothing between
    checks."""
    if os.getppid() != server_pid:
        os._exit(0)

    def watch() -> None:
        while os.getppid() == server_pid:
            time.sleep(interval_s)
        os._exit(0)  # nothing to flush: results only ever go back to the parent

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
