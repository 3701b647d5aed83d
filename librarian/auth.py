"""Bearer tokens: verify and mint the JWTs that carry a caller's identity and organizations.

Pure functions over PyJWT, so the server's auth handler, the CLI and tests share one definition of a
valid token. The organization a token names becomes the namespace searched, so verification is
strict on purpose: an explicit algorithm allow-list (never `none`, never "whatever the header
says"), a required numeric expiry (and numeric `iat`/`nbf` when present), a bounded lifetime for
shared-secret tokens, and an active organization that must be one of the token's memberships.

Claims: `sub` (user), `org` (active organization), `orgs` (memberships), `role`, `exp`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jwt

from librarian.errors import ConfigError, LibrarianError, TenantError
from librarian.settings import Settings, get_settings
from librarian.tenancy import validate_organization_id

#: HS256 secrets shorter than this are guessable offline from any one token (RFC 7518 §3.2).
MIN_SECRET_BYTES = 32
HMAC_ALGORITHMS = ("HS256",)
#: Asymmetric algorithms accepted from a JWKS; HMAC is excluded there so a public key can never be
#: used as an HMAC secret (the classic algorithm-confusion forgery).
JWKS_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "PS256")
ROLES = ("member", "admin", "reader")
DEFAULT_TTL_S = 3600
#: Default longest life of a shared-secret token (`LIBRARIAN_AUTH_MAX_TOKEN_LIFETIME_S`).
MAX_LIFETIME_S = 24 * 3600
_LEEWAY_S = 10
_TIME_CLAIMS = ("exp", "iat", "nbf")


def is_member(user: Any, organization_id: str) -> bool:
    """The one membership check, for a `Principal` and for the user dict the server keeps.

    Routes see the server's copy of the caller (`request.scope["user"]`, built from
    `Principal.as_user()`), token verification the `Principal` itself; both ask here.
    """
    if isinstance(user, Principal):
        organizations: Any = user.organizations
    else:
        try:
            organizations = user["orgs"]
        except (KeyError, TypeError, AttributeError):
            organizations = getattr(user, "orgs", None)
    return isinstance(organization_id, str) and organization_id in (organizations or ())


class AuthenticationError(LibrarianError):
    """The request carries no usable credentials (HTTP 401). Messages never echo the token."""

    code = "unauthenticated"


def presented_token(authorization: str | None, api_key: str | None) -> str:
    """The one token a request presents, from `Authorization: Bearer` and/or `X-Api-Key`.

    Both headers may carry it (the LangGraph JS SDK sends its `apiKey` as `X-Api-Key`); when both
    are present they must agree, so a proxy that injects one cannot be overridden by the other.
    """
    bearer: str | None = None
    if authorization is not None and authorization.strip():
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AuthenticationError("a bearer token is required")
        bearer = value.strip()
    key = api_key.strip() if api_key is not None and api_key.strip() else None
    if bearer and key and bearer != key:
        raise AuthenticationError("Authorization and X-Api-Key carry different tokens")
    token = bearer or key
    if not token:
        raise AuthenticationError("a bearer token is required")
    return token


@dataclass(frozen=True)
class Principal:
    """A verified caller: who they are and which organizations' libraries they may use."""

    user_id: str
    organization_id: str
    organizations: tuple[str, ...]
    role: str = "member"
    expires_at: int = 0
    permissions: tuple[str, ...] = field(default=())

    def is_member(self, organization_id: str) -> bool:
        return is_member(self, organization_id)

    def as_user(self) -> dict[str, Any]:
        """The user dict the LangGraph server stores (`langgraph_auth_user` in runs)."""
        return {
            "identity": self.user_id,
            "display_name": self.user_id,
            "is_authenticated": True,
            "organization_id": self.organization_id,
            "orgs": list(self.organizations),
            "role": self.role,
            "permissions": list(self.permissions),
        }


def permissions_for(role: str) -> tuple[str, ...]:
    """Coarse permissions per role; readers can chat but cannot change the library."""
    if role == "reader":
        return ("documents:read", "chat")
    return ("documents:read", "documents:write", "chat")


def check_secret(secret: str | None) -> str:
    """Refuse missing or short HS256 secrets at start-up, naming the variable."""
    if not secret:
        raise ConfigError(
            "LIBRARIAN_AUTH_SECRET (or LIBRARIAN_AUTH_JWKS_URL) is not set; the server needs one"
        )
    if len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"LIBRARIAN_AUTH_SECRET is {len(secret.encode('utf-8'))} bytes; at least {MIN_SECRET_BYTES} "
            "are required (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`)"
        )
    return secret


