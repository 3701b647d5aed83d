"""The `librarian` command on the embedded stack: ingest a folder, status table, delete, reindex."""

from __future__ import annotations

import pytest

from librarian_cli import main


@pytest.fixture
def cli_env(tmp_path, monkeypatch, settings):
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(settings.data_dir))
    from librarian.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_ingest_status_delete_reindex(tmp_path, cli_env, capsys):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("# Alpha\n\nAlpacas graze on the high plains of the Andes.")
    (folder / "sub" / "b.txt").write_text("Bees make honey from the nectar of flowers.")
    (folder / "empty.txt").write_bytes(b"")
    (folder / ".hidden").write_text("not a document")

    assert main(["ingest", str(folder), "--org", "cli-org", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "docs/a.md" in out and "docs/b.txt" in out and "docs/empty.txt" in out
    assert ".hidden" not in out
    assert out.count("indexed") == 2 and "skipped" in out

    assert main(["reindex", "--org", "cli-org"]) == 0
    assert main(["delete", "docs/a.md", "--org", "cli-org"]) == 0
    assert main(["status", "--org", "cli-org"]) == 0
    out = capsys.readouterr().out
    assert "docs/a.md" not in out.split("Documents")[-1]


def test_bad_organization_is_a_clear_error(cli_env, capsys):
    assert main(["status", "--org", "../etc"]) == 2
    assert "organization id" in capsys.readouterr().err
