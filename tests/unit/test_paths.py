"""Upload names and document paths: dangerous input is rejected with a reason, never rewritten."""

from __future__ import annotations

import unicodedata

import pytest

from librarian.errors import InvalidPathError
from librarian.files.paths import (
    MAX_NAME_BYTES,
    document_path,
    filename_of,
    sanitize_filename,
    validate_document_path,
)


@pytest.mark.parametrize(
    "name",
    [
        "report.pdf",
        "Quarterly Report (final) v2.docx",
        ".env",
        "a..b.txt",
        "résumé.pdf",
        "报告.pdf",
        "отчёт 2024.xlsx",
        "100% growth.md",  # a lone percent sign decodes to nothing dangerous
        "50%25 off.pdf",  # decodes to '50% off.pdf', still safe
        "می\u200cخواهم.txt",  # ZWNJ is part of ordinary Persian words
        "~notes.txt",
    ],
)
def test_accepts_ordinary_names_unchanged(name):
    assert sanitize_filename(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        (".", "dots and spaces"),
        ("..", "dots and spaces"),
        ("...", "dots and spaces"),
        (". .", "dots and spaces"),
        ("../etc/passwd", "'/'"),
        ("a/b.pdf", "'/'"),
        ("/etc/passwd", "'/'"),
        ("..\\windows\\system32", "'\\'"),
        ("C:evil.pdf", "':'"),
        ("C:\\evil.pdf", "must not contain"),
        ("report.pdf:hidden", "':'"),
        ("bad\x00.pdf", "control"),
        ("line\nbreak.pdf", "control"),
        ("tab\there.pdf", "control"),
        ("esc\x1b[31m.pdf", "control"),
        ("del\x7f.pdf", "control"),
        ("invoice\u202efdp.exe", "invisible"),  # right-to-left override disguises the extension
        ("\ufeffbom.pdf", "invisible"),
        (" leading.pdf", "whitespace"),
        ("trailing.pdf ", "whitespace"),
        ("trailing.pdf\u00a0", "whitespace"),
        ("\u3000ideographic.pdf", "whitespace"),
        ("a\uff0fb.pdf", "'/'"),  # FULLWIDTH SOLIDUS folds to '/'
        ("a\uff3cb.pdf", "'\\'"),
        ("\uff0e\uff0e", "dots and spaces"),  # FULLWIDTH FULL STOPs fold to '..'
        ("%2e%2e", "percent-decoded"),
        ("%2e%2e%2fetc%2fpasswd", "percent-decoded"),
        ("a%2Fb.pdf", "percent-decoded"),
        ("a%5cb.pdf", "percent-decoded"),
        ("nul%00.pdf", "percent-decoded"),
        ("%252e%252e%252f", "percent-decoded"),  # double-encoded
    ],
)
def test_rejects_dangerous_names_with_a_reason(name, reason):
    with pytest.raises(InvalidPathError, match="file name") as info:
        sanitize_filename(name)
    assert reason in str(info.value)
    assert info.value.code == "invalid_path"


def test_rejects_non_strings():
    with pytest.raises(InvalidPathError, match="must be a string"):
        sanitize_filename(b"report.pdf")  # type: ignore[arg-type]


def test_rejects_lone_surrogates():
    with pytest.raises(InvalidPathError, match="surrogate"):
        sanitize_filename("bad\udc80.pdf")


def test_length_is_counted_in_utf8_bytes():
    assert sanitize_filename("a" * 200) == "a" * 200
    with pytest.raises(InvalidPathError, match="201 bytes"):
        sanitize_filename("a" * 201)
    # 67 three-byte characters are 201 bytes although only 67 characters long.
    with pytest.raises(InvalidPathError, match="201 bytes"):
        sanitize_filename("报" * 67)
    assert sanitize_filename("x" * 20, max_length=20) == "x" * 20
    with pytest.raises(InvalidPathError, match="limit is 10 bytes"):
        sanitize_filename("x" * 11, max_length=10)


def test_names_are_nfc_normalised_so_one_name_is_one_document():
    decomposed = unicodedata.normalize("NFD", "résumé.pdf")
    assert decomposed != "résumé.pdf"
    assert sanitize_filename(decomposed) == "résumé.pdf"
    assert document_path(decomposed) == document_path("résumé.pdf")


