"""GraphRAG quality goals of issue 27, measured in one run on real documents (offline defaults).

    python bench/graphrag_quality.py [--docs DIR] [--baseline-tree DIR] [--json] [--strict]
                                     [--labels FILE] [--manual FILE] [--skip-hotpot] [--hotpot-queries N]

Everything is built from scratch in fresh temporary data directories, each measuring step in a child
process whose `sys.path` starts with the source tree under test (this repository, or `--baseline-tree`,
e.g. a `git archive HEAD | tar -x -C /tmp/before` extract), so one run prints "new / old" ratios.

Goals (printed with their figures; `--strict` exits 1 when one is missed):

0. Debris: community titles and summaries holding table-of-contents dot leaders (a run of 5+ dots, or
   5+ dots separated by single spaces) or pipe-table text (a line with 2+ `|` separators, or a
   `| --- |` rule row). Goal 0; the first 5 offenders are listed.
1. Extraction precision against `evals/graph_entities/labelled.jsonl` (rows {row, document, name,
   label: keep|drop, kind}): a labelled row is *present* when `normalize_name(name)` is an entity key or
   alias of the built graph; precision = sample rows labelled keep / sample rows present (see
   `label_precision`). Goal >= 90 %.
2. Name resolution: an entity resolves when `resolve_names([normalize_name(display_name)])` maps to its
   own key and the neighbourhood lookup (`neighbours([key], hops=1)`) returns the key itself and, for an
   entity with edges, at least one neighbour. Goal: 0 entities that do not resolve.
3. Global answer on a manual alone (FHS 3.0, its own organization): "What are the main topics of this
   library?" through `services.ask.answer_with_mode(mode="global")` (the `librarian ask --mode global`
   path, citation check included). Chapters are the manual's top-level table-of-contents entries
   (`read_toc_chapters`); coverage is defined in `chapter_covered`. Goal: >= min(8, chapters) covered
   and 100 % of the checked sentences supported.
4. Cost: full build wall / CPU seconds and peak RSS (the build in a fresh child process, like
   `librarian graph build`), and graph local query latency p50 warm on HotpotQA dev150. Figures only;
   with `--baseline-tree` the ratios new / old.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# The tree under test comes first, so `librarian`, `services` and `bench.graphrag_build` are its own.
TREE = Path(os.environ.get("GRAPHRAG_QUALITY_TREE") or REPO).resolve()
if str(TREE) not in sys.path:
    sys.path.insert(0, str(TREE))

SHARED = Path(os.environ.get("LIBRARIAN_SHARED_DIR") or REPO.parent / "shared")
DOCS = SHARED / "data" / "docs"
MANUAL = DOCS / "pdf" / "fhs-3.0.pdf"
HOTPOT = SHARED / "data" / "hotpotqa-dev150"
LABELS = REPO / "evals" / "graph_entities" / "labelled.jsonl"
DOCS_ORG = "bench"
MANUAL_ORG = "manual"
GLOBAL_QUESTION = "What are the main topics of this library?"
CHAPTER_GOAL = 8
PRECISION_GOAL = 0.90

# --- goal 0: debris ------------------------------------------------------------------------------------

_DOT_LEADER = re.compile(r"\.{5,}|(?:\.[ \u00a0]){4,}\.")
_PIPE_RULE = re.compile(r"\|\s*:?-{3,}:?\s*\|")


def debris_kind(text: str) -> str | None:
    """ "dot leaders", "pipe table" or None: why `text` reads as layout debris rather than prose.

    Dot leaders are what a table of contents leaves ("Options ........ 20"); a pipe table is a Markdown
    table flattened into a summary (a line with two or more `|`, or a `| --- |` rule).
    """
    if _DOT_LEADER.search(text or ""):
        return "dot leaders"
    if _PIPE_RULE.search(text or "") or any(line.count("|") >= 2 for line in (text or "").splitlines()):
        return "pipe table"
    return None


@dataclass
class Debris:
    community: int
    field: str  # "title" or "summary"
    kind: str
    text: str


def find_debris(communities: Iterable[tuple[int, str, str]]) -> list[Debris]:
    """Every (community id, title, summary) field that `debris_kind` flags, title before summary."""
    found = []
    for cid, title, summary in communities:
        for field_name, text in (("title", title), ("summary", summary)):
            kind = debris_kind(text)
            if kind:
                found.append(Debris(cid, field_name, kind, text))
    return found


# --- goal 3: chapters of a manual and their coverage -------------------------------------------------

_TOC_HEAD = re.compile(r"^\s*(table of )?contents\s*$", re.IGNORECASE)
_TOC_ENTRY = re.compile(
    r"^\s*(\d+(?:\.\d+)*)\.?\s+(.+?)(?:\s*(?:\.\s*){2,}\s*[0-9ivxlc]+)?\s*$", re.IGNORECASE
)
_STOPWORDS = (
    "a an and are as at be by for from in into is of on or the this that to with within its their "
    "appendix chapter part section annex"
)
STOPWORDS = frozenset(_STOPWORDS.split())


def read_toc_chapters(text: str) -> list[tuple[int, str]]:
    """The top-level entries (number, title) of the first table of contents in `text`.

    Reads from a "Contents" / "Table of Contents" line on: entries are numbered lines ("4. The /usr
    Hierarchy ....... 18"); sub-entries ("4.1. Purpose") and up to 3 other lines in a row (running
    headers, page numbers) are passed over; the list ends at a top-level number that does not follow
    the previous one (the body starting over at "1.") or after 4 non-entry lines in a row.
    """
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if _TOC_HEAD.match(line)), None)
    if start is None:
        return []
    chapters: list[tuple[int, str]] = []
    misses = 0
    for line in lines[start:]:
        match = _TOC_ENTRY.match(line)
        if not match or not re.search(r"[A-Za-z/]", match.group(2)):
            if line.strip():
                misses += 1
            if misses > 3:
                break
            continue
        misses = 0
        number = match.group(1)
        if "." in number:
            continue
        if int(number) != len(chapters) + 1:
            break
        chapters.append((int(number), match.group(2).strip()))
    return chapters


def paths_in(text: str) -> set[str]:
    """Filesystem-like paths in `text` and their prefixes ("/usr/lib" → {"/usr", "/usr/lib"})."""
    out = set()
    for path in re.findall(r"(?<![\w/])/[a-z0-9_][\w.-]*(?:/[\w.-]+)*", text.lower()):
        parts = path.rstrip("./").split("/")[1:]
        out |= {"/" + "/".join(parts[: i + 1]) for i in range(len(parts))}
    return out


def content_words(text: str) -> set[str]:
    """Lower-case words of `text` without stop words, plus its paths (`paths_in`)."""
    words = set(re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", text.lower()))
    return {w for w in words if w not in STOPWORDS and len(w) > 1} | paths_in(text)


def heading_lines(text: str) -> list[str]:
    """Numbered section headings quoted in a source's text ("4.4. /usr/bin : Most user commands"),
    table-of-contents lines (dot leaders) excepted: a TOC chunk would otherwise cover every chapter."""
    return [
        line.strip()
        for line in (text or "").splitlines()
        if re.match(r"^\s*\d+(?:\.\d+)*\.?\s+\S", line) and not _DOT_LEADER.search(line)
    ]


def chapter_covered(number: int, title: str, answer: str, headings: Sequence[str]) -> bool:
    """Whether an answer covers chapter `number` titled `title`.

    Covered when any of:
    (a) the title names paths (its key entities: "The /usr Hierarchy" → "/usr") and the answer names
        one of them or a path below it ("/usr/lib" covers "/usr");
    (b) the title has content words (`content_words`: lower case, stop words and
        "appendix/chapter/part/section/annex" dropped) and every one occurs among the answer's;
    (c) a cited source's section heading is numbered inside the chapter ("4", "4.4.", "4.4.1. ...";
        headings as `source_headings` gives them).
    A title with neither paths nor content words (just "Appendix") is covered only by (c).
    """
    spoken = content_words(answer)
    if paths_in(title) & spoken:
        return True
    wanted = content_words(title)
    if wanted and wanted <= spoken:
        return True
    return any(re.match(rf"^\s*{number}(?:\.\d+)*\.?\s", heading) for heading in headings)


def source_headings(sources: Iterable[dict[str, Any]]) -> list[str]:
    """A source's section headings: its `heading`/`section`/`headings` fields when the tree under test
    gives them, plus the numbered headings quoted in its text."""
    out: list[str] = []
    for source in sources:
        for key in ("heading", "section", "headings", "sectionPath"):
            value = source.get(key)
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, list):
                out.extend(str(v) for v in value)
        out.extend(heading_lines(source.get("text") or ""))
    return out


def manual_text(path: Path) -> str:
    """The text a table of contents is read from: the first 12 PDF pages, or an HTML page's text
    with one line per block element."""
    if path.suffix.lower() == ".pdf":
        import pdfplumber

        with pdfplumber.open(path) as pdf:
            return "\n".join(page.extract_text() or "" for page in pdf.pages[:12])
    raw = path.read_text(encoding="utf-8", errors="replace")
    raw = re.sub(r"<(?:/?(?:p|div|dt|dd|dl|li|h\d|tr|br|title))\b[^>]*>", "\n", raw, flags=re.IGNORECASE)
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


# --- goal 1: extraction precision --------------------------------------------------------------------


def load_labels(path: Path) -> list[dict[str, Any]]:
    """Labelled rows {document, name, label: keep|drop, kind}; a clear error on a malformed line."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path}:{n}: not JSON ({error.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            raise SystemExit(f"{path}:{n}: a row needs a string 'name'")
        if row.get("label") not in ("keep", "drop"):
            raise SystemExit(f"{path}:{n}: 'label' must be keep or drop, not {row.get('label')!r}")
        rows.append(row)
    return rows


