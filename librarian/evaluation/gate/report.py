"""The gate's report as a plain dict, for `librarian.evaluation.report` to render as text, JSON or HTML.

It leads with the verdict, then the comparison table (metric, accepted, now, delta, tolerance,
verdict), what changed in the configuration since the accepted run, and per question where
retrieval got worse, so a failed gate says which metric, why, and on which questions.
"""

from __future__ import annotations

from typing import Any

from librarian.evaluation.gate.compare import COLUMNS, Row, Tolerances, regressed
from librarian.evaluation.gate.fingerprint import changes
from librarian.evaluation.gate.run import GateRun
from librarian.evaluation.gate.store import AcceptedRun

PER_QUESTION_SHOWN = 50


def verdict_text(rows: list[Row], accepted: AcceptedRun | None) -> tuple[str, str]:
    """("pass" | "fail" | "baseline", one sentence)."""
    if accepted is None:
        return "baseline", "no accepted run yet: nothing to compare with (--accept makes a run the baseline)"
    bad = regressed(rows)
    if bad:
        return "fail", f"regression beyond tolerance: {', '.join(bad)}"
    return (
        "pass",
        f"no regression beyond tolerance against accepted run {accepted.id} ({accepted.accepted_at})",
    )


def gate_report(
    run: GateRun, accepted: AcceptedRun | None, rows: list[Row], tolerances: Tolerances
) -> dict[str, Any]:
    status, sentence = verdict_text(rows, accepted)
    fp = run.fingerprint
    summary: dict[str, Any] = {
        "organization": run.organization,
        "questions": len(run.results),
        "documents": run.documents,
        "configuration": fp["digest"],
        "code": fp["code"],
        "accepted run": f"{accepted.id} ({accepted.accepted_at})" if accepted else "none",
        "quality tolerance": f"{tolerances.quality:g} (absolute)",
        "latency tolerance": f"+{tolerances.latency:.0%} and +{tolerances.latency_slack_ms:g} ms",
    }
    comparison = {"name": "comparison with the accepted run", "columns": list(COLUMNS), "flag": "verdict"}
    tables: list[dict[str, Any]] = [{**comparison, "rows": [r.cells() for r in rows]}]
    if accepted is not None:
        if accepted.record.get("questions_digest") != run.questions_digest:
            summary["note"] = "the judged questions changed since the accepted run"
        if accepted.record.get("documents") not in (None, run.documents):
            summary["documents"] = f"{run.documents} (accepted run: {accepted.record['documents']})"
        changed = changes(accepted.record.get("fingerprint", {}), fp)
        tables.append(
            {
                "name": "configuration changed since the accepted run",
                "columns": ["setting", "accepted", "now"],
                "rows": [[k, _shown(a), _shown(n)] for k, a, n in changed] or [["(none)", "", ""]],
            }
        )
        tables.append(per_question_table(run, accepted))
    return {
        "kind": "gate",
        "title": f"librarian eval gate: {run.organization}",
        "verdict": {"status": status, "message": sentence},
        "summary": summary,
        "metrics": run.summary.metrics,
        "regressed": regressed(rows),
        "tables": tables,
    }


def _shown(value: Any) -> str:
    return "(unset)" if value is None else str(value)


def per_question_table(run: GateRun, accepted: AcceptedRun) -> dict[str, Any]:
    """Questions whose nDCG or recall dropped, worst first (the ones to look at)."""
    before = {str(q["id"]): q for q in accepted.record.get("per_question", [])}
    rows = []
    for result in run.results:
        old = before.get(result.id)
        if old is None or result.ndcg is None or old.get("ndcg") is None:
            continue
        drop = (old["ndcg"] - result.ndcg) + (old.get("recall", 0) - (result.recall or 0))
        if drop > 1e-9:
            rows.append((drop, [result.id, result.question[:120], old["ndcg"], result.ndcg,
                                old.get("recall"), result.recall]))  # fmt: skip
    rows.sort(key=lambda r: -r[0])
    return {
        "name": "questions whose retrieval got worse",
        "columns": ["id", "question", "nDCG accepted", "nDCG now", "recall accepted", "recall now"],
        "rows": [r for _, r in rows[:PER_QUESTION_SHOWN]] or [["(none)", "", "", "", "", ""]],
    }
