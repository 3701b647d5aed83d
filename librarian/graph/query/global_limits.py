"""A run's own global search budgets and map concurrency, within the server's limits.

graphrag-ts lets each global search set its map and reduce token budgets, their output reserves and
the map concurrency; here a run may do the same through its context (`graph_global`), `configurable`
(for clients that send only that) or `librarian ask --map-budget ...`. Those values can come from a
client on the LangGraph server, so each is bounded by settings (`LIBRARIAN_GRAPH_GLOBAL_MAX_*`): a
value over its limit is refused with an error naming the option and the limit, never clamped in
silence and never unbounded. Keys are graphrag-ts's camelCase names; snake_case is accepted too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from librarian.errors import LibrarianError
from librarian.graph.query.global_search import GlobalOptions
from librarian.settings import Settings

OVERRIDES_KEY = "graph_global"
MIN_BUDGET = 500  # tokens: below this not even the map or reduce prompt's own words fit

# accepted key (lower-cased, "_" removed) -> (GlobalOptions field, name used in messages)
_OPTIONS: dict[str, tuple[str, str]] = {
    "mapbudget": ("map_budget", "mapBudget"),
    "mapreserve": ("map_reserve", "mapReserve"),
    "reducebudget": ("reduce_budget", "reduceBudget"),
    "reducereserve": ("reduce_reserve", "reduceReserve"),
    "concurrency": ("concurrency", "concurrency"),
    "mapconcurrency": ("concurrency", "concurrency"),
}
_NAMES = sorted({name for _, name in _OPTIONS.values()})


class GlobalOptionError(LibrarianError, ValueError):
    """A run's global search option is unknown, not a whole number, or beyond the server's limit.

    A ValueError too, so callers that treat option mistakes as bad input keep doing so."""

    code = "invalid_graph_global_option"


def limits(settings: Settings) -> dict[str, tuple[int, str]]:
    """Per option name: (largest value a run may ask for, the setting that raises it)."""
    map_limit = (settings.graph_global_max_map_budget, "LIBRARIAN_GRAPH_GLOBAL_MAX_MAP_BUDGET")
    reduce_limit = (settings.graph_global_max_reduce_budget, "LIBRARIAN_GRAPH_GLOBAL_MAX_REDUCE_BUDGET")
    return {
        "mapBudget": map_limit,
        "mapReserve": map_limit,
        "reduceBudget": reduce_limit,
        "reduceReserve": reduce_limit,
        "concurrency": (settings.graph_global_max_concurrency, "LIBRARIAN_GRAPH_GLOBAL_MAX_CONCURRENCY"),
    }


def _whole_number(value: Any, name: str, where: str) -> int:
    # bool is an int in Python, and 2.0 or "2" are not what a careful client sends: refuse them all
    if isinstance(value, bool) or not isinstance(value, int):
        raise GlobalOptionError(f"{where}: {name} must be a whole number, got {value!r}")
    return value


def global_options(
    overrides: Mapping[str, Any] | None,
    settings: Settings,
    *,
    level: int | None = None,
    where: str = OVERRIDES_KEY,
) -> GlobalOptions:
    """`GlobalOptions` with a run's overrides applied, each checked against the server's limits.

    Without overrides these are the reference defaults (`global_search.GlobalOptions`). A reserve must
    stay below its budget (else no room is left for content), which is checked on the result.
    """
    options = GlobalOptions(level=level)
    if overrides is None:
        return options
    if not isinstance(overrides, Mapping):
        raise GlobalOptionError(f"{where} must be a mapping of {', '.join(_NAMES)}")
    bounds = limits(settings)
    changes: dict[str, int] = {}
    for key, value in overrides.items():
        known = _OPTIONS.get(str(key).lower().replace("_", "").replace("-", ""))
        if known is None:
            raise GlobalOptionError(f"{where}: unknown option {key!r}; expected one of {', '.join(_NAMES)}")
        field, name = known
        number = _whole_number(value, name, where)
        low = {"mapBudget": MIN_BUDGET, "reduceBudget": MIN_BUDGET, "concurrency": 1}.get(name, 0)
        high, setting = bounds[name]
        if number < low:
            raise GlobalOptionError(f"{where}: {name} must be at least {low}, got {number}")
        if number > high:
            raise GlobalOptionError(
                f"{where}: {name} {number} is over this server's limit of {high} "
                f"(set {setting} to allow more)"
            )
        changes[field] = number
    options = dataclasses.replace(options, **changes)
    if options.map_reserve >= options.map_budget:
        raise GlobalOptionError(
            f"{where}: mapReserve ({options.map_reserve}) must be below mapBudget ({options.map_budget})"
        )
    if options.reduce_reserve >= options.reduce_budget:
        raise GlobalOptionError(
            f"{where}: reduceReserve ({options.reduce_reserve}) must be below reduceBudget "
            f"({options.reduce_budget})"
        )
    return options


def run_overrides(config: Mapping[str, Any] | None, context: Any) -> dict[str, Any] | None:
    """A run's `graph_global` overrides: `configurable["graph_global"]`, then the context's (which wins
    key by key). None when neither names any."""
    configurable = (config or {}).get("configurable") or {}
    from_context = (
        context.get(OVERRIDES_KEY) if isinstance(context, Mapping) else getattr(context, OVERRIDES_KEY, None)
    )
    merged: dict[str, Any] = {}
    for where, source in (("configurable", configurable.get(OVERRIDES_KEY)), ("context", from_context)):
        if source is None:
            continue
        if not isinstance(source, Mapping):
            raise GlobalOptionError(
                f"{OVERRIDES_KEY} in the run's {where} must be a mapping of {', '.join(_NAMES)}"
            )
        merged.update(source)
    return merged or None
