"""S3 storage against a local S3-compatible server (moto, loopback only): the store, presigned
uploads over real HTTP, and the app's behaviour when configured for S3."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from contentplatform.config import Settings
from contentplatform.storage.paths import new_upload_path
from contentplatform.storage.store import ObjectMissing, ObjectStore, StorageError
from contentplatform.system.procedures import router as system_router
from tests.support.problems import problem
from tests.support.servers import second_service

BUCKET = "contentplatform-test"
ACCESS_KEY = "AKIDTESTONLY"
SECRET_KEY = "test-secret-never-shown"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on loopback, and AWS_* variables pointing the store at it (only)."""
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as env:
        for name in [name for name in os.environ if name.startswith("AWS_")]:
            env.delenv(name)
        env.setenv("AWS_ENDPOINT_URL", endpoint)
        env.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        env.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        env.setenv("AWS_REGION", "us-east-1")
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        try:
            yield endpoint
        finally:
            moto.stop()


def s3_settings(tmp_path: Path, url: str) -> Settings:
    return Settings(_env_file=None, env="local", data_dir=tmp_path, storage_url=url)


@pytest.fixture
def s3_store(s3_endpoint: str, tmp_path: Path) -> ObjectStore:
    return ObjectStore.from_settings(s3_settings(tmp_path, f"s3://{BUCKET}/tenants"))


def bucket_object(endpoint: str, key: str) -> Any:
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    return s3.get_object(Bucket=BUCKET, Key=key)


def test_s3_round_trip(s3_endpoint: str, s3_store: ObjectStore) -> None:
    assert not s3_store.is_local

    async def scenario() -> None:
        await s3_store.put("org_s3/notes/a.txt", b"hello, world", content_type="text/plain")
        assert await s3_store.get("org_s3/notes/a.txt") == b"hello, world"
        assert await s3_store.get_range("org_s3/notes/a.txt", 7, 12) == b"world"
        info = await s3_store.head("org_s3/notes/a.txt")
        assert info is not None and info.size == 12
        assert info.last_modified.tzinfo is not None
        await s3_store.delete("org_s3/notes/a.txt")
        await s3_store.delete("org_s3/notes/a.txt")
        assert await s3_store.head("org_s3/notes/a.txt") is None
        with pytest.raises(ObjectMissing):
            await s3_store.get("org_s3/notes/a.txt")
        await s3_store.put("org_s3/kept.txt", b"kept", content_type="text/plain")
        await s3_store.ping()

    asyncio.run(scenario())
    # Under the URL's prefix, with the content type we gave.
    stored = bucket_object(s3_endpoint, "tenants/org_s3/kept.txt")
    assert stored["Body"].read() == b"kept"
    assert stored["ContentType"] == "text/plain"


def test_presigned_upload(s3_endpoint: str, s3_store: ObjectStore) -> None:
    data = b"%PDF-1.7\n" + os.urandom(2048)
    path = new_upload_path("org_s3", "report.pdf")
    target = asyncio.run(
        s3_store.upload_url(
            path, content_type="application/pdf", content_length=len(data), expires_in=300
        )
    )
    url = httpx.URL(target.url)
    assert url.path == f"/{BUCKET}/tenants/{path}"
    assert "X-Amz-Signature" in url.params and url.params["X-Amz-Expires"] == "300"
    assert SECRET_KEY not in target.url
    assert target.method == "PUT" and target.headers == {"Content-Type": "application/pdf"}

    response = httpx.put(target.url, content=data, headers=target.headers, timeout=30)
    assert response.status_code == 200, response.text
    assert asyncio.run(s3_store.get(path)) == data


def test_s3_failures_name_no_secrets(s3_endpoint: str, tmp_path: Path) -> None:
    store = ObjectStore.from_settings(s3_settings(tmp_path, "s3://no-such-bucket"))

    async def scenario() -> None:
        # A write to a missing bucket is a failure, not a missing object.
        with pytest.raises(StorageError) as failed:
            await store.put("org_s3/x", b"x")
        assert not isinstance(failed.value, ObjectMissing)
        for shown in (failed.value.detail, str(failed.value)):
            assert s3_endpoint not in shown and SECRET_KEY not in shown
            assert ACCESS_KEY not in shown
        with pytest.raises(StorageError):
            await store.ping()

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def s3_app(s3_endpoint: str, settings_with: Callable[..., Settings]) -> Iterator[httpx.Client]:
    settings = settings_with(storage_url=f"s3://{BUCKET}/app")
    with second_service(settings, [system_router]) as running, running.client() as http:
        yield http


def test_no_upload_route_with_s3(s3_app: httpx.Client) -> None:
    response = s3_app.put(
        "/v1/uploads/org_s3/x.pdf?expires=9999999999&length=3&signature=00",
        content=b"abc",
        headers={"Content-Type": "application/pdf"},
    )
    problem(response, 404, "NOT_FOUND")


def test_readiness_checks_the_bucket(s3_app: httpx.Client) -> None:
    ready = s3_app.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["storage"] == "ok"
