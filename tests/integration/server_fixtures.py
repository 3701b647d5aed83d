"""A real `langgraph dev` server for integration tests, plus the few helpers every server test needs.

The server runs as a subprocess on a free loopback port (never 2024, which is taken on this machine)
with offline flags, several background jobs, and a temporary working directory and data directory:
the dev server pickles its threads into `./.langgraph_api`, so a shared working directory would leak
threads from one test run into the next. The repository's `langgraph.json` is copied there with its
relative paths made absolute, so the configuration under test is the committed one.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from librarian.auth import mint_token
from tests.conftest import DOCS_DIR

REPO_DIR = Path(__file__).resolve().parents[2]
TAKEN_PORTS = {2024}
READY_DEADLINE_S = 90.0
SECRET = "test-secret-" + "x" * 40  # >= 32 bytes, fixed so helpers can mint tokens


def free_port() -> int:
    """A free loopback port other than the ones known to be taken."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in TAKEN_PORTS:
            return port


def config_for(workdir: Path, source: Path = REPO_DIR / "langgraph.json") -> Path:
    """Copy `langgraph.json` into `workdir`, making `./` paths point into the repository."""
    config = json.loads(source.read_text())

    def absolute(spec: str) -> str:
        return str(REPO_DIR / spec[2:]) if spec.startswith("./") else spec

    config["graphs"] = {name: absolute(spec) for name, spec in config["graphs"].items()}
    config["dependencies"] = [str(REPO_DIR) if d == "." else absolute(d) for d in config["dependencies"]]
    config["http"]["app"] = absolute(config["http"]["app"])
    config["auth"]["path"] = absolute(config["auth"]["path"])
    if "checkpointer" in config:
        config["checkpointer"]["path"] = absolute(config["checkpointer"]["path"])
    target = workdir / "langgraph.json"
    target.write_text(json.dumps(config, indent=2))
    return target


def server_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a test server: offline flags, our secret, and no stray LIBRARIAN_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIBRARIAN_", "OPENAI_", "LANGSMITH_"))}
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="1",
        LANGSMITH_TRACING="false",
        LIBRARIAN_DATA_DIR=str(data_dir),
        LIBRARIAN_AUTH_SECRET=SECRET,
        PYTHONUNBUFFERED="1",
    )
    env.update(extra or {})
    return env


class DevServer:
    """One `langgraph dev` process; `url` is set once it answers `/ok`."""

    def __init__(
        self, workdir: Path, env: Mapping[str, str], jobs: int = 4, config: str = "langgraph.json"
    ) -> None:
        self.workdir = workdir
        self.config = REPO_DIR / config
        self.env = dict(env)
        self.jobs = jobs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0

    def command(self) -> list[str]:
        langgraph = Path(sys.executable).with_name("langgraph")
        return [
            str(langgraph),
            "dev",
            "--config",
            str(config_for(self.workdir, self.config)),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-browser",
            "--no-reload",
            "--n-jobs-per-worker",
            str(self.jobs),
        ]

    def start(self, deadline_s: float = READY_DEADLINE_S) -> DevServer:
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.workdir,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so stop() reaches the workers too
            )
        self._wait_ready(started + deadline_s)
        self.startup_s = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        assert self.process is not None
        with httpx.Client(timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"langgraph dev exited with {self.process.returncode}:\n{self.log_tail()}"
                    )
                try:
                    if http.get(f"{self.url}/ok").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                _pause_until_next_poll(self.process)
        self.stop()
        raise TimeoutError(f"langgraph dev was not ready within the deadline:\n{self.log_tail()}")

    def wait_exit(self, timeout_s: float) -> int | None:
        """Wait for the process to exit on its own (start-up failures); None if it is still up."""
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)
        except ProcessLookupError:
            pass


def _pause_until_next_poll(process: subprocess.Popen[bytes], interval_s: float = 0.1) -> None:
    """Wait a poll interval, returning early if the server process exits meanwhile."""
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=interval_s)


