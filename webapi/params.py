"""The path and query parameters of Librarian's routes, each declared once: its check and its OpenAPI.

A parameter's check is a `BeforeValidator` that raises `ApiError`. Pydantic lets exceptions other than
`ValueError` and `AssertionError` through unwrapped, so a bad value is refused with the route's own
status, code and message (never FastAPI's 422 list), by the first parameter that fails, in the order
the route declares them. The constraints beside each check (`pattern`, `ge`, `max_length`, ...) are
the same rules said in JSON Schema: they document the check, and they always hold once it passed.

A required parameter that is missing never reaches its check (FastAPI reports it as missing), so
`refusal_of_invalid` runs that parameter's check on an empty value, which is how the routes have
always read a missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Path, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BeforeValidator

from librarian.errors import InvalidPathError, TenantError
from librarian.files.paths import validate_document_path
from librarian.tenancy import ORG_ID_PATTERN, validate_organization_id
from webapi.errors import ApiError, code_for

#: The widths page images come in: a requested width is served at the nearest (the larger on a tie),
#: so one page has at most this many images in the cache, and similar screens share them.
PAGE_WIDTHS_PX = (400, 800, 1000, 1200, 1600, 2000)
DEFAULT_WIDTH_PX = 1000
MIN_WIDTH_PX, MAX_WIDTH_PX = 200, 2000
MAX_PAGE = 100_000
#: Digits a number parameter may have before it is refused unread (`int()` of a long one is slow).
MAX_DIGITS = 9
MAX_ENTITY_CHARS = 200
MAX_QUESTION_CHARS = 1000
MAX_MEMBER_CHARS = 200

#: Parameter name -> its check, for `refusal_of_invalid`.
CHECKS: dict[str, Callable[[Any], Any]] = {}


def checked_param(name: str, check: Callable[[Any], Any]) -> BeforeValidator:
    CHECKS[name] = check
    return BeforeValidator(check)


def check_org(value: Any) -> str:
    try:
        return validate_organization_id(value)
    except TenantError:
        raise ApiError(404, "not_found", "no such organization") from None


def check_document_path(value: Any) -> str:
    """The canonical (NFC) `docs/<name>` path, which the route uses from then on."""
    try:
        return validate_document_path(value)
    except InvalidPathError as exc:  # a ValueError: pydantic would wrap it, so it becomes an ApiError here
        raise ApiError(400, exc.code, str(exc)) from None


def whole_number(value: Any) -> int | None:
    """The number written in ASCII digits only, or None: no sign, space, `_`, point or exponent, and no
    other script's digits (`int()` would take `" +1_0"` and `"١"`; `isdigit()` takes `"²"`, which
    `int()` refuses). Over `MAX_DIGITS` digits it is `MAX_DIGITS` nines' worth: larger than any limit."""
    raw = value if isinstance(value, str) else str(value)
    if not raw or not raw.isascii() or not raw.isdecimal():
        return None
    return int(raw) if len(raw) <= MAX_DIGITS else 10**MAX_DIGITS


def snap_width(px: int) -> int:
    """The page width served for a requested one: the nearest of `PAGE_WIDTHS_PX`, the larger on a tie."""
    return min(PAGE_WIDTHS_PX, key=lambda allowed: (abs(allowed - px), -allowed))


def check_page(value: Any) -> int:
    number = whole_number(value)
    if number is None:
        raise ApiError(400, "bad_page", "the page must be a whole number, e.g. pages/1.png")
    if not 1 <= number <= MAX_PAGE:
        raise ApiError(404, "page_not_found", "pages are numbered from 1")
    return number


def check_width(value: Any) -> int:
    """A width from `MIN_WIDTH_PX` to `MAX_WIDTH_PX`, served at the nearest of `PAGE_WIDTHS_PX`."""
    number = whole_number(value)
    if number is None or not MIN_WIDTH_PX <= number <= MAX_WIDTH_PX:
        message = f"width must be a whole number of pixels from {MIN_WIDTH_PX} to {MAX_WIDTH_PX}"
        raise ApiError(400, "bad_width", message)
    return snap_width(number)


def check_entity(value: Any) -> str:
    entity = str(value or "").strip()
    if not entity or len(entity) > MAX_ENTITY_CHARS:
        raise ApiError(400, "bad_entity", f"give an entity name of 1 to {MAX_ENTITY_CHARS} characters")
    return entity


def check_question(value: Any) -> str:
    question = str(value or "").strip()
    if not question or len(question) > MAX_QUESTION_CHARS:
        raise ApiError(400, "bad_question", f"give a question of 1 to {MAX_QUESTION_CHARS} characters")
    return question


def check_member(value: Any) -> str:
    """A user id as tokens carry it (`sub`): printable, no surrounding spaces."""
    member = str(value or "")
    if not member or len(member) > MAX_MEMBER_CHARS or member != member.strip() or not member.isprintable():
        raise ApiError(400, "bad_member", f"give a user id of 1 to {MAX_MEMBER_CHARS} printable characters")
    return member


OrgId = Annotated[
    str,
    Path(pattern=ORG_ID_PATTERN.pattern, description="Organization id; one of the caller's memberships."),
    checked_param("org", check_org),
]
DocumentPath = Annotated[
    str,
    Path(pattern="^docs/.+$", description="Document path, `docs/<file name>` (URL-encoded)."),
    checked_param("path", check_document_path),
]
PageNumber = Annotated[
    int,
    Path(ge=1, le=MAX_PAGE, description="1-based page number (a source's `page`)."),
    checked_param("page", check_page),
]
PageWidth = Annotated[
    int,
    Query(
        ge=MIN_WIDTH_PX,
        le=MAX_WIDTH_PX,
        description=(
            "Image width in pixels, served at the nearest of "
            + ", ".join(map(str, PAGE_WIDTHS_PX))
            + " (the larger on a tie); a very tall or very large page comes out smaller."
        ),
    ),
    checked_param("width", check_width),
]
EntityName = Annotated[
    str,
    Query(min_length=1, max_length=MAX_ENTITY_CHARS, description="An entity name or alias."),
    checked_param("entity", check_entity),
]
MemberId = Annotated[
    str,
    Path(min_length=1, max_length=MAX_MEMBER_CHARS, description="A member's user id (the token's `sub`)."),
    checked_param("member", check_member),
]
Question = Annotated[
    str,
    Query(min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, naming its entities."),
    checked_param("q", check_question),
]


def refusal_of_invalid(exc: RequestValidationError) -> ApiError:
    """The refusal of a parameter FastAPI reported before its check ran (a missing required one)."""
    for error in exc.errors():
        check = CHECKS.get(str(error.get("loc", ("",))[-1]))
        if check is not None:
            try:
                check("")
            except ApiError as refusal:
                return refusal
    return ApiError(400, code_for(400), "the request's parameters are invalid")
