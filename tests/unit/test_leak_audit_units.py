"""The leak audit's parts that need no server: the world's markers, evidence rules, the tally, the
auditor's control/attack logic over in-memory probes, and the command's argument errors."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json

import pdfplumber
import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.evaluation.leaks.audit import attacks, controls, run_channel
from librarian.evaluation.leaks.graph_probes import claims_only, entity_named
from librarian.evaluation.leaks.probe import ChannelProbe
from librarian.evaluation.leaks.readings import Reading, digest_found, markers_found, served_for, value_moved
from librarian.evaluation.leaks.record_probes import DeleteReceiptsProbe, EvalGateProbe, GraphCostsProbe
from librarian.evaluation.leaks.registry import CHANNELS, default_probes
from librarian.evaluation.leaks.routes import COVERED_ROUTES, read_routes, unprobed
from librarian.evaluation.leaks.search_probes import score_of
from librarian.evaluation.leaks.status_probes import DocumentStatusProbe
from librarian.evaluation.leaks.tally import AuditReport, ChannelResult, to_json, to_text
from librarian.evaluation.leaks.tokens import AuditSetupError, TokenSigner
from librarian.evaluation.leaks.world import (
    flood_document,
    notes_document,
    page_document,
    plan_world,
)
from librarian_cli.eval import main as eval_main

SECRET = "unit-secret-" + "y" * 40


def reading(text: str, sent: str = "GET /x") -> Reading:
    return Reading("GET /x", sent, 200, text)


# --- the world --------------------------------------------------------------------------------------


def test_world_markers_are_unique_and_each_library_document_holds_only_its_own():
    world = plan_world("unit1")
    a, b = world.libraries
    assert a.org != b.org and not set(a.markers) & set(b.markers)
    privates = [m.private for m in world.members()]
    assert len(set(privates)) == 4 and len({m.user for m in world.members()}) == 4
    notes_a = notes_document(a, world.statistics_term).decode()
    file_names = (a.notes_name, a.deleted_name, a.questions_name)
    assert all(marker in notes_a for marker in a.markers if marker not in file_names) and a.keyword in notes_a
    assert a.notes_name in a.markers and a.notes_name != b.notes_name
    assert not any(marker in notes_a for marker in b.markers)
    assert (
        world.statistics_term in notes_a
        and world.statistics_term in flood_document(world.statistics_term).decode()
    )
    assert plan_world("unit1") == world and plan_world("unit2") != world  # a tag names one world


def test_page_document_is_a_pdf_whose_text_carries_the_markers():
    lib = plan_world("unit3").libraries[0]
    with pdfplumber.open(io.BytesIO(page_document(lib))) as pdf:
        text = pdf.pages[0].extract_text()
    assert lib.secret in text and lib.person in text and lib.company in text


@pytest.mark.parametrize("tag", ["", "UPPER", "with space", "a/b", "x" * 21])
def test_a_bad_tag_is_refused(tag):
    if tag == "":
        assert plan_world(tag).tag  # empty means "draw one"
        return
    with pytest.raises(ValueError, match="tag"):
        plan_world(tag)


# --- evidence -----------------------------------------------------------------------------------------

MARKER = "QX123456-VELMOR"


@given(st.text(max_size=200))
def test_markers_are_found_exactly_when_present_and_not_sent(noise):
    clean = noise.replace(MARKER, "").replace(MARKER.casefold(), "")
    assert markers_found(reading(clean), [MARKER]) == [] or MARKER.casefold() in clean.casefold()
    planted = clean[: len(clean) // 2] + MARKER.lower() + clean[len(clean) // 2 :]
    assert markers_found(reading(planted), [MARKER]) == [MARKER]
    assert markers_found(reading(planted, sent="GET /x?q=" + MARKER), [MARKER]) == []


def test_digests_and_values():
    image = Reading("GET /p.png", "", 200, "", digest="abc")
    assert digest_found(image, ["abc"]) == ["page image"] and digest_found(image, ["def"]) == []
    assert value_moved(Reading("s", "", 200, "", value=0.5, baseline=0.5)) == []
    assert value_moved(Reading("s", "", 200, "", value=0.5000000001, baseline=0.5)) == []
    assert value_moved(Reading("s", "", 200, "", value=0.45, baseline=0.5))
    assert value_moved(Reading("s", "", 200, "", value=None, baseline=0.5)) == []


# --- the tally ----------------------------------------------------------------------------------------


def test_status_needs_attacks_and_every_control_and_a_leak_wins():
    assert ChannelResult("c", "organization", attempts=4, controls=2, controls_seen=2).status == "passed"
    assert ChannelResult("c", "organization", attempts=4, controls=2, controls_seen=1).status == "untested"
    assert ChannelResult("c", "organization", attempts=0, controls=2, controls_seen=2).status == "untested"
    assert ChannelResult("c", "-").status == "untested"
    leaked = ChannelResult("c", "organization", attempts=4, leaks=["x"], controls=2, controls_seen=0)
    assert leaked.status == "LEAK"


def test_report_lists_every_channel_with_its_status():
    results = [
        ChannelResult("dense", "organization", attempts=4, controls=2, controls_seen=2),
        ChannelResult("threads", "user", attempts=40, leaks=["GET /threads/x"], controls=4, controls_seen=4),
        ChannelResult("new-channel", "-", note="no probe for this channel"),
    ]
    report = AuditReport("http://h", "t", ["a", "b"], results)
    text = to_text(report)
    assert "dense" in text and "passed" in text and "LEAK threads: GET /threads/x" in text
    assert "untested new-channel: no probe for this channel" in text
    assert "total: 44 attempts, 1 leaks, 1 untested" in text
    assert report.leaked and not report.complete
    assert '"untested": [\n    "new-channel"\n  ]' in to_json(report)


# --- the auditor over in-memory probes ----------------------------------------------------------------


class EchoProbe(ChannelProbe):
    """Answers every read with the owner's secret when `leaky`, else only to the owner themselves."""

    name = "echo"

    def __init__(self, *, leaky: bool = False, blind: bool = False, broken: bool = False) -> None:
        self.leaky, self.blind, self.broken = leaky, blind, broken

    async def read(self, session, world, reader, owner):
        if self.broken:
            raise RuntimeError("endpoint vanished")
        sees = (reader == owner and not self.blind) or self.leaky
        return [reading(world.library(owner.org).secret if sees else "nothing here")]