def label_keys(name: str) -> set[str]:
    """The keys a labelled name may be stored under: `normalize_name`, with and without a leading "the"."""
    from librarian.graph.model import normalize_name

    key = normalize_name(name)
    return {key, key[4:]} if key.startswith("the ") else {key}


def label_precision(labels: Sequence[dict[str, Any]], known_names: set[str]) -> dict[str, Any]:
    """Precision of the graph's entities on the labelled sample, one labelled mention per row.

    A row is *present* when one of its `label_keys` is in `known_names` (entity keys and aliases).
    Precision = present rows labelled keep / present rows, over the drawn sample only: rows with
    `"row": "expected"` (names a reader expects, all keep) would inflate it, so they count only for
    the recall side, keep recall = present keep rows (sample and expected) / keep rows.
    """
    sample = [row for row in labels if row.get("row", "sample") != "expected"]
    present = [row for row in sample if label_keys(row["name"]) & known_names]
    kept = [row for row in present if row["label"] == "keep"]
    keep_rows = [row for row in labels if row["label"] == "keep"]
    keep_found = [row for row in keep_rows if label_keys(row["name"]) & known_names]
    return {
        "labelled": len(sample),
        "present": len(present),
        "presentKeep": len(kept),
        "precision": len(kept) / len(present) if present else None,
        "keepRecall": len(keep_found) / len(keep_rows) if keep_rows else None,
        "droppedPresent": list(dict.fromkeys(r["name"] for r in present if r["label"] == "drop"))[:10],
    }


