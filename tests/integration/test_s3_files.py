"""S3FileStore through the real boto3 client against a moto server on a loopback port."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("moto.server", reason="moto[server] is needed for the S3 tests")
boto3 = pytest.importorskip("boto3")

from moto.server import ThreadedMotoServer  # noqa: E402

from librarian.errors import ConfigError, InvalidPathError, TenantError  # noqa: E402
from librarian.files.s3 import S3FileStore  # noqa: E402


@pytest.fixture(scope="module")
def s3_endpoint():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws_env(monkeypatch):
    """Fake credentials so boto3 never looks for real ones (and never reaches AWS)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def bucket(s3_endpoint, aws_env) -> str:
    name = f"librarian-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def raw(s3_endpoint, aws_env):
    return boto3.client("s3", endpoint_url=s3_endpoint)


@pytest.fixture
def store(bucket, s3_endpoint) -> S3FileStore:
    return S3FileStore(bucket=bucket, prefix="tenant-data", endpoint_url=s3_endpoint)


def keys(raw, bucket) -> list[str]:
    return sorted(o["Key"] for o in raw.list_objects_v2(Bucket=bucket).get("Contents", []))


def test_write_read_stat_and_key_layout(store, raw, bucket):
    stored = store.write("acme", "docs/report.pdf", b"hello")
    assert (stored.path, stored.size) == ("docs/report.pdf", 5)
    assert stored.modified.tzinfo is not None
    assert keys(raw, bucket) == ["tenant-data/orgs/acme/docs/report.pdf"]
    assert store.read("acme", "docs/report.pdf") == b"hello"
    assert store.exists("acme", "docs/report.pdf")
    stat = store.stat("acme", "docs/report.pdf")
    assert stat is not None and (stat.path, stat.size) == ("docs/report.pdf", 5)


def test_overwrite_replaces(store):
    store.write("acme", "docs/a.txt", b"first version")
    store.write("acme", "docs/a.txt", b"second")
    assert store.read("acme", "docs/a.txt") == b"second"
    assert [(f.path, f.size) for f in store.list("acme")] == [("docs/a.txt", 6)]


def test_missing_document(store):
    with pytest.raises(FileNotFoundError, match=r"docs/nope\.pdf"):
        store.read("acme", "docs/nope.pdf")
    assert not store.exists("acme", "docs/nope.pdf")
    assert store.stat("acme", "docs/nope.pdf") is None
    assert store.delete("acme", "docs/nope.pdf") is False
    assert store.list("acme") == []


def test_list_sorted_prefix_filtered_without_sidecars_or_foreign_keys(store, raw, bucket):
    for name in ("c.md", "a.pdf", "b.txt", "ab.txt"):
        store.write("acme", f"docs/{name}", name.encode())
    store.write_sidecar("acme", "docs/a.pdf", "parse.json", b"{}")
    # Written around the store: not addressable as a document, so not listed.
    raw.put_object(Bucket=bucket, Key="tenant-data/orgs/acme/docs/sub/x.pdf", Body=b"x")
    assert [f.path for f in store.list("acme")] == ["docs/a.pdf", "docs/ab.txt", "docs/b.txt", "docs/c.md"]
    assert [f.path for f in store.list("acme", "docs/a")] == ["docs/a.pdf", "docs/ab.txt"]
    with pytest.raises(InvalidPathError):
        store.list("acme", "derived/")


def test_list_and_delete_paginate(bucket, s3_endpoint, raw):
    store = S3FileStore(bucket=bucket, endpoint_url=s3_endpoint)
    store.page_size = 2  # S3 pages at 1000; a small page exercises the continuation tokens cheaply
    for i in range(7):
        store.write("acme", f"docs/f{i}.txt", b"")
        store.write_sidecar("acme", "docs/f0.txt", f"side{i}.json", b"")
    assert [f.path for f in store.list("acme")] == [f"docs/f{i}.txt" for i in range(7)]
    store.delete("acme", "docs/f0.txt")
    assert not [k for k in keys(raw, bucket) if "/derived/" in k]


def test_sidecars_round_trip_and_are_removed_with_the_document(store, raw, bucket):
    store.write("acme", "docs/a.pdf", b"pdf")
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") is None
    store.write_sidecar("acme", "docs/a.pdf", "parse-abc.json", b'{"chunks": []}')
    store.write_sidecar("acme", "docs/a.pdf", "other.json", b"{}")
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") == b'{"chunks": []}'
    assert "tenant-data/orgs/acme/derived/docs/a.pdf/parse-abc.json" in keys(raw, bucket)
    assert store.delete("acme", "docs/a.pdf") is True
    assert keys(raw, bucket) == []
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") is None


