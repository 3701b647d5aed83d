"""The pure parts of `bench/graphrag_quality.py`: debris counters, the TOC chapter reader, chapter
coverage and the labelled-sample precision (the goals of issue 27 are only as good as these)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
FHS_HTML = REPO.parent / "shared" / "data" / "docs" / "html" / "fhs-3.0.html"


def _load():
    spec = importlib.util.spec_from_file_location("graphrag_quality", REPO / "bench" / "graphrag_quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["graphrag_quality"] = module
    spec.loader.exec_module(module)
    return module


gq = _load()

PDF_TOC = """Dedication
i
Table of Contents
1. Introduction .................................................................. 1
1.1. Purpose ............................................................... 1
2. The Filesystem ................................................................ 2
3. The Root Filesystem ........................................................... 3
3.4. /bin : Essential user command binaries (for use by all users) ......... 5
3.4.1. Purpose .......................................................... 5
Filesystem Hierarchy Standard
iv
4. The /usr Hierarchy ............................................................ 18
5. The /var Hierarchy ............................................................ 26
6. Operating System Specific Annex ............................................... 40
7. Appendix ...................................................................... 42
Chapter 1. Introduction
1.1. Purpose
1. Introduction
This standard enables software to predict the location of installed files.
"""


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Specific Options ........ 20 4.7. /usr/libexec : ...", "dot leaders"),
        ("Purpose . . . . . . 3", "dot leaders"),
        ("| Name | Size |\n| --- | --- |", "pipe table"),
        ("columns: a | b | c", "pipe table"),
        ("|---|---|", "pipe table"),
        ("either a | b", None),
        ("The standard places binaries in /usr/bin... and libraries in /usr/lib.", None),
        ("Use a|b to pipe.", None),
        ("", None),
    ],
)
def test_debris_kind(text, kind):
    assert gq.debris_kind(text) == kind


def test_find_debris_counts_titles_and_summaries_apart():
    found = gq.find_debris(
        [
            (1, "Specific Options ..........", "Clean prose."),
            (2, "Docling", "| a | b |"),
            (3, "Scrooge", "Scrooge changes his ways."),
        ]
    )
    assert [(d.community, d.field, d.kind) for d in found] == [
        (1, "title", "dot leaders"),
        (2, "summary", "pipe table"),
    ]


@settings(deadline=None)  # the machine is shared: time is not the property
@given(st.text(alphabet=st.characters(blacklist_characters="|."), max_size=200))
def test_text_without_dots_or_pipes_is_never_debris(text):
    assert gq.debris_kind(text) is None


def test_read_toc_chapters_from_pdf_text():
    chapters = gq.read_toc_chapters(PDF_TOC)
    assert chapters == [
        (1, "Introduction"),
        (2, "The Filesystem"),
        (3, "The Root Filesystem"),
        (4, "The /usr Hierarchy"),
        (5, "The /var Hierarchy"),
        (6, "Operating System Specific Annex"),
        (7, "Appendix"),
    ]


def test_read_toc_chapters_needs_a_contents_heading_and_stops_after_prose():
    assert gq.read_toc_chapters("1. Introduction\n2. Usage\n") == []
    text = "Contents\n1. Start\n2. Middle\nsome prose\nmore prose\nand more\nstill more\n3. Not a chapter\n"
    assert gq.read_toc_chapters(text) == [(1, "Start"), (2, "Middle")]


@pytest.mark.skipif(not FHS_HTML.exists(), reason="shared FHS HTML not present")
def test_read_toc_chapters_from_the_fhs_html():
    chapters = gq.read_toc_chapters(gq.manual_text(FHS_HTML))
    assert len(chapters) == 7
    assert chapters[3] == (4, "The /usr Hierarchy")


@settings(deadline=None)
@given(st.lists(st.text(max_size=60), max_size=40))
def test_read_toc_chapters_numbers_consecutively_on_any_text(lines):
    chapters = gq.read_toc_chapters("\n".join(["Table of Contents", *lines]))
    assert [n for n, _ in chapters] == list(range(1, len(chapters) + 1))


def test_chapter_covered_by_path_key_entity():
    assert gq.chapter_covered(4, "The /usr Hierarchy", "Libraries live under /usr/lib.", [])
    assert not gq.chapter_covered(4, "The /usr Hierarchy", "Logs live under /var/log.", [])


def test_chapter_covered_by_every_content_word():
    title = "Operating System Specific Annex"
    assert gq.chapter_covered(6, title, "Rules specific to each operating system.", [])
    assert not gq.chapter_covered(6, title, "Rules for each operating environment.", [])


def test_chapter_covered_by_a_cited_heading_in_the_chapter():
    assert gq.chapter_covered(7, "Appendix", "Nothing here.", ["7.2. Background of the FHS"])
    assert gq.chapter_covered(7, "Appendix", "Nothing here.", ["7 Appendix"])
    assert not gq.chapter_covered(7, "Appendix", "The appendix says so.", ["17.2. Other"])


def test_source_headings_skip_toc_lines():
    sources = [
        {"text": "4.4. /usr/bin : Most user commands\nThis is the primary directory."},
        {"text": "5.1. Purpose ........................ 26"},
        {"heading": "3.7. /etc : Host-specific system configuration"},
    ]
    assert gq.source_headings(sources) == [
        "4.4. /usr/bin : Most user commands",
        "3.7. /etc : Host-specific system configuration",
    ]


def test_label_precision_matches_keys_and_aliases_and_leaves_expected_rows_to_recall(tmp_path):
    rows = [
        {"row": "sample", "name": "Filesystem Hierarchy Standard", "label": "keep", "kind": "standard"},
        {"row": "sample", "name": "  Scrooge's ", "label": "keep", "kind": "person"},
        {"row": "sample", "name": "optional", "label": "drop", "kind": "fragment"},
        {"row": "sample", "name": "TABLE", "label": "drop", "kind": "common word"},
        {"row": "sample", "name": "Linux Foundation", "label": "keep", "kind": "org"},
        {"row": "expected", "name": "the /var/lock", "label": "keep", "kind": "expected"},
        {"row": "expected", "name": "ls", "label": "keep", "kind": "expected"},
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    labels = gq.load_labels(path)
    known = {"filesystem hierarchy standard", "scrooge", "optional", "/var/lock"}  # "scrooge": an alias
    result = gq.label_precision(labels, known)
    assert result["labelled"] == 5
    assert result["present"] == 3
    assert result["presentKeep"] == 2
    assert result["precision"] == pytest.approx(2 / 3)
    assert result["keepRecall"] == pytest.approx(3 / 5)
    assert result["droppedPresent"] == ["optional"]


def test_load_labels_rejects_a_bad_label_clearly(tmp_path):
    path = tmp_path / "labelled.jsonl"
    path.write_text(json.dumps({"name": "x", "label": "maybe"}) + "\n")
    with pytest.raises(SystemExit, match=r"labelled\.jsonl:1: 'label' must be keep or drop"):
        gq.load_labels(path)


def test_goals_missed_names_each_missed_goal():
    result = {
        "graph": {"debris": 2, "unresolved": 0, "labels": {"precision": 0.95}},
        "manual": {"chapters": ["1. A"] * 7, "covered": ["1. A"] * 6, "sentences": 4, "supported": 4},
    }
    missed = gq.goals_missed(result)
    assert len(missed) == 2
    assert "debris" in missed[0] and "6 chapters covered < 7" in missed[1]


def test_show_prints_every_goal_and_a_failed_step(capsys):
    graph = {
        "debris": 1,
        "communities": 4,
        "debrisExamples": ["#3 title (dot leaders): 'Options ......'"],
        "entities": 10,
        "unresolved": 0,
        "unresolvedExamples": [],
    }
    manual = {
        "chapters": ["1. Introduction", "2. The Filesystem"],
        "covered": ["1. Introduction"],
        "sentences": 2,
        "supported": 1,
        "status": "completed",
        "answer": "An introduction.",
        "answerDebris": 0,
    }
    build = {"wall_s": 10.0, "cpu_s": 8.0, "peak_rss_mib": 900.0, "entities": 10, "edges": 5}
    new = {"tree": "new", "ingest": {"indexed": ["a"], "files": 1}, "graph": graph, "manual": manual}
    new |= {"build": build, "hotpot": {"error": "boom"}}
    old = {**new, "tree": "old", "build": {**build, "wall_s": 20.0}, "hotpot": {"error": "boom"}}
    gq.show(new, old)
    out = capsys.readouterr().out
    assert "goal 0 debris: 1 fields of 4 communities" in out
    assert "1 of 2 chapters covered" in out and "not covered: ['2. The Filesystem']" in out
    assert "hotpot: FAILED boom" in out
    assert "build wall_s 0.50x" in out
    missed = gq.goals_missed(new)
    assert missed[0] == "hotpot failed: boom"
    assert len(missed) == 4  # hotpot, debris, chapters, supported
