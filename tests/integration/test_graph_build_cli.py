"""`librarian graph build` and `librarian graph status` in-process, on the embedded stack."""

from __future__ import annotations

import json
import os

import pytest

from librarian_cli import main

CAROL = "Ebenezer Scrooge employs Bob Cratchit in London. Mr. Scrooge fears Jacob Marley.\n"


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    from librarian.settings import get_settings

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "carol.txt").write_text(CAROL)

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    run.folder = str(tmp_path / "in")  # type: ignore[attr-defined]
    yield run
    get_settings.cache_clear()


def test_graph_build_then_status(cli):
    assert cli("ingest", cli.folder, "--org", "acme", "--quiet")[0] == 0
    code, out, _err = cli("graph", "status", "--org", "acme", "--json")
    before = json.loads(out)
    assert code == 0 and before["version"] is None and before["staleDocuments"] == ["docs/carol.txt"]
    code, out, _err = cli("graph", "build", "--org", "acme", "--json")
    report = json.loads(out)
    assert code == 0 and report["version"] == 1 and report["upToDate"] is True
    assert report["lastBuild"]["extracted"] == ["docs/carol.txt"] and report["entities"] >= 3
    code, out, _err = cli("graph", "status", "--org", "acme")
    assert code == 0 and "Graph index of acme" in out and "level 0" in out


def test_graph_commands_refuse_bad_organizations(cli):
    code, _out, err = cli("graph", "build", "--org", "nobody")
    assert code == 1 and "no documents" in err
    code, _out, err = cli("graph", "status", "--org", "../x")
    assert code != 0 and "organization id" in err