# --- child-process steps (run with the tree under test first on sys.path) ----------------------------


def _stack(data_dir: Path) -> Any:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    return Stack(load_settings(data_dir=data_dir))


def step_ingest(data_dir: str, org: str, folder: str, only: str | None = None) -> dict:
    """Upload and ingest `folder` (or the single file `only`) into `org` (not timed: not the graph)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from bench.graphrag_build import files_of
    from services.documents import DocumentService

    service = DocumentService(_stack(Path(data_dir)), InMemorySaver())
    files = [Path(only)] if only else files_of(Path(folder))
    indexed = []
    for file in files:
        path = service.upload(org, file.name, file.read_bytes())
        if service.ingest(org, path).status == "indexed":
            indexed.append(path)
    return {"indexed": indexed, "files": len(files)}


def step_build(data_dir: str, org: str) -> dict:
    """One full graph build in this (fresh) process: wall, CPU and peak RSS, as `graph build` costs."""
    from bench.graphrag_build import peak_rss_mib
    from librarian_cli.graph import graph_build

    stack = _stack(Path(data_dir))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    report = graph_build(org, stack=stack)
    out = {"wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0}
    published = stack.graph_store.scope(org).published_version()
    if published is None:
        raise RuntimeError(f"the build did not publish: {json.dumps(report, default=str)[:1500]}")
    return {**out, "peak_rss_mib": peak_rss_mib(), "entities": published.entities, "edges": published.edges}


def step_inspect(data_dir: str, org: str, labels: str | None) -> dict:
    """Goals 0-2 on the published graph of `org`."""
    from librarian.graph.model import normalize_name

    stack = _stack(Path(data_dir))  # held: the store closes its connection with the stack
    graph = stack.graph_store.scope(org)
    if graph.published_version() is None:  # else every count below reads a reassuring 0
        raise RuntimeError(f"organization {org!r} has no published graph to inspect")
    communities = graph.communities()
    debris = find_debris((c.id, _title(c), c.summary or "") for c in communities)
    entities = graph.entities()
    resolved = graph.resolve_names(normalize_name(e.display_name) for e in entities)
    unresolved = []
    for entity in entities:
        key = resolved.get(normalize_name(entity.display_name))
        around = graph.neighbours([key], hops=1) if key else set()
        if key != entity.name or entity.name not in around or (entity.degree > 0 and len(around) < 2):
            unresolved.append(
                f"{entity.display_name!r} -> {normalize_name(entity.display_name)!r} (key {entity.name!r})"
            )
    out: dict[str, Any] = {
        "communities": len(communities),
        "debris": len(debris),
        "debrisExamples": [f"#{d.community} {d.field} ({d.kind}): {d.text[:160]!r}" for d in debris[:5]],
        "entities": len(entities),
        "unresolved": len(unresolved),
        "unresolvedExamples": unresolved[:5],
    }
    if labels and Path(labels).exists():
        known = {e.name for e in entities} | {a for e in entities for a in e.aliases}
        out["labels"] = label_precision(load_labels(Path(labels)), known)
    return out


def _title(community: Any) -> str:
    """A community's title under whichever field the tree under test names it."""
    for attr in ("title", "name", "community_name"):
        value = getattr(community, attr, None)
        if isinstance(value, str):
            return value
    return ""


