"""The gate's arithmetic without a corpus: scores of known rankings, verdicts at and beyond the
tolerances, the configuration fingerprint (no secret in it), and the HTML comparison."""

from __future__ import annotations

import json

import pytest

from librarian.evaluation.gate.compare import Tolerances, compare, judge, regressed
from librarian.evaluation.gate.fingerprint import SHAPING_SETTINGS, changes, digest, shaping_settings
from librarian.evaluation.gate.questions import JudgedQuestion, Relevant
from librarian.evaluation.gate.scores import (
    ANSWER_METRICS,
    ANSWER_P50,
    CITATION_PRECISION,
    NDCG,
    RECALL,
    SEARCH_P50,
    UNSUPPORTED,
    Ranked,
    Summary,
    add_answer,
    ranked_keys,
    score_retrieval,
)
from librarian.evaluation.report import to_html, to_text
from librarian.settings import Settings

TWO = JudgedQuestion("1", "q", (Relevant("docs/a.md"), Relevant("docs/b.pdf", 2)))


def test_retrieval_scores_fold_chunks_and_respect_pages():
    ranked = [
        Ranked("docs/a.md", 1),
        Ranked("docs/a.md", 1),
        Ranked("docs/b.pdf", 1),
        Ranked("docs/b.pdf", 2),
    ]
    assert ranked_keys(ranked, TWO.relevant) == ["docs/a.md", "other:docs/b.pdf", "docs/b.pdf#page=2"]
    both = score_retrieval(TWO, ranked, 5.0)
    assert both.recall == 1.0 and 0.9 < both.ndcg < 1.0  # b's judged page comes third, not second
    top1 = score_retrieval(TWO, ranked[:1], 5.0)
    assert top1.recall == 0.5 and top1.ndcg == pytest.approx(1 / (1 + 1 / 1.585), rel=1e-3)
    answer_only = score_retrieval(JudgedQuestion("2", "q", (), ("x",)), ranked, 1.0)
    assert answer_only.ndcg is None and answer_only.recall is None


def test_summary_pools_citations_over_answers():
    a, b = score_retrieval(TWO, [], 10.0), score_retrieval(TWO, [], 30.0)
    supported = {"markers": [1], "supported": True, "evidence": [{"supported": True}]}
    unsupported = {
        "markers": [1, 2],
        "supported": False,
        "evidence": [{"supported": False}, {"supported": True}],
    }
    add_answer(a, TWO, "x", [supported, {"markers": [], "evidence": []}], 100.0)
    add_answer(b, TWO, "y", [unsupported, unsupported, supported], 300.0)
    metrics = Summary.of([a, b]).metrics
    assert metrics[CITATION_PRECISION] == pytest.approx(4 / 6)
    assert metrics[UNSUPPORTED] == pytest.approx(2 / 4)  # sentences without markers are not counted
    assert metrics[SEARCH_P50] == 20.0 and metrics[ANSWER_P50] == 200.0


def test_verdicts_at_and_beyond_the_tolerances():
    t = Tolerances(quality=0.02, latency=1.0, latency_slack_ms=50)
    assert judge(NDCG, 0.80, 0.78, t) == "ok"
    assert judge(NDCG, 0.80, 0.7799, t) == "REGRESSED"
    assert judge(NDCG, 0.80, 0.90, t) == "improved"
    assert judge(UNSUPPORTED, 0.10, 0.13, t) == "REGRESSED"
    assert judge(UNSUPPORTED, 0.10, 0.05, t) == "improved"
    assert judge(SEARCH_P50, 10.0, 55.0, t) == "ok"  # slower than 2x, but within the 50 ms slack
    assert judge(SEARCH_P50, 100.0, 199.0, t) == "ok"
    assert judge(SEARCH_P50, 100.0, 201.0, t) == "REGRESSED"
    assert judge(CITATION_PRECISION, 0.9, None, t) == "REGRESSED"  # losing a measurement fails
    assert judge(CITATION_PRECISION, None, 0.9, t) == "new"
    with pytest.raises(ValueError, match="within 0 and 1"):
        Tolerances(quality=2)


def test_compare_rows_skip_what_was_not_run():
    accepted = {NDCG: 1.0, RECALL: 1.0, CITATION_PRECISION: 1.0, ANSWER_P50: 100.0}
    now = {NDCG: 0.5, RECALL: 1.0, CITATION_PRECISION: None, ANSWER_P50: None}
    rows = compare(accepted, now, Tolerances())
    assert regressed(rows) == [NDCG, CITATION_PRECISION, ANSWER_P50]
    rows = compare(accepted, now, Tolerances(), not_run=ANSWER_METRICS)
    assert regressed(rows) == [NDCG]
    assert {r.metric: r.verdict for r in rows}[CITATION_PRECISION] == "not run"
    assert rows[0].cells() == [NDCG, 1.0, 0.5, -0.5, "-0.02", "REGRESSED"]


def test_fingerprint_holds_shaping_settings_and_no_secret():
    secret = "sk-very-secret-value"
    settings = Settings(
        openai_api_key=secret,
        pinecone_api_key=secret,
        cohere_api_key=secret,
        auth_secret=secret,
        postgres_url=f"postgresql://u:{secret}@db/x",
        top_k=3,
    )
    shaped = shaping_settings(settings)
    assert set(shaped) == set(SHAPING_SETTINGS) and shaped["top_k"] == 3
    assert secret not in json.dumps(shaped)
    assert not [n for n in SHAPING_SETTINGS if any(w in n for w in ("key", "secret", "url", "password"))]
    a = {"settings": {"top_k": 8, "alpha": 0.75}, "models": {"dense": "m"}, "code": "1"}
    b = {"settings": {"top_k": 1, "alpha": 0.75}, "models": {"dense": "n"}, "code": "1"}
    assert changes(a, b) == [("top_k", 8, 1), ("models.dense", "m", "n")]
    assert digest(a) != digest(b) and digest(a) == digest(json.loads(json.dumps(a)))


def test_html_marks_the_regressed_row_and_leads_with_the_verdict():
    rows = compare({NDCG: 1.0, RECALL: 0.5}, {NDCG: 0.5, RECALL: 0.9}, Tolerances())
    report = {
        "title": "librarian eval gate: acme",
        "verdict": {"status": "fail", "message": "regression beyond tolerance: retrieval nDCG@10"},
        "summary": {"organization": "acme"},
        "tables": [{"name": "comparison", "columns": ["metric", "accepted", "now", "delta", "tolerance",
                    "verdict"], "rows": [r.cells() for r in rows], "flag": "verdict"}],
    }  # fmt: skip
    page = to_html(report)
    assert page.index("FAIL: regression beyond tolerance") < page.index("<table>")
    assert "<tr class='bad'><td>retrieval nDCG@10</td>" in page
    assert "<tr class='good'><td>retrieval recall</td>" in page
    assert "verdict: FAIL: regression beyond tolerance" in to_text(report)
    plain = to_html({"title": "t", "tables": [{"name": "n", "columns": ["a"], "rows": [["REGRESSED"]]}]})
    assert "class='bad'" not in plain  # only a table that names its flag column is marked
