"""Document names and paths: the single gate every user-supplied name passes before it touches storage.

A document's identity is its path, `docs/{filename}`, so the filename doubles as a directory entry on
disk, an S3 key segment, a URL segment and part of a thread id. Dangerous names are rejected, never
rewritten: silently turning `../x` into `x` would make two different uploads collide without anyone
noticing.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote

from librarian.errors import InvalidPathError

DOCS_PREFIX = "docs/"
#: Upload names are limited by settings (`max_filename_length`); a stored path is only held to what
#: every file system accepts for one name, so lowering the setting never orphans existing documents.
MAX_NAME_BYTES = 255

# Characters that separate or qualify paths somewhere along the way (POSIX, Windows, NTFS streams).
_FORBIDDEN = {"/": "'/'", "\\": "'\\'", ":": "':' (drive letters and NTFS streams)"}
# Slashes that NFKC leaves alone but that read as a separator to a person (confusables.txt) or that
# some tool may transliterate to one. FULLWIDTH and SMALL forms are caught by NFKC folding instead.
_LOOKALIKE_SEPARATORS = {
    "\u2215": "DIVISION SLASH",
    "\u2044": "FRACTION SLASH",
    "\u29f8": "BIG SOLIDUS",
    "\u27cb": "MATHEMATICAL RISING DIAGONAL",
    "\u2571": "BOX DRAWINGS LIGHT DIAGONAL UPPER RIGHT TO LOWER LEFT",
    "\u1735": "PHILIPPINE SINGLE PUNCTUATION",
    "\u2216": "SET MINUS",
    "\u29f5": "REVERSE SOLIDUS OPERATOR",
    "\u29f9": "BIG REVERSE SOLIDUS",
    "\u27cd": "MATHEMATICAL FALLING DIAGONAL",
    "\u2572": "BOX DRAWINGS LIGHT DIAGONAL UPPER LEFT TO LOWER RIGHT",
}
# Windows opens these devices whatever the extension (`nul.txt`, `COM1.tar.gz`), case-insensitively,
# and also with superscript digits (`COM¹`, which NFKC folds to `COM1`). Such a name cannot be
# written on Windows and reads back as a device from an SMB share or a synced folder.
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$", "clock$"}
    | {f"{port}{n}" for port in ("com", "lpt") for n in range(10)}
)
# Zero-width joiners are part of ordinary words in several scripts (Persian, Indic, emoji sequences);
# every other invisible format character (bidi overrides, BOM ...) is a spoofing tool.
_ALLOWED_FORMAT = {"\u200c", "\u200d"}
_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# A name that is one percent-decode away from danger is dangerous: some proxy or client will decode it.
_MAX_DECODE_ROUNDS = 4


def _check_characters(name: str, shown: str) -> None:
    """Reject separators and invisible characters, also after compatibility folding.

    NFKC folding catches look-alikes such as FULLWIDTH SOLIDUS that some platforms map to '/'.
    """
    folded = unicodedata.normalize("NFKC", name)
    for candidate in (name, folded):
        for char, label in _FORBIDDEN.items():
            if char in candidate:
                raise InvalidPathError(f"file name {shown} must not contain {label}")
    for char in name:
        if char in _ALLOWED_FORMAT:
            continue
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise InvalidPathError(
                f"file name {shown} contains a control or invisible character (U+{ord(char):04X})"
            )
    for char in name:
        if char in _LOOKALIKE_SEPARATORS:
            raise InvalidPathError(
                f"file name {shown} must not contain U+{ord(char):04X} {_LOOKALIKE_SEPARATORS[char]}, "
                "which looks like a path separator"
            )
    for candidate in (name, folded):
        if set(candidate) <= {".", " "}:
            raise InvalidPathError(f"file name {shown} must contain something other than dots and spaces")
    _check_windows_name(folded, shown)


def _check_windows_name(folded: str, shown: str) -> None:
    """Reject device names (`CON`, `aux.md`, `COM¹.txt`) and a trailing dot, which Windows drops."""
    stem = folded.split(".", 1)[0].rstrip(" ").casefold()
    if stem in _WINDOWS_DEVICES:
        raise InvalidPathError(
            f"file name {shown} is a reserved Windows device name ({stem.upper()}); rename the file"
        )
    if folded.endswith("."):
        raise InvalidPathError(f"file name {shown} must not end with '.' (Windows drops it)")


def _check_decodes_safely(name: str, shown: str) -> None:
    """Reject names whose percent-decoded forms would be unsafe (e.g. `%2e%2e%2fetc`)."""
    current = name
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(current, errors="replace") if "%" in current else current
        if decoded == current:
            return
        try:
            _check_characters(decoded, shown)
        except InvalidPathError:
            raise InvalidPathError(
                f"file name {shown} is unsafe once percent-decoded ({decoded!r})"
            ) from None
        current = decoded


def sanitize_filename(name: str, max_length: int = 200) -> str:
    """Return the NFC form of an uploaded file name, or raise InvalidPathError saying why it is unsafe.

    `max_length` counts UTF-8 bytes, because that is what file systems and S3 limit.
    """
    if not isinstance(name, str):
        raise InvalidPathError(f"file name must be a string, not {type(name).__name__}")
    if not name:
        raise InvalidPathError("file name is empty")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidPathError("file name is not valid Unicode (lone surrogate)") from None
    name = unicodedata.normalize("NFC", name)
    shown = repr(name if len(name) <= 80 else name[:77] + "...")
    if name != name.strip():
        raise InvalidPathError(f"file name {shown} must not start or end with whitespace")
    _check_characters(name, shown)
    _check_decodes_safely(name, shown)
    size = len(name.encode("utf-8"))
    if size > max_length:
        raise InvalidPathError(f"file name is {size} bytes long; the limit is {max_length} bytes (UTF-8)")
    return name


def document_path(filename: str, max_length: int = 200) -> str:
    """The document path (and identity) of an uploaded file: uploading the same name overwrites."""
    return DOCS_PREFIX + sanitize_filename(filename, max_length=max_length)


def validate_document_path(path: str, max_length: int = MAX_NAME_BYTES) -> str:
    """Validate a `docs/<name>` path from a URL or the CLI (already percent-decoded once by the caller).

    Returns the canonical (NFC) path, which callers must use from then on so that two spellings of one
    name address one document.
    """
    if not isinstance(path, str):
        raise InvalidPathError(f"document path must be a string, not {type(path).__name__}")
    if not path.startswith(DOCS_PREFIX):
        raise InvalidPathError(f"document path {path[:80]!r} must look like 'docs/<file name>'")
    return DOCS_PREFIX + sanitize_filename(path[len(DOCS_PREFIX) :], max_length=max_length)


def filename_of(path: str) -> str:
    """The file name part of a document path (validated, so it is safe to show or store)."""
    return validate_document_path(path)[len(DOCS_PREFIX) :]
