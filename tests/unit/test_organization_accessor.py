"""`organization_of`: the one accessor nodes and tools use for the run's organization."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from langgraph.prebuilt.tool_node import ToolRuntime
from langgraph.runtime import Runtime

from graphs.context import LibrarianContext, organization_of
from librarian.errors import TenantError


def tool_runtime(config: dict, context: object = None) -> ToolRuntime:
    return ToolRuntime(
        state={}, context=context, config=config, stream_writer=lambda _: None, tool_call_id="1", store=None
    )


def test_a_node_reads_its_runtime_context():
    assert organization_of({}, Runtime(context=LibrarianContext(organization_id="acme"))) == "acme"
    assert organization_of({"configurable": {"organization_id": "acme"}}, None) == "acme"


def test_a_tool_reads_its_injected_runtime_not_the_call_config():
    runtime = tool_runtime({"configurable": {"organization_id": "acme"}})
    assert organization_of({"configurable": {"organization_id": "globex"}}, runtime) == "acme"
    assert organization_of({}, tool_runtime({}, LibrarianContext(organization_id="acme"))) == "acme"


@pytest.mark.parametrize(
    "spoof",
    [{"context": {"organization_id": "evil"}}, SimpleNamespace(context={"organization_id": "evil"})],
)
def test_an_object_langgraph_did_not_make_names_no_organization(spoof):
    with pytest.raises(TenantError, match="no organization"):
        organization_of({}, spoof)
    assert organization_of({"configurable": {"organization_id": "acme"}}, spoof) == "acme"


def test_context_and_configurable_that_disagree_are_refused():
    runtime = Runtime(context=LibrarianContext(organization_id="globex"))
    with pytest.raises(TenantError, match="different organizations"):
        organization_of({"configurable": {"organization_id": "acme"}}, runtime)
