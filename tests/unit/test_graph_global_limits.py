"""A run's global search options: accepted within the server's limits, refused with a clear error
otherwise, whatever shape a client sends."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.graph.query.global_limits import (
    MIN_BUDGET,
    GlobalOptionError,
    global_options,
    run_overrides,
)
from librarian.graph.query.global_search import GlobalOptions
from librarian.settings import Settings

SETTINGS = Settings(data_dir="/tmp/unused-graph-limits")
NAMES = ["mapBudget", "mapReserve", "reduceBudget", "reduceReserve", "concurrency"]


def test_no_overrides_are_the_reference_defaults() -> None:
    assert global_options(None, SETTINGS) == GlobalOptions()
    assert global_options(None, SETTINGS, level=1).level == 1


def test_names_in_either_spelling() -> None:
    options = global_options(
        {
            "map_budget": 4000,
            "mapReserve": 300,
            "reduce_budget": 5000,
            "REDUCE_RESERVE": 400,
            "concurrency": 2,
        },
        SETTINGS,
    )
    assert (options.map_budget, options.map_reserve, options.reduce_budget, options.reduce_reserve) == (
        4000,
        300,
        5000,
        400,
    )
    assert options.concurrency == 2


def test_limits_come_from_settings() -> None:
    roomy = SETTINGS.model_copy(update={"graph_global_max_map_budget": 64000})
    assert global_options({"mapBudget": 64000}, roomy).map_budget == 64000
    with pytest.raises(GlobalOptionError, match=r"mapBudget 64000 is over this server's limit of 32000"):
        global_options({"mapBudget": 64000}, SETTINGS)


def test_context_wins_over_configurable_key_by_key() -> None:
    config = {"configurable": {"graph_global": {"mapBudget": 4000, "concurrency": 2}}}
    assert run_overrides(config, {"graph_global": {"concurrency": 3}}) == {
        "mapBudget": 4000,
        "concurrency": 3,
    }
    assert run_overrides({}, None) is None
    with pytest.raises(GlobalOptionError, match="must be a mapping"):
        run_overrides({"configurable": {"graph_global": [1, 2]}}, None)


values = st.one_of(
    st.integers(min_value=-10, max_value=100_000),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
keys = st.one_of(st.sampled_from([*NAMES, "map_budget", "namespace", "organization_id"]), st.text(max_size=8))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=6))
def test_any_override_is_bounded_or_refused_clearly(overrides: dict[str, Any]) -> None:
    try:
        options = global_options(overrides, SETTINGS)
    except GlobalOptionError as error:
        message = str(error)
        assert message.startswith("graph_global: ")
        assert any(name in message for name in NAMES) or "unknown option" in message
        return
    assert MIN_BUDGET <= options.map_budget <= SETTINGS.graph_global_max_map_budget
    assert MIN_BUDGET <= options.reduce_budget <= SETTINGS.graph_global_max_reduce_budget
    assert 0 <= options.map_reserve < options.map_budget
    assert 0 <= options.reduce_reserve < options.reduce_budget
    assert 1 <= options.concurrency <= SETTINGS.graph_global_max_concurrency
    options.validate()  # what global_search checks: never fails on accepted options


@given(st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2)))
def test_a_non_mapping_is_refused(value: Any) -> None:
    with pytest.raises(GlobalOptionError, match="must be a mapping"):
        global_options(value, SETTINGS)
