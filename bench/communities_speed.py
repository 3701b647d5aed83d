"""Community detection speed: this tree's `detect_communities` against a baseline copy of the module
(e.g. today's, from `git archive HEAD`), on a real entity graph, in one process.

    git archive HEAD librarian/graph/communities.py | tar -x -C /tmp/base
    python bench/communities_speed.py --graph DATA_DIR/graph.sqlite \
        --baseline /tmp/base/librarian/graph/communities.py

Each case runs `--runs` times per version, alternating (best time kept: the machine is shared):
a first build (no previous partition), and a rebuild after adding two edges, warm-started from that
version's own first build. The printed ratio is new / baseline (< 1.0 is faster). A baseline that
panics (the bug the new module fixes) is reported as such.
"""

from __future__ import annotations

import argparse
import importlib.util
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from librarian.graph import communities as current  # noqa: E402
from librarian.graph.model import Edge  # noqa: E402


def load_baseline(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_communities", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_edges(graph: Path) -> tuple[str, int, list[Edge]]:
    """The edges of the largest (org, version) in a graph.sqlite."""
    db = sqlite3.connect(f"file:{graph}?mode=ro", uri=True)
    org, version, _count = db.execute(
        "SELECT org, version, COUNT(*) AS n FROM graph_edges GROUP BY org, version ORDER BY n DESC LIMIT 1"
    ).fetchone()
    columns = {row[1] for row in db.execute("PRAGMA table_info(graph_edges)")}
    relation = "relation" if "relation" in columns else "''"
    rows = db.execute(
        f"SELECT source, target, {relation}, weight FROM graph_edges WHERE org = ? AND version = ?",
        (org, version),
    ).fetchall()
    return org, version, [Edge(s, t, r or "", float(w)) for s, t, r, w in rows]


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    try:
        result = call()
    except BaseException as exc:  # a pyo3 panic: the baseline's known failure
        return float("nan"), f"{type(exc).__name__}: {exc}"
    return time.perf_counter() - started, result


def best_of_alternating(
    runs: int, calls: dict[str, Callable[[], Any]]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Each call `runs` times, alternating between them so that load on the machine hits both alike;
    the best time of each."""
    best = {name: float("inf") for name in calls}
    results: dict[str, Any] = {}
    for _ in range(runs):
        for name, call in calls.items():
            seconds, results[name] = timed(call)
            best[name] = min(best[name], seconds) if seconds == seconds else seconds
    return best, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", type=Path, required=True, help="a data directory's graph.sqlite")
    parser.add_argument("--baseline", type=Path, required=True, help="the baseline communities.py")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    baseline = load_baseline(args.baseline)
    org, version, edges = load_edges(args.graph)
    nodes = {e.source for e in edges} | {e.target for e in edges}
    print(f"graph: {args.graph} org={org} version={version}: {len(nodes)} nodes, {len(edges)} edges")
    changed = [*edges, Edge(min(nodes), "bench-new", "r", 1.0), Edge(max(nodes), "bench-new", "r", 1.0)]
    previous = {
        name: module.detect_communities(edges) for name, module in (("baseline", baseline), ("new", current))
    }
    cases = {
        "first build": {
            "baseline": lambda: baseline.detect_communities(edges),
            "new": lambda: current.detect_communities(edges),
        },
        "warm rebuild": {
            "baseline": lambda: baseline.detect_communities(changed, previous=previous["baseline"]),
            "new": lambda: current.detect_communities(changed, previous=previous["new"]),
        },
    }
    for label, calls in cases.items():
        times, outcome = best_of_alternating(args.runs, calls)
        counts = {k: (len(v) if isinstance(v, list) else v) for k, v in outcome.items()}
        same = "same communities" if outcome["baseline"] == outcome["new"] else "different communities"
        print(
            f"{label}: baseline {times['baseline']:.3f}s, new {times['new']:.3f}s, "
            f"ratio new/baseline {times['new'] / times['baseline']:.2f} ({counts}, {same})"
        )


if __name__ == "__main__":
    main()
