"""Query parameters of the Graph page's explorer routes (`webapi.graph_explore`), each checked once.

Like `webapi.params` (and registered in its `CHECKS`): a check is a `BeforeValidator` raising
`ApiError`, so a bad value is refused with a clear 400 and its own code (never FastAPI's 422
list); the `Query` constraints say the same rules in the OpenAPI. Numbers are ASCII digits only
(`webapi.params.whole_number`): no sign, space or exponent, and a huge one is refused unread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import BeforeValidator

from webapi.errors import ApiError
from webapi.params import MAX_DIGITS, checked_param, whole_number

MAX_SEARCH_CHARS = 200
MAX_SUGGESTIONS = 50
DEFAULT_SUGGESTIONS = 10
MAX_COMMUNITY_PAGE = 50
DEFAULT_COMMUNITY_PAGE = 10
MAX_OFFSET = 10**6
MAX_COMMUNITY_ID = 10**MAX_DIGITS - 1


def _bounded(name: str, code: str, low: int, high: int) -> Callable[[Any], int]:
    """A check of a whole number from `low` to `high`, refused as `code`."""

    def check(value: Any) -> int:
        number = whole_number(value)
        if number is None or not low <= number <= high:
            raise ApiError(400, code, f"{name} must be a whole number from {low} to {high}")
        return number

    return check


def check_search(value: Any) -> str:
    """A name typed into a search box: stripped, at most MAX_SEARCH_CHARS, printable; may be empty."""
    text = str(value if value is not None else "").strip()
    if len(text) > MAX_SEARCH_CHARS or not text.isprintable():
        raise ApiError(
            400, "bad_query", f"give a search text of at most {MAX_SEARCH_CHARS} printable characters"
        )
    return text


SearchText = Annotated[
    str,
    Query(max_length=MAX_SEARCH_CHARS, description="Part of a name (case-insensitive); empty: no filter."),
    BeforeValidator(check_search),
]
SuggestionLimit = Annotated[
    int,
    Query(ge=1, le=MAX_SUGGESTIONS, description="How many entities to return."),
    checked_param("limit", _bounded("limit", "bad_limit", 1, MAX_SUGGESTIONS)),
]
PageOffset = Annotated[
    int,
    Query(ge=0, le=MAX_OFFSET, description="How many communities to skip (largest first)."),
    checked_param("offset", _bounded("offset", "bad_offset", 0, MAX_OFFSET)),
]
PageLimit = Annotated[
    int,
    Query(ge=1, le=MAX_COMMUNITY_PAGE, description="How many communities in the page."),
    checked_param("limit", _bounded("limit", "bad_limit", 1, MAX_COMMUNITY_PAGE)),
]
CommunityId = Annotated[
    int,
    Path(ge=0, le=MAX_COMMUNITY_ID, description="A community id of the published version."),
    checked_param("community", _bounded("the community id", "bad_community", 0, MAX_COMMUNITY_ID)),
]
