"""Who may do what: the route dependencies that check the caller against the route's organization.

The server authenticates every route (`enable_custom_route_auth`); the caller is `request.scope["user"]`.
A route's `{org}` must be one of the caller's memberships, and from then on that checked org is the
only one used: runs are started through the in-process client, which skips the auth handlers, so the
route passes the org itself as trusted run context.

The checks run in a fixed order, each refusal before the next check: no caller (401), an org that
cannot exist (404), not a member (403), a role that cannot write (403), not an admin (403). FastAPI
solves a dependency's own dependencies before its parameters, and a route's dependencies before the
route's parameters, so `caller` runs first and every other parameter is checked after these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from librarian.auth import is_member
from webapi.errors import ApiError
from webapi.params import OrgId

#: Documents the bearer token in the OpenAPI; never refuses (the server's auth has checked the token).
bearer = HTTPBearer(bearerFormat="JWT", scheme_name="bearer", auto_error=False)


def _field(user: Any, name: str) -> Any:
    try:
        return user[name]
    except (KeyError, TypeError, AttributeError):
        return getattr(user, name, None)


async def caller(
    request: Request, _token: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]
) -> Any:
    """The authenticated user the server's auth middleware put in the scope."""
    user = request.scope.get("user")
    if user is None or not getattr(user, "is_authenticated", False):
        raise ApiError(401, "unauthenticated", "a bearer token is required")
    return user


@dataclass(frozen=True)
class Access:
    """A checked request: the organization it may act on, and who acts (recorded on the runs it starts)."""

    org: str
    owner: str


class Membership:
    """Dependency: the route's organization, once the caller is shown to be a member (a writer, an admin).

    `admin_to` names what only the organization's admins may do, for the refusal's message.
    """

    def __init__(self, *, write: bool = False, admin_to: str | None = None) -> None:
        self.write, self.admin_to = write, admin_to

    async def __call__(self, org: OrgId, user: Annotated[Any, Depends(caller)]) -> Access:
        if not is_member(user, org):
            raise ApiError(403, "forbidden", "you are not a member of this organization")
        if self.write and "documents:write" not in (_field(user, "permissions") or []):
            raise ApiError(403, "forbidden", "your role cannot change this organization's documents")
        if self.admin_to is not None and _field(user, "role") != "admin":
            raise ApiError(403, "forbidden", f"only an organization admin can {self.admin_to}")
        return Access(org=org, owner=str(_field(user, "identity")))


Reader = Annotated[Access, Depends(Membership())]
Writer = Annotated[Access, Depends(Membership(write=True))]


def admin(what: str) -> Any:
    """Dependency for what only an organization's admins may do (`what` is said in the refusal)."""
    return Depends(Membership(write=True, admin_to=what))
