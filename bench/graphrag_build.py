"""GraphRAG build benchmark: time, CPU, peak RSS and graph size of a full build, then of an incremental
rebuild after changing one document, on the embedded (offline) stack.

    python bench/graphrag_build.py [--data ../shared/data/christmas-carol ../shared/data/docs]

For each folder: ingest it into a fresh data directory (not timed), then run each build in a fresh
child process (so peak RSS and time include loading spaCy and MiniLM, as a real `librarian graph build`
does). The baseline, in the same child process, is one bare spaCy pass (`nlp.pipe`) over the same
chunks: the floor of the local extractor. Printed ratios: full build / spaCy floor, and rebuild / full
build (goal < 20 %). Goals offline: the Christmas Carol builds in < 2 min with peak RSS < 1.5 GiB.

The machine is shared, so wall time depends on load: CPU seconds (user + system) are printed as well.
`build_function` is importable by `bench/graphrag.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ORG = "bench"
SUFFIXES = {".txt", ".md", ".html", ".htm", ".pdf", ".docx", ".pptx", ".xlsx"}
CHANGE = "\n\nMarley's ghost visited Ebenezer Scrooge again on Christmas morning, and Fred laughed.\n"
CHANGE_AGAIN = "\nBob Cratchit thanked Ebenezer Scrooge for the turkey.\n"


def peak_rss_mib() -> float:
    """This process's own high-water mark (`VmHWM`; `ru_maxrss` carries a parent's peak across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def files_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)


def ingest(data_dir: Path, folder: Path) -> list[str]:
    from langgraph.checkpoint.memory import InMemorySaver

    from librarian.settings import load_settings
    from librarian.stack import Stack
    from services.documents import DocumentService

    stack = Stack(load_settings(data_dir=data_dir))
    service = DocumentService(stack, InMemorySaver())
    paths = []
    for file in files_of(folder):
        path = service.upload(ORG, file.name, file.read_bytes())
        if service.ingest(ORG, path).status == "indexed":
            paths.append(path)
    return paths


def build_function(data_dir: Path, *, with_floor: bool = False) -> dict:
    """One build in this process (what the child runs); returns the report plus measurements."""
    from librarian.settings import load_settings
    from librarian.stack import Stack
    from librarian_cli.graph import graph_build

    stack = Stack(load_settings(data_dir=data_dir))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    report = graph_build(ORG, stack=stack)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    out = {"report": report, "wall_s": wall, "cpu_s": cpu}
    if with_floor:
        from graphs.graph_index_stages import document_chunks, indexed_documents
        from librarian.graph.extract.local import load_model

        docs, _ = indexed_documents(stack, ORG)
        texts = [c.text for d in docs for c in document_chunks(stack, ORG, d["path"], d["contentHash"]) or []]
        nlp = load_model()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in nlp.pipe(texts, batch_size=16):
            pass
        out.update(floor_wall_s=time.perf_counter() - wall0, floor_cpu_s=time.process_time() - cpu0)
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def warm_function(data_dir: Path, changed: Path) -> dict:
    """Full build and one-document rebuild in one warm process (models loaded, like a server worker).

    A first build loads the models; then every graph row and cache of the organization is dropped, so
    the timed full build starts from nothing; then `changed` is re-ingested (not timed) and rebuilt.
    """
    from langgraph.checkpoint.memory import InMemorySaver

    from librarian.settings import load_settings
    from librarian.stack import Stack
    from librarian_cli.graph import graph_build
    from services.documents import DocumentService

    stack = Stack(load_settings(data_dir=data_dir))
    graph_build(ORG, stack=stack)  # warm-up: spaCy, MiniLM, LanceDB loaded
    stack.graph_store.scope(ORG).drop_all()
    out: dict = {}
    for phase in ("full", "rebuild"):
        if phase == "rebuild":
            service = DocumentService(stack, InMemorySaver())
            service.ingest(ORG, service.upload(ORG, changed.name, changed.read_bytes()))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = graph_build(ORG, stack=stack)
        out[phase] = {
            "wall_s": time.perf_counter() - wall0,
            "cpu_s": time.process_time() - cpu0,
            "report": report,
        }
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def child_warm(data_dir: Path, changed: Path) -> dict:
    code = (
        f"import json, sys; sys.path.insert(0, {str(REPO)!r}); "
        "from pathlib import Path; from bench.graphrag_build import warm_function; "
        f"result = warm_function(Path({str(data_dir)!r}), Path({str(changed)!r})); "
        "print('@@' + json.dumps(result, default=str))"
    )
    return _child(code)


def child_build(data_dir: Path, *, with_floor: bool) -> dict:
    code = (
        f"import json, sys; sys.path.insert(0, {str(REPO)!r}); "
        "from pathlib import Path; from bench.graphrag_build import build_function; "
        f"result = build_function(Path({str(data_dir)!r}), with_floor={with_floor!r}); "
        "print('@@' + json.dumps(result, default=str))"
    )
    return _child(code)


