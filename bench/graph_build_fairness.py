"""Fairness of a graph build: another organization's question p50 while a build runs vs idle, as ratios.

    python bench/graph_build_fairness.py                               # the worker (default)
    python bench/graph_build_fairness.py --compare-inline              # and LIBRARIAN_INGEST_OFFLOAD=false
    python bench/graph_build_fairness.py --data ../shared/data/christmas-carol ../shared/data/docs

On one `langgraph dev` server (automatic builds off): organization B ingests a few documents and
organization A the `--data` folders (neither timed). B asks `--questions` agent questions one at a
time while the server is idle, then A's admin starts a graph build of A and B asks again, one at a
time, until it has `--questions` answers that ended before the build did (or the build ends). The
ratio is B's p50 during the build over its p50 idle (issue 25's probe saw 6x with the build in the
server process). `--compare-inline` repeats it on a server with `LIBRARIAN_INGEST_OFFLOAD=false`
(every stage in the server process, as before the worker) in the same run, the baseline.

Also printed: the CPU seconds the server process and the ingest worker spent during the build (read
from /proc, Linux only), which says where the build ran, and the build's own stage timings.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from bench.serve import SOURCES, server_chats_one, server_ingest  # noqa: E402

DATA = REPO_DIR.parent / "shared" / "data"
SUFFIXES = {".txt", ".md", ".html", ".htm", ".pdf", ".docx", ".pptx", ".xlsx"}
POLL_S = 0.5  # how often the build's status is read (each read costs the server a little CPU)
BUILD_DEADLINE_S = 1800.0


@dataclass
class Phase:
    """One server's figures."""

    label: str
    idle: list[float] = field(default_factory=list)
    during: list[float] = field(default_factory=list)
    after: int = 0  # questions that ended after the build did (not counted)
    build_s: float = 0.0
    server_cpu: float | None = None
    worker_cpu: float | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def ratio(self) -> float:
        return statistics.median(self.during) / statistics.median(self.idle)


# --- processes (Linux /proc) ------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    return (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()


def cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of a process; None when it cannot be read (no /proc, gone)."""
    if pid is None:
        return None
    try:
        fields = _stat(pid)
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ingest_worker(leader: int) -> int | None:
    """The server's niced spawned child (the ingest worker), if it has started."""
    try:
        leader_nice = int(_stat(leader)[16])
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = _stat(int(entry.name))
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(fields[1]) == leader and b"spawn_main" in command and int(fields[16]) > leader_nice:
                return int(entry.name)
    except OSError:
        return None
    return None


# --- one server --------------------------------------------------------------------------------------


def corpus(folders: list[Path]) -> list[tuple[str, bytes]]:
    files = sorted(p for folder in folders for p in folder.rglob("*") if p.suffix.lower() in SUFFIXES)
    return [(f"{i:03d}-{p.name}", p.read_bytes()) for i, p in enumerate(files) if p.is_file()]


async def questions(url: str, tok: str, n: int, start: int = 0) -> list[float]:
    """B's agent turns, one at a time (each measures service time, not queueing)."""
    latencies: list[float] = []
    for i in range(start, start + n):
        latencies.extend(await server_chats_one(url, tok, i))
    return latencies


async def build_status(http: httpx.AsyncClient, org: str) -> dict[str, Any]:
    response = await http.get(f"/orgs/{org}/graph")
    response.raise_for_status()
    return response.json()


async def during_build(
    url: str, tok_b: str, http_a: httpx.AsyncClient, org_a: str, phase: Phase, n: int
) -> None:
    """Start A's build, ask B's questions while it runs; keep those that ended before the build did."""
    ended: list[float] = []

    async def watch() -> None:
        while (await build_status(http_a, org_a))["lastBuild"]["status"] in ("queued", "running"):
            await asyncio.sleep(POLL_S)
        ended.append(time.monotonic())

    response = await http_a.post(f"/orgs/{org_a}/graph")
    assert response.status_code == 202, response.text
    started = time.monotonic()
    deadline = started + BUILD_DEADLINE_S
    while (await build_status(http_a, org_a))["lastBuild"]["status"] != "running":
        assert time.monotonic() < deadline, "the build never started"
        await asyncio.sleep(0.1)
    watcher = asyncio.create_task(watch())
    asked = 0
    while not ended and len(phase.during) < n:
        latency = (await questions(url, tok_b, 1, start=asked))[0]
        asked += 1
        if ended and ended[0] < time.monotonic():
            phase.after += 1
        else:
            phase.during.append(latency)
    await asyncio.wait_for(watcher, BUILD_DEADLINE_S)
    phase.build_s = ended[0] - started