def step_manual(data_dir: str, org: str, manual: str) -> dict:
    """Goal 3: the global question on the manual's own graph, checked, and its chapter coverage."""
    from services.ask import answer_with_mode

    chapters = read_toc_chapters(manual_text(Path(manual)))
    stack = _stack(Path(data_dir))
    result = asyncio.run(answer_with_mode(stack, org, GLOBAL_QUESTION, mode="global"))
    citations = result["details"].get("citations") or []
    cited_ids = {i for c in citations for i in c.get("source_ids", [])}
    cited = [s for s in result["sources"] if s.get("id") in cited_ids] or result["sources"]
    headings = source_headings(cited)
    covered = [f"{n}. {t}" for n, t in chapters if chapter_covered(n, t, result["answer"], headings)]
    debris = find_debris([(0, "", result["answer"])])
    return {
        "chapters": [f"{n}. {t}" for n, t in chapters],
        "covered": covered,
        "sentences": len(citations),
        "supported": sum(bool(c.get("supported")) for c in citations),
        "status": result["status"],
        "answer": result["answer"],
        "answerDebris": len(debris),
    }


def step_hotpot(limit: int | None) -> dict:
    """Goal 4: graph local query latency, warm p50, on HotpotQA dev150 (fresh ingest and build)."""
    from bench.graphrag import build_graph, load_qa
    from evals.corpus import ORG, ingested
    from librarian.evaluation.data import load_beir
    from librarian.graph.query.local_search import local_search
    from librarian.retrieval.rerankers import make_reranker
    from librarian.settings import load_settings

    data = load_beir(HOTPOT, "dev")
    qa = load_qa(HOTPOT, limit)

    async def run(stack: Any) -> list[float]:
        reranker = make_reranker(stack)
        times = []
        for row in qa:
            started = time.perf_counter()
            await local_search(stack, ORG, row["question"], reranker=reranker)
            times.append(1000 * (time.perf_counter() - started))
        return times

    with ingested(data, load_settings(), progress=lambda *_: None) as stack:
        started = time.perf_counter()
        build_graph(stack, ORG)
        build_s = time.perf_counter() - started
        times = asyncio.run(run(stack))
    warm = times[1:] or times
    return {
        "queries": len(times),
        "first_ms": times[0],
        "p50_ms": statistics.median(warm),
        "build_s": build_s,
    }


STEPS = {
    "ingest": step_ingest,
    "build": step_build,
    "inspect": step_inspect,
    "manual": step_manual,
    "hotpot": step_hotpot,
}


