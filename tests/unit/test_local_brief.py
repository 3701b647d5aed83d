"""A local graph answer fits a screen: the few best cited sentences, ranked, never layout text.

Budgets under test (`librarian.answers.local_brief`): at most 3 quoted sentences and 600 characters
of quotes, each sentence at most 280 characters, every one cited and supported by its source. The
scorer is the real bundled MiniLM; the sources are passages of the real FHS 3.0 HTML from
`data/docs`, table of contents included, so the layout filter meets what it was written for.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from librarian.answers.checked import check_draft_sync
from librarian.answers.extractive import EXTRACTIVE_NOTICE, Quote
from librarian.answers.local_brief import (
    BRIEF_MAX_CHARS,
    BRIEF_MAX_SENTENCES,
    SENTENCE_MAX_CHARS,
    brief_local_draft,
    choose_brief,
    page_brief,
    quotable,
)
from librarian.answers.quotes import QuoteUnit, near_identical
from librarian.retrieval.search import Source
from librarian.stack import Stack

QUESTION = "What is /usr/libexec?"
TOC_LINES = [  # as the FHS PDF's contents pages read after parsing (issue 27)
    "Specific Options ................................ 20 4.7. /usr/libexec : Binaries run by other programs",
    "4.6. /usr/lib : Libraries for programming and packages 4.7. /usr/libexec : Binaries run by programs",
    "Purpose . . . . . . . . . . . . . . . . . . . . . . . . 21",
]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def fhs_passages(docs_dir: Path, word: str = "libexec", width: int = 900) -> list[str]:
    """Non-overlapping passages of the FHS HTML around mentions of `word`, as a local search's evidence."""
    parser = _Text()
    parser.feed((docs_dir / "html" / "fhs-3.0.html").read_text(errors="replace"))
    text = re.sub(r"[ \t]+", " ", "".join(parser.parts))
    passages: list[str] = []
    covered = -1
    for match in re.finditer(re.escape(word), text):
        if match.start() < covered:
            continue
        passages.append(text[max(0, match.start() - width // 3) : match.start() + width])
        covered = match.start() + width
    return passages


def source(n: int, text: str, filename: str = "fhs-3.0.html") -> Source:
    return Source(
        id=f"docs/{filename}:{n}", score=1.0, text=text, path=f"docs/{filename}", filename=filename,
        page=1, bbox=None, blockType="Text",
        scores={"dense": None, "sparse": None, "fused": 1.0, "rerank": None},
    )  # fmt: skip


def test_table_of_contents_and_overlong_units_are_never_quoted() -> None:
    for line in TOC_LINES:
        assert not quotable(line), line
        assert not quotable("/usr/libexec : Binaries run by other programs", line)  # a piece of it
    assert quotable("/usr/libexec includes internal binaries that are not intended to be executed directly.")
    assert not quotable("word " * (SENTENCE_MAX_CHARS // 5 + 1))


def test_offline_local_answer_is_short_ranked_cited_and_supported(settings, docs_dir: Path) -> None:
    stack = Stack(settings)
    passages = fhs_passages(docs_dir)
    assert len(passages) >= 4, "the FHS HTML should mention /usr/libexec several times"
    toc = source(0, "Contents\n\n" + "\n".join(TOC_LINES))
    found = [toc, *(source(i, p) for i, p in enumerate(passages, start=1))]
    numbered = list(enumerate(found, start=1))

    draft = brief_local_draft(stack, QUESTION, numbered, found)
    assert draft.mode == "local" and draft.text.startswith(EXTRACTIVE_NOTICE)
    bullets = [line for line in draft.text.splitlines() if line.startswith('- "')]
    assert 1 <= len(bullets) <= BRIEF_MAX_SENTENCES, draft.text
    quotes = [re.match(r'- "(.*)" ((?:\[\d+\])+)$', b) for b in bullets]
    assert all(quotes), bullets
    assert sum(len(q.group(1)) for q in quotes) <= BRIEF_MAX_CHARS
    assert not any("...." in q.group(1) for q in quotes)  # no table-of-contents line
    assert any("libexec" in q.group(1) for q in quotes)

    text, records = check_draft_sync(stack, draft, None)
    assert text == draft.text  # nothing was marked or dropped
    assert len(records) == len(bullets)
    assert all(r["markers"] and r["supported"] and r["action"] == "kept" for r in records)

    brief = page_brief(stack, QUESTION, found)  # the Graph page's form of the same choice
    scores = [b["score"] for b in brief]
    assert scores == sorted(scores, reverse=True)  # most relevant first
    assert [b["text"] for b in brief] == [q.group(1) for q in quotes]


def test_nothing_above_the_floor_is_an_abstention_not_a_wall(settings) -> None:
    stack = Stack(settings)
    found = [source(1, "\n".join(TOC_LINES))]
    draft = brief_local_draft(stack, QUESTION, list(enumerate(found, start=1)), found)
    assert draft.check is None and "do not answer" in draft.text


def _quote(text: str, score: float, n: int) -> Quote:
    return Quote(text, score, [n], QuoteUnit(text, 0, len(text)), origin=n)


quotes_strategy = st.lists(
    st.builds(
        _quote,
        st.text(min_size=1, max_size=400),
        st.floats(min_value=-1, max_value=1, allow_nan=False),
        st.integers(min_value=1, max_value=12),
    ),
    max_size=40,
).map(lambda qs: sorted(qs, key=lambda q: -q.score))


@examples(max_examples=200, deadline=None)
@given(quotes_strategy, st.floats(min_value=-1, max_value=1, allow_nan=False))
def test_the_brief_keeps_its_budgets_for_any_ranked_quotes(ranked: list[Quote], floor: float) -> None:
    chosen = choose_brief(ranked, floor)
    assert len(chosen) <= BRIEF_MAX_SENTENCES
    assert sum(len(q.text) for q in chosen) <= BRIEF_MAX_CHARS
    assert all(q.score >= floor for q in chosen)
    assert [q.score for q in chosen] == sorted((q.score for q in chosen), reverse=True)
    for i, q in enumerate(chosen):
        assert q.markers and not any(near_identical(q.text, other.text) for other in chosen[:i])


@examples(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_the_layout_filter_reads_any_text(text: str) -> None:
    result = quotable(text)
    assert isinstance(result, bool)
    if result:
        assert len(text) <= SENTENCE_MAX_CHARS and len(text.split()) >= 4
