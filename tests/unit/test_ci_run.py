"""`.ci/run` runs the README's test command, and under CI a PostgreSQL test fails instead of skipping."""

from __future__ import annotations

import re

import pytest

import tests.conftest as conftest
from tests.conftest import REPO_DIR, require_postgres

CI_RUN = REPO_DIR / ".ci" / "run"


def readme_test_command() -> str:
    readme = (REPO_DIR / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    [command] = [c for c in commands if "[test]" in c and "pytest" in c]
    return command


def test_ci_runs_exactly_the_readme_test_command():
    assert readme_test_command() in CI_RUN.read_text()


def test_ci_declares_itself_ci_and_handles_no_collected_tests():
    script = CI_RUN.read_text()
    assert re.search(r"^export CI=true$", script, flags=re.M)
    assert '"$status" = 5' in script


@pytest.fixture
def unreachable_postgres(monkeypatch):
    # Port 1 on loopback: refused at once, so the check is fast and certain.
    monkeypatch.setattr(conftest, "POSTGRES_URL", "postgresql://postgres@127.0.0.1:1/test")


def test_unreachable_postgres_fails_under_ci(unreachable_postgres, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        require_postgres()


def test_unreachable_postgres_skips_outside_ci(unreachable_postgres, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not reachable"):
        require_postgres()


def run_ci_with_pytest_exiting(code: int, tmp_path) -> tuple[int, str]:
    """Run a copy of `.ci/run` whose `python3`, `pip` and `pytest` are stubs; pytest exits with `code`.

    PATH holds only the stubs and the few tools the script needs, so it finds no PostgreSQL tools,
    no apt-get and no browser to install, and touches nothing outside `tmp_path`.
    """
    import os
    import shutil
    import subprocess

    (tmp_path / ".ci").mkdir()
    shutil.copy(CI_RUN, tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "id", "timeout", "mkdir", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    activate = f'pip() {{ return 0; }}\npytest() {{ echo "CI=$CI"; return {code}; }}\n'
    (bin_dir / "python3").write_text(
        f"#!{shutil.which('bash')}\nmkdir -p .venv/bin\ncat > .venv/bin/activate <<'EOF'\n{activate}EOF\n"
    )
    (bin_dir / "python3").chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    done = subprocess.run(
        [shutil.which("bash"), str(tmp_path / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert os.path.isdir(tmp_path / ".venv"), done.stderr
    return done.returncode, done.stdout


@pytest.mark.parametrize(("pytest_exit", "ci_exit"), [(0, 0), (1, 1), (2, 2), (5, 1)])
def test_ci_passes_pytest_exit_through_and_fails_when_no_test_is_collected(tmp_path, pytest_exit, ci_exit):
    code, out = run_ci_with_pytest_exiting(pytest_exit, tmp_path)
    assert code == ci_exit
    assert "CI=true" in out  # pytest runs with CI set, so PostgreSQL tests cannot skip
    assert ("pytest collected no tests" in out) == (pytest_exit == 5)
