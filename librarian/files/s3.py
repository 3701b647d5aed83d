"""File store on an S3-compatible object store: the production seam (DESIGN §3).

Keys mirror the local layout: `{prefix}orgs/{org}/docs/{filename}` and sidecars under
`{prefix}orgs/{org}/derived/docs/{filename}/{name}`, so a listing of `docs/` never shows derived data.
A single PUT is atomic in S3, which gives the same "old bytes or new, never a mix" promise as the
local store's rename.

The bucket is never created here: creating buckets is an operator's decision (region, policy,
encryption). A missing bucket is a ConfigError naming it, raised on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from librarian.errors import ConfigError, InvalidPathError, TransientProviderError
from librarian.files.base import StoredFile
from librarian.files.paths import DOCS_PREFIX, sanitize_filename, validate_document_path
from librarian.tenancy import validate_organization_id

_MISSING_KEY = {"404", "NoSuchKey", "NotFound"}
_TRANSIENT = {"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling"}
_DELETE_BATCH = 1000  # S3's limit per DeleteObjects call


def _normalize_prefix(prefix: str) -> str:
    """A key prefix that is either empty or ends with '/', with no traversal segments."""
    if not prefix:
        return ""
    if prefix.startswith("/") or any(part in {"", ".", ".."} for part in prefix.rstrip("/").split("/")):
        raise ConfigError(
            f"LIBRARIAN_S3_PREFIX {prefix!r} must be relative, without empty, '.' or '..' parts"
        )
    return prefix.rstrip("/") + "/"


def _error_code(error: Exception) -> str:
    return str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))


class S3FileStore:
    """`FileStore` over one bucket; every key is rooted at the organization's prefix by the store itself."""

    #: Keys per ListObjectsV2 page (S3's maximum); tests lower it to exercise pagination cheaply.
    page_size: int = 1000

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        client: Any = None,
    ) -> None:
        if not bucket:
            raise ConfigError("LIBRARIAN_S3_BUCKET is not set, but the S3 file store was chosen")
        self.bucket = bucket
        self.prefix = _normalize_prefix(prefix)
        self.endpoint_url = endpoint_url
        self._client = client
        self._bucket_checked = False
        self._lock = threading.Lock()

    # --- plumbing

    @property
    def client(self) -> Any:
        """The boto3 client, created lazily so that importing the module needs no credentials."""
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.client("s3", endpoint_url=self.endpoint_url)
            return self._client

    def _call(self, method: str, **kwargs: Any) -> Any:
        """Call the client, turning transport and bucket failures into errors that say what to do."""
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client
        self._ensure_bucket(client)
        try:
            return getattr(client, method)(Bucket=self.bucket, **kwargs)
        except ClientError as error:
            if _error_code(error) == "NoSuchBucket":
                raise self._missing_bucket() from None
            status = getattr(error, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if status >= 500 or _error_code(error) in _TRANSIENT:
                raise TransientProviderError(
                    f"S3 {method} failed ({_error_code(error)}); retry later"
                ) from None
            raise
        except BotoCoreError as error:
            raise TransientProviderError(f"S3 request failed ({type(error).__name__}); retry later") from None

    def _missing_bucket(self) -> ConfigError:
        return ConfigError(
            f"S3 bucket {self.bucket!r} does not exist (LIBRARIAN_S3_BUCKET); create it or fix the name"
        )

    def _ensure_bucket(self, client: Any) -> None:
        if self._bucket_checked:
            return
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            client.head_bucket(Bucket=self.bucket)
        except ClientError as error:
            code = _error_code(error)
            if code in {"404", "NoSuchBucket", "NotFound"}:
                raise self._missing_bucket() from None
            if code in {"403", "AccessDenied", "Forbidden"}:
                raise ConfigError(
                    f"access to S3 bucket {self.bucket!r} is denied; check the credentials"
                ) from None
            raise
        except BotoCoreError as error:
            raise TransientProviderError(f"S3 is unreachable ({type(error).__name__}); retry later") from None
        self._bucket_checked = True

    def _org_prefix(self, org: str) -> str:
        return f"{self.prefix}orgs/{validate_organization_id(org)}/"

    def _doc_key(self, org: str, path: str) -> tuple[str, str]:
        path = validate_document_path(path)
        return self._org_prefix(org) + path, path

    def _sidecar_prefix(self, org: str, path: str) -> str:
        return f"{self._org_prefix(org)}derived/{validate_document_path(path)}/"

    def _keys(self, key_prefix: str) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Prefix": key_prefix, "MaxKeys": self.page_size}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call("list_objects_v2", **kwargs)
            yield from page.get("Contents", [])
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def _head(self, key: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        try:
            return self._call("head_object", Key=key)
        except ClientError as error:
            if _error_code(error) in _MISSING_KEY:
                return None
            raise

    @staticmethod
    def _stored(path: str, size: int, modified: datetime) -> StoredFile:
        if modified.tzinfo is None:
            modified = modified.replace(tzinfo=UTC)
        return StoredFile(path=path, size=int(size), modified=modified)

    # --- FileStore

    def write(self, org: str, path: str, data: bytes) -> StoredFile:
        """One PUT: atomic replace. `modified` is the local clock, to avoid a second round trip."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"file data must be bytes, not {type(data).__name__}")
        key, path = self._doc_key(org, path)
        payload = bytes(data)
        self._call("put_object", Key=key, Body=payload)
        return self._stored(path, len(payload), datetime.now(UTC))

    def read(self, org: str, path: str) -> bytes:
        from botocore.exceptions import ClientError

        key, path = self._doc_key(org, path)
        try:
            response = self._call("get_object", Key=key)
        except ClientError as error:
            if _error_code(error) in _MISSING_KEY:
                raise FileNotFoundError(f"document {path!r} not found in organization {org!r}") from None
            raise
        return response["Body"].read()

    def exists(self, org: str, path: str) -> bool:
        key, _ = self._doc_key(org, path)
        return self._head(key) is not None

    def stat(self, org: str, path: str) -> StoredFile | None:
        key, path = self._doc_key(org, path)
        head = self._head(key)
        if head is None:
            return None
        return self._stored(path, head["ContentLength"], head["LastModified"])

    def delete(self, org: str, path: str) -> bool:
        """Remove the document and its sidecars. S3 deletes are silent, so existence is checked first."""
        key, path = self._doc_key(org, path)
        existed = self._head(key) is not None
        sidecar_keys = [item["Key"] for item in self._keys(self._sidecar_prefix(org, path))]
        for start in range(0, len(sidecar_keys), _DELETE_BATCH):
            batch = sidecar_keys[start : start + _DELETE_BATCH]
            self._call("delete_objects", Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
        if existed:
            self._call("delete_object", Key=key)
        return existed

    def list(self, org: str, prefix: str = DOCS_PREFIX) -> list[StoredFile]:
        """Documents whose path starts with `prefix` (within `docs/`), sorted by path.

        Keys that no caller could address (written around the store, e.g. `docs/a/b`) are left out.
        """
        if not isinstance(prefix, str) or not prefix.startswith(DOCS_PREFIX):
            raise InvalidPathError("list prefix must start with 'docs/'")
        if any(sep in prefix[len(DOCS_PREFIX) :] for sep in ("/", "\\", "\x00")):
            raise InvalidPathError("list prefix must not contain a path separator after 'docs/'")
        org_prefix = self._org_prefix(org)
        found: list[StoredFile] = []
        for item in self._keys(org_prefix + prefix):
            path = item["Key"][len(org_prefix) :]
            try:
                if validate_document_path(path) != path:
                    continue
            except InvalidPathError:
                continue
            found.append(self._stored(path, item["Size"], item["LastModified"]))
        return sorted(found, key=lambda f: f.path)

    def write_sidecar(self, org: str, path: str, name: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"sidecar data must be bytes, not {type(data).__name__}")
        key = self._sidecar_prefix(org, path) + sanitize_filename(name)
        self._call("put_object", Key=key, Body=bytes(data))

    def read_sidecar(self, org: str, path: str, name: str) -> bytes | None:
        from botocore.exceptions import ClientError

        key = self._sidecar_prefix(org, path) + sanitize_filename(name)
        try:
            response = self._call("get_object", Key=key)
        except ClientError as error:
            if _error_code(error) in _MISSING_KEY:
                return None
            raise
        return response["Body"].read()
