"""`librarian eval gate` end to end: a tiny organization's corpus ingested through the product, a
baseline accepted with the default configuration, then the same configuration (passes) and a
deliberately worse one (fails, naming the regressed metrics).

The worse configuration is `LIBRARIAN_TOP_K=1`: the first question needs two documents, so one
source cannot hold both and recall and nDCG@10 truly drop. Latency gets a wide tolerance here,
because this machine is shared and the assertions are about quality; `tests/unit` checks latency.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.evaluation.gate.store import open_gate_store
from librarian.stack import Stack
from librarian_cli import main
from services.documents import DocumentService
from tests.integration.tenant_corpus import clean_settings

ORG = "acme-gate"
DOCS = {
    "refunds.md": "# Refund policy\n\nAcme pays every refund within 14 days of the request, back to the "
    "original card.",
    "refund-desk.md": "# Refund desk\n\nRefund requests go to the Acme billing desk on the third floor, "
    "open weekdays from nine to five.",
    "parking.txt": "Visitors to the Acme office park in the north garage. The gate code changes every "
    "Monday morning.",
    "holidays.md": "# Holidays\n\nAcme staff take 25 days of paid holiday a year, booked through the "
    "people portal.",
    "printer.md": "# Printer errors\n\nError E4471 means the printer's fuser is too hot. Switch it off "
    "for ten minutes.",
}
QUESTIONS = [
    {
        "question": "How long does a refund take, and where do refund requests go?",
        "relevant": ["refunds.md", "docs/refund-desk.md"],
        "answer": "14 days",
    },
    {"question": "Where do visitors park?", "relevant": ["parking.txt"], "answer": "north garage"},
    {"question": "What does error E4471 mean?", "relevant": [{"path": "printer.md"}]},
]
CALM = ["--latency-tolerance", "20"]  # quality is under test here, not this shared machine's speed


@pytest.fixture(scope="module")
def org_data(tmp_path_factory) -> Path:
    """One ingested organization for the module: ingesting is the slow part."""
    data_dir = tmp_path_factory.mktemp("gate") / "data"
    with pytest.MonkeyPatch.context() as mp:
        stack = Stack(clean_settings(data_dir, mp))
        service = DocumentService(stack, InMemorySaver())
        for name, text in DOCS.items():
            status = service.ingest(ORG, service.upload(ORG, name, text.encode()))
            assert status.status == "indexed", status
    return data_dir


@pytest.fixture
def env(org_data, monkeypatch, tmp_path):
    """The CLI reads its settings from the environment, as a deployment's gate step would."""
    clean_settings(org_data, monkeypatch)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(org_data))
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return questions


def test_gate_fails_on_a_worse_configuration_and_passes_on_the_same(
    env, org_data, tmp_path, monkeypatch, capsys
):
    store_settings = clean_settings(org_data, monkeypatch)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(org_data))
    store = open_gate_store(store_settings)

    assert main(["eval", "gate", "--org", ORG, "--questions", str(env), "--accept", *CALM]) == 0
    out, err = capsys.readouterr()
    assert "no accepted run yet" in out and "stored 3 judged questions" in err
    baseline = store.last_accepted(ORG)
    assert baseline is not None and baseline.record["fingerprint"]["settings"]["top_k"] == 8
    assert baseline.record["metrics"]["retrieval recall"] == 1.0
    assert baseline.record["documents"] == len(DOCS)

    assert main(["eval", "gate", "--org", ORG, *CALM]) == 0
    assert "PASS: no regression beyond tolerance" in capsys.readouterr().out

    monkeypatch.setenv("LIBRARIAN_TOP_K", "1")
    html = tmp_path / "gate.html"
    assert main(["eval", "gate", "--org", ORG, "--json", "--html", str(html), "--accept", *CALM]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {"retrieval recall", "retrieval nDCG@10"} <= set(report["regressed"])
    assert report["verdict"]["status"] == "fail"
    changed = {row[0]: row[1:] for row in report["tables"][1]["rows"]}
    assert changed["top_k"] == ["8", "1"]
    worse = report["tables"][2]["rows"]
    assert [row[0] for row in worse] == ["1"]  # the two-document question
    page = html.read_text()
    assert "FAIL: regression beyond tolerance" in page
    assert "<tr class='bad'><td>retrieval recall</td>" in page
    assert store.last_accepted(ORG).id == baseline.id  # a failing run is not accepted without --force

    assert main(["eval", "gate", "--org", ORG, "--accept", "--force", *CALM]) == 0
    assert store.last_accepted(ORG).record["fingerprint"]["settings"]["top_k"] == 1
    assert main(["eval", "gate", "--org", ORG, "--no-answers", *CALM]) == 0  # now the baseline
    assert "not run" in capsys.readouterr().out


def test_gate_refuses_unusable_input_with_exit_2(env, org_data, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("question,relevant\nWhere do visitors park?,parking.txt\nNo judgment at all,\n")
    assert main(["eval", "gate", "--org", ORG, "--questions", str(bad)]) == 2
    assert "bad.csv:3: give `relevant` documents or an `answer`" in capsys.readouterr().err
    assert main(["eval", "gate", "--org", "nobody-here"]) == 2
    assert "organization nobody-here has no judged questions" in capsys.readouterr().err
    assert main(["eval", "gate", "--org", "empty-org", "--questions", str(env)]) == 2
    assert "organization empty-org has no documents" in capsys.readouterr().err
    assert main(["eval", "gate", "--org", ORG, "--questions", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl does not exist" in capsys.readouterr().err
