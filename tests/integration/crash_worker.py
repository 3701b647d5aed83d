"""Subprocess half of the crash/resume test: ingest against Postgres and die mid fan-out.

Run as `python crash_worker.py MODE DATA_DIR POSTGRES_URL ORG FILE`; MODE is crash, resume or clean.
Parse calls are appended to DATA_DIR/parse_calls so the parent can count them across processes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from graphs.documents import DocumentService
from librarian.checkpoint import sync_checkpointer
from librarian.settings import load_settings
from librarian.stack import Stack

CRASH_ON_UPSERT_CALL = 3


def main() -> None:
    mode, data_dir, postgres_url, org, source = sys.argv[1:6]
    settings = load_settings(data_dir=Path(data_dir), postgres_url=postgres_url, upsert_batch_size=5)
    stack = Stack(settings)
    real_parse = stack.parser.parse

    def counting_parse(*args, **kwargs):
        with open(Path(data_dir) / "parse_calls", "a") as log:
            log.write("parse\n")
        return real_parse(*args, **kwargs)

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
    with sync_checkpointer(settings) as checkpointer:
        service = DocumentService(stack, checkpointer)
        if mode == "resume":
            status = service.resume(org, "docs/" + Path(source).name)
        else:
            path = service.upload(org, Path(source).name, Path(source).read_bytes())
            status = service.ingest(org, path)
    print(json.dumps(status.as_dict()))


if __name__ == "__main__":
    main()
