"""Upsert batches bounded by encoded bytes as well as by record count.

Pinecone refuses an upsert request whose body is over 2 MB (HTTP 400, "Request size ... exceeds the
maximum supported size of 2MB"), whatever the record count. Wide vectors (3,072 floats of
text-embedding-3-large take ~60 KB of JSON) and chunk text in metadata reach that long before the
count cap of 100, so a count alone is not a safe batch size. The SDK encodes the request with
`orjson` exactly as the dicts we hand it, so measuring the same dicts with `orjson` gives the size
the SDK will send, byte for byte.

Every batch is planned before the first request goes out: a record too big for any request is
refused with its id and the culprit named, and nothing of the call is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from librarian.errors import LibrarianError

PINECONE_MAX_REQUEST_BYTES = 2_000_000  # "2 MB" read as the smaller of 2,000,000 and 2 MiB
DEFAULT_MAX_REQUEST_BYTES = 1_900_000  # a safe margin below the cap (headers are not counted)


class RecordTooLargeError(LibrarianError, ValueError):
    """One record alone is over the request byte budget; no batch split can send it."""

    code = "record_too_large"


def encoded_size(value: Any) -> int:
    """Bytes of `value` as the Pinecone SDK encodes it (orjson, compact)."""
    return len(orjson.dumps(value))


def as_sent(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the SDK puts it on the wire: `sparse_values` travels as `sparseValues`."""
    sent = {k: v for k, v in record.items() if k != "sparse_values"}
    if "sparse_values" in record:
        sent["sparseValues"] = record["sparse_values"]
    return sent


def record_size(record: dict[str, Any]) -> int:
    """Encoded bytes one record adds to an upsert request body."""
    return encoded_size(as_sent(record))


def _why_too_large(record: dict[str, Any]) -> str:
    """Name the part of a record that takes the room, so the fix is obvious (usually the text)."""
    parts = {
        "dense values": encoded_size(record.get("values", [])),
        "sparse values": encoded_size(record.get("sparse_values", {})),
        "metadata": encoded_size(record.get("metadata", {})),
    }
    culprit = max(parts, key=lambda k: parts[k])
    detail = ", ".join(f"{name} {size:,} B" for name, size in parts.items())
    hint = ""
    metadata = record.get("metadata") or {}
    if culprit == "metadata" and metadata:
        field = max(metadata, key=lambda k: encoded_size(metadata[k]))
        hint = f"; its largest metadata field is {field!r} ({encoded_size(metadata[field]):,} B): shorten it"
    return f"{detail}{hint}"


def byte_bounded_batches(
    records: list[dict[str, Any]], *, namespace: str, max_count: int, max_bytes: int
) -> list[list[dict[str, Any]]]:
    """Split wire-format records into upsert requests of at most `max_count` records and `max_bytes`.

    The byte count is the whole request body the SDK sends, `{"vectors":[...],"namespace":"..."}`,
    so the budget holds for the request, not just for the sum of records. Raises
    `RecordTooLargeError` (before anything is sent) for a record that cannot fit even alone.
    """
    envelope = encoded_size({"vectors": [], "namespace": namespace})
    batches: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    current_bytes = envelope
    for record in records:
        size = record_size(record)
        if envelope + size > max_bytes:
            raise RecordTooLargeError(
                f"record {record.get('id')!r} alone is {envelope + size:,} bytes as an upsert request, "
                f"over the {max_bytes:,}-byte budget (Pinecone caps a request at 2 MB): "
                f"{_why_too_large(record)}"
            )
        separator = 1 if current else 0  # the comma between records in the JSON array
        if current and (len(current) >= max_count or current_bytes + separator + size > max_bytes):
            batches.append(current)
            current, current_bytes, separator = [], envelope, 0
        current.append(record)
        current_bytes += separator + size
    if current:
        batches.append(current)
    return batches


def request_sizes(batches: list[list[dict[str, Any]]], namespace: str) -> Iterator[int]:
    """Encoded size of each planned request (for tests and logs)."""
    for batch in batches:
        yield encoded_size({"vectors": [as_sent(r) for r in batch], "namespace": namespace})