def _child(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBRARIAN_")}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("@@")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"build child failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(lines[-1][2:])


def bench_folder(folder: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="graphrag-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        started = time.perf_counter()
        paths = ingest(data_dir, folder)
        ingest_s = time.perf_counter() - started
        full = child_build(data_dir, with_floor=True)
        # change one document (the largest, the worst case for a one-document rebuild) and re-ingest it
        largest = max(files_of(folder), key=lambda p: p.stat().st_size if p.suffix in (".txt", ".md") else -1)
        changed_dir = Path(tmp) / "changed"
        changed_dir.mkdir()
        changed = changed_dir / largest.name
        changed.write_bytes(largest.read_bytes() + CHANGE.encode())
        ingest(data_dir, changed_dir)
        rebuild = child_build(data_dir, with_floor=False)
        # ids the index holds, as this process sees them (a cross-check when a build finds no documents)
        from librarian.settings import load_settings
        from librarian.stack import Stack

        index_ids = len(Stack(load_settings(data_dir=data_dir)).index.list_ids(namespace=ORG))
        changed.write_bytes(changed.read_bytes() + CHANGE_AGAIN.encode())
        warm = child_warm(data_dir, changed)
        return {
            "folder": str(folder),
            "documents": len(paths),
            "ingest_s": ingest_s,
            "changed": f"docs/{largest.name}",
            "index_ids": index_ids,
            "full": full,
            "rebuild": rebuild,
            "warm": warm,
        }


def show(result: dict) -> None:
    full, rebuild = result["full"], result["rebuild"]
    report, again = full["report"], rebuild["report"]
    levels = ", ".join(f"L{k}: {v}" for k, v in sorted(report["communitiesPerLevel"].items()))
    skipped = report["lastBuild"].get("skippedDocuments") or report["lastBuild"].get("failedDocuments")
    if skipped or not report["documents"]:
        print(f"WARNING: {report['documents']} documents in the graph; skipped/failed: {skipped}")
    print(
        f"\n== {result['folder']}  ({result['documents']} documents, "
        f"ingest {result['ingest_s']:.1f} s, not timed)"
    )
    print(
        f"graph: {report['entities']} entities, {report['edges']} edges, {report['claims']} claims; "
        f"communities {levels}"
    )
    print(
        f"full build: {full['wall_s']:.1f} s wall, {full['cpu_s']:.1f} s CPU, "
        f"peak RSS {full['peak_rss_mib']:.0f} MiB (steps: {report['lastBuild']['timings']})"
    )
    print(
        f"baseline (same process): bare spaCy pass over the same chunks {full['floor_wall_s']:.1f} s wall, "
        f"{full['floor_cpu_s']:.1f} s CPU; "
        f"build / floor = {full['cpu_s'] / max(full['floor_cpu_s'], 1e-9):.2f}x CPU"
    )
    last = again["lastBuild"]
    print(
        f"rebuild after changing {result['changed']}: {rebuild['wall_s']:.1f} s wall, "
        f"{rebuild['cpu_s']:.1f} s CPU, peak RSS {rebuild['peak_rss_mib']:.0f} MiB; "
        f"re-extracted {last['extracted']}; summaries reused "
        f"{last['summariesReused']}, written {last['summariesWritten']}"
    )
    print(
        f"rebuild / full (each in a fresh process, as `librarian graph build`): "
        f"{100 * rebuild['wall_s'] / full['wall_s']:.0f} % wall, "
        f"{100 * rebuild['cpu_s'] / full['cpu_s']:.0f} % CPU"
    )
    warm = result.get("warm")
    if warm:
        wf, wr = warm["full"], warm["rebuild"]
        wl = wr["report"]["lastBuild"]
        print(
            f"warm process (models loaded, like a server worker): full {wf['wall_s']:.1f} s wall, "
            f"{wf['cpu_s']:.1f} s CPU; rebuild {wr['wall_s']:.1f} s wall, {wr['cpu_s']:.1f} s CPU "
            f"(chunks re-read {wl.get('chunksExtracted')}, reused {wl.get('chunksReused')}; summaries reused "
            f"{wl['summariesReused']}, written {wl['summariesWritten']}); rebuild / full = "
            f"{100 * wr['wall_s'] / wf['wall_s']:.0f} % wall, {100 * wr['cpu_s'] / wf['cpu_s']:.0f} % CPU "
            f"(goal < 20 %); peak RSS {warm['peak_rss_mib']:.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = REPO.parent / "shared" / "data"
    parser.add_argument("--data", nargs="+", type=Path, default=[shared / "christmas-carol", shared / "docs"])
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args()
    results = []
    for folder in args.data:
        result = bench_folder(folder)
        show(result)
        results.append(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
