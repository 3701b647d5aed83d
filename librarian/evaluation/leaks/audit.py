"""Running the leak audit: seed the world, then every channel's controls and attacks, into a tally.

Who attacks whom: for an organization's channel, the admin of the other organization reads aimed at
this organization's admin's library (both directions); for a user-private channel, each user's
conversation is read by their colleague (same organization) and by the other organization's admin.
Probes run one after another: the audit is meant for a deployment before go-live, not a load test,
and a probe's failure to run is reported as that channel being untested, never as a pass.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Mapping, Sequence

import httpx

from librarian.evaluation.leaks.cleanup import clean_up
from librarian.evaluation.leaks.probe import ChannelProbe
from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.registry import CHANNELS, default_probes
from librarian.evaluation.leaks.routes import unprobed_route_results
from librarian.evaluation.leaks.seeding import Progress, seed
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.tally import AuditReport, ChannelResult
from librarian.evaluation.leaks.tokens import TokenSigner
from librarian.evaluation.leaks.world import LeakWorld, Member, plan_world

logger = logging.getLogger("librarian.leaks")
REQUEST_TIMEOUT_S = 120.0  # one agent answer on a busy small server


def controls(world: LeakWorld, probe: ChannelProbe) -> list[Member]:
    """The owners whose own reads must show their own data."""
    if probe.scope == "user":
        return world.members()
    return [lib.members[0] for lib in world.libraries]


def attacks(world: LeakWorld, probe: ChannelProbe) -> list[tuple[Member, Member]]:
    """(reader, owner) pairs: every read that must not show the owner's data."""
    pairs: list[tuple[Member, Member]] = []
    for lib in world.libraries:
        other = next(o for o in world.libraries if o is not lib)
        if probe.scope == "organization":
            pairs.append((other.members[0], lib.members[0]))
            continue
        for owner in lib.members:
            colleague = next(m for m in lib.members if m != owner)
            pairs += [(colleague, owner), (other.members[0], owner)]
    return pairs


async def run_channel(session: AuditSession, world: LeakWorld, probe: ChannelProbe) -> ChannelResult:
    """One channel's tally; an exception in the probe makes it untested, with the reason.

    The controls run together, then the attacks together: most of a read is waiting for the server's
    run queue, so a channel's reads overlap; channels still run one after another."""
    started = time.monotonic()
    result = ChannelResult(probe.name, probe.scope)
    try:
        await probe.prepare(session, world)
        owners = controls(world, probe)
        seen = await asyncio.gather(*(probe.read(session, world, owner, owner) for owner in owners))
        result.controls = len(owners)
        failed = [control_failure(probe, world, o, r) for o, r in zip(owners, seen, strict=True)]
        result.controls_seen = failed.count(None)
        result.note = next((f for f in failed if f), "")
        pairs = attacks(world, probe)
        tried = await asyncio.gather(*(probe.read(session, world, reader, owner) for reader, owner in pairs))
        for (reader, owner), readings in zip(pairs, tried, strict=True):
            result.attempts += len(readings)
            result.leaks += _leaks(probe, world, reader, owner, readings)
    except Exception as exc:  # a broken probe is an untested channel, not a crash
        logger.warning("probe %s failed", probe.name, exc_info=True)
        result.note = f"the probe failed: {type(exc).__name__}: {str(exc)[:200]}"
    if result.controls_seen < result.controls and not result.note.startswith("the probe failed"):
        seen = f"the owner saw their own data in {result.controls_seen} of {result.controls} controls"
        result.note = f"{seen}: {result.note}" if result.note else seen
    result.seconds = time.monotonic() - started
    return result


def control_failure(
    probe: ChannelProbe, world: LeakWorld, owner: Member, readings: list[Reading]
) -> str | None:
    """Why the owner's control did not hold, or None when it did.

    Every owner-side read must answer (2xx) and show the owner's own data: a probe of several
    requests with one refused, dead or empty among them would otherwise pass on the others, leaving
    that request's route untested while the tally says passed."""
    if not readings:
        return f"{owner.user} made no request"
    for reading in readings:
        if not 200 <= reading.status < 300:
            return f"{owner.user}'s own {reading.request} answered {reading.status}"
        if not probe.evidence(world, owner, owner, reading):
            return f"{owner.user}'s own {reading.request} showed none of their data"
    return None


def _leaks(
    probe: ChannelProbe, world: LeakWorld, reader: Member, owner: Member, readings: list[Reading]
) -> list[str]:
    """One line per reading that carried the owner's evidence to the reader."""
    who = f"{reader.user} ({reader.org}) -> {owner.user} ({owner.org})"
    lines = []
    for reading in readings:
        found = probe.evidence(world, reader, owner, reading)
        if found:
            lines.append(f"{reading.request} [{reading.status}] {who}: {', '.join(found)}")
    return lines


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def run_audit(
    url: str,
    signer: TokenSigner,
    *,
    probes: Mapping[str, ChannelProbe] | None = None,
    channels: Sequence[str] = CHANNELS,
    world: LeakWorld | None = None,
    progress: Progress = _stderr,
    keep: bool = False,
) -> AuditReport:
    """Seed a fresh world on the deployment at `url`, probe every channel, and tally them; then
    delete what was seeded unless `keep`."""
    started = time.monotonic()
    world = world or plan_world()
    probes = default_probes() if probes is None else probes
    results: list[ChannelResult] = []
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT_S) as http:
        session = AuditSession(http, signer)
        await seed(session, world, progress)
        for channel in channels:
            probe = probes.get(channel)
            if probe is None:
                results.append(ChannelResult(channel, "-", note="no probe for this channel"))
                continue
            results.append(await run_channel(session, world, probe))
            last = results[-1]
            progress(f"{channel}: {last.attempts} attempts, {len(last.leaks)} leaks, {last.status}")
        probed = {name for name in channels if name in probes}
        results += await unprobed_route_results(session, world.libraries[0].members[0], probed)
        if not keep:
            await clean_up(session, world, progress)
    orgs = [lib.org for lib in world.libraries]
    return AuditReport(url, world.tag, orgs, results, seconds=time.monotonic() - started)
