"""Subprocess half of the crash/resume test and of `bench/crash_trials.py`: ingest, die, resume.

    python crash_worker.py MODE DATA_DIR POSTGRES_URL ORG FILE

MODE is `crash` (die with `os._exit` at the 3rd upsert), `run` (upload and ingest; the parent kills
it with SIGKILL at a random moment after the line READY), `resume` (finish the interrupted run),
`finish` (whatever is left after a kill anywhere: resume a started run, or upload and ingest again)
or `clean`. POSTGRES_URL may be empty for the SQLite checkpointer in DATA_DIR.

Each parse call appends a line to DATA_DIR/parse_calls when it starts and to DATA_DIR/parse_done
(with the content hash) when it returns, so the parent can count parses across processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from librarian.checkpoint import sync_checkpointer
from librarian.settings import load_settings
from librarian.stack import Stack
from services.documents import DocumentNotFoundError, DocumentService

CRASH_ON_UPSERT_CALL = 3
FINAL = ("indexed", "skipped", "failed")


def _append(path: Path, line: str) -> None:
    with open(path, "a") as log:
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())


def main() -> None:
    mode, data_dir, postgres_url, org, source = sys.argv[1:6]
    data = Path(data_dir)
    settings = load_settings(data_dir=data, postgres_url=postgres_url or None, upsert_batch_size=5)
    stack = Stack(settings)
    real_parse = stack.parser.parse

    def counting_parse(blob, *args, **kwargs):
        _append(data / "parse_calls", "parse")
        result = real_parse(blob, *args, **kwargs)
        _append(data / "parse_done", hashlib.sha256(blob).hexdigest())
        return result

    stack.parser.parse = counting_parse
    if mode == "crash":
        real_upsert = stack.index.upsert
        calls = {"n": 0}

        def upsert_then_die(records, *, namespace):
            calls["n"] += 1
            if calls["n"] == CRASH_ON_UPSERT_CALL:
                os._exit(17)  # a hard kill: no cleanup, no exception handling
            return real_upsert(records, namespace=namespace)

        stack.index.upsert = upsert_then_die
    name = Path(source).name
    path = "docs/" + name
    with sync_checkpointer(settings) as checkpointer:
        service = DocumentService(stack, checkpointer)
        if mode == "resume":
            status = service.resume(org, path)
        elif mode == "finish":
            status = finish(service, org, path, Path(source))
        else:
            if mode == "run":
                print("READY", flush=True)
            path = service.upload(org, name, Path(source).read_bytes())
            status = service.ingest(org, path)
    print(json.dumps(status.as_dict()))


def finish(service: DocumentService, org: str, path: str, source: Path):
    """After a kill at any point: resume a run that has checkpoints, else start again."""
    try:
        status = service.resume(org, path)
    except DocumentNotFoundError:  # killed before the file was stored
        status = None
    if status is None or status.status not in FINAL:
        path = service.upload(org, source.name, source.read_bytes())
        status = service.ingest(org, path)
    return status


if __name__ == "__main__":
    main()
