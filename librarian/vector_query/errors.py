"""The errors an option of the vector query tool can raise, besides TenantError and contract errors."""

from __future__ import annotations

from librarian.errors import LibrarianError


class VectorQueryOptionError(LibrarianError, ValueError):
    """An option is unknown, malformed, beyond the server's limits, or meaningless for the store.

    A ValueError too, so callers that already treat option mistakes as bad input keep working; the
    message names the option, where it was given and why it is refused.
    """

    code = "invalid_vector_query_option"


class UnknownVectorStoreError(VectorQueryOptionError):
    """A run named a store the server does not configure; the message lists the ones it does."""

    code = "unknown_vector_store"