def channel(probe: ChannelProbe) -> ChannelResult:
    return asyncio.run(run_channel(None, plan_world("unit4"), probe))  # type: ignore[arg-type]


def test_auditor_passes_a_sealed_channel_and_catches_a_leaky_one():
    sealed = channel(EchoProbe())
    assert (sealed.status, sealed.attempts, sealed.controls) == ("passed", 2, 2)
    leaky = channel(EchoProbe(leaky=True))
    assert leaky.status == "LEAK" and len(leaky.leaks) == 2
    assert "leak-unit4-b1 (leak-audit-unit4-b) -> leak-unit4-a1 (leak-audit-unit4-a)" in leaky.leaks[0]


def test_a_probe_that_sees_nothing_or_fails_is_untested_not_passed():
    blind = channel(EchoProbe(blind=True))
    assert blind.status == "untested" and "0 of 2 controls" in blind.note
    broken = channel(EchoProbe(broken=True))
    assert broken.status == "untested" and "endpoint vanished" in broken.note


class OneDeadReadProbe(EchoProbe):
    """Two owner-side reads: one shows the owner's data, the other answers `status` with `text`."""

    def __init__(self, status: int, text: str = "nothing here") -> None:
        super().__init__()
        self.status, self.text = status, text

    async def read(self, session, world, reader, owner):
        text = world.library(owner.org).secret if self.text == "SECRET" and reader == owner else self.text
        dead = Reading("GET /orgs/x/dead", "GET /orgs/x/dead", self.status, text)
        return [*await super().read(session, world, reader, owner), dead]


