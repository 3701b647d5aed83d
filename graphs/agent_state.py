"""Agent state: the chat messages plus every source the agent's searches returned, numbered.

`sources[n-1]` is what an answer's `[n]` marker cites, so a client can render page and bbox.
`answered_by` names the path that answered (the chat's mode label).
`citations` checks the final answer against them: one record per sentence, with the supporting
span's character offsets into the cited source's `text` (`librarian.answers.citations.Citation`).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState

from librarian.answers.citations import Citation
from librarian.answers.numbering import merge_sources
from librarian.retrieval.search import Source


class LibrarianAgentState(AgentState):
    sources: NotRequired[Annotated[list[Source], merge_sources]]
    citations: NotRequired[list[Citation]]  # the last answer's; each run replaces it
    # which path answered the last question: {"mode": search|local|global|drift|none, "chosenBy":
    # auto|user|..., "closest": [n, ...] (an abstention's nearest sources)}; each run replaces it.
    # The answer message's `response_metadata` carries the same keys, so history shows them too.
    answered_by: NotRequired[dict[str, Any]]
