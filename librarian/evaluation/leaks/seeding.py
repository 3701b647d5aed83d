"""Seeding the audit's world on the deployment: documents, their graph, one conversation per user.

Everything goes through the public routes as the seeded users, and every wait polls with a deadline:
uploads until indexed, the graph until a published version covers both documents. A step that the
server refuses stops the audit with one clear line (a wrong secret is the usual cause), because
probing an unseeded world would only produce `untested` channels.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from librarian.evaluation.leaks.session import AuditSession, json_of
from librarian.evaluation.leaks.tokens import AuditSetupError
from librarian.evaluation.leaks.world import (
    PAGE_NAME,
    LeakWorld,
    Library,
    Member,
    notes_document,
    page_document,
)

POLL_S = 0.5
INDEX_DEADLINE_S = 300.0
GRAPH_DEADLINE_S = 600.0

Progress = Callable[[str], None]


def _refusal(what: str, status: int, text: str) -> AuditSetupError:
    hint = " (is the secret the server's LIBRARIAN_AUTH_SECRET?)" if status == 401 else ""
    return AuditSetupError(f"{what} was refused with {status}{hint}: {text[:200]}")


async def upload(session: AuditSession, member: Member, name: str, data: bytes) -> str:
    """Upload one document as `member`; its path in the library."""
    files = {"file": (name, data, "application/octet-stream")}
    try:
        response = await session.http.post(
            f"/orgs/{member.org}/documents", files=files, headers=session.headers(member)
        )
    except Exception as exc:
        raise AuditSetupError(f"cannot reach the server at {session.http.base_url}: {exc}") from exc
    if response.status_code != 202:
        raise _refusal(f"uploading {name} to {member.org}", response.status_code, response.text)
    return str(response.json()["path"])


async def wait_indexed(
    session: AuditSession, member: Member, path: str, deadline_s: float = INDEX_DEADLINE_S
) -> None:
    """Poll the document's status until it is indexed; anything else final is an error."""
    deadline = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < deadline:
        reading = await session.call(member, "GET", f"/orgs/{member.org}/documents/{path}")
        last = json_of(reading) or {}
        if last.get("status") == "indexed":
            return
        if last.get("status") in ("skipped", "failed"):
            raise AuditSetupError(f"{member.org}/{path} ended {last.get('status')}: {last.get('error')}")
        await asyncio.sleep(POLL_S)
    raise AuditSetupError(f"{member.org}/{path} was not indexed within {deadline_s:.0f} s (last: {last})")


async def wait_graph(
    session: AuditSession, member: Member, documents: int, deadline_s: float = GRAPH_DEADLINE_S
) -> None:
    """Poll `GET /orgs/{org}/graph` until a published version covers `documents` documents."""
    deadline = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < deadline:
        last = json_of(await session.call(member, "GET", f"/orgs/{member.org}/graph")) or {}
        build = last.get("lastBuild") or {}
        if (
            last.get("upToDate")
            and build.get("status") == "published"
            and last.get("documents", 0) >= documents
        ):
            return
        await asyncio.sleep(POLL_S)
    raise AuditSetupError(
        f"the graph of {member.org} was not published within {deadline_s:.0f} s (last: {last})"
    )


async def seed_library(session: AuditSession, world: LeakWorld, lib: Library) -> None:
    """Both documents of one library, indexed, and its graph published (the admin asks for a build)."""
    admin = lib.members[0]
    paths = [
        await upload(session, admin, lib.notes_name, notes_document(lib, world.statistics_term)),
        await upload(session, admin, PAGE_NAME, page_document(lib)),
    ]
    for path in paths:
        await wait_indexed(session, admin, path)
    build = await session.call(admin, "POST", f"/orgs/{lib.org}/graph")
    if build.status != 202:
        raise _refusal(f"rebuilding the graph of {lib.org}", build.status, build.text)
    await wait_graph(session, admin, documents=len(paths))


async def seed_conversation(session: AuditSession, world: LeakWorld, member: Member) -> None:
    """The member's own thread, titled with their private marker, with one finished run quoting it."""
    created = await session.call(
        member, "POST", "/threads", json_body={"metadata": {"title": member.private}}
    )
    thread = (json_of(created) or {}).get("thread_id")
    if created.status != 200 or not thread:
        raise _refusal(f"creating a thread for {member.user}", created.status, created.text)
    question = {
        "role": "user",
        "content": f"Please keep my private note {member.private} in this conversation.",
    }
    # resumable: the server keeps the run's events, so joining its stream later replays them (the
    # streams probe's join then carries the owner's marker instead of an empty finished stream)
    body = {"assistant_id": "agent", "input": {"messages": [question]}, "stream_resumable": True}
    done = await session.call(member, "POST", f"/threads/{thread}/runs/wait", json_body=body)
    if done.status != 200:
        raise _refusal(f"running the agent for {member.user}", done.status, done.text)
    runs = json_of(await session.call(member, "GET", f"/threads/{thread}/runs")) or []
    world.threads[member.user] = thread
    world.runs[member.user] = runs[0]["run_id"] if runs else ""


async def seed(session: AuditSession, world: LeakWorld, progress: Progress) -> None:
    """The whole world: both libraries (one after the other: a small server builds one graph at a time)."""
    for lib in world.libraries:
        started = time.monotonic()
        await seed_library(session, world, lib)
        progress(
            f"seeded {lib.org}: 2 documents indexed, graph published ({time.monotonic() - started:.0f} s)"
        )
    # together: each waits for one agent run, which the server's run queue takes in turn anyway
    await asyncio.gather(*(seed_conversation(session, world, member) for member in world.members()))
    progress(f"seeded {len(world.threads)} private conversations")