@pytest.mark.parametrize("status", [0, 403, 404, 500])
def test_every_owner_side_read_must_answer_not_just_one(status):
    """One dead request among a probe's reads leaves its route untested, so the channel is too."""
    result = channel(OneDeadReadProbe(status, "SECRET"))
    assert result.status == "untested" and result.controls_seen == 0
    assert f"GET /orgs/x/dead answered {status}" in result.note
    assert channel(OneDeadReadProbe(200, "SECRET")).status == "passed"


def test_every_owner_side_read_must_show_the_owners_data_not_just_one():
    """An owner-side read that answers 200 with nothing of the owner's exercises nothing."""
    result = channel(OneDeadReadProbe(200))
    assert result.status == "untested" and "GET /orgs/x/dead showed none of their data" in result.note


def test_user_channels_are_attacked_by_the_colleague_and_the_other_organization():
    world = plan_world("unit5")

    class UserProbe(EchoProbe):
        scope = "user"

    pairs = attacks(world, UserProbe())
    assert len(pairs) == 8 and len(controls(world, UserProbe())) == 4
    a1, a2 = world.libraries[0].members
    assert (a2, a1) in pairs and (world.libraries[1].members[0], a1) in pairs
    # a colleague reading the library (not the conversation) is no leak on a user channel
    library_text = reading(world.libraries[0].secret)
    assert UserProbe().evidence(world, a2, a1, library_text) == []
    assert UserProbe().evidence(world, a2, a1, reading(a1.private)) == [a1.private]


