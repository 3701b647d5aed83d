"""The graph build's status report, shared by the CLI (`GraphIndexService`) and the server's routes.

The report combines the build thread's latest checkpoint (the last build) with the store's published
version (what queries see) and the indexed documents the published version does not reflect yet
(stale). Each front door reads the checkpoint its own way; the rest is the same facts, read here.
A build stopped over its token budget reports `stopped` with error `budget`, the figures (`budget`:
limit, spent, estimated, stage) and a reason; `costs` (the organization's cost ledger) is added by
`with_costs`.
"""

from __future__ import annotations

from typing import Any

from graphs.graph_index_stages import indexed_documents
from librarian.graph.model import GraphVersion
from librarian.stack import Stack


def build_status(values: dict[str, Any], next_nodes: Any, task_errors: list[Any]) -> dict[str, Any]:
    """The last build as its checkpoint describes it (`never` when the thread has no checkpoint)."""
    if not values:
        return {"status": "never"}
    status = values.get("status") or "running"
    if next_nodes:
        status = "failed" if task_errors else "running"
    out = {
        "status": status,
        "startedAt": values.get("startedAt"),
        "updatedAt": values.get("updatedAt"),
        "publishedVersion": values.get("publishedVersion"),
        "documents": len(values.get("documents") or []),
        "extracted": [r["path"] for r in values.get("extracted") or [] if r.get("status") == "extracted"],
        "chunksExtracted": sum(
            int(r.get("chunks", 0)) - int(r.get("chunksReused", 0)) for r in values.get("extracted") or []
        ),
        "chunksReused": sum(int(r.get("chunksReused", 0)) for r in values.get("extracted") or []),
        "failedDocuments": [
            {"path": r["path"], "reason": r.get("reason")}
            for r in values.get("extracted") or []
            if r.get("status") == "failed"
        ],
        "skippedDocuments": values.get("skippedDocuments") or [],
        "summariesReused": values.get("summariesReused", 0),
        "summariesWritten": values.get("summariesWritten", 0),
        "extractionsPruned": values.get("extractionsPruned", 0),
        "timings": values.get("timings") or {},
        "buildTokens": int(values.get("buildTokens") or 0),
    }
    if task_errors:
        out["error"] = "build_error"
        out["reason"] = str(task_errors[0])[:500]
    elif status in ("cancelled", "stopped"):  # the build recorded why it stopped (a cancel, its budget)
        out.update({k: values[k] for k in ("error", "reason", "budget") if values.get(k)})
    return out


def status_report(
    org: str,
    published: GraphVersion | None,
    published_docs: dict[str, str],
    indexed: dict[str, str],
    last: dict,
) -> dict[str, Any]:
    """GET /orgs/{org}/graph and `librarian graph status`: version, counts, last build, staleness."""
    stale = sorted(p for p, h in indexed.items() if published_docs.get(p) != h)
    removed = sorted(p for p in published_docs if p not in indexed)
    report: dict[str, Any] = {
        "organization_id": org,
        "version": published.version if published else None,
        "publishedAt": published.published_at if published else None,
        "documents": published.documents if published else 0,
        "entities": published.entities if published else 0,
        "edges": published.edges if published else 0,
        "claims": published.claims if published else 0,
        "communitiesPerLevel": (
            {str(k): v for k, v in sorted(published.communities_per_level.items())} if published else {}
        ),
        "extractor": published.extractor if published else None,
        "summarizer": published.summarizer if published else None,
        "lastBuild": last,
        "staleDocuments": stale,
        "removedDocuments": removed,
        "upToDate": published is not None and not stale and not removed,
    }
    return report


def published_facts(stack: Stack, org: str) -> tuple[GraphVersion | None, dict[str, str], dict[str, str]]:
    """The published version, the documents it was built from and the indexed ones (path -> hash)."""
    graph = stack.graph_store.scope(org)
    published = graph.published_version()
    published_docs = {d.path: d.content_hash for d in graph.documents()} if published else {}
    documents, _skipped = indexed_documents(stack, org)
    return published, published_docs, {d["path"]: d["contentHash"] for d in documents}


def with_costs(report: dict[str, Any], stack: Stack, org: str) -> dict[str, Any]:
    """The status report plus the organization's cost ledger per phase (zeros offline)."""
    from librarian.costs.ledger import ledger_of

    return {**report, "costs": ledger_of(stack).report(org)}
