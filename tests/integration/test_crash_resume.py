"""Kill the ingesting process in the middle of the upsert fan-out, resume it in a new process.

Runs against the real PostgreSQL checkpointer: the resumed run must finish without parsing again,
and the index must equal a clean run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_URL, REPO_DIR, require_postgres

pytestmark = pytest.mark.postgres
WORKER = Path(__file__).with_name("crash_worker.py")


def _postgres_or_skip() -> None:
    require_postgres()


def _run(mode: str, data_dir: Path, org: str, source: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR)}
    return subprocess.run(
        [sys.executable, str(WORKER), mode, str(data_dir), POSTGRES_URL, org, str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO_DIR,
    )


def _index_contents(data_dir: Path, org: str) -> dict[str, tuple[str, tuple[float, ...]]]:
    from librarian.settings import load_settings
    from librarian.stack import Stack

    stack = Stack(load_settings(data_dir=data_dir))
    ids = stack.index.list_ids(namespace=org)
    records = stack.index.fetch(ids, namespace=org)
    return {
        rid: (r["metadata"]["text"], tuple(round(v, 5) for v in r["values"])) for rid, r in records.items()
    }


def test_killed_ingest_resumes_without_reparsing(tmp_path):
    _postgres_or_skip()
    source = tmp_path / "manual.txt"
    source.write_text(
        "\n\n".join(f"Section {i}. " + f"Procedure step {i} explains the valve. " * 25 for i in range(40))
    )
    org = f"crash-{uuid.uuid4().hex[:12]}"

    crashed_dir = tmp_path / "crashed"
    crashed = _run("crash", crashed_dir, org, source)
    assert crashed.returncode == 17, crashed.stderr[-2000:]
    assert (crashed_dir / "parse_calls").read_text().count("parse") == 1

    resumed = _run("resume", crashed_dir, org, source)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    status = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert status["status"] == "indexed", status
    assert (crashed_dir / "parse_calls").read_text().count("parse") == 1, "resume must not parse again"

    clean_org = f"clean-{uuid.uuid4().hex[:12]}"
    clean = _run("clean", tmp_path / "clean", clean_org, source)
    assert clean.returncode == 0, clean.stderr[-2000:]
    clean_status = json.loads(clean.stdout.strip().splitlines()[-1])
    assert status["chunkCount"] == clean_status["chunkCount"] > 10

    assert _index_contents(crashed_dir, org) == _index_contents(tmp_path / "clean", clean_org)
