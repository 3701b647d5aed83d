"""Kill -9 an ingest at random moments, finish it in a new process, and compare with a clean run.

    python bench/crash_trials.py                       # 20 trials, SQLite checkpoints
    python bench/crash_trials.py --trials 30 --postgres postgresql://postgres@127.0.0.1:5432/test

Each trial starts `tests/integration/crash_worker.py run` (upload + ingest, batches of 5 chunks),
waits until it says READY (imports and set-up done), sleeps a random time in [0, clean ingest time],
sends SIGKILL, then runs the worker's `finish` mode (resume the interrupted run from its checkpoint,
or upload and ingest again if it died before the first one). The index must then hold exactly the
record ids and texts of a clean run, and the parse must have completed once per content hash: the
parse cache beside the file is what a resumed run reads. A kill during the parse itself loses that
parse (nothing was saved yet), so parse *starts* can exceed one; the figures say how often.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))
WORKER = REPO_DIR / "tests" / "integration" / "crash_worker.py"
ORG = "crash-bench"


def manual(sections: int) -> str:
    return "\n\n".join(
        f"Section {i}. " + f"Procedure step {i} explains the valve. " * 25 for i in range(sections)
    )


def worker(mode: str, data_dir: Path, source: Path, postgres: str) -> list[str]:
    return [sys.executable, str(WORKER), mode, str(data_dir), postgres, ORG, str(source)]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_DIR)}


def run_to_end(mode: str, data_dir: Path, source: Path, postgres: str) -> dict:
    done = subprocess.run(
        worker(mode, data_dir, source, postgres), capture_output=True, text=True, timeout=900, env=env()
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_and_kill(data_dir: Path, source: Path, postgres: str, delay_s: float) -> tuple[bool, float]:
    """Start an ingest, SIGKILL it `delay_s` after READY; (was it killed before finishing, delay)."""
    process = subprocess.Popen(
        worker("run", data_dir, source, postgres),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env(),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "READY":
            break
    try:
        process.wait(timeout=delay_s)
        return False, delay_s  # it finished first: the trial still checks the result
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return True, delay_s


def timed_clean_run(data_dir: Path, source: Path, postgres: str) -> tuple[dict, float]:
    """A whole ingest in `run` mode: its status and the seconds from READY to exit (the kill window)."""
    process = subprocess.Popen(
        worker("run", data_dir, source, postgres),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env(),
    )
    assert process.stdout is not None
    out = []
    started = None
    for line in process.stdout:
        if line.strip() == "READY":
            started = time.perf_counter()
        out.append(line)
    process.wait()
    assert started is not None and process.returncode == 0, "".join(out)[-2000:]
    return json.loads(out[-1]), time.perf_counter() - started


def index_contents(data_dir: Path) -> dict[str, tuple[str, tuple[float, ...]]]:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    stack = Stack(load_settings(data_dir=data_dir))
    ids = stack.index.list_ids(namespace=ORG)
    records = stack.index.fetch(ids, namespace=ORG)
    return {rid: (r["metadata"]["text"], tuple(r["values"])) for rid, r in records.items()}


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument(
        "--sections", type=int, default=60, help="size of the document (about one chunk each)"
    )
    parser.add_argument("--postgres", default="", help="PostgreSQL URL (default: SQLite in each data dir)")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = root / "manual.txt"
        source.write_text(manual(args.sections))
        clean_status, clean_s = timed_clean_run(root / "clean", source, args.postgres)
        clean = index_contents(root / "clean")
        print(f"clean run: {clean_status['status']}, {len(clean)} records, {clean_s:.1f}s from READY to exit")

        killed = equal = final_ok = 0
        parse_starts: list[int] = []
        parse_done_per_hash: list[int] = []
        max_diff: list[float] = []
        for trial in range(args.trials):
            data_dir = root / f"trial{trial}"
            # The worker's imports take a few seconds before READY; ingest work follows.
            was_killed, delay = run_and_kill(data_dir, source, args.postgres, rng.uniform(0, clean_s))
            killed += was_killed
            status = run_to_end("finish", data_dir, source, args.postgres)
            contents = index_contents(data_dir)
            same = {k: v[0] for k, v in contents.items()} == {k: v[0] for k, v in clean.items()}
            equal += same
            final_ok += status["status"] == "indexed" and status["chunkCount"] == len(clean)
            done = Counter(lines(data_dir / "parse_done"))
            parse_starts.append(len(lines(data_dir / "parse_calls")))
            parse_done_per_hash.append(max(done.values(), default=0))
            if same:
                max_diff.append(
                    max(
                        max(abs(a - b) for a, b in zip(v[1], clean[k][1], strict=True))
                        for k, v in contents.items()
                    )
                )
            how = "killed" if was_killed else "finished first"
            verdict = "equal" if same else "DIFFERENT"
            print(
                f"trial {trial:2d}: kill at +{delay:5.2f}s ({how}) -> {status['status']} "
                f"{status['chunkCount']} chunks, index {verdict}, "
                f"parses started {parse_starts[-1]}, completed per hash {parse_done_per_hash[-1]}"
            )

    n = args.trials
    print(f"\n{n} trials ({killed} killed mid-ingest, {n - killed} finished before the kill)")
    print(f"resumed index equal to the clean run (ids and texts): {equal}/{n}")
    print(f"final status indexed with the clean chunk count: {final_ok}/{n}")
    print(f"parse completed once per content hash: {sum(d == 1 for d in parse_done_per_hash)}/{n}")
    print(
        f"parse started once: {sum(s == 1 for s in parse_starts)}/{n} "
        f"(a kill during the parse itself re-parses: nothing was cached yet)"
    )
    if max_diff:
        worst, median = max(max_diff), statistics.median(max_diff)
        print(f"largest vector difference vs clean: {worst:.2e} (median {median:.2e})")
    return 0 if equal == n and final_ok == n else 1


if __name__ == "__main__":
    sys.exit(main())
