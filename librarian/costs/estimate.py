"""A build's token estimate before any model call (`librarian graph build --dry-run`).

The chunks that would be (re)extracted are the stale documents' chunks, decided by the extraction
cache exactly as the build's `collect` decides (`graphs.graph_index_stages.stale_paths`;
`graphs.graph_index_estimate` joins the two). With the
LLM extractor each extraction window is one call whose prompt is rendered and counted with the
build's own tokenizer (`librarian.graph.tokens`), plus the chat format's per-message framing; the
reply is estimated as a share of the window's text (the JSON of entities, relations and verbatim
claims). The local extractor makes no model call: zero tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from librarian.graph.tokens import count_tokens

MESSAGE_OVERHEAD_TOKENS = 7  # role and separators of one chat message (OpenAI's framing)
OUTPUT_SHARE = 0.6  # reply tokens per text token: verbatim claims plus the JSON around them
MIN_OUTPUT_TOKENS = 64  # even a tiny window's reply has the JSON skeleton


def window_prompt_tokens(texts: list[str]) -> int:
    """Exact tokens of the extraction prompt for one window of chunk texts, framing included."""
    from librarian.graph.extract.llm import EXTRACTION_PROMPT

    body = "\n\n".join(f"[chunk {n}]\n{text}" for n, text in enumerate(texts, start=1))
    return count_tokens(EXTRACTION_PROMPT.format(chunks=body)) + MESSAGE_OVERHEAD_TOKENS


def window_output_tokens(texts: list[str]) -> int:
    return max(MIN_OUTPUT_TOKENS, round(OUTPUT_SHARE * sum(count_tokens(t) for t in texts)))


def estimate_stale(
    stack: Any,
    org: str,
    documents: list[Any],
    stale: list[str],
    chunks_of: Callable[[Any, str, str, str], list[Any] | None],
) -> dict[str, Any]:
    """The estimate for extracting the `stale` paths of `documents` (what `collect` decided).

    `chunks_of(stack, org, path, content_hash)` is the build's own chunk reader, passed in because
    the build (`graphs`) sits above this package.
    """
    from librarian.graph.extract.llm import windows

    hashes = {d["path"]: d["contentHash"] for d in documents}
    llm = stack.settings.graph_extractor == "llm"
    listed: list[dict[str, Any]] = []
    output_tokens = 0
    for path in stale:
        chunks = chunks_of(stack, org, path, hashes[path]) or []
        entry: dict[str, Any] = {"path": path, "chunks": len(chunks), "calls": 0, "inputTokens": 0}
        if llm:
            for window in windows(chunks):
                texts = [c.text for c in window]
                entry["calls"] += 1
                entry["inputTokens"] += window_prompt_tokens(texts)
                output_tokens += window_output_tokens(texts)
        listed.append(entry)
    input_tokens = sum(e["inputTokens"] for e in listed)
    return {
        "organization_id": org,
        "extractor": stack.settings.graph_extractor,
        "documents": len(documents),
        "stale": listed,
        "chunks": sum(e["chunks"] for e in listed),
        "calls": sum(e["calls"] for e in listed),
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "tokens": input_tokens + output_tokens,
    }
