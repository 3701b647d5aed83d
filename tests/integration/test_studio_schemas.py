"""Studio draws a graph's input form and output view from `/assistants/{id}/schemas`.

On Python 3.11 (the version `langgraph.json` pins) pydantic cannot build a JSON schema from a
`typing.TypedDict`, and the server then answers `null` for the graph's input and output schemas, so
Studio shows no form. Every graph the committed `langgraph.json` declares is asked for here, through
the real dev server and as an authenticated member (Studio sends the same token).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.integration.server_fixtures import REPO_DIR, bearer, running_server, token

GRAPHS = sorted(json.loads((REPO_DIR / "langgraph.json").read_text())["graphs"])


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp: Path = tmp_path_factory.mktemp("studio")
    with running_server(tmp, jobs=1) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        headers = bearer(token("alice", "acme"))
        found = {}
        for graph in GRAPHS:
            # As Studio does: find the graph's default assistant, then ask for its schemas.
            listed = http.post("/assistants/search", json={"graph_id": graph}, headers=headers)
            assert listed.status_code == 200, (graph, listed.text)
            assistant = next(a for a in listed.json() if a["metadata"].get("created_by") == "system")
            response = http.get(f"/assistants/{assistant['assistant_id']}/schemas", headers=headers)
            assert response.status_code == 200, (graph, response.status_code, response.text)
            found[graph] = response.json()
        # Without a token there is nothing: the schemas are behind the same auth as the rest.
        anonymous = http.get(f"/assistants/{assistant['assistant_id']}/schemas")
        assert anonymous.status_code in (401, 403)
        return found


@pytest.mark.parametrize("graph", GRAPHS)
def test_every_graph_has_input_output_and_context_schemas(schemas: dict[str, dict], graph: str) -> None:
    body = schemas[graph]
    for key in ("input_schema", "output_schema", "context_schema"):
        schema = body.get(key)
        assert isinstance(schema, dict) and schema.get("properties"), f"{graph}: {key} is {schema!r}"
    # The context is the trusted run configuration: the organization, never an input field.
    assert "organization_id" in body["context_schema"]["properties"]
    assert "organization_id" not in body["input_schema"]["properties"]


def test_agent_schema_describes_messages_and_cited_sources(schemas: dict[str, dict]) -> None:
    agent = schemas["agent"]
    assert "messages" in agent["input_schema"]["properties"]
    output = agent["output_schema"]
    assert {"messages", "sources"} <= set(output["properties"])
    # A source is what a citation points at: file, page and region of the page.
    source = json.dumps(output)
    for field in ("filename", "page", "bbox"):
        assert f'"{field}"' in source


def test_ingest_schema_takes_a_document_path(schemas: dict[str, dict]) -> None:
    ingest = schemas["ingest"]["input_schema"]
    assert ingest.get("required") == ["path"]
    assert "status" in schemas["ingest"]["output_schema"]["properties"]