def run_step(tree: Path, step: str, **kwargs: Any) -> dict:
    """Run `step` in a fresh child process over `tree` (offline defaults: no LIBRARIAN_* settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBRARIAN_")}
    env["GRAPHRAG_QUALITY_TREE"] = str(tree)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", step, json.dumps(kwargs)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("@@")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"step {step} on {tree} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(lines[-1][2:])


def try_step(tree: Path, step: str, **kwargs: Any) -> dict:
    """`run_step`, a failure kept as {"error": ...} so the other goals are still measured (a build
    crash is itself a finding of the issue)."""
    try:
        return run_step(tree, step, **kwargs)
    except RuntimeError as error:
        print(f"[{tree}] {error}", file=sys.stderr)
        return {"error": str(error).splitlines()[-1][:300]}


def measure(tree: Path, args: argparse.Namespace) -> dict:
    """Every goal's figures for one source tree, each data directory fresh."""
    out: dict[str, Any] = {"tree": str(tree)}
    with tempfile.TemporaryDirectory(prefix="graphrag-quality-") as tmp:
        docs, manual = str(Path(tmp) / "docs"), str(Path(tmp) / "manual")
        out["ingest"] = try_step(tree, "ingest", data_dir=docs, org=DOCS_ORG, folder=str(args.docs))
        out["build"] = try_step(tree, "build", data_dir=docs, org=DOCS_ORG)
        labels = str(args.labels) if args.labels else None
        out["graph"] = try_step(tree, "inspect", data_dir=docs, org=DOCS_ORG, labels=labels)
        try_step(tree, "ingest", data_dir=manual, org=MANUAL_ORG, folder="", only=str(args.manual))
        out["manualBuild"] = try_step(tree, "build", data_dir=manual, org=MANUAL_ORG)
        out["manual"] = try_step(tree, "manual", data_dir=manual, org=MANUAL_ORG, manual=str(args.manual))
    if not args.skip_hotpot:
        out["hotpot"] = try_step(tree, "hotpot", limit=args.hotpot_queries)
    return out


# --- report --------------------------------------------------------------------------------------------


def goals_missed(result: dict) -> list[str]:
    """The goals `result` misses, as short sentences (empty: every measured goal met); a step that
    failed misses its goals."""
    missed = [f"{name} failed: {part['error']}" for name, part in result.items() if _failed(part)]
    graph, manual = result.get("graph", {}), result.get("manual", {})
    if not _failed(graph):
        if graph["debris"]:
            missed.append(f"{graph['debris']} community titles/summaries hold TOC or table debris (goal 0)")
        labels = graph.get("labels")
        if labels and (labels["precision"] is None or labels["precision"] < PRECISION_GOAL):
            missed.append(f"extraction precision {labels['precision']} < {PRECISION_GOAL:.0%}")
        if graph["unresolved"]:
            missed.append(f"{graph['unresolved']} entities do not resolve by their display name (goal 0)")
    if not _failed(manual):
        need = min(CHAPTER_GOAL, len(manual["chapters"]))
        if not manual["chapters"] or len(manual["covered"]) < need:
            missed.append(f"{len(manual['covered'])} chapters covered < {need}")
        if manual["sentences"] == 0 or manual["supported"] < manual["sentences"]:
            missed.append(
                f"{manual['supported']}/{manual['sentences']} checked sentences supported (goal all)"
            )
    return missed


def _failed(part: Any) -> bool:
    return isinstance(part, dict) and "error" in part


def _ratio(new: float | None, old: float | None) -> str:
    return f"{new / old:.2f}x" if new is not None and old else "n/a"


def show_graph(graph: dict) -> None:
    print(f"goal 0 debris: {graph['debris']} fields of {graph['communities']} communities (goal 0)")
    for line in graph["debrisExamples"]:
        print(f"    {line}")
    labels = graph.get("labels")
    if labels:
        p = "n/a" if labels["precision"] is None else f"{labels['precision']:.1%}"
        r = "n/a" if labels["keepRecall"] is None else f"{labels['keepRecall']:.1%}"
        print(
            f"goal 1 extraction precision: {p} ({labels['presentKeep']} keep of {labels['present']} "
            f"labelled mentions present; {labels['labelled']} labelled; keep recall {r}) "
            f"(goal >= {PRECISION_GOAL:.0%})"
        )
        if labels["droppedPresent"]:
            print(f"    drop-labelled present: {labels['droppedPresent']}")
    else:
        print("goal 1 extraction precision: no labelled sample (evals/graph_entities/labelled.jsonl)")
    print(f"goal 2 unresolved display names: {graph['unresolved']} of {graph['entities']} entities (goal 0)")
    for line in graph["unresolvedExamples"]:
        print(f"    {line}")


