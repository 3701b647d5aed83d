"""Variable-size chunks on block boundaries, Reducto-style, with the section path in `embed`.

A block is never cut unless it alone exceeds the size (text then splits on sentences, filling the
current chunk first; tables on rows with the header repeated), because a chunk boundary inside a
paragraph or table separates facts from the words that give them meaning. A chunk's `embed` starts
with the section path in effect where it begins, so a chunk about "Requirements" embeds as
"Section: /usr > Requirements" and competes on the right topic, while `content` stays the text a
person should see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from librarian.parsing.blocks import TABLE, ParsedBlock
from librarian.parsing.tables import split_table
from librarian.parsing.types import Chunk

_SENTENCE_END = re.compile(r"(?<=[.!?。！？;:])\s+")
_SEPARATOR = "\n\n"
# A long text block starts in the current chunk only if at least this share of a chunk is left:
# a few words split off into a nearly full chunk would be a fragment without its context.
MIN_FILL = 0.25


@dataclass(frozen=True)
class _Piece:
    block: ParsedBlock
    trail: tuple[str, ...]  # headings in effect before this block


def split_text(text: str, max_chars: int) -> list[str]:
    """Split on sentence ends, then on spaces, then hard, so no part exceeds `max_chars`."""
    if len(text) <= max_chars:
        return [text]
    parts: list[str] = []
    current = ""
    for sentence in _sentences(text, max_chars):
        candidate = f"{current} {sentence}" if current else sentence
        if len(candidate) > max_chars and current:
            parts.append(current)
            current = sentence
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts


def _sentences(text: str, max_chars: int) -> Iterator[str]:
    for sentence in _SENTENCE_END.split(text):
        if len(sentence) <= max_chars:
            yield sentence
            continue
        word_run = ""
        for word in sentence.split():
            while len(word) > max_chars:
                if word_run:
                    yield word_run
                    word_run = ""
                yield word[:max_chars]
                word = word[max_chars:]
            candidate = f"{word_run} {word}" if word_run else word
            if len(candidate) > max_chars:
                yield word_run
                word_run = word
            else:
                word_run = candidate
        if word_run:
            yield word_run


def _whole_sentences(text: str, room: int) -> tuple[str, str]:
    """The longest run of whole sentences from the start that fits in `room`, and the rest."""
    sentences = _SENTENCE_END.split(text)
    taken, size = 0, -1
    while taken < len(sentences) - 1 and size + 1 + len(sentences[taken]) <= room:
        size += 1 + len(sentences[taken])
        taken += 1
    return " ".join(sentences[:taken]), " ".join(sentences[taken:])


def _split_block(block: ParsedBlock, max_chars: int, room: int) -> list[ParsedBlock]:
    """A block as parts of at most `max_chars`; a text block that must be cut anyway fills the
    current chunk's `room` first, so a short paragraph before a long one (a title before its
    abstract) is not left as a chunk on its own."""
    if len(block.content) <= max_chars:
        return [block]
    if block.type == TABLE:
        return split_table(block, max_chars)
    parts: list[str] = []
    rest = block.content
    if room >= max_chars * MIN_FILL:
        head, rest = _whole_sentences(rest, room)
        parts = [head] if head else []
    parts.extend(split_text(rest, max_chars))
    return [ParsedBlock(type=block.type, content=part, bbox=block.bbox, level=block.level) for part in parts]


def _with_trails(blocks: Iterable[ParsedBlock]) -> Iterator[tuple[ParsedBlock, tuple[str, ...]]]:
    """Each block with the headings in effect before it."""
    trail: list[tuple[int, str]] = []
    for block in blocks:
        if block.is_heading:  # a heading's context is its parents, not the sibling it replaces
            trail = [(level, text) for level, text in trail if level < block.level]
        yield block, tuple(text for _, text in trail)
        if block.is_heading:
            trail.append((block.level, " ".join(block.content.split())))


def _size(pieces: list[_Piece]) -> int:
    return sum(len(p.block.content) for p in pieces) + len(_SEPARATOR) * max(len(pieces) - 1, 0)


def _to_chunk(pieces: list[_Piece]) -> Chunk:
    content = _SEPARATOR.join(p.block.content for p in pieces)
    embed = _SEPARATOR.join(p.block.embed_text for p in pieces)
    if pieces[0].trail:
        embed = "Section: " + " > ".join(pieces[0].trail) + "\n" + embed
    return Chunk(content=content, embed=embed, blocks=[p.block.to_block() for p in pieces])


def _detach_trailing_headings(pieces: list[_Piece]) -> tuple[list[_Piece], list[_Piece]]:
    """Split off headings at the end of a chunk so they open the next one with their section."""
    cut = len(pieces)
    while cut > 1 and pieces[cut - 1].block.is_heading:
        cut -= 1
    if all(p.block.is_heading for p in pieces[:cut]):
        return pieces, []  # nothing but headings: keep them rather than loop
    return pieces[:cut], pieces[cut:]


def chunk_blocks(blocks: Iterable[ParsedBlock], chunk_size: int = 1000) -> list[Chunk]:
    """Pack blocks into chunks of about `chunk_size` characters of content.

    A heading starts a new chunk once the current one is at least half full, and a chunk never ends
    on a heading (it moves to the next chunk, with its section).
    """
    chunks: list[Chunk] = []
    current: list[_Piece] = []
    for block, trail in _with_trails(blocks):
        if not block.content.strip():
            continue
        room = chunk_size - _size(current) - (len(_SEPARATOR) if current else 0)
        for part in _split_block(block, chunk_size, room):
            piece = _Piece(part, trail)
            heading_break = part.is_heading and _size(current) >= chunk_size // 2
            too_big = _size([*current, piece]) > chunk_size
            if current and (heading_break or too_big):
                body, current = _detach_trailing_headings(current)
                chunks.append(_to_chunk(body))
            current.append(piece)
    if current:
        chunks.append(_to_chunk(current))
    return chunks
