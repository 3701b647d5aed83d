"""A spawned worker exits when the process that started it dies without cleaning up (issue 23 §6.5).

The parent here starts a spawn-context `ProcessPoolExecutor` with `exit_with_parent` as initializer,
prints the worker's pid, then kills itself with SIGKILL: no `atexit`, no executor shutdown, as when
`langgraph dev` re-raises SIGTERM. The worker must be gone within a deadline.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import REPO_DIR

DEADLINE_S = 20.0

PARENT = textwrap.dedent(
    """
    import multiprocessing, os, signal, sys
    from concurrent.futures import ProcessPoolExecutor
    from librarian.runs.orphans import exit_with_parent

    if __name__ == "__main__":
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(
            1, mp_context=context, initializer=exit_with_parent, initargs=(os.getpid(),)
        )
        print(pool.submit(os.getpid).result(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def exited_within(pids: list[int], deadline_s: float) -> list[int]:
    """Wait (no polling: a pidfd becomes readable when its process exits) until every process in
    `pids` has exited or the deadline passes; the ones still running."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue  # already gone
    deadline = time.monotonic() + deadline_s
    try:
        pending = set(fds)
        while pending and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(pending), [], [], left)
            pending -= set(ready)
        return sorted(fds[fd] for fd in pending)
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd_open is Linux")
@pytest.mark.timeout(180)
def test_the_worker_exits_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=REPO_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    with parent:
        worker = int(parent.stdout.readline())
        assert parent.wait(timeout=60) == -9
    try:
        assert not exited_within([worker], DEADLINE_S), f"worker {worker} outlived its parent"
    finally:
        if exited_within([worker], 0):
            os.kill(worker, 9)


def test_a_worker_whose_server_is_already_gone_exits_at_once():
    """A worker that starts after its server died (init is its parent) must not watch init forever."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from librarian.runs.orphans import exit_with_parent

    not_my_parent = os.getpid() + 1_000_000  # no process has it: "the server is gone"
    context = multiprocessing.get_context("spawn")
    with (
        ProcessPoolExecutor(
            1, mp_context=context, initializer=exit_with_parent, initargs=(not_my_parent,)
        ) as pool,
        pytest.raises(BrokenProcessPool),
    ):
        pool.submit(os.getpid).result(timeout=DEADLINE_S)
