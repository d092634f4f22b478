"""Local storage: the store itself, and uploads to this service's signed URLs over real HTTP."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contentplatform.config import Settings
from contentplatform.storage.paths import new_upload_path
from contentplatform.storage.signing import KEY_FILE
from contentplatform.storage.store import (
    ObjectInfo,
    ObjectMissing,
    ObjectStore,
    StorageError,
    UploadTarget,
)
from contentplatform.system.procedures import router as system_router
from tests.support.problems import problem
from tests.support.servers import AppServer, second_service

PDF_TYPE = "application/pdf"


@pytest.fixture(scope="module")
def store(settings: Settings) -> ObjectStore:
    """The same directory and signing key as the session server's store."""
    return ObjectStore.from_settings(settings)


def upload_target(
    store: ObjectStore, base_url: str, path: str, length: int, content_type: str = PDF_TYPE
) -> UploadTarget:
    return asyncio.run(
        store.upload_url(
            path,
            content_type=content_type,
            content_length=length,
            expires_in=60,
            base_url=base_url,
        )
    )


# --- the store ---------------------------------------------------------------------------------


def test_local_store_round_trip(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, env="local", data_dir=tmp_path / "data")
    store = ObjectStore.from_settings(settings)
    root = tmp_path / "data" / "objects"
    assert root.is_dir(), "the objects folder is created on start"
    assert store.is_local

    async def scenario() -> None:
        await store.put("org_a/notes/a.txt", b"hello, world", content_type="text/plain")
        assert await store.get("org_a/notes/a.txt") == b"hello, world"
        assert await store.get_range("org_a/notes/a.txt", 7, 12) == b"world"
        assert await store.get_range("org_a/notes/a.txt", 7, 100) == b"world"
        info = await store.head("org_a/notes/a.txt")
        assert isinstance(info, ObjectInfo) and info.size == 12
        assert info.last_modified.tzinfo is not None
        await store.put("org_a/notes/a.txt", b"replaced")
        assert await store.get("org_a/notes/a.txt") == b"replaced"
        await store.delete("org_a/notes/a.txt")
        await store.delete("org_a/notes/a.txt")  # again: nothing to delete is fine
        assert await store.head("org_a/notes/a.txt") is None
        with pytest.raises(ObjectMissing) as missing:
            await store.get("org_a/notes/a.txt")
        assert str(root) not in missing.value.detail
        with pytest.raises(ObjectMissing):
            await store.get_range("org_a/notes/a.txt", 0, 1)
        await store.put("org_a/short", b"abc")
        with pytest.raises(StorageError) as failed:
            await store.get_range("org_a/short", 10, 20)
        assert not isinstance(failed.value, ObjectMissing)
        assert str(root) not in failed.value.detail, "no server paths in what may be shown"
        await store.ping()

    asyncio.run(scenario())
    assert (root / "org_a" / "short").read_bytes() == b"abc"


def test_ping_notices_a_missing_directory(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, env="local", data_dir=tmp_path)
    store = ObjectStore.from_settings(settings)
    (tmp_path / "objects").rmdir()
    with pytest.raises(StorageError):
        asyncio.run(store.ping())


def test_signing_key_is_private_and_stable(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, env="local", data_dir=tmp_path)
    first = ObjectStore.from_settings(settings)
    url = upload_target(first, "http://svc/", "org_a/x.pdf", 10).url
    assert url.startswith("http://svc/v1/uploads/org_a/x.pdf?expires=")
    mode = stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode)
    assert mode == 0o600
    # Another process on the same data directory verifies what this one signed.
    again = ObjectStore.from_settings(settings)
    query = dict(httpx.URL(url).params)
    assert again.signer.verify("org_a/x.pdf", query, PDF_TYPE, now=time.time()) == 10


def test_upload_url_needs_a_base_url_locally(store: ObjectStore) -> None:
    with pytest.raises(ValueError):
        asyncio.run(
            store.upload_url("org_a/x", content_type=PDF_TYPE, content_length=1, expires_in=60)
        )


# --- uploads over HTTP -------------------------------------------------------------------------


def test_upload_round_trip(store: ObjectStore, server: AppServer, client: httpx.Client) -> None:
    data = b"%PDF-1.7\n" + os.urandom(4096)
    path = new_upload_path("org_up", "Report 2024.pdf")
    target = upload_target(store, server.url, path, len(data))
    assert target.method == "PUT"
    assert target.headers == {"Content-Type": PDF_TYPE}
    assert target.url.startswith(f"{server.url}/v1/uploads/{path}?")
    assert 50 <= (target.expires_at.timestamp() - time.time()) <= 61

    response = client.put(target.url, content=data, headers=target.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"storage_path": path, "size": len(data)}
    assert asyncio.run(store.get(path)) == data
    info = asyncio.run(store.head(path))
    assert info is not None and info.size == len(data)


