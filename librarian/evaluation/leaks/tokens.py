"""Tokens for the audit's seeded users, signed like the server's own (`librarian token`).

The audit must act as four different users of two organizations, so it signs development tokens with
the deployment's shared secret (LIBRARIAN_AUTH_SECRET, with LIBRARIAN_AUTH_ISSUER / _AUDIENCE when
the server checks them). A deployment that only trusts an identity provider's JWKS cannot be audited
this way: the command says so instead of sending tokens the server will refuse.
"""

from __future__ import annotations

from dataclasses import dataclass

from librarian.auth import mint_token
from librarian.evaluation.leaks.world import Member

MIN_SECRET_BYTES = 32  # the server refuses shorter HS256 secrets


class AuditSetupError(ValueError):
    """The audit cannot start (no secret, unreachable server, refused token): said in one line."""


@dataclass(frozen=True)
class TokenSigner:
    secret: str
    issuer: str | None = None
    audience: str | None = None
    ttl_s: int = 3600

    def __post_init__(self) -> None:
        if not self.secret:
            raise AuditSetupError(
                "no signing secret: set LIBRARIAN_AUTH_SECRET (the server's) or pass --secret"
            )
        if len(self.secret.encode()) < MIN_SECRET_BYTES:
            raise AuditSetupError(
                f"the signing secret must be at least {MIN_SECRET_BYTES} bytes, as the server's is"
            )

    def token(self, member: Member) -> str:
        """A bearer token for `member` in their organization, with their role."""
        return mint_token(
            self.secret,
            member.user,
            member.org,
            role=member.role,
            ttl_s=self.ttl_s,
            issuer=self.issuer,
            audience=self.audience,
        )
