"""LocalFileStore: layout, atomic overwrite, sidecars, tenant isolation and path attacks."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta

import pytest

from librarian.errors import InvalidPathError, TenantError
from librarian.files.base import FileStore
from librarian.files.local import LocalFileStore


@pytest.fixture
def store(tmp_path) -> LocalFileStore:
    return LocalFileStore(tmp_path / "files")


def test_implements_the_file_store_protocol(store):
    def takes_store(s: FileStore) -> FileStore:
        return s

    assert takes_store(store) is store
    for name in ("write", "read", "exists", "stat", "delete", "list", "write_sidecar", "read_sidecar"):
        assert callable(getattr(store, name))


def test_write_read_stat_and_layout(store, tmp_path):
    before = datetime.now(UTC) - timedelta(seconds=5)
    stored = store.write("acme", "docs/report.pdf", b"hello")
    assert stored.path == "docs/report.pdf"
    assert stored.size == 5
    assert before <= stored.modified <= datetime.now(UTC) + timedelta(seconds=5)
    assert (tmp_path / "files" / "orgs" / "acme" / "docs" / "report.pdf").read_bytes() == b"hello"
    assert store.read("acme", "docs/report.pdf") == b"hello"
    assert store.exists("acme", "docs/report.pdf")
    assert store.stat("acme", "docs/report.pdf") == stored


def test_overwrite_replaces(store):
    store.write("acme", "docs/a.txt", b"first version, longer")
    stored = store.write("acme", "docs/a.txt", b"second")
    assert stored.size == 6
    assert store.read("acme", "docs/a.txt") == b"second"
    assert [f.path for f in store.list("acme")] == ["docs/a.txt"]


def test_missing_document(store):
    with pytest.raises(FileNotFoundError, match=r"docs/nope\.pdf"):
        store.read("acme", "docs/nope.pdf")
    assert not store.exists("acme", "docs/nope.pdf")
    assert store.stat("acme", "docs/nope.pdf") is None
    assert store.delete("acme", "docs/nope.pdf") is False
    assert store.list("acme") == []


def test_missing_document_error_does_not_leak_the_directory(store, tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        store.read("acme", "docs/nope.pdf")
    assert str(tmp_path) not in str(info.value)


def test_list_is_sorted_filtered_by_prefix_and_hides_sidecars_and_staging(store, tmp_path):
    for name in ("c.md", "a.pdf", "b.txt", "ab.txt"):
        store.write("acme", f"docs/{name}", name.encode())
    store.write_sidecar("acme", "docs/a.pdf", "parse.json", b"{}")
    (tmp_path / "files" / "orgs" / "acme" / "docs" / "sub").mkdir()  # not a document
    listed = store.list("acme")
    assert [f.path for f in listed] == ["docs/a.pdf", "docs/ab.txt", "docs/b.txt", "docs/c.md"]
    assert [f.size for f in listed] == [5, 6, 5, 4]
    assert [f.path for f in store.list("acme", "docs/a")] == ["docs/a.pdf", "docs/ab.txt"]
    assert store.list("acme", "docs/zzz") == []


@pytest.mark.parametrize("prefix", ["", "derived/", "docs/../", "docs/sub/", "../docs/"])
def test_list_rejects_prefixes_outside_docs(store, prefix):
    with pytest.raises(InvalidPathError):
        store.list("acme", prefix)


def test_sidecars_round_trip_and_are_removed_with_the_document(store, tmp_path):
    store.write("acme", "docs/a.pdf", b"pdf")
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") is None
    store.write_sidecar("acme", "docs/a.pdf", "parse-abc.json", b'{"chunks": []}')
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") == b'{"chunks": []}'
    sidecar = tmp_path / "files" / "orgs" / "acme" / "derived" / "docs" / "a.pdf" / "parse-abc.json"
    assert sidecar.is_file()
    store.write_sidecar("acme", "docs/a.pdf", "parse-abc.json", b"v2")
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") == b"v2"

    assert store.delete("acme", "docs/a.pdf") is True
    assert not store.exists("acme", "docs/a.pdf")
    assert store.read_sidecar("acme", "docs/a.pdf", "parse-abc.json") is None
    assert not sidecar.parent.exists()


@pytest.mark.parametrize("name", ["../x", "a/b", "", "..", "x\x00"])
def test_sidecar_names_are_validated(store, name):
    with pytest.raises(InvalidPathError):
        store.write_sidecar("acme", "docs/a.pdf", name, b"x")
    with pytest.raises(InvalidPathError):
        store.read_sidecar("acme", "docs/a.pdf", name)


def test_organizations_are_isolated(store):
    store.write("acme", "docs/shared-name.pdf", b"acme's")
    store.write("globex", "docs/shared-name.pdf", b"globex's")
    store.write_sidecar("acme", "docs/shared-name.pdf", "parse.json", b"acme cache")
    assert store.read("acme", "docs/shared-name.pdf") == b"acme's"
    assert store.read("globex", "docs/shared-name.pdf") == b"globex's"
    assert store.read_sidecar("globex", "docs/shared-name.pdf", "parse.json") is None
    store.delete("globex", "docs/shared-name.pdf")
    assert store.read("acme", "docs/shared-name.pdf") == b"acme's"
    assert store.read_sidecar("acme", "docs/shared-name.pdf", "parse.json") == b"acme cache"
    assert store.list("globex") == []


@pytest.mark.parametrize("org", ["", "..", "../globex", "a/b", ".hidden", None, "x" * 64])
def test_invalid_organization_is_rejected(store, org):
    with pytest.raises(TenantError):
        store.write(org, "docs/a.pdf", b"x")
    with pytest.raises(TenantError):
        store.list(org)


@pytest.mark.parametrize(
    "path",
    [
        "docs/../../globex/docs/secret.pdf",
        "docs/../derived/x",
        "../orgs/globex/docs/secret.pdf",
        "/etc/passwd",
        "docs/%2e%2e%2f%2e%2e%2fglobex%2fdocs%2fsecret.pdf",
        "docs/a\x00b",
        "docs/sub/a.pdf",
    ],
)
def test_path_attacks_are_rejected_and_touch_nothing(store, tmp_path, path):
    store.write("globex", "docs/secret.pdf", b"secret")
    for call in (
        lambda: store.write("acme", path, b"overwrite"),
        lambda: store.read("acme", path),
        lambda: store.exists("acme", path),
        lambda: store.stat("acme", path),
        lambda: store.delete("acme", path),
        lambda: store.write_sidecar("acme", path, "x.json", b"x"),
    ):
        with pytest.raises(InvalidPathError):
            call()
    assert store.read("globex", "docs/secret.pdf") == b"secret"
    assert not (tmp_path / "files" / "orgs" / "acme").exists()


def test_symlinks_out_of_the_organization_are_refused(store, tmp_path):
    store.write("globex", "docs/secret.pdf", b"secret")
    store.write("acme", "docs/own.pdf", b"own")
    acme_docs = tmp_path / "files" / "orgs" / "acme" / "docs"
    os.symlink(tmp_path / "files" / "orgs" / "globex" / "docs" / "secret.pdf", acme_docs / "link.pdf")
    with pytest.raises(InvalidPathError, match="outside the organization"):
        store.read("acme", "docs/link.pdf")
    with pytest.raises(InvalidPathError, match="outside the organization"):
        store.write("acme", "docs/link.pdf", b"clobber")
    assert [f.path for f in store.list("acme")] == ["docs/own.pdf"]  # symlinks are not documents
    assert store.read("globex", "docs/secret.pdf") == b"secret"


def test_a_symlinked_docs_directory_is_refused(store, tmp_path):
    store.write("globex", "docs/secret.pdf", b"secret")
    acme = tmp_path / "files" / "orgs" / "acme"
    acme.mkdir(parents=True)
    os.symlink(tmp_path / "files" / "orgs" / "globex" / "docs", acme / "docs")
    with pytest.raises(InvalidPathError, match="outside the organization"):
        store.read("acme", "docs/secret.pdf")
    with pytest.raises(InvalidPathError, match="outside the organization"):
        store.list("acme")


def test_non_bytes_data_is_a_clear_error(store):
    with pytest.raises(TypeError, match="bytes"):
        store.write("acme", "docs/a.txt", "text")  # type: ignore[arg-type]


def test_nfc_and_nfd_spellings_address_one_document(store):
    store.write("acme", "docs/re\u0301sume\u0301.pdf", b"one")
    store.write("acme", "docs/résumé.pdf", b"two")
    assert [f.path for f in store.list("acme")] == ["docs/résumé.pdf"]
    assert store.read("acme", "docs/re\u0301sume\u0301.pdf") == b"two"


def test_concurrent_writers_of_one_path_never_tear_the_file(store, tmp_path):
    """Each writer's payload is distinct and large enough to span many write() calls; every read
    during the storm, and the final file, must equal exactly one writer's payload."""
    writers, rounds = 6, 5
    payloads = [bytes([65 + i]) * (512 * 1024 + i) for i in range(writers)]
    store.write("acme", "docs/hot.bin", payloads[0])
    start = threading.Barrier(writers + 1)
    done = threading.Event()
    errors: list[BaseException] = []
    torn: list[int] = []

    def writer(i: int) -> None:
        try:
            start.wait()
            for _ in range(rounds):
                store.write("acme", "docs/hot.bin", payloads[i])
        except BaseException as error:
            errors.append(error)

    def reader() -> None:
        start.wait()
        while not done.is_set():
            data = store.read("acme", "docs/hot.bin")
            if data not in payloads:
                torn.append(len(data))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    watcher = threading.Thread(target=reader)
    for t in [*threads, watcher]:
        t.start()
    for t in threads:
        t.join(timeout=60)
    done.set()
    watcher.join(timeout=60)

    assert not errors
    assert not torn
    assert store.read("acme", "docs/hot.bin") in payloads
    assert [f.path for f in store.list("acme")] == ["docs/hot.bin"]
    staging = tmp_path / "files" / "orgs" / "acme" / ".staging"
    assert list(staging.iterdir()) == []  # no temporary files left behind


def test_failed_write_leaves_the_old_file_and_no_temporary(store, tmp_path, monkeypatch):
    store.write("acme", "docs/a.txt", b"old")

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        store.write("acme", "docs/a.txt", b"new")
    monkeypatch.undo()
    assert store.read("acme", "docs/a.txt") == b"old"
    assert list((tmp_path / "files" / "orgs" / "acme" / ".staging").iterdir()) == []
