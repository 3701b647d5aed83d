"""Check an answer's citations against the sources they name.

The agent's last step runs this after the chat model has answered (`graphs.agent_middleware`) and, for
the extractive answerer, inside its node. It writes `citations` (one record per answer sentence,
`librarian.answers.citations.Citation`) to the state. If a cited sentence is not supported, the
answer message is replaced (same id) by one where that sentence is marked or dropped
(`LIBRARIAN_UNSUPPORTED_SENTENCES`);
what the model wrote is kept in the message's `additional_kwargs["unverified_content"]`.
A source may stand for more than its text (a global answer's chunk for its community's report and
claims: `support`, `librarian.answers.source_support`); it is checked against that too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from librarian.answers.citations import Citation, PairJudge, apply_policy
from librarian.answers.source_support import verify_with_support
from librarian.answers.support import SupportScorer, bundled_embedder
from librarian.settings import Settings
from librarian.stack import Stack


def support_scorer(stack: Stack) -> SupportScorer:
    """The offline scorer, on the stack's MiniLM when it has one (no second copy of the model)."""
    from librarian.embeddings.minilm import MiniLMEmbedder

    dense = stack.dense
    return SupportScorer(dense if isinstance(dense, MiniLMEmbedder) else bundled_embedder())


def judge_for(settings: Settings, model: BaseChatModel | None) -> PairJudge | None:
    if settings.support_judge != "llm" or model is None:
        return None
    from librarian.answers.support_llm import LLMSupportJudge

    return LLMSupportJudge(model)


def answer_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def verify_message(
    message: AIMessage,
    sources: Sequence[Any],
    scorer: SupportScorer,
    judge: PairJudge | None,
    policy: str,
    start: int = 0,
    end: int | None = None,
) -> tuple[AIMessage | None, list[Citation]]:
    """(replacement message or None if unchanged, citation records) for one final answer; only
    `text[start:end]` is checked (the extractive answer's quotes, not its notice or source list)."""
    text = answer_text(message)
    records = verify_with_support(text, list(sources), scorer, judge, start, end)
    revised, records = apply_policy(text, records, "drop" if policy == "drop" else "mark")
    if all(r["action"] == "kept" for r in records):
        return None, records
    kwargs = {**message.additional_kwargs, "unverified_content": text}
    return message.model_copy(update={"content": revised, "additional_kwargs": kwargs}), records
