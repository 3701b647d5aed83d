"""`librarian token --user U --org O`: a development bearer token signed with the shared secret.

Production tokens come from the identity provider; this one exists so a developer can call the
server without one. (Not named `token.py`: run as a script, this folder would shadow the standard
library's `token`.)
"""

from __future__ import annotations

import argparse
from typing import Any

from librarian_cli.common import CliError

ROLES = ("member", "admin", "reader")


def add_token_command(subparsers: Any) -> argparse.ArgumentParser:
    tok = subparsers.add_parser("token", help="mint a development bearer token (LIBRARIAN_AUTH_SECRET)")
    tok.add_argument("--user", required=True, help="the token's subject")
    tok.add_argument("--org", required=True, help="active organization")
    tok.add_argument("--orgs", help="further memberships, comma-separated")
    tok.add_argument("--role", default="member", choices=ROLES)
    tok.add_argument("--ttl", type=int, default=3600, help="seconds until it expires (default 3600)")
    return tok


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a development token; production tokens come from the identity provider."""
    from librarian.auth import mint_token
    from librarian.settings import Settings

    settings = Settings()
    secret = settings.auth_secret
    if not secret:
        raise CliError("LIBRARIAN_AUTH_SECRET is not set; it signs the token")
    if not 0 < args.ttl <= settings.auth_max_token_lifetime_s:
        # the server refuses longer-lived shared-secret tokens: say so now, not at the first request
        raise CliError(
            f"--ttl must be between 1 and {settings.auth_max_token_lifetime_s} seconds "
            "(LIBRARIAN_AUTH_MAX_TOKEN_LIFETIME_S)"
        )
    orgs = [o for o in (args.orgs or "").split(",") if o]
    print(mint_token(secret, args.user, args.org, orgs=orgs, role=args.role, ttl_s=args.ttl))
    return 0