def test_delete_of_a_similar_name_leaves_the_other_documents_sidecars(store):
    store.write("acme", "docs/a.pdf", b"1")
    store.write("acme", "docs/a.pdf.bak", b"2")
    store.write_sidecar("acme", "docs/a.pdf.bak", "parse.json", b"keep")
    store.delete("acme", "docs/a.pdf")
    assert store.read_sidecar("acme", "docs/a.pdf.bak", "parse.json") == b"keep"


def test_organizations_are_isolated(store):
    store.write("acme", "docs/same.pdf", b"acme's")
    store.write("globex", "docs/same.pdf", b"globex's")
    store.write_sidecar("acme", "docs/same.pdf", "parse.json", b"acme cache")
    assert store.read("globex", "docs/same.pdf") == b"globex's"
    assert store.read_sidecar("globex", "docs/same.pdf", "parse.json") is None
    store.delete("globex", "docs/same.pdf")
    assert store.read("acme", "docs/same.pdf") == b"acme's"
    assert store.read_sidecar("acme", "docs/same.pdf", "parse.json") == b"acme cache"
    assert store.list("globex") == []


@pytest.mark.parametrize(
    "path",
    [
        "docs/../../globex/docs/secret.pdf",
        "../globex/docs/secret.pdf",
        "docs/%2e%2e%2fsecret.pdf",
        "docs/sub/a.pdf",
        "docs/a\x00b",
        "/docs/a.pdf",
    ],
)
def test_path_attacks_are_rejected_and_write_nothing(store, raw, bucket, path):
    store.write("globex", "docs/secret.pdf", b"secret")
    for call in (
        lambda: store.write("acme", path, b"overwrite"),
        lambda: store.read("acme", path),
        lambda: store.delete("acme", path),
        lambda: store.write_sidecar("acme", path, "x.json", b"x"),
    ):
        with pytest.raises(InvalidPathError):
            call()
    with pytest.raises(InvalidPathError):
        store.write_sidecar("acme", "docs/a.pdf", "../../../globex/docs/secret.pdf", b"x")
    assert keys(raw, bucket) == ["tenant-data/orgs/globex/docs/secret.pdf"]
    assert store.read("globex", "docs/secret.pdf") == b"secret"


@pytest.mark.parametrize("org", ["", "../globex", "a/b", None])
def test_invalid_organization_is_rejected(store, org):
    with pytest.raises(TenantError):
        store.write(org, "docs/a.pdf", b"x")


def test_missing_bucket_is_a_config_error_naming_it(s3_endpoint, aws_env):
    store = S3FileStore(bucket="no-such-bucket-here", endpoint_url=s3_endpoint)
    with pytest.raises(ConfigError, match="no-such-bucket-here"):
        store.list("acme")
    # and it is not created behind the operator's back
    names = [b["Name"] for b in boto3.client("s3", endpoint_url=s3_endpoint).list_buckets()["Buckets"]]
    assert "no-such-bucket-here" not in names


def test_bucket_deleted_after_first_use_is_still_a_config_error(bucket, s3_endpoint, raw):
    store = S3FileStore(bucket=bucket, endpoint_url=s3_endpoint)
    assert store.list("acme") == []
    raw.delete_bucket(Bucket=bucket)
    with pytest.raises(ConfigError, match=bucket):
        store.write("acme", "docs/a.pdf", b"x")


def test_empty_bucket_name_and_bad_prefix_are_config_errors():
    with pytest.raises(ConfigError, match="LIBRARIAN_S3_BUCKET"):
        S3FileStore(bucket="")
    for prefix in ("/abs", "a/../b", "a//b", ".."):
        with pytest.raises(ConfigError, match="LIBRARIAN_S3_PREFIX"):
            S3FileStore(bucket="b", prefix=prefix)


def test_an_injected_client_is_used(bucket, raw):
    store = S3FileStore(bucket=bucket, client=raw)
    store.write("acme", "docs/a.txt", b"via injected client")
    assert raw.get_object(Bucket=bucket, Key="orgs/acme/docs/a.txt")["Body"].read() == b"via injected client"
