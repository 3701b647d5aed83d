"""One citation check for every answer path: search, graph local, graph global (and any later one).

The agent checks its final answer in `graphs.agent_middleware.VerifyCitations`; the offline agent in
its node (`librarian.answers.extractive.checked`). `librarian ask --mode local|global` builds its
answers outside the agent (`services.ask`), so they come here: the same `verify_message`, the same
scorer (the stack's MiniLM), the same judge when `LIBRARIAN_SUPPORT_JUDGE=llm` and a chat model is
configured, the same `LIBRARIAN_UNSUPPORTED_SENTENCES` policy, the same records. A path hands over a
`Draft` (text, the sources its `[n]` cite, the span of the text that makes claims); sources that
stand for more than their text (a global answer's communities) say so under `support`, and the check
reads that too (`librarian.answers.source_support`). A new path (DRIFT) needs nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage

from librarian.answers.citations import Citation
from librarian.answers.extractive import Draft
from librarian.answers.verify import judge_for, support_scorer, verify_message
from librarian.stack import Stack


def check_draft_sync(stack: Stack, draft: Draft, model: Any | None) -> tuple[str, list[Citation]]:
    """(the text to show, one citation record per checked sentence); no records when the draft has
    nothing to check (nothing found, an abstention)."""
    if draft.check is None:
        return draft.text, []
    revised, records = verify_message(
        AIMessage(content=draft.text),
        draft.sources,
        support_scorer(stack),
        judge_for(stack.settings, model),
        stack.settings.unsupported_sentences,
        start=draft.check[0],
        end=draft.check[1],
    )
    return (str(revised.content) if revised is not None else draft.text), records


async def check_draft(stack: Stack, draft: Draft, model: Any | None) -> tuple[str, list[Citation]]:
    """`check_draft_sync` off the event loop: the scorer runs MiniLM and the judge a sync model call."""
    return await asyncio.to_thread(check_draft_sync, stack, draft, model)
