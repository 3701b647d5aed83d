"""The server starts as the generated Dockerfile configures it (no Docker daemon is assumed here).

`langgraph dockerfile` turns `langgraph.json` into the image's environment: `LANGSERVE_GRAPHS`,
`LANGGRAPH_HTTP` and `LANGGRAPH_AUTH`, with the project at `/deps/{checkout folder}`. This test reads those
values back out of the generated Dockerfile, points that path at this checkout, and serves them
with the in-memory runtime (the image's runtime keeps the same graphs, routes and auth in
PostgreSQL): the graphs load, the routes answer, and auth guards them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.server_fixtures import REPO_DIR, DevServer, server_env, token

IMAGE_ROOT = f"/deps/{REPO_DIR.name}"  # `langgraph dockerfile` names it after the checkout folder

pytestmark = pytest.mark.timeout(300)


def generated_dockerfile(target: Path) -> str:
    env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}
    langgraph = Path(sys.executable).with_name("langgraph")
    subprocess.run(
        [str(langgraph), "dockerfile", "-c", "langgraph.json", str(target)],
        cwd=REPO_DIR,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return target.read_text()


def config_from_dockerfile(dockerfile: str) -> dict:
    """A `langgraph.json` equivalent to the image's environment, rooted in this checkout."""

    def env_json(name: str) -> dict:
        match = re.search(rf"^ENV {name}='(.*)'$", dockerfile, flags=re.M)
        assert match, f"the Dockerfile sets no {name}"
        return json.loads(match.group(1).replace(IMAGE_ROOT, str(REPO_DIR)))

    return {
        "dependencies": [str(REPO_DIR)],
        "graphs": env_json("LANGSERVE_GRAPHS"),
        "http": env_json("LANGGRAPH_HTTP"),
        "auth": env_json("LANGGRAPH_AUTH"),
    }


def test_the_server_starts_from_the_generated_dockerfile(tmp_path):
    dockerfile = generated_dockerfile(tmp_path / "Dockerfile")
    work = tmp_path / "work"
    work.mkdir()
    config = work / "image.json"
    config.write_text(json.dumps(config_from_dockerfile(dockerfile)))
    # The image's data directory is a volume at /data; here, a temporary one.
    image_data_dir = re.search(r"^ENV LIBRARIAN_DATA_DIR=(\S+)", dockerfile, flags=re.M)
    assert image_data_dir and image_data_dir.group(1) == "/data"
    server = DevServer(work, server_env(tmp_path / "data"), jobs=2, config=str(config)).start()
    try:
        auth = {"Authorization": f"Bearer {token('ann', 'acme')}"}
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/ok").status_code == 200
            assert http.get("/orgs/acme/documents").status_code == 401  # auth from the image's config
            assert http.get("/orgs/acme/documents", headers=auth).status_code == 200  # server.py's routes
            spec = http.get("/openapi-librarian.json", headers=auth).json()
            assert "/orgs/{org}/documents" in json.dumps(spec)
            assistants = http.post("/assistants/search", json={"graph_id": "agent"}, headers=auth)
            assert assistants.status_code == 200 and assistants.json(), assistants.text  # the graphs
    finally:
        server.stop()
