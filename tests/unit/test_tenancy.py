"""`resolve_organization`: the only way a run learns its namespace, from trusted sources only."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from graphs.context import LibrarianContext
from librarian.errors import TenantError
from librarian.tenancy import resolve_organization, validate_organization_id


@dataclass
class ServerUser:
    """Shaped like LangGraph's auth user: attributes rather than a mapping."""

    identity: str
    organization_id: str | None = None


def with_user(user, **configurable):
    return {"configurable": {"langgraph_auth_user": user, **configurable}}


@pytest.mark.parametrize(
    "user",
    [
        {"identity": "u-1", "organization_id": "acme"},
        ServerUser("u-1", "acme"),
        {"sub": "u-1", "org_id": "acme"},
    ],
)
def test_the_authenticated_user_decides(user):
    assert resolve_organization(with_user(user)) == "acme"
    assert (
        resolve_organization(with_user(user, organization_id="acme"), {"organization_id": "acme"}) == "acme"
    )


@pytest.mark.parametrize(
    ("configurable", "context"),
    [
        ({"organization_id": "globex"}, None),
        ({}, {"organization_id": "globex"}),
        ({}, LibrarianContext(organization_id="globex")),
    ],
)
def test_a_user_with_a_conflicting_organization_elsewhere_is_refused(configurable, context):
    user = {"identity": "u-1", "organization_id": "acme"}
    with pytest.raises(TenantError, match="does not match"):
        resolve_organization(with_user(user, **configurable), context)


def test_a_user_without_an_organization_is_refused_even_if_the_run_names_one():
    with pytest.raises(TenantError, match="no active organization"):
        resolve_organization(with_user({"identity": "u-1"}, organization_id="acme"))


def test_trusted_run_configuration_is_used_without_a_user():
    assert resolve_organization({"configurable": {"organization_id": "acme"}}) == "acme"
    assert resolve_organization(None, {"organization_id": "acme"}) == "acme"
    assert resolve_organization({}, LibrarianContext(organization_id="acme")) == "acme"
    assert resolve_organization({"configurable": {"organization_id": "acme"}}, LibrarianContext()) == "acme"


def test_context_and_configurable_that_disagree_are_refused():
    with pytest.raises(TenantError, match="different organizations"):
        resolve_organization({"configurable": {"organization_id": "globex"}}, {"organization_id": "acme"})


@pytest.mark.parametrize(
    ("config", "context"),
    [
        (None, None),
        ({}, {}),
        ({"configurable": {}}, LibrarianContext()),
        ({"configurable": {"organization_id": ""}}, {"organization_id": None}),
        ({"configurable": {"namespace": "acme", "org": "acme", "tenant": "acme"}}, {"orgId": "acme"}),
    ],
)
def test_no_organization_is_an_error_never_a_default(config, context):
    with pytest.raises(TenantError, match="no default namespace"):
        resolve_organization(config, context)


@pytest.mark.parametrize(
    "bad",
    ["../acme", "acme/other", "a b", "-acme", ".acme", "x" * 64, "acme\x00", "ácme", 42, ["acme"]],
)
def test_invalid_organization_ids_are_rejected(bad):
    with pytest.raises(TenantError, match="organization id must be"):
        validate_organization_id(bad)
    with pytest.raises(TenantError):
        resolve_organization({"configurable": {"organization_id": bad}})
    with pytest.raises(TenantError):
        resolve_organization(with_user({"identity": "u-1", "organization_id": bad}))


@pytest.mark.parametrize("good", ["acme", "Acme_2", "a", "org.example-1", "x" * 63])
def test_valid_organization_ids_pass_unchanged(good):
    assert validate_organization_id(good) == good
    assert resolve_organization({"configurable": {"organization_id": good}}) == good
