"""Bearer-token verification: time claims, lifetime cap, and a real JWKS served over loopback HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from librarian.auth import MAX_LIFETIME_S, AuthenticationError, TokenVerifier, verifier_from_settings
from librarian.settings import load_settings

SECRET = "unit-test-secret-" + "y" * 40


def _claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": "alice", "org": "acme", "orgs": ["acme"], "iat": now, "exp": now + 600}
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def _hs(claims: dict[str, Any]) -> str:
    return jwt.encode(claims, SECRET, algorithm="HS256")


def _raw_hs(payload: str) -> str:
    """A token whose payload is exactly this JSON text (PyJWT would refuse to encode Infinity)."""
    return jwt.api_jws.encode(payload.encode(), SECRET, algorithm="HS256")


def test_a_normal_token_verifies():
    assert TokenVerifier(secret=SECRET).verify(_hs(_claims())).user_id == "alice"


@pytest.mark.parametrize(
    "overrides",
    [
        {"exp": str(int(time.time()) + 600)},  # a string PyJWT would int() and accept
        {"exp": "99999999999"},
        {"iat": str(int(time.time()))},
        {"nbf": str(int(time.time()))},
        {"exp": True},
        {"exp": [int(time.time()) + 600]},
        {"exp": {"$gt": 0}},
        {"exp": None, "iat": None},  # no exp at all
    ],
    ids=["exp-str", "exp-str-far", "iat-str", "nbf-str", "exp-bool", "exp-list", "exp-dict", "no-exp"],
)
def test_time_claims_must_be_numbers(overrides):
    with pytest.raises(AuthenticationError):
        TokenVerifier(secret=SECRET).verify(_hs(_claims(**overrides)))


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e308"])
def test_non_finite_or_huge_exp_is_refused(value):
    now = int(time.time())
    payload = f'{{"sub": "alice", "org": "acme", "orgs": ["acme"], "iat": {now}, "exp": {value}}}'
    with pytest.raises(AuthenticationError):
        TokenVerifier(secret=SECRET).verify(_raw_hs(payload))


def test_lifetime_is_capped_for_shared_secret_tokens():
    now = int(time.time())
    verifier = TokenVerifier(secret=SECRET)
    assert MAX_LIFETIME_S == 24 * 3600
    verifier.verify(_hs(_claims(iat=now, exp=now + MAX_LIFETIME_S)))
    with pytest.raises(AuthenticationError, match="lifetime"):
        verifier.verify(_hs(_claims(iat=now, exp=now + MAX_LIFETIME_S + 1)))
    with pytest.raises(AuthenticationError, match="lifetime"):  # without iat, exp - now counts
        verifier.verify(_hs(_claims(iat=None, exp=now + 10 * 365 * 86400)))
    with pytest.raises(AuthenticationError):  # an iat in the future cannot stretch the window
        verifier.verify(_hs(_claims(iat=now + 30 * 86400, exp=now + 30 * 86400 + 60)))


def test_lifetime_cap_is_a_setting(monkeypatch):
    monkeypatch.setenv("LIBRARIAN_AUTH_SECRET", SECRET)
    monkeypatch.setenv("LIBRARIAN_AUTH_MAX_TOKEN_LIFETIME_S", "120")
    verifier = verifier_from_settings(load_settings())
    now = int(time.time())
    verifier.verify(_hs(_claims(iat=now, exp=now + 120)))
    with pytest.raises(AuthenticationError, match="120 seconds"):
        verifier.verify(_hs(_claims(iat=now, exp=now + 600)))


# --- JWKS ----------------------------------------------------------------------------------------------


ISSUER = "https://idp.example.test/"
AUDIENCE = "librarian"


class _JwksServer:
    """Serves one JWKS document on a free loopback port, counting requests."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        body = json.dumps(jwks).encode()
        hits = self.hits = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits[0] += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _JwksServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def idp() -> Iterator[tuple[rsa.RSAPrivateKey, _JwksServer]]:
    key = _rsa_key()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="key-1", use="sig", alg="RS256")
    with _JwksServer({"keys": [jwk]}) as server:
        yield key, server


def _rs(key: rsa.RSAPrivateKey, kid: str = "key-1", **overrides: Any) -> str:
    claims = _claims(**{"iss": ISSUER, "aud": AUDIENCE, **overrides})
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


def _jwks_verifier(server: _JwksServer) -> TokenVerifier:
    return TokenVerifier(jwks_url=server.url, issuer=ISSUER, audience=AUDIENCE)


def test_jwks_token_verifies_against_the_served_key(idp):
    key, server = idp
    principal = _jwks_verifier(server).verify(_rs(key))
    assert (principal.user_id, principal.organization_id) == ("alice", "acme")
    assert server.hits[0] >= 1


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("wrong-kid", "signing key"),
        ("wrong-issuer", "invalid"),
        ("wrong-audience", "invalid"),
        ("other-key", "invalid"),
        ("hs256-with-public-key", "invalid"),
        ("expired", "expired"),
    ],
)
def test_jwks_refuses_wrong_kid_issuer_audience_and_key(idp, case, message):
    key, server = idp
    now = int(time.time())
    token = {
        "wrong-kid": lambda: _rs(key, kid="key-2"),
        "wrong-issuer": lambda: _rs(key, iss="https://evil.example.test/"),
        "wrong-audience": lambda: _rs(key, aud="someone-else"),
        "other-key": lambda: _rs(_rsa_key()),
        "hs256-with-public-key": lambda: jwt.encode(
            _claims(iss=ISSUER, aud=AUDIENCE), "k" * 64, algorithm="HS256", headers={"kid": "key-1"}
        ),
        "expired": lambda: _rs(key, iat=now - 7200, exp=now - 3600),
    }[case]()
    with pytest.raises(AuthenticationError, match=message):
        _jwks_verifier(server).verify(token)


def test_jwks_tokens_also_need_numeric_time_claims(idp):
    key, server = idp
    with pytest.raises(AuthenticationError):
        _jwks_verifier(server).verify(_rs(key, exp="99999999999"))


def test_one_membership_check_for_a_principal_and_the_servers_user_dict():
    from librarian.auth import Principal, is_member

    principal = Principal(user_id="u1", organization_id="acme", organizations=("acme", "globex"))
    user = principal.as_user()
    for org in ("acme", "globex", "initech", "", "ACME"):
        assert is_member(principal, org) == is_member(user, org) == principal.is_member(org)
    assert is_member(principal, "globex") and not is_member(user, "initech")
    assert not is_member({}, "acme") and not is_member(None, "acme")