# --- the command ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--url", "ftp://host"], "--url must be an http(s) URL"),
        (["--url", "http://127.0.0.1:1", "--channels", "dense,nope"], "unknown channels ['nope']"),
        (["--url", "http://127.0.0.1:1", "--secret", "short"], "at least 32 bytes"),
        (["--url", "http://127.0.0.1:1", "--tag", "Bad Tag"], "the tag must be"),
        (["--url", "http://127.0.0.1:1"], "cannot reach the server"),
    ],
)
def test_command_errors_are_one_line_and_exit_2(argv, message, capsys, monkeypatch):
    monkeypatch.setenv("LIBRARIAN_AUTH_SECRET", SECRET)
    assert eval_main(["leaks", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_command_without_a_secret_says_where_to_set_it(capsys, monkeypatch):
    monkeypatch.delenv("LIBRARIAN_AUTH_SECRET", raising=False)
    assert eval_main(["leaks", "--url", "http://127.0.0.1:1"]) == 2
    assert "LIBRARIAN_AUTH_SECRET" in capsys.readouterr().err
    with pytest.raises(AuditSetupError):
        TokenSigner("")


# --- replies of unknown shape ----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_score_of_any_reply_is_a_float_or_none(body):
    assert score_of(body, "docs/n.md") is None or isinstance(score_of(body, "docs/n.md"), float)


def test_score_of_finds_the_documents_first_result():
    body = {
        "result": {
            "structuredContent": {
                "results": [{"path": "docs/x", "score": 0.9}, {"path": "docs/n.md", "score": 0.25}]
            }
        }
    }
    assert score_of(body, "docs/n.md") == 0.25 and score_of(body, "docs/missing") is None


@given(json_values)
def test_claims_only_never_fails_on_a_reply(body):
    import json as _json

    text = _json.dumps(body)
    reduced = claims_only(Reading("GET /l", "", 200, text))
    assert isinstance(reduced.text, str)
    if isinstance(body, dict):
        assert reduced.text.startswith("[")


def test_claims_only_keeps_claims_not_chunks():
    import json as _json

    body = {"evidence": [{"kind": "chunk", "text": "CHUNK"}, {"kind": "claim", "text": "CLAIM"}]}
    reduced = claims_only(Reading("GET /l", "", 200, _json.dumps(body)))
    assert "CLAIM" in reduced.text and "CHUNK" not in reduced.text
    refused = Reading("GET /l", "", 403, '{"error": {"code": "forbidden"}}')
    assert claims_only(refused) is refused


@given(json_values)
def test_read_routes_of_any_document_is_a_list_of_gets(doc):
    assert all(route.startswith("GET /") or route.startswith("GET ") for route in read_routes(doc))


def test_a_read_route_without_a_probe_is_listed():
    doc = {
        "paths": {
            "/orgs/{org}/documents": {"get": {}, "post": {}},
            "/orgs/{org}/graph/communities": {"get": {}},
            "/orgs/{org}/graph/new-view": {"get": {}},
            "/orgs/{org}/graph/cancel": {"post": {}},
        }
    }
    probed = set(COVERED_ROUTES.values())
    assert unprobed(doc, probed) == ["GET /orgs/{org}/graph/new-view"]
    assert unprobed(doc, probed - {"graph-communities"}) == [
        "GET /orgs/{org}/graph/communities",
        "GET /orgs/{org}/graph/new-view",
    ]


def test_every_read_route_of_the_server_has_a_probe():
    """The server's own route list (what `/openapi-librarian.json` serves) against the probes: a read
    route added to the product without a probe fails here, long before the slow audit test."""
    import server

    assert unprobed(server.app.openapi(), set(default_probes())) == []
    assert set(COVERED_ROUTES.values()) <= set(CHANNELS)


def test_a_stream_that_never_ends_is_cut_at_the_deadline(monkeypatch):
    """A stream that is not refused and keeps sending (heartbeats) still ends the reading."""
    import httpx

    from librarian.evaluation.leaks import session as session_module

    monkeypatch.setattr(session_module, "STREAM_TIMEOUT_S", 0.3)

    async def endless():
        while True:
            yield b": heartbeat\n\n"
            await asyncio.sleep(0.01)

    async def run() -> Reading:
        response = httpx.Response(200, content=endless(), headers={"content-type": "text/event-stream"})
        audit = session_module.AuditSession(None, TokenSigner(SECRET))  # type: ignore[arg-type]
        return Reading("GET /s", "", 200, (await audit._body(response, stream=True)).decode())

    assert run_within(run(), 5.0).text.startswith(": heartbeat")


def run_within(coroutine, seconds: float):
    return asyncio.run(asyncio.wait_for(coroutine, seconds))


# --- the organization record probes (receipts, gate, costs) -------------------------------------------


@given(st.text(max_size=200), st.integers(min_value=0, max_value=599))
def test_served_for_never_fails_on_a_reply(text, status):
    assert served_for(Reading("GET /x", "", status, text), "org-a") in ([], ["served for org-a"])


def test_served_for_needs_a_successful_answer_labelled_with_the_organization():
    ledger = '{"organization_id": "org-a", "phases": [], "totals": {"calls": 0}}'
    assert served_for(Reading("GET /c", "", 200, ledger), "org-a") == ["served for org-a"]
    assert served_for(Reading("GET /c", "", 200, ledger), "org-b") == []
    assert served_for(Reading("GET /c", "", 403, '{"organization_id": "org-a"}'), "org-a") == []
    assert served_for(Reading("GET /c", "", 200, '["organization_id", "org-a"]'), "org-a") == []


def test_record_markers_are_each_librarys_own():
    world = plan_world("unit6")
    a, b = world.libraries
    for name in (a.deleted_name, a.questions_name):
        assert name in a.markers and name not in b.markers
    assert a.deleted_name != b.deleted_name and a.questions_name != b.questions_name


def test_record_probes_see_the_owners_record_and_an_answer_for_the_owners_organization():
    world = plan_world("unit7")
    (a1, _), (b1, _) = (lib.members for lib in world.libraries)
    a = world.library(a1.org)
    receipts = json.dumps({"organization_id": a.org, "receipts": [{"path": f"docs/{a.deleted_name}"}]})
    gate = json.dumps({"organization_id": a.org, "questions": 1, "source": a.questions_name})
    ledger = json.dumps({"organization_id": a.org, "phases": [], "totals": {"calls": 0}})
    refused = Reading("GET /orgs/a/x", f"/orgs/{a.org}/x", 403, '{"error": {"code": "forbidden"}}')
    for probe, body in (
        (DeleteReceiptsProbe(), receipts),
        (EvalGateProbe(), gate),
        (GraphCostsProbe(), ledger),
    ):
        answer = Reading("GET /orgs/a/x", f"/orgs/{a.org}/x", 200, body)
        assert probe.evidence(world, a1, a1, answer)  # the owner's control
        assert f"served for {a.org}" in probe.evidence(world, b1, a1, answer)  # to the other org: a leak
        assert probe.evidence(world, b1, a1, refused) == []
    # an empty receipt list of the owner's own organization is no control: their delete must show
    empty = Reading("GET /r", "", 200, json.dumps({"organization_id": a.org, "receipts": []}))
    assert DeleteReceiptsProbe().evidence(world, a1, a1, empty) == []
    # the other organization's own, correctly labelled ledger is no leak
    own = Reading("GET /c", "", 200, json.dumps({"organization_id": b1.org, "phases": []}))
    assert GraphCostsProbe().evidence(world, b1, a1, own) == []


def test_a_graph_status_of_the_owners_organization_given_to_another_is_a_leak():
    """The graph status names no file: its label is the only sign it is the owner's."""
    world = plan_world("unit8")
    (a1, _), (b1, _) = (lib.members for lib in world.libraries)
    status = json.dumps({"organization_id": a1.org, "version": 2, "documents": 3})
    answer = Reading("GET /orgs/a/graph", f"/orgs/{a1.org}/graph", 200, status)
    assert DocumentStatusProbe().evidence(world, b1, a1, answer) == [f"served for {a1.org}"]
    assert DocumentStatusProbe().evidence(world, a1, a1, answer) == [f"served for {a1.org}"]  # control
    own = Reading("GET /orgs/b/graph", f"/orgs/{b1.org}/graph", 200, status.replace(a1.org, b1.org))
    assert DocumentStatusProbe().evidence(world, b1, a1, own) == []
    # the note's own status names only the path asked for; its content hash is the owner's
    a = world.libraries[0]
    digest = hashlib.sha256(notes_document(a, world.statistics_term)).hexdigest()
    note = json.dumps({"path": f"docs/{a.notes_name}", "status": "indexed", "contentHash": digest})
    asked = Reading("GET /orgs/a/documents/x", f"/orgs/{a.org}/documents/docs/{a.notes_name}", 200, note)
    assert DocumentStatusProbe().evidence(world, a1, a1, asked) == [digest]


@given(st.one_of(st.text(max_size=200), json_values.map(json.dumps)), st.integers(min_value=0, max_value=599))
def test_entity_named_is_always_one_of_the_names(text, status):
    names = ("Velmor Quistran", "Dorhal Veskzor", "Brinel Foundry")
    assert entity_named(Reading("GET /e", "", status, text), names) in names


def test_entity_named_prefers_an_entity_the_graph_holds():
    names = ("Velmor Quistran", "Dorhal Veskzor", "Brinel Foundry")
    listing = (
        '{"entities": [{"name": "BRINEL FOUNDRY"}, {"name": "Velmor", "description": "Dorhal Veskzor"}]}'
    )
    assert entity_named(Reading("GET /e", "", 200, listing), names) == "Brinel Foundry"
    assert entity_named(Reading("GET /e", "", 403, listing), names) == "Velmor Quistran"