def show_manual(manual: dict) -> None:
    chapters = manual["chapters"]
    share = f"{manual['supported']}/{manual['sentences']}"
    print(
        f"goal 3 manual: {len(manual['covered'])} of {len(chapters)} chapters covered "
        f"(goal >= {min(CHAPTER_GOAL, len(chapters))}); supported sentences {share} (goal all); "
        f"status {manual['status']}; answer debris {manual['answerDebris']}"
    )
    missing = [c for c in chapters if c not in manual["covered"]]
    print(f"    chapters: {chapters}\n    not covered: {missing}")
    print(f"    answer ({len(manual['answer'])} chars): {manual['answer'][:600]!r}")


def show_cost(build: dict, hotpot: dict | None) -> None:
    print(
        f"goal 4 build: {build['wall_s']:.1f} s wall, {build['cpu_s']:.1f} s CPU, peak RSS "
        f"{build['peak_rss_mib']:.0f} MiB; {build['entities']} entities, {build['edges']} edges"
    )
    if hotpot and not _failed(hotpot):
        print(
            f"goal 4 local query on HotpotQA dev150: p50 warm {hotpot['p50_ms']:.0f} ms over "
            f"{hotpot['queries'] - 1} queries (first {hotpot['first_ms']:.0f} ms); "
            f"graph build {hotpot['build_s']:.0f} s"
        )


def show_ratios(new: dict, old: dict) -> None:
    """new / old of the cost figures both trees measured."""
    pairs = [
        (f"build {k}", new["build"].get(k), old["build"].get(k))
        for k in ("wall_s", "cpu_s", "peak_rss_mib", "entities")
        if not _failed(new["build"]) and not _failed(old["build"])
    ]
    if new.get("hotpot") and old.get("hotpot") and not _failed(new["hotpot"]) and not _failed(old["hotpot"]):
        pairs.append(("local p50", new["hotpot"]["p50_ms"], old["hotpot"]["p50_ms"]))
    cells = ", ".join(f"{name} {_ratio(a, b)}" for name, a, b in pairs) or "nothing comparable"
    print(f"new / old ({old['tree']}): {cells}")


def show(result: dict, baseline: dict | None) -> None:
    ingest = result["ingest"]
    if not _failed(ingest):
        print(f"\n== tree {result['tree']}: {len(ingest['indexed'])}/{ingest['files']} documents ingested")
    else:
        print(f"\n== tree {result['tree']}")
    for name, part in result.items():
        if _failed(part):
            print(f"{name}: FAILED {part['error']}")
    if not _failed(result["graph"]):
        show_graph(result["graph"])
    if not _failed(result["manual"]):
        show_manual(result["manual"])
    if not _failed(result["build"]):
        show_cost(result["build"], result.get("hotpot"))
    if baseline:
        show_ratios(result, baseline)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--docs", type=Path, default=DOCS, help="folder of documents for goals 0-2 and the build"
    )
    parser.add_argument(
        "--manual", type=Path, default=MANUAL, help="a manual with a table of contents (goal 3)"
    )
    parser.add_argument("--labels", type=Path, default=LABELS, help="labelled entity sample (goal 1)")
    parser.add_argument(
        "--tree", type=Path, default=REPO, help="the source tree to measure (default: this one)"
    )
    parser.add_argument(
        "--baseline-tree", type=Path, default=None, help="another source tree, for new/old ratios"
    )
    parser.add_argument("--skip-hotpot", action="store_true", help="skip the HotpotQA local latency part")
    parser.add_argument(
        "--hotpot-queries", type=int, default=None, help="only the first N HotpotQA questions"
    )
    parser.add_argument("--json", action="store_true", help="also print the raw results as JSON")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    for path in (args.docs, args.manual):
        if not path.exists():
            parser.error(f"{path} does not exist")
    result = measure(args.tree.resolve(), args)
    show(result, None)  # printed at once: the baseline takes as long again
    sys.stdout.flush()
    baseline = measure(args.baseline_tree.resolve(), args) if args.baseline_tree else None
    if baseline:
        show(baseline, None)
        print()
        show_ratios(result, baseline)
    missed = goals_missed(result)
    print("\ngoals missed:" if missed else "\nevery measured goal met", *missed, sep="\n  ")
    if args.json:
        print(json.dumps({"new": result, "old": baseline}, indent=2, default=str))
    return 1 if args.strict and missed else 0


def _child_main(step: str, kwargs: str) -> None:
    result = STEPS[step](**json.loads(kwargs))
    print("@@" + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
