"""`librarian eval` on a tiny BEIR folder and a tiny QA file written here, through the real product.

The corpus is small enough to ingest in seconds, and its queries are built so that each channel has
something to win: an exact code only the sparse channel matches, a paraphrase the dense one gets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.corpus import ingested
from evals.retrieval import evaluate_retrieval
from librarian.evaluation.data import EvalDataError, load_beir, load_qa
from librarian.evaluation.metrics import exact_match, kfold, mrr_at, ndcg_at, recall_at, token_f1
from librarian.evaluation.report import to_html, to_text
from librarian_cli import main as librarian_main
from librarian_cli.eval import main
from tests.integration.tenant_corpus import clean_settings

DOCS = {
    "d1": ("Refunds", "Acme pays every refund within 14 days of the request, back to the original card."),
    "d2": ("Parking", "Visitors park in the north garage; the gate code changes every Monday."),
    "d3": ("Error E4471", "Error E4471 means the printer's fuser is too hot. Switch it off for ten minutes."),
    "d4": ("Holidays", "Staff take 25 days of paid holiday a year, booked through the people portal."),
    "d5": ("Laptops", "New employees receive a laptop on their first day and meet a mentor."),
    "d6": ("Security", "Badges must be worn visibly at all times inside the campus."),
}
QUERIES = {
    "q1": "How long until my money comes back after I return something?",
    "q2": "what does E4471 mean",
    "q3": "Where can guests leave their car?",
    "q4": "How many vacation days do employees get?",
}
QRELS = {"q1": "d1", "q2": "d3", "q3": "d2", "q4": "d4"}


def write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as f:
        for doc_id, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w") as f:
        for qid, text in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    rows = "".join(f"{q}\t{d}\t1\n" for q, d in QRELS.items())
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return folder


@pytest.fixture
def settings(tmp_path, monkeypatch):
    return clean_settings(tmp_path / "data", monkeypatch)


def test_metrics_on_known_rankings():
    rel = {"a": 1, "b": 2}
    assert ndcg_at(["b", "a", "x"], rel) == pytest.approx(1.0)
    assert ndcg_at(["x", "a"], rel) == pytest.approx((1 / 1.585) / (2 + 1 / 1.585), rel=1e-3)
    assert mrr_at(["x", "y", "a"], rel) == pytest.approx(1 / 3)
    assert recall_at(["a"] + ["x"] * 200, rel, 100) == 0.5
    assert exact_match("The Chief of Protocol.", ["Chief of Protocol"]) == 1.0
    assert token_f1("chief protocol officer", ["Chief of Protocol"]) == pytest.approx(2 / 3)
    folds = kfold([f"q{i}" for i in range(11)], 5)
    assert sorted(q for _, test in folds for q in test) == sorted(f"q{i}" for i in range(11))
    assert all(not set(train) & set(test) for train, test in folds)


def test_eval_retrieval_reports_every_pipeline_and_kfold(tmp_path, settings):
    data = load_beir(write_beir(tmp_path / "beir"), "test")
    with ingested(data, settings, progress=lambda _: None) as stack:
        report = evaluate_retrieval(stack, data, folds=2, progress=lambda _: None)
    pipelines = {row[0]: row for row in report["tables"][0]["rows"]}
    names = list(pipelines)
    assert names[0].startswith("configured: hybrid a=0.75, rerank=none")
    assert {"dense only (a=1)", "sparse only (a=0)", "hybrid a=0.75, no rerank"} <= set(names)
    assert "hybrid a=0.75 + local rerank" in names and "bm25s (whole documents)" in names
    for name, ndcg, recall, mrr, _ in pipelines.values():
        assert 0.0 <= ndcg <= 1.0 and 0.0 <= mrr <= 1.0, name
        assert recall == 1.0, name  # six documents: every one is in the top 100
    configured, hybrid = pipelines[names[0]], pipelines["hybrid a=0.75, no rerank"]
    assert configured[1:4] == pytest.approx(hybrid[1:4])  # the configured pipeline is plain hybrid
    assert hybrid[1] >= 0.75  # each query finds its document near the top
    assert configured[4] > 0  # timed end to end
    fitted = {row[0]: row for row in report["tables"][1]["rows"]}
    alpha = fitted["alpha (grid 0-1 step 0.05)"]
    assert alpha[3] <= alpha[2] + 1e-9  # held out never beats the in-sample best
    assert "local rerank weights (grid step 0.1)" in fitted
    recall = {row[0]: row[1:] for row in report["tables"][2]["rows"]}  # the HippoRAG protocol
    assert report["tables"][2]["columns"] == ["pipeline", "recall@2", "recall@5"]
    assert set(recall) == {names[0], "bm25s (whole documents)"}
    assert all(0.0 <= at2 <= at5 <= 1.0 for at2, at5 in recall.values())
    assert recall[names[0]][1] >= 0.75  # one relevant document per query, found near the top
    text, page = to_text(report), to_html(report)
    assert "nDCG@10" in text and "held-out" in text and "recall@2" in text
    assert (
        page.startswith("<!doctype html>")
        and "<svg" in page
        and "http" not in page.replace("http://www.w3.org/2000/svg", "")
    )


def test_eval_command_json_html_and_bad_input(tmp_path, settings, capsys):
    folder = write_beir(tmp_path / "beir")
    html = tmp_path / "report.html"
    code = main(
        ["retrieval", "--data", str(folder), "--folds", "2", "--no-rerank", "--json", "--html", str(html)]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["judged queries"] == 4 and report["summary"]["documents"] == 6
    assert "<svg" in html.read_text()
    assert main(["retrieval", "--data", str(folder), "--split", "dev"]) == 2
    assert "qrels/dev.tsv does not exist (splits here: test)" in capsys.readouterr().err
    assert librarian_main(["eval", "answers", "--qa", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answers": "not a list"}\n')
    with pytest.raises(EvalDataError, match="answers must be a list"):
        load_qa(bad)


def test_eval_answers_on_a_tiny_qa_file(tmp_path, settings, capsys):
    folder = write_beir(tmp_path / "qa")
    qa = folder / "qa.jsonl"
    qa.write_text(
        "\n".join(
            json.dumps(item)
            for item in [
                {
                    "question": "What does error E4471 mean?",
                    "answers": ["the fuser is too hot"],
                    "supporting_doc_ids": ["d3"],
                },
                {
                    "question": "How many days of paid holiday do staff take?",
                    "answers": ["25 days"],
                    "supporting_doc_ids": ["d4"],
                },
            ]
        )
    )
    assert main(["answers", "--qa", str(qa), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    metrics = report["metrics"]
    assert report["summary"]["questions"] == 2
    assert set(metrics) >= {"answer EM", "answer F1", "supporting docs among cited sources (recall)"}
    assert metrics["supporting docs among retrieved sources (recall)"] == 1.0
    assert metrics["supporting docs among cited sources (recall)"] > 0
    assert metrics["gold answer contained"] > 0  # the extractive answer quotes the document
    assert metrics["citation recall (cited sentences supported)"] is not None


def test_eval_answers_with_graph_routes_overview_questions_to_the_graph(tmp_path, settings, capsys):
    """`--graph` builds the corpus's graph index first, and questions the mode chooser sends to the
    graph are answered from it (here the named code E4471 goes to local search; the theme question
    goes to global, which falls back to search when the tiny graph's communities do not answer);
    without `--graph` every answer comes from search."""
    folder = write_beir(tmp_path / "qa")
    qa = folder / "qa.jsonl"
    items = [
        {
            "question": "What are the main themes across these documents?",
            "answers": ["refunds"],
            "supporting_doc_ids": ["d1"],
        },
        {
            "question": "What does error E4471 mean?",
            "answers": ["the fuser is too hot"],
            "supporting_doc_ids": ["d3"],
        },
    ]
    qa.write_text("\n".join(json.dumps(item) for item in items))
    assert main(["answers", "--qa", str(qa), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["answered from"] == "search 2"
    assert main(["answers", "--qa", str(qa), "--json", "--graph"]) == 0
    captured = capsys.readouterr()
    assert "graph index:" in captured.err
    answered_from = json.loads(captured.out)["summary"]["answered from"]
    assert "local 1" in answered_from, answered_from