def test_document_path_roots_names_under_docs():
    assert document_path("report.pdf") == "docs/report.pdf"
    with pytest.raises(InvalidPathError):
        document_path("../report.pdf")
    with pytest.raises(InvalidPathError, match="limit is 5 bytes"):
        document_path("report.pdf", max_length=5)


@pytest.mark.parametrize("path", ["docs/report.pdf", "docs/报告.pdf", "docs/100% growth.md"])
def test_validate_document_path_accepts_document_paths(path):
    assert validate_document_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "",
        "docs/",
        "docs",
        "report.pdf",
        "/docs/report.pdf",
        "docs/../orgs/other/docs/secret.pdf",
        "docs/../../etc/passwd",
        "docs/sub/report.pdf",
        "docs//report.pdf",
        "derived/docs/report.pdf/parse.json",
        "docs/..",
        "docs/%2e%2e%2fsecret",
        "docs/report.pdf\x00.txt",
        "DOCS/report.pdf",
        "docs\\report.pdf",
        None,
    ],
)
def test_validate_document_path_rejects_everything_else(path):
    with pytest.raises(InvalidPathError):
        validate_document_path(path)  # type: ignore[arg-type]


def test_validate_document_path_allows_names_longer_than_the_upload_limit_up_to_the_fs_limit():
    """Lowering the upload limit in settings must not make existing documents unreachable."""
    name = "a" * MAX_NAME_BYTES
    assert validate_document_path("docs/" + name) == "docs/" + name
    with pytest.raises(InvalidPathError):
        validate_document_path("docs/" + name + "a")


def test_validate_document_path_returns_the_canonical_form():
    decomposed = "docs/" + unicodedata.normalize("NFD", "résumé.pdf")
    assert validate_document_path(decomposed) == "docs/résumé.pdf"


def test_filename_of():
    assert filename_of("docs/report.pdf") == "report.pdf"
    assert filename_of(document_path("报告.pdf")) == "报告.pdf"
    with pytest.raises(InvalidPathError):
        filename_of("docs/../x")


@pytest.mark.parametrize(
    ("name", "codepoint"),
    [
        ("a\u2215b.md", "U+2215"),  # DIVISION SLASH
        ("a\u2044b.md", "U+2044"),  # FRACTION SLASH
        ("a\u29f8b.md", "U+29F8"),  # BIG SOLIDUS
        ("a\u2216b.md", "U+2216"),  # SET MINUS (a backslash look-alike)
        ("..\u2215..\u2215etc", "U+2215"),
    ],
)
def test_rejects_lookalike_slashes(name, codepoint):
    with pytest.raises(InvalidPathError, match="looks like a path separator") as info:
        sanitize_filename(name)
    assert codepoint in str(info.value)


@pytest.mark.parametrize("name", ["a\uff0fb.md", "a\ufe68b.md", "a\uff3cb.md", "a%E2%88%95b.md"])
def test_rejects_folded_and_encoded_slash_lookalikes(name):
    with pytest.raises(InvalidPathError):
        sanitize_filename(name)


@pytest.mark.parametrize(
    "name",
    [
        "CON",
        "con",
        "aux.md",
        "NUL.txt",
        "prn.tar.gz",
        "COM1",
        "com9.pdf",
        "LPT1.docx",
        "lpt0",
        "Com\u00b9.txt",  # superscript one: Windows treats it as COM1
        "LPT\u00b3",
        "con .txt",  # Windows drops the space before the extension
        "CONOUT$.log",
    ],
)
def test_rejects_windows_device_names_with_any_extension(name):
    with pytest.raises(InvalidPathError, match="reserved Windows device name"):
        sanitize_filename(name)


@pytest.mark.parametrize("name", ["console.md", "nulls.txt", "auxiliary.pdf", "com10.md", "my-con.md"])
def test_names_that_only_start_like_a_device_are_accepted(name):
    assert sanitize_filename(name) == name


def test_rejects_a_trailing_dot_that_windows_would_drop():
    with pytest.raises(InvalidPathError, match=r"must not end with '\.'"):
        sanitize_filename("report.pdf.")


def test_device_names_are_refused_in_document_paths_too():
    with pytest.raises(InvalidPathError, match="device"):
        validate_document_path("docs/aux.md")
