"""Parsing the JSON a chat model returns, with the reference's two repair rules, and validators.

Models wrap JSON in code fences, add a sentence before it, or trail commentary after it. The
reference (graphrag-ts) does exactly two things, and so do we, so a reply it accepts we accept:

1. strip a Markdown code fence (```json ... ``` or ``` ... ```) and parse what is left;
2. failing that, take the first `[` or `{` (whichever comes first) up to its matching close,
   counting brackets outside JSON strings only, and parse that.

Anything else is a `JsonRepairError`; callers retry or fall back (a build never crashes on it, a
global map batch counts as failed). Validators check structure and ranges after parsing, because a
well-formed `{"usefulness": 250}` is as wrong as a syntax error.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from librarian.errors import LibrarianError

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?```\s*$", re.DOTALL)
_CLOSE = {"{": "}", "[": "]"}


class JsonRepairError(LibrarianError, ValueError):
    """A model reply holds no JSON we can recover, or the JSON has the wrong shape."""

    code = "model_output_invalid"


def strip_code_fence(text: str) -> str:
    """The inside of a reply that is one fenced block; other text unchanged (but trimmed)."""
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text.strip()


def first_balanced(text: str) -> str | None:
    """The first `[`/`{` through its matching close, ignoring brackets inside JSON strings."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in _CLOSE:
            stack.append(_CLOSE[char])
        elif char in "}]":
            if not stack or stack.pop() != char:
                return None  # mismatched close: not a JSON value
            if not stack:
                return text[start : i + 1]
    return None


def parse_llm_json(text: str | None) -> Any:
    """Rule 1, then rule 2; raises JsonRepairError when neither yields JSON."""
    if not isinstance(text, str) or not text.strip():
        raise JsonRepairError("the model returned no text where JSON was expected")
    body = strip_code_fence(text)
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        pass
    candidate = first_balanced(body)
    if candidate is not None:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    raise JsonRepairError("the model's reply holds no parseable JSON object or array")


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise JsonRepairError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def _text(value: dict[str, Any], key: str, what: str) -> str:
    text = value.get(key)
    if not isinstance(text, str):
        raise JsonRepairError(f"{what}: '{key}' must be a string")
    return text


def validate_map_answer(value: Any) -> dict[str, Any]:
    """Global map: `{"answer": str, "usefulness": 0-100}` (a number; integral floats accepted).

    Booleans are rejected although Python counts them as ints: `true` is not a score.
    """
    obj = _object(value, "map answer")
    answer = _text(obj, "answer", "map answer")
    score = obj.get("usefulness")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise JsonRepairError("map answer: 'usefulness' must be a number")
    if not 0 <= score <= 100:
        raise JsonRepairError("map answer: 'usefulness' must be between 0 and 100")
    if score > 0 and not answer.strip():
        raise JsonRepairError("map answer: a useful answer (usefulness > 0) cannot be empty")
    return {"answer": answer.strip(), "usefulness": round(score)}


def validate_reduce_answer(value: Any) -> dict[str, str]:
    """Global reduce: `{"answer": str}` with some text in it."""
    answer = _text(_object(value, "reduce answer"), "answer", "reduce answer").strip()
    if not answer:
        raise JsonRepairError("reduce answer: 'answer' is empty")
    return {"answer": answer}


def validate_selected_communities(value: Any, known: list[str]) -> list[str]:
    """Local filter: `{"selectedCommunityIds": [...]}`, restricted to ids that were offered.

    An id the model invents is dropped, not trusted; order follows the model's list, duplicates go.
    Ids are compared as strings, so `3` and `"3"` name the same community.
    """
    obj = _object(value, "community filter")
    ids = obj.get("selectedCommunityIds")
    if not isinstance(ids, list):
        raise JsonRepairError("community filter: 'selectedCommunityIds' must be a list")
    offered = {str(k) for k in known}
    selected: list[str] = []
    for item in ids:
        key = str(item)
        if key in offered and key not in selected:
            selected.append(key)
    return selected


def validate_query_parse(value: Any) -> dict[str, list[str]]:
    """Query parsing: `{"entities": [...], "keywords": [...], "themes": [...]}`; missing lists are empty."""
    obj = _object(value, "query parse")
    parsed: dict[str, list[str]] = {}
    for key in ("entities", "keywords", "themes"):
        items = obj.get(key, [])
        if not isinstance(items, list):
            raise JsonRepairError(f"query parse: '{key}' must be a list")
        parsed[key] = [str(i).strip() for i in items if isinstance(i, str | int | float) and str(i).strip()]
    return parsed
