"""`librarian eval leaks` against a real `langgraph dev` server: every channel passes, and a planted leak
is caught.

One server, one audit. Beside the product's channels, the audit gets two extra channels: a test double
of the graph communities channel whose filter is deliberately broken (it takes the organization from
the request, not from the caller's token), which must be reported as a LEAK, and a channel with no
probe, which must be reported untested. Every read route of the server's route list must be covered
by a probe: a route added without one shows as an untested `route ...` row, which fails the test.
The tally is printed (`-s`) for the notes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import ClassVar

import httpx
import pytest

from librarian.evaluation.leaks import CHANNELS, AuditReport, TokenSigner, default_probes, run_audit, to_text
from librarian.evaluation.leaks.graph_probes import CommunitiesProbe
from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.world import LeakWorld, Member, plan_world
from tests.integration.server_fixtures import SECRET, DevServer, running_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PLANTED, UNPROBED = "planted-communities", "unprobed-channel"
WORLD = plan_world()


class BrokenFilterCommunities(CommunitiesProbe):
    """A communities channel whose filter trusts the organization named in the request: asked for
    another organization, it reads that organization's graph (here, with its member's token)."""

    name: ClassVar[str] = PLANTED

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        searcher = reader if org == reader.org else world.library(org).members[0]
        return [await session.call(searcher, "GET", f"/orgs/{org}/graph/communities")]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DevServer]:
    with running_server(tmp_path_factory.mktemp("leak-audit")) as srv:
        yield srv


@pytest.fixture(scope="module")
def report(server) -> AuditReport:
    probes = {**default_probes(), PLANTED: BrokenFilterCommunities()}
    channels = (*CHANNELS, PLANTED, UNPROBED)
    audit = run_audit(server.url, TokenSigner(SECRET), probes=probes, channels=channels, world=WORLD)
    result = asyncio.run(audit)
    print("\n" + to_text(result))
    return result


def test_every_channel_of_the_product_is_probed_and_passes(report):
    by_channel = {r.channel: r for r in report.results}
    assert list(by_channel)[: len(CHANNELS)] == list(CHANNELS)
    failing = {c: (by_channel[c].status, by_channel[c].note, by_channel[c].leaks[:2]) for c in CHANNELS}
    assert {c: f for c, f in failing.items() if f[0] != "passed"} == {}
    assert all(by_channel[c].attempts >= 2 for c in CHANNELS)
    # every read route of the server has a probe: a route added without one fails here
    unprobed_routes = [r.channel for r in report.results if r.channel not in (*CHANNELS, PLANTED, UNPROBED)]
    assert unprobed_routes == []
    users = [r for r in report.results if r.scope == "user"]
    assert {r.channel for r in users} == {"threads", "streams", "runs"}
    assert all(r.controls == 4 for r in users)  # every user's own conversation was seen by its owner


def test_the_planted_broken_filter_is_reported_as_a_leak(report):
    planted = next(r for r in report.results if r.channel == PLANTED)
    assert planted.status == "LEAK" and planted.controls_seen == planted.controls == 2
    # In each direction only the read naming the victim's organization goes wrong; the evidence is
    # the victim's own names (its company shows in its communities).
    assert len(planted.leaks) == 2
    for leak, victim in zip(planted.leaks, (WORLD.libraries[0], WORLD.libraries[1]), strict=True):
        assert leak.startswith(f"GET /orgs/{victim.org}/graph/communities") and victim.company in leak
    assert report.leaked and f"LEAK {PLANTED}" in to_text(report)


def test_a_channel_without_a_probe_is_untested_not_passed(report):
    unprobed = next(r for r in report.results if r.channel == UNPROBED)
    assert unprobed.status == "untested" and unprobed.attempts == 0
    assert f"untested {UNPROBED}: no probe for this channel" in to_text(report)


def test_the_audit_removes_what_it_seeded(server, report):
    """No seeded document or conversation is left behind (`--keep` would leave them)."""
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for lib in WORLD.libraries:
            for member in lib.members:
                headers = {"Authorization": f"Bearer {TokenSigner(SECRET).token(member)}"}
                documents = http.get(f"/orgs/{lib.org}/documents", headers=headers).json()["documents"]
                assert documents == [], documents
                assert http.post("/threads/count", json={}, headers=headers).json() == 0
