"""The agent without a chat model: retrieve, then quote the best-supported sentences with citations.

No model that ships offline answers well enough (DESIGN §6), so instead of a bad generated answer
the graph returns an extractive one, clearly marked as such: every sentence in it is a verbatim
sentence of the cited source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from graphs.agent_state import LibrarianAgentState
from graphs.context import LibrarianContext, organization_of
from librarian.stack import Stack
from tools.retrieval import SearchOptions, Source, search
from tools.search import number_sources

EXTRACTIVE_NOTICE = "Extractive answer (no chat model is configured): the most relevant sentences, quoted."
NOTHING_FOUND = "I found nothing relevant in this organization's documents."
SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n+")


def last_question(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            content = message.content
            return (
                content
                if isinstance(content, str)
                else " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            )
    return ""


def sentences_of(text: str) -> list[str]:
    """Sentences worth quoting: long enough to say something, stripped of table/markup noise."""
    parts = (s.strip(" -*#|\t") for s in SENTENCE_BOUNDARY.split(text))
    return [s for s in parts if len(s) >= 25 and sum(c.isalpha() for c in s) >= 15]


def best_sentences(
    stack: Stack, question: str, numbered: list[tuple[int, Source]], limit: int = 3
) -> list[tuple[int, str]]:
    """The `limit` sentences most similar to the question (bundled dense model), with their source."""
    candidates = [(n, s) for n, source in numbered[:4] for s in sentences_of(source["text"])]
    if not candidates:
        return [(n, source["text"].strip()[:400]) for n, source in numbered[:1]]
    query = np.asarray(stack.dense.embed_query(question), dtype=np.float32)
    vectors = np.asarray(stack.dense.embed_documents([s for _, s in candidates]), dtype=np.float32)
    order = np.argsort(-(vectors @ query))[:limit]
    return [candidates[i] for i in sorted(order)]  # keep source order: reads better


def build_extractive_agent(stack: Callable[[], Stack], checkpointer: Any = None):
    def retrieve_and_quote(state: dict[str, Any], config: RunnableConfig, runtime: Any) -> dict[str, Any]:
        organization_id = organization_of(config, runtime)
        current = stack()
        question = last_question(state.get("messages", []))
        from tools.rerankers import make_reranker

        result = search(
            current, organization_id, question, SearchOptions.from_settings(current), make_reranker(current)
        )
        numbered = number_sources(state.get("sources") or [], result["sources"])
        if not numbered:
            reply = AIMessage(content=NOTHING_FOUND, response_metadata={"answer_mode": "extractive"})
            return {"messages": [reply]}
        quotes = best_sentences(current, question, numbered)
        lines = [EXTRACTIVE_NOTICE, *(f'- "{sentence}" [{n}]' for n, sentence in quotes)]
        cited = ", ".join(f"[{n}] {s['filename']} p.{s['page']}" for n, s in numbered[:4])
        lines.append(f"Sources: {cited}")
        reply = AIMessage(content="\n".join(lines), response_metadata={"answer_mode": "extractive"})
        return {"messages": [reply], "sources": result["sources"]}

    builder = StateGraph(LibrarianAgentState, context_schema=LibrarianContext)
    builder.add_node("retrieve_and_quote", retrieve_and_quote)
    builder.add_edge(START, "retrieve_and_quote")
    builder.add_edge("retrieve_and_quote", END)
    return builder.compile(checkpointer=checkpointer, name="agent")
