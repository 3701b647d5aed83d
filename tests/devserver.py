"""A real `langgraph dev` server in a subprocess: what the integration tests and the benchmarks share.

The server runs on a free loopback port (never 2024, which is taken on this machine) with offline
flags, several background jobs, and its own working directory and data directory: the dev server
pickles its threads into `./.langgraph_api`, so a shared working directory would leak threads from
one run into the next. The repository's `langgraph.json` is copied there with its relative paths
made absolute, so the configuration under test is the committed one.

The tests and `bench/serve.py` import this one copy; it needs a source checkout (it serves the
repository's `langgraph.json`), so it is not part of the installed product.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

REPO_DIR = Path(__file__).resolve().parents[1]
TAKEN_PORTS = {2024}
READY_DEADLINE_S = 90.0


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

    def graph(spec: str | dict) -> str | dict:  # "./x.py:graph" or {"path": ..., "description": ...}
        return {**spec, "path": absolute(spec["path"])} if isinstance(spec, dict) else absolute(spec)

    config["graphs"] = {name: graph(spec) for name, spec in config["graphs"].items()}
    config["dependencies"] = [str(REPO_DIR) if d == "." else absolute(d) for d in config["dependencies"]]
    config["http"]["app"] = absolute(config["http"]["app"])
    config["auth"]["path"] = absolute(config["auth"]["path"])
    if "checkpointer" in config:
        config["checkpointer"]["path"] = absolute(config["checkpointer"]["path"])
    target = workdir / "langgraph.json"
    target.write_text(json.dumps(config, indent=2))
    return target


def server_env(data_dir: Path, secret: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a dev server: offline flags, the secret, and no stray LIBRARIAN_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIBRARIAN_", "OPENAI_", "LANGSMITH_"))}
    if os.environ.get("LIBRARIAN_WEB_DIST"):  # a developer's own web build (webapi.webapp) is kept
        env["LIBRARIAN_WEB_DIST"] = os.environ["LIBRARIAN_WEB_DIST"]
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="1",
        LANGSMITH_TRACING="false",
        LIBRARIAN_DATA_DIR=str(data_dir),
        LIBRARIAN_AUTH_SECRET=secret,
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

    def restart(self, deadline_s: float = READY_DEADLINE_S) -> DevServer:
        """Start again after `kill` or `stop`, on the same working and data directories (a fresh port).

        What a crashed server's operator does: the `.langgraph_api` pickles in the working directory
        and the data directory are whatever the previous process left. The previous log is kept as
        `server.log.1` (`.2`, ...).
        """
        assert self.process is not None and self.process.poll() is not None, "stop or kill it first"
        kept = 1
        while self.log_path.with_name(f"{self.log_path.name}.{kept}").exists():
            kept += 1
        if self.log_path.exists():
            self.log_path.rename(self.log_path.with_name(f"{self.log_path.name}.{kept}"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        return self.start(deadline_s)

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

    def kill(self) -> None:
        """SIGKILL the server and its workers at once: a crash, not a shutdown."""
        if self.process is None or self.process.poll() is not None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)

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
    tmp_dir: Path, secret: str, extra_env: Mapping[str, str] | None = None, jobs: int = 4
) -> Iterator[DevServer]:
    workdir = tmp_dir / "server"
    workdir.mkdir(parents=True, exist_ok=True)
    server = DevServer(workdir, server_env(tmp_dir / "data", secret, extra_env), jobs=jobs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
