"""The offline extractor's entity rules on technical text (issue 27, item 2a), with the real spaCy model."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.graph.extract.entity_rules import RuleConfig, technical_spans
from librarian.graph.extract.local import LocalExtractor, load_model
from librarian.graph.model import ChunkRef, normalize_name


@pytest.fixture(scope="module")
def extractor() -> LocalExtractor:
    return LocalExtractor(load_model())


def entities(extractor: LocalExtractor, *texts: str) -> dict[str, dict]:
    chunks = [ChunkRef(f"doc:{i}", "doc", i, 1, None, text) for i, text in enumerate(texts)]
    return {e["display"]: e for e in extractor.extract(chunks)["entities"]}


def test_technical_shapes_are_found_whole() -> None:
    text = (
        "Files in /usr/bin and `/etc/X11`, see https://example.org/a/b and and/or 1/2. Run `ldconfig`, "
        "**sln**, read.table() or ls -l; BaseChunker and SESSION_USER name code, Scrooge McDuck does not."
    )
    found = {(s.display, s.type) for s in technical_spans(text)}
    assert found == {
        ("/usr/bin", "PATH"),
        ("/etc/X11", "PATH"),
        ("ldconfig", "CODE"),
        ("sln", "CODE"),
        ("read.table()", "CODE"),
        ("ls -l", "CODE"),
        ("BaseChunker", "IDENTIFIER"),
        ("SESSION_USER", "IDENTIFIER"),
    }


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab/_.`*-( )\n|<>Zz0 ")), max_size=80))
def test_technical_spans_are_ordered_disjoint_substrings(text: str) -> None:
    spans = technical_spans(text)
    for span in spans:
        assert 0 <= span.start < span.end <= len(text)
        assert text[span.start : span.start + len(span.display)] == span.display
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))


def test_manual_text_keeps_names_and_drops_junk(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "4.4.3. Specific Options\n\nThe following files, or symbolic links to files, must be in /usr/bin "
        "(optional). The POSIX shell and the GNU tools use `ldconfig`.",
        "| Header 0.1 | Header 0.2 |\n| --- | --- |\n| Cell 1.0 | Cell 1.1 |",
        "7.3.1 Loading data with IBM DB2 for i",
        "Summer activities\n\nSwimming in the lake with Scrooge McDuck.",
    )
    for name in ("/usr/bin", "POSIX shell", "GNU", "ldconfig", "IBM", "Scrooge McDuck"):
        assert name in found, (name, sorted(found))
    junk = ("following files", "Specific Options", "optional", "Header 0.1", "Cell", "| Cell", "7.3.1")
    assert not set(junk) & set(found), sorted(found)
    assert not [d for d in found if "\n" in d or "|" in d or d[:1].isdigit()], sorted(found)


def test_key_is_the_normalised_display_and_the_lemma_is_a_variant(extractor: LocalExtractor) -> None:
    found = entities(extractor, "Loading Data Tools from IBM: the kernel loads Ethernet drivers at boot.")
    assert found, "nothing extracted"
    for display, entity in found.items():
        assert entity["name"] == normalize_name(display)  # the name rule of merge.py
    assert found["Ethernet drivers"].get("variant") == "ethernet driver"


def test_hard_wrapped_names_survive_and_citation_given_names_do_not(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "She laid the cloth, assisted by Belinda\nCratchit, second of her daughters.",
        "Carboneras, Carlos (1992). Family Anatidae. Madrid: Lynx Edicions.",
    )
    assert "Belinda Cratchit" in found
    assert "Carlos" not in found


def test_common_noun_phrases_are_a_switch(extractor: LocalExtractor) -> None:
    text = "The kernel reads the mail spool files at boot time."
    assert "mail spool files" not in entities(extractor, text)
    lenient = LocalExtractor(load_model(), rules=RuleConfig(common_phrases=True))
    assert "mail spool files" in entities(lenient, text)
    assert lenient.cache_key != extractor.cache_key  # a different rule set never reuses cached output


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("Ab /_.`*|-:\n1 ")), max_size=120))
def test_any_text_extracts_without_error_and_keeps_the_name_rule(text: str) -> None:
    chunks = [ChunkRef("d:0", "d", 0, 1, None, text)]
    payload = LocalExtractor(load_model()).extract(chunks)
    for entity in payload["entities"]:
        assert entity["name"] == normalize_name(entity["display"]) and entity["name"]


# --- round 2 (rules version 5) --------------------------------------------------------------------------
FHS_TABLE = (
    "The following commands must be in `/usr/bin`, if the corresponding subsystem is installed:\n\n"
    "| Command | Description |\n| --- | --- |\n| perl | The Practical Extraction and Report Language |\n\n"
    "| Directory | Description |\n| --- | --- |\n| include | Header files included by C programs |\n"
    "| libexec | Binaries run by other programs (optional) |\n| Xmodmap | Global X11 keyboard "
    "modification file (optional) |\n| wish | Simple Tcl/Tk windowing shell (optional) |"
)


def test_table_headers_and_cell_descriptions_are_not_names(extractor: LocalExtractor) -> None:
    found = entities(extractor, FHS_TABLE)
    assert not {"Command", "Directory", "Binaries", "Global X11", "Simple Tcl/Tk"} & set(found), sorted(found)
    assert {"X11", "Tcl/Tk"} <= set(found), sorted(found)  # the name inside the cut-off modifier stays


def test_a_cell_that_holds_a_name_keeps_it(extractor: LocalExtractor) -> None:
    text = "| Huey | Tick | Riri | Qui |\n| Dewey | Trick | Fifi | Quo |\n| Louie | Track | Loulou | Qua |"
    found = entities(extractor, text)
    assert {"Dewey", "Loulou"} <= set(found), sorted(found)


def test_paragraph_and_item_openers_are_not_names(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "3. Use sun cream\n\nHmm, what else…\n\nLet’s eat",
        "3.16. /sbin : System binaries\n\n3.16.1. Purpose\n\nUtilities used for system administration "
        "(and other root-only commands) are stored in /sbin.",
    )
    assert not {"Hmm", "Utilities"} & set(found), sorted(found)
    assert "/sbin" in found


def test_glued_authors_masks_sql_and_footnotes(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "Authors: Jim Denton Doug Mack Tom McKinley Kent Milligan\n\nibm.com /redbooks",
        "The Identity Theft Resource Center 1 reports that almost 5000 data breaches happened.",
        "Any other person sees XXX-XX-XXXX. WHEN SESSION_USER = EMPLOYEES . USER_ID THEN 1",
        "• WordStar (1978) : Developed for the CP/M operating system, WordStar was widely used.",
    )
    assert "Tom McKinley Kent Milligan" not in found, sorted(found)
    assert "Identity Theft Resource Center" in found and "Identity Theft Resource Center 1" not in found
    assert not {"XXX-XX-XXXX", "= EMPLOYEES", "M operating system"} & set(found), sorted(found)


def test_citation_given_name_before_eds_is_dropped(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "- Elphick, Chris; Dunning, John B. Jr.; Sibley, David, eds. (2001). *The Sibley Guide to Bird "
        "Life and Behavior*. London: Christopher Helm.\n\n- Christidis, Les; Boles, Walter E., eds. (2008).",
    )
    assert not {"David", "Les"} & set(found), sorted(found)


def test_paths_are_found_across_sentence_splits(extractor: LocalExtractor) -> None:
    text = (  # FHS 3.0, PDF: spaCy ends a sentence after "/var" here
        "5.8.5.1. Purpose\n\nThis directory is the home for ICC color management files installed "
        "dynamically. This directory shall be laid out using the same rules as the /usr/share/color "
        "directory.\n\n5.8.6. /var/lib/hwclock : State directory for hwclock (optional)\n\n5.8.6.1. "
        "Purpose\n\nThis directory contains the file /var/lib/hwclock/adjtime .\n\nRationale"
    )
    found = entities(extractor, text)
    assert "/var/lib/hwclock" in found and "/lib/hwclock" not in found, sorted(found)


# --- round 3 (rules version 6) --------------------------------------------------------------------------
def test_relative_file_paths_are_found_whole() -> None:
    text = "| pdf/docling/multi_page.pdf | 5 pages |\n- [Hybrid](../examples/hybrid_chunking.ipynb) and a/b."
    found = {(s.display, s.type) for s in technical_spans(text)}
    assert ("pdf/docling/multi_page.pdf", "PATH") in found, found
    assert ("../examples/hybrid_chunking.ipynb", "PATH") in found, found
    assert not {d for d, _ in found} & {"multi_page.pdf", "hybrid_chunking.ipynb", "a/b"}, found


def test_a_placeholder_glued_to_a_path_is_not_a_name() -> None:
    text = "3.10. /lib*`<qual>`* : Alternate format libraries. The `<locale>` string is"
    found = {s.display for s in technical_spans(text)}
    assert "<qual>" not in found and "<locale>" in found, found


def test_pieces_of_italic_titles_are_dropped_and_whole_titles_kept(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "- Shirihai, Hadoram (2008). *A Complete Guide to Antarctic Wildlife*. Princeton, NJ, US.\n\n"
        "- Pratt, H. Douglas (1987). *A Field Guide to the Birds of Hawaii and the Tropical Pacific*.",
    )
    assert "Complete Guide" not in found, sorted(found)
    assert "Hawaii" in found, sorted(found)  # places inside a title stay


def test_sql_measurements_and_copyright_lines(extractor: LocalExtractor) -> None:
    found = entities(
        extractor,
        "FOR COLUMN CUSTOMER_DRIVERS_LICENSE_NUMBER RETURN CASE WHEN QSYS2 . VERIFY_GROUP_FOR_USER "
        "(SESSION_USER , 'TELLER') = 1 THEN C . CUSTOMER_TAX_ID ELSE 'X' END",
        "Measured on a single core with AMD EPYC 7763 CPU @2.45 GHz, with (enc=6, dec=6, heads=8).",
        "Copyright © 1994-2004 Daniel Quinlan Copyright © 2001-2004 Paul Russell",
        "This is the IBM i 7.2 feature of IBM DB2® for i Row and Column Access Control (RCAC).",
        "Subsequent revisions were released on October 9, 1994 and March 28, 1995.",
    )
    junk = {"RETURN CASE", "THEN C", "CPU @2.45 GHz", "enc=6", "Daniel Quinlan Copyright", "March"}
    assert not junk & set(found), sorted(found)
    assert "i Row and Column Access Control" not in found, sorted(found)
    assert "Daniel Quinlan" in found, sorted(found)
