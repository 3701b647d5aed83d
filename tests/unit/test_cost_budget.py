"""The budget setting's parsing and the verdict at a stage boundary (`librarian.costs.budget`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from librarian.costs.budget import BudgetVerdict, build_budget, parse_budgets
from librarian.errors import ConfigError
from librarian.settings import load_settings

ORGS = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


def test_overrides_win_over_the_default_and_zero_is_unlimited(tmp_path):
    settings = load_settings(
        data_dir=tmp_path, graph_build_token_budget=500, graph_build_token_budgets=" acme=20 , beta=0,"
    )
    assert build_budget(settings, "acme") == 20 and build_budget(settings, "beta") == 0
    assert build_budget(settings, "gamma") == 500
    assert build_budget(load_settings(data_dir=tmp_path), "acme") == 0  # the default: unlimited


@pytest.mark.parametrize("text", ["acme", "acme=", "acme=-1", "acme=lots", "=5", "../x=5", "acme=1.5"])
def test_a_malformed_override_names_the_setting(text):
    with pytest.raises(ConfigError, match="LIBRARIAN_GRAPH_BUILD_TOKEN_BUDGETS"):
        parse_budgets(text)


@given(st.dictionaries(ORGS, st.integers(min_value=0, max_value=10**12), max_size=6))
def test_parsing_round_trips_any_mapping(budgets):
    assert parse_budgets(",".join(f"{org}={tokens}" for org, tokens in budgets.items())) == budgets


@given(st.text(max_size=60))
def test_any_text_parses_or_is_a_config_error(text):
    try:
        parsed = parse_budgets(text)
    except ConfigError:
        return
    assert all(isinstance(v, int) and v >= 0 for v in parsed.values())


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
)
def test_the_verdict_stops_only_a_limited_build_past_its_limit(limit, spent, estimated):
    verdict = BudgetVerdict(limit=limit, spent=spent, estimated=estimated, stage="merge")
    assert verdict.exceeded == (limit > 0 and spent + estimated > limit)
    assert verdict.figures() == {"limit": limit, "spent": spent, "estimated": estimated, "stage": "merge"}
    assert verdict.reason().startswith("stopped: budget") and str(limit) in verdict.reason()