async def measure(url: str, secret: str, leader: int, phase: Phase, args: argparse.Namespace) -> None:
    from librarian.auth import mint_token

    stamp = int(time.time())
    org_a, org_b = f"graphA{stamp}", f"graphB{stamp}"
    tok_a, tok_b = mint_token(secret, "ada", org_a, role="admin"), mint_token(secret, "bob", org_b)
    await server_ingest(url, tok_b, org_b, [(p.name, p.read_bytes()) for p in SOURCES])
    await server_ingest(url, tok_a, org_a, corpus(args.data))
    await questions(url, tok_b, 2)  # warm-up: model loads are not the metric
    phase.idle = await questions(url, tok_b, args.questions)
    print(f"  org B idle: {[round(x, 2) for x in phase.idle]}", flush=True)
    worker = ingest_worker(leader)
    server_cpu, worker_cpu = cpu_seconds(leader), cpu_seconds(worker)
    headers = {"Authorization": f"Bearer {tok_a}"}
    async with httpx.AsyncClient(base_url=url, timeout=300, headers=headers) as http_a:
        await during_build(url, tok_b, http_a, org_a, phase, args.questions)
        status = await build_status(http_a, org_a)
    assert status["lastBuild"]["status"] == "published", status["lastBuild"]
    phase.timings = status["lastBuild"].get("timings") or {}
    after_server, after_worker = cpu_seconds(leader), cpu_seconds(worker)
    if server_cpu is not None and after_server is not None:
        phase.server_cpu = after_server - server_cpu
    if worker_cpu is not None and after_worker is not None:
        phase.worker_cpu = after_worker - worker_cpu
    print(f"  org B during org A's build: {[round(x, 2) for x in phase.during]}", flush=True)


def run_server(label: str, extra: dict[str, str], args: argparse.Namespace) -> Phase:
    from tests.devserver import DevServer, server_env

    phase = Phase(label)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "server"
        work.mkdir()
        secret = secrets.token_urlsafe(48)
        env = server_env(Path(tmp) / "data", secret, {"LIBRARIAN_GRAPH_AUTO_BUILD": "false", **extra})
        server = DevServer(work, env, jobs=args.jobs).start()
        print(f"{label}: server up in {server.startup_s:.1f}s", flush=True)
        try:
            assert server.process is not None
            asyncio.run(measure(server.url, secret, server.process.pid, phase, args))
        finally:
            server.stop()
    return phase


# --- report -------------------------------------------------------------------------------------------


def cpu_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}s"


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    names = ", ".join(str(folder) for folder in args.data)
    print(
        f"graph build fairness: org B's agent turns one at a time, idle and during org A's build of {names}"
    )
    for phase in phases:
        if not phase.during:
            print(f"  {phase.label}: the build ended before any question did; use a larger --data")
            continue
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in phase.timings.items())
        print(
            f"  {phase.label}: p50 idle {statistics.median(phase.idle):.2f}s, during the build "
            f"{statistics.median(phase.during):.2f}s ({len(phase.during)} turns, {phase.after} after it), "
            f"ratio {phase.ratio():.2f}; build {phase.build_s:.1f}s wall, CPU server "
            f"{cpu_text(phase.server_cpu)} / worker {cpu_text(phase.worker_cpu)}; stages: {stages}"
        )
    if len(phases) == 2 and all(p.during for p in phases):
        print(f"  worker vs inline: ratio {phases[0].ratio():.2f} vs {phases[1].ratio():.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[DATA / "christmas-carol"])
    parser.add_argument("--questions", type=int, default=8, help="org B's sequential turns per phase")
    parser.add_argument("--jobs", type=int, default=4, help="--n-jobs-per-worker of the server")
    parser.add_argument("--compare-inline", action="store_true", help="also a server without the worker")
    args = parser.parse_args()
    phases = [run_server("worker (default)", {}, args)]
    if args.compare_inline:
        phases.append(
            run_server("inline (LIBRARIAN_INGEST_OFFLOAD=false)", {"LIBRARIAN_INGEST_OFFLOAD": "false"}, args)
        )
    report(phases, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
