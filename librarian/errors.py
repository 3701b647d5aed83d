"""Errors with messages meant for people: each one says what is wrong and what to do.

Clients see `str(error)` and `code`, never a traceback, so messages must not leak internals.
"""

from __future__ import annotations


class LibrarianError(Exception):
    """Base class; `code` is a stable machine-readable identifier."""

    code = "librarian_error"


class ConfigError(LibrarianError):
    """Settings are missing or inconsistent (raised at start-up, before any work)."""

    code = "config_error"


class InvalidPathError(LibrarianError, ValueError):
    """A file name or document path is unsafe or malformed (traversal, NUL, too long ...)."""

    code = "invalid_path"


class FileTooLargeError(LibrarianError, ValueError):
    """An upload exceeds the configured size limit; nothing was written."""

    code = "file_too_large"


class TenantError(LibrarianError, PermissionError):
    """No organization could be established from trusted configuration, or it conflicts."""

    code = "tenant_error"


class ContractMismatchError(LibrarianError):
    """The index was built with a different embedding contract than the one configured.

    The message names both contracts and the way out (`librarian reindex --migrate` for the embedded
    index, a new index name for Pinecone), since the fix is an operator's action, not a retry.
    """

    code = "embedding_contract_mismatch"


class DocumentError(LibrarianError):
    """A document cannot be turned into chunks; `status` is what its ingest run reports."""

    code = "document_error"
    status = "failed"


class UnsupportedFileError(DocumentError):
    """The file type has no parser; the document is skipped (and leaves no vectors)."""

    code = "unsupported_file"
    status = "skipped"


class EmptyDocumentError(DocumentError):
    """The file is empty or holds no text; skipped, leaving no vectors."""

    code = "empty_document"
    status = "skipped"


class NoTextLayerError(DocumentError):
    """Scanned pages without a text layer and no OCR engine: skipped with a clear reason."""

    code = "no_text_layer"
    status = "skipped"


class CorruptFileError(DocumentError):
    """The file claims a type but cannot be read as it (truncated PDF, renamed blob ...)."""

    code = "corrupt_file"
    status = "failed"


class TransientProviderError(LibrarianError):
    """A remote provider failed in a way worth retrying (timeouts, 429, 5xx)."""

    code = "provider_unavailable"
