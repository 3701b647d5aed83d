"""Global search's map and reduce with a chat model: the reference's prompts, JSON read with repair rules."""

from __future__ import annotations

from typing import Any

from librarian.chat_model import internal_model
from librarian.costs.scope import cost_phase
from librarian.graph.json_repair import parse_llm_json, validate_map_answer, validate_reduce_answer
from librarian.graph.query.global_batches import MapBatch
from librarian.graph.query.global_search import (
    MAP_PROMPT,
    REDUCE_PROMPT,
    MapAnswer,
    Reducer,
    format_map_answer,
)


def _reply_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content or "")


class LLMMapper:
    """Map with a LangChain chat model: `MAP_PROMPT`, JSON parsed with the repair rules."""

    def __init__(self, model: Any) -> None:
        self.model = internal_model(model)  # the map's JSON is not the user's answer: never streamed

    async def __call__(self, query: str, batch: MapBatch) -> MapAnswer:
        prompt = MAP_PROMPT.format(query=query, content=batch.content)
        with cost_phase("map"):  # recorded under the caller's organization, if it opened a scope
            reply = await self.model.ainvoke(prompt)
        parsed = validate_map_answer(parse_llm_json(_reply_text(reply)))
        return MapAnswer(parsed["answer"], parsed["usefulness"], batch.community_ids)


def llm_reducer(model: Any) -> Reducer:
    model = internal_model(model)  # the reduce's JSON goes into the tool's result, not the stream

    async def reduce(query: str, selected: list[MapAnswer]) -> str:
        content = "\n\n".join(format_map_answer(a) for a in selected)
        with cost_phase("reduce"):
            reply = await model.ainvoke(REDUCE_PROMPT.format(query=query, content=content))
        return validate_reduce_answer(parse_llm_json(_reply_text(reply)))["answer"]

    return reduce