def principal_from_claims(claims: dict[str, Any]) -> Principal:
    """Turn verified claims into a Principal; malformed membership claims are an auth failure."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub.strip():
        raise AuthenticationError("token has no subject")
    raw_orgs = claims.get("orgs")
    org = claims.get("org")
    if raw_orgs is None:
        raw_orgs = [org] if org else []
    if not isinstance(raw_orgs, list) or not raw_orgs:
        raise AuthenticationError("token has no organization memberships")
    try:
        orgs = tuple(validate_organization_id(o) for o in raw_orgs)
        active = validate_organization_id(org if org is not None else orgs[0])
    except TenantError:
        raise AuthenticationError("token names an invalid organization id") from None
    if active not in orgs:
        raise AuthenticationError("token's active organization is not one of its memberships")
    role = claims.get("role", "member")
    if role not in ROLES:
        raise AuthenticationError("token has an unknown role")
    return Principal(
        user_id=sub,
        organization_id=active,
        organizations=orgs,
        role=role,
        expires_at=int(claims.get("exp", 0)),
        permissions=permissions_for(role),
    )


def check_time_claims(claims: dict[str, Any], *, max_lifetime_s: int | None, now: float) -> None:
    """Time claims must be finite numbers (RFC 7519 NumericDate), and a lifetime may be capped.

    PyJWT converts with `int()`, so `"exp": "99999999999"` or `1e308` would pass its checks and
    make a token that never expires. With a cap, `exp - iat` (or `exp - now` without `iat`) must
    not exceed it, and neither may `exp - now`, so a future `iat` cannot stretch the window.
    """
    for name in _TIME_CLAIMS:
        if name not in claims:
            continue
        value = claims[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise AuthenticationError(f"token claim {name!r} is not a number of seconds")
    if max_lifetime_s is None:
        return
    exp = claims["exp"]
    start = claims.get("iat", now)
    if exp - start > max_lifetime_s or exp - now > max_lifetime_s + _LEEWAY_S:
        raise AuthenticationError(f"token lifetime exceeds the limit of {max_lifetime_s} seconds")


class TokenVerifier:
    """Verifies bearer tokens with an HS256 secret or an issuer's JWKS (one of the two).

    `max_lifetime_s` caps shared-secret tokens only: a leaked HS256 secret must not mint tokens that
    outlive its rotation. An identity provider's tokens follow that provider's policy.
    """

    def __init__(
        self,
        *,
        secret: str | None = None,
        jwks_url: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        max_lifetime_s: int = MAX_LIFETIME_S,
    ) -> None:
        if jwks_url:
            self._jwks: jwt.PyJWKClient | None = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300)
            self._secret: str | None = None
            self._algorithms: Sequence[str] = JWKS_ALGORITHMS
        else:
            self._jwks = None
            self._secret = check_secret(secret)
            self._algorithms = HMAC_ALGORITHMS
        self._issuer = issuer
        self._audience = audience
        self._max_lifetime_s = None if self._jwks is not None else max_lifetime_s

    def _key(self, token: str) -> Any:
        if self._jwks is None:
            return self._secret
        try:
            return self._jwks.get_signing_key_from_jwt(token).key
        except jwt.PyJWKClientError as exc:
            raise AuthenticationError("token signing key is unknown or unreachable") from exc

    def verify(self, token: str) -> Principal:
        """Return the Principal of a valid token, or raise AuthenticationError (never echoing it)."""
        if not token or len(token) > 8192:
            raise AuthenticationError("missing or oversized bearer token")
        try:
            claims = jwt.decode(
                token,
                self._key(token),
                algorithms=list(self._algorithms),
                issuer=self._issuer,
                audience=self._audience,
                leeway=_LEEWAY_S,
                options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise AuthenticationError("token has expired") from None
        except (jwt.InvalidTokenError, OverflowError, ValueError, TypeError):
            # PyJWT's int() conversions raise OverflowError on `"exp": Infinity` (JSON allows it).
            raise AuthenticationError("token is invalid") from None
        check_time_claims(claims, max_lifetime_s=self._max_lifetime_s, now=time.time())
        return principal_from_claims(claims)


def verifier_from_settings(settings: Settings) -> TokenVerifier:
    """The verifier the server uses; raises ConfigError when no usable key material is configured."""
    return TokenVerifier(
        secret=settings.auth_secret,
        jwks_url=settings.auth_jwks_url,
        issuer=settings.auth_issuer,
        audience=settings.auth_audience,
        max_lifetime_s=settings.auth_max_token_lifetime_s,
    )


@functools.cache
def server_verifier() -> TokenVerifier:
    """The verifier of the process's settings, built once (the server's middlewares share it)."""
    return verifier_from_settings(get_settings())


def mint_token(
    secret: str,
    user: str,
    org: str,
    *,
    orgs: Sequence[str] | None = None,
    role: str = "member",
    ttl_s: int = DEFAULT_TTL_S,
    issuer: str | None = None,
    audience: str | None = None,
    now: float | None = None,
) -> str:
    """A development HS256 token. Production tokens come from the identity provider."""
    check_secret(secret)
    memberships = list(dict.fromkeys([org, *(orgs or [])]))
    for o in memberships:
        validate_organization_id(o)
    if role not in ROLES:
        raise ConfigError(f"role must be one of {', '.join(ROLES)}")
    issued = int(now if now is not None else time.time())
    claims: dict[str, Any] = {
        "sub": user,
        "org": org,
        "orgs": memberships,
        "role": role,
        "iat": issued,
        "exp": issued + int(ttl_s),
    }
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm="HS256")
