"""`librarian eval leaks --url URL`: the cross-tenant and cross-user leak audit of a running deployment.

    librarian eval leaks --url https://librarian.example.com [--secret S] [--json] [--channels a,b] [--keep]

It seeds two fresh organizations with two users each (names drawn per run), then tries every read
channel as the other organization and as the other user, and prints a per-channel tally
(`librarian.evaluation.leaks`, docs/leak-audit.md). Tokens are signed with the server's shared secret,
read from the same settings the server uses (LIBRARIAN_AUTH_SECRET, _ISSUER, _AUDIENCE) unless given.

Exit codes: 0 every channel passed; 1 a leak was found; 2 the audit could not run (usage, secret,
server refused or unreachable); 3 no leak, but some channel went untested.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

EXIT_PASSED, EXIT_LEAK, EXIT_SETUP, EXIT_UNTESTED = 0, 1, 2, 3


def add_leaks_command(sub: Any) -> argparse.ArgumentParser:
    """Register `leaks` on the `eval` subparsers."""
    leaks = sub.add_parser(
        "leaks", help="try every read channel as another organization and another user; per-channel tally"
    )
    leaks.add_argument("--url", required=True, help="the deployment's base URL, e.g. http://127.0.0.1:8123")
    leaks.add_argument("--secret", default=None, help="HS256 signing secret (default: LIBRARIAN_AUTH_SECRET)")
    leaks.add_argument("--issuer", default=None, help="token issuer (default: LIBRARIAN_AUTH_ISSUER)")
    leaks.add_argument("--audience", default=None, help="token audience (default: LIBRARIAN_AUTH_AUDIENCE)")
    leaks.add_argument("--tag", default=None, help="names the seeded organizations (default: random)")
    leaks.add_argument(
        "--channels", default=None, help="comma-separated subset of the channels (default: all)"
    )
    leaks.add_argument("--json", action="store_true", help="print the report as JSON")
    leaks.add_argument(
        "--keep",
        action="store_true",
        help="keep the seeded documents and conversations (default: delete them)",
    )
    return leaks


def _channels(value: str | None) -> tuple[str, ...]:
    from librarian.evaluation.leaks import CHANNELS

    if value is None:
        return CHANNELS
    chosen = tuple(c.strip() for c in value.split(",") if c.strip())
    unknown = [c for c in chosen if c not in CHANNELS]
    if unknown or not chosen:
        raise ValueError(f"unknown channels {unknown or value!r}; the channels are {', '.join(CHANNELS)}")
    return chosen


def _url(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--url must be an http(s) URL, not {value!r}")
    return value.rstrip("/")


def run_leaks_command(args: argparse.Namespace) -> int:
    """Run the audit and print its tally; the exit code says leak / untested / passed."""
    from librarian.evaluation.leaks import AuditSetupError, TokenSigner, run_audit, to_json, to_text
    from librarian.evaluation.leaks.world import plan_world
    from librarian.settings import load_settings

    try:
        settings = load_settings()
        signer = TokenSigner(
            args.secret or settings.auth_secret or "",
            issuer=args.issuer or settings.auth_issuer,
            audience=args.audience or settings.auth_audience,
        )
        channels, url = _channels(args.channels), _url(args.url)
        report = asyncio.run(
            run_audit(url, signer, channels=channels, world=plan_world(args.tag), keep=args.keep)
        )
    except (AuditSetupError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_SETUP
    print(to_json(report) if args.json else to_text(report))
    if report.leaked:
        return EXIT_LEAK
    return EXIT_PASSED if report.complete else EXIT_UNTESTED
