"""The ledger's callback handler and scope (`librarian.costs.handler`, `librarian.costs.scope`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from librarian.costs.handler import UsageRecorder, usage_of
from librarian.costs.scope import cost_phase, cost_scope, current_scope, record_usage


@dataclass
class Sink:
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def record(self, org, phase, *, calls, input_tokens, output_tokens, seconds, build) -> None:
        self.rows.append((org, phase, calls, input_tokens, output_tokens, build))


def result(*usages: dict[str, int] | None, llm_output: dict[str, Any] | None = None) -> LLMResult:
    generations = [
        [ChatGeneration(message=AIMessage(content="x", usage_metadata=u) if u else AIMessage(content="x"))]
        for u in usages
    ]
    return LLMResult(generations=generations, llm_output=llm_output)


def usage(i: int, o: int) -> dict[str, int]:
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def test_usage_metadata_first_then_the_openai_token_usage():
    assert usage_of(result(usage(10, 3), usage(5, 1))) == (15, 4)
    legacy = {"token_usage": {"prompt_tokens": 7, "completion_tokens": 2}}
    assert usage_of(result(None, llm_output=legacy)) == (7, 2)
    assert usage_of(result(None)) == (0, 0)  # a provider that reports nothing: a call, zero tokens


@given(st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)), min_size=1, max_size=5))
def test_usage_sums_any_generations(pairs):
    assert usage_of(result(*(usage(i, o) for i, o in pairs))) == (
        sum(i for i, _ in pairs),
        sum(o for _, o in pairs),
    )


def test_the_handler_records_into_the_scope_of_the_call_and_nowhere_else():
    sink, handler = Sink(), UsageRecorder()
    run = uuid.uuid4()
    handler.on_chat_model_start({}, [], run_id=run)
    handler.on_llm_end(result(usage(4, 2)), run_id=run)  # outside a scope: dropped
    assert sink.rows == [] and current_scope() is None
    with cost_scope(sink, "acme", "reduce", build="b"):
        handler.on_chat_model_start({}, [], run_id=run)
        handler.on_llm_end(result(usage(4, 2)), run_id=run)
        handler.on_llm_error(RuntimeError("boom"), run_id=uuid.uuid4())  # a failed call: one call, no tokens
        assert record_usage(9, 0, 0.1, phase="embed")  # embeddings always go to `embed`
    assert sink.rows == [
        ("acme", "reduce", 1, 4, 2, "b"),
        ("acme", "reduce", 1, 0, 0, "b"),
        ("acme", "embed", 1, 9, 0, "b"),
    ]
    assert current_scope() is None and not record_usage(1, 1, 0.0)


def test_an_unknown_phase_is_refused():
    with pytest.raises(ValueError, match="unknown cost phase"), cost_scope(Sink(), "acme", "shopping"):  # type: ignore[arg-type]
        pass


def test_a_phase_inside_a_scope_keeps_its_organization_and_build_and_is_a_no_op_outside():
    sink = Sink()
    with cost_phase("map") as outside:
        assert outside is None and not record_usage(1, 1, 0.0)
    with cost_scope(sink, "acme", "answer", build="b"):
        with cost_phase("map"):
            record_usage(3, 1, 0.0)
        record_usage(2, 2, 0.0)
    assert sink.rows == [("acme", "map", 1, 3, 1, "b"), ("acme", "answer", 1, 2, 2, "b")]


def test_a_ledger_that_cannot_write_does_not_fail_the_call(caplog):
    class Broken:
        def record(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("disk full")

    with cost_scope(Broken(), "acme", "judge"):
        assert record_usage(1, 1, 0.0) is False
    assert "could not record a judge call of acme" in caplog.text