@contextmanager
def running_server(
    tmp_dir: Path, extra_env: Mapping[str, str] | None = None, jobs: int = 4
) -> Iterator[DevServer]:
    workdir = tmp_dir / "server"
    workdir.mkdir(parents=True, exist_ok=True)
    server = DevServer(workdir, server_env(tmp_dir / "data", extra_env), jobs=jobs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- tokens and calls ------------------------------------------------------------------------------


def token(
    user: str, org: str, *, orgs: list[str] | None = None, role: str = "member", ttl_s: int = 3600
) -> str:
    return mint_token(SECRET, user, org, orgs=orgs, role=role, ttl_s=ttl_s)


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


def random_secret() -> str:
    return secrets.token_urlsafe(48)


def upload(
    http: httpx.Client,
    org: str,
    tok: str,
    name: str,
    data: bytes,
    content_type: str = "application/octet-stream",
) -> httpx.Response:
    return http.post(
        f"/orgs/{org}/documents", files={"file": (name, data, content_type)}, headers=bearer(tok)
    )


def wait_for_status(
    http: httpx.Client,
    org: str,
    tok: str,
    path: str,
    *,
    done: tuple[str, ...] = ("indexed", "skipped", "failed"),
    deadline_s: float = 180.0,
    content_hash: str | None = None,
) -> dict[str, Any]:
    """Poll a document's status until it is final (and, if given, for the expected content)."""
    deadline = time.monotonic() + deadline_s
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        response = http.get(f"/orgs/{org}/documents/{path}", headers=bearer(tok))
        if response.status_code == 200:
            last = response.json()
            hash_ok = content_hash is None or last.get("contentHash") == content_hash
            if last.get("status") in done and hash_ok:
                return last
        time.sleep(0.25)
    raise TimeoutError(f"{path} did not reach {done} in {deadline_s}s; last status: {last}")


# --- a two-organization world ----------------------------------------------------------------------

DOCS = DOCS_DIR  # honours LIBRARIAN_SHARED_DIR
ORG_A, ORG_B = "acme", "globex"
A_CANARY = "ALPHA-CANARY-93731"
B_CANARY = "BETA-CANARY-11873"
A_SECRET_DOC = (
    "# Project Bluebird\n\n"
    f"The launch code of Project Bluebird is {A_CANARY}. Only Acme knows that the Bluebird launch "
    "happens at dawn from pier seven, and that the budget of Project Bluebird is four million.\n\n"
    "## Bluebird crew\n\nThe Bluebird crew is led by captain Ada Quill, who reports to the Acme board.\n"
).encode()
B_NOTES_DOC = (
    "# Globex notes on Project Bluebird\n\n"
    f"Globex's own Project Bluebird is a garden bird census; its reference is {B_CANARY}. The census "
    "counts bluebirds in the park every spring.\n\n"
    "## Census volunteers\n\nVolunteers meet at the park gate at eight in the morning with binoculars.\n"
).encode()
A_FILES = {
    "concepts_chunking.md": DOCS / "md" / "docling-docs" / "concepts_chunking.md",
    "word_sample.docx": DOCS / "docx" / "word_sample.docx",
    "multi_page.pdf": DOCS / "pdf" / "docling" / "multi_page.pdf",
}
A_PATHS = {f"docs/{name}" for name in [*A_FILES, "alpha-secret.md"]}
LEGAL_QUESTION = "Which word processing software was popular among legal professionals?"


def seed_org_a(http: httpx.Client) -> dict[str, dict[str, Any]]:
    """Upload Acme's documents (three real ones and the canary) over HTTP and wait until indexed."""
    tok = token("alice", ORG_A)
    uploads = [(name, path.read_bytes()) for name, path in A_FILES.items()]
    uploads.append(("alpha-secret.md", A_SECRET_DOC))
    accepted = {}
    for name, data in uploads:
        response = upload(http, ORG_A, tok, name, data)
        assert response.status_code == 202, response.text
        accepted[response.json()["path"]] = response.json()
    return {path: wait_for_status(http, ORG_A, tok, path) | accepted[path] for path in accepted}


def seed_org_b(http: httpx.Client) -> dict[str, Any]:
    tok = token("bob", ORG_B)
    response = upload(http, ORG_B, tok, "beta-notes.md", B_NOTES_DOC)
    assert response.status_code == 202, response.text
    return wait_for_status(http, ORG_B, tok, response.json()["path"])


def ask(url: str, tok: str, question: str, **run_kwargs: Any) -> dict[str, Any]:
    """One agent turn through the Platform API as the token's user: the final thread state."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url, headers=bearer(tok), timeout=120)
    thread = client.threads.create()
    return client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"messages": [{"role": "user", "content": question}]},
        raise_error=False,
        **run_kwargs,
    )


def answer_text(state: dict[str, Any]) -> str:
    messages = state.get("messages") or []
    return str(messages[-1]["content"]) if messages else ""