def test_smaller_and_chunked_uploads_are_fine(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    path = new_upload_path("org_up", "notes.txt")
    target = upload_target(store, server.url, path, 100, "text/plain; charset=utf-8")
    # The type is compared as a media type: case and spacing do not matter.
    headers = {"Content-Type": "Text/Plain;Charset=UTF-8"}
    chunks = iter([b"first,", b"second,", b"third"])
    response = client.put(target.url, content=chunks, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["size"] == len(b"first,second,third")
    assert asyncio.run(store.get(path)) == b"first,second,third"


def refused(
    response: httpx.Response, status: int, code: str, store: ObjectStore, path: str
) -> dict[str, Any]:
    body = problem(response, status, code)
    assert asyncio.run(store.head(path)) is None, "nothing may be stored"
    return body


def test_tampered_signature(store: ObjectStore, server: AppServer, client: httpx.Client) -> None:
    path = new_upload_path("org_up", "x.pdf")
    url = httpx.URL(upload_target(store, server.url, path, 3).url)
    signature = url.params["signature"]
    flipped = ("0" if signature[0] != "0" else "1") + signature[1:]
    for params in (
        {**url.params, "signature": flipped},
        {**url.params, "signature": "é" * 64},  # non-ASCII must not crash the comparison
        {k: v for k, v in url.params.items() if k != "signature"},
        {**url.params, "length": str(int(url.params["length"]) + 1)},
        {**url.params, "expires": str(int(url.params["expires"]) + 3600)},
        {**url.params, "expires": "9" * 5000},
        {},
    ):
        response = client.put(
            url.copy_with(params=params), content=b"abc", headers={"Content-Type": PDF_TYPE}
        )
        refused(response, 403, "FORBIDDEN", store, path)


def test_signature_binds_the_path(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    path = new_upload_path("org_a1", "x.pdf")
    url = httpx.URL(upload_target(store, server.url, path, 3).url)
    for other in (
        new_upload_path("org_a1", "x.pdf"),  # same org, another object
        path.replace("org_a1/", "org_b1/", 1),  # another organization
        path + ".exe",
    ):
        response = client.put(
            url.copy_with(path=f"/v1/uploads/{other}"),
            content=b"abc",
            headers={"Content-Type": PDF_TYPE},
        )
        refused(response, 403, "FORBIDDEN", store, other)


def test_signature_binds_the_content_type(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    path = new_upload_path("org_up", "x.pdf")
    target = upload_target(store, server.url, path, 3)
    for headers in ({"Content-Type": "text/html"}, {}):
        response = client.put(target.url, content=b"abc", headers=headers)
        refused(response, 403, "FORBIDDEN", store, path)


def test_expired_url(store: ObjectStore, server: AppServer, client: httpx.Client) -> None:
    path = new_upload_path("org_up", "x.pdf")
    url = store.signer.url(
        server.url, path, expires=int(time.time()) - 1, length=3, content_type=PDF_TYPE
    )
    response = client.put(url, content=b"abc", headers={"Content-Type": PDF_TYPE})
    body = refused(response, 403, "FORBIDDEN", store, path)
    assert "expired" in body["detail"]


def test_body_over_the_signed_size(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    path = new_upload_path("org_up", "x.pdf")
    target = upload_target(store, server.url, path, 10)
    response = client.put(target.url, content=b"x" * 11, headers=target.headers)
    body = refused(response, 413, "BAD_REQUEST", store, path)
    assert body["title"] == "Payload too large"
    assert body["detail"] == "The upload is larger than the 10 bytes this URL accepts."


def test_body_longer_than_declared(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    # Chunked: no Content-Length to check up front, so the count of what arrives must stop it.
    path = new_upload_path("org_up", "x.pdf")
    target = upload_target(store, server.url, path, 10)
    chunks = iter([b"x" * 8, b"x" * 8, b"x" * 8])
    response = client.put(target.url, content=chunks, headers=target.headers)
    body = refused(response, 413, "BAD_REQUEST", store, path)
    assert (body["title"], body["detail"]) == (
        "Payload too large",
        "The upload is larger than the 10 bytes this URL accepts.",
    )


def test_signed_but_invalid_path_is_refused(
    store: ObjectStore, server: AppServer, client: httpx.Client
) -> None:
    # Our signer never signs such a path; if it ever did, the route still refuses it.
    path = "org_up/ padded.pdf"
    url = store.signer.url(
        server.url, path, expires=int(time.time()) + 60, length=3, content_type=PDF_TYPE
    )
    response = client.put(url, content=b"abc", headers={"Content-Type": PDF_TYPE})
    problem(response, 400, "BAD_REQUEST")


def test_only_put(store: ObjectStore, server: AppServer, client: httpx.Client) -> None:
    path = new_upload_path("org_up", "x.pdf")
    target = upload_target(store, server.url, path, 3)
    problem(client.get(target.url), 405, "BAD_REQUEST")


def test_readiness_checks_storage(client: httpx.Client) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["storage"] == "ok"


@pytest.fixture(scope="module")
def small_server(settings_with: Callable[..., Settings]) -> Iterator[str]:
    with second_service(settings_with(max_upload_bytes=16), [system_router]) as running:
        yield running.url


def test_service_limit_beats_a_larger_signed_size(
    store: ObjectStore, small_server: str, client: httpx.Client
) -> None:
    path = new_upload_path("org_up", "x.pdf")
    target = upload_target(store, small_server, path, 100)
    response = client.put(target.url, content=b"x" * 17, headers=target.headers)
    body = refused(response, 413, "BAD_REQUEST", store, path)
    assert body["title"] == "Payload too large"
    assert "16 bytes" in body["detail"]
    chunks = iter([b"x" * 10, b"x" * 10])
    response = client.put(target.url, content=chunks, headers=target.headers)
    refused(response, 413, "BAD_REQUEST", store, path)
    response = client.put(target.url, content=b"x" * 16, headers=target.headers)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "url", ["file://relative/objects", "file:relative", "ftp://example.test/x", "gs://b"]
)
def test_unusable_storage_urls(tmp_path: Path, url: str) -> None:
    settings = Settings(_env_file=None, env="local", data_dir=tmp_path, storage_url=url)
    with pytest.raises(ValueError):
        ObjectStore.from_settings(settings)
