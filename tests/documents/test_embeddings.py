"""Hybrid search's vectors: the embeddings client against the stand-in
(tests/support/embeddings.py), vectors filled at ingest by `contentplatform serve` processes
configured with it (SQLite through pysqlite3 and sqlite-vec, or PostgreSQL with pgvector when
CONTENTPLATFORM_TEST_DATABASE_URL is set), `nearest` over them, reciprocal rank fusion, and the
start-up refusals.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from contentplatform.ai.base import ProviderRejected, ProviderUnavailable
from contentplatform.ai.embeddings import Embeddings
from contentplatform.config import Settings
from contentplatform.core import runtime
from contentplatform.documents import vectors
from contentplatform.documents.models import DocumentChunk, DocumentChunkVector
from contentplatform.kit import sqlite
from contentplatform.kit.db import Database
from tests.documents.support import Docs
from tests.support.backends import postgres_databases
from tests.support.database import select_all
from tests.support.embeddings import EmbeddingsServer, vector
from tests.support.orgs import org_fixture
from tests.support.processes import Service, ServiceClient, Services, Stack, wait_for

docs = org_fixture(Docs)

KEY = "sk-embed-secret-123"
MODEL = "stand-in-embed"

GUIDE = """# Harbour Sea Kayaking Guide

## Choosing a kayak

A sit-on-top kayak is the easiest boat for a beginner because it cannot fill with water. Touring
kayaks are longer and narrower, so they track straight and cover distance with less effort.

## Reading the weather

Check the marine forecast on the morning of every trip. An offshore wind is the most dangerous
condition for a beginner, because it pushes a tired paddler away from the beach.

## Cold water clothing

Cold water is the hidden danger of sea kayaking: a wetsuit or drysuit is needed whenever the
water is colder than fifteen degrees, with a warm fleece layer under it.

## Rescue skills

Practise the assisted rescue in calm water before you paddle in open sea. A paddle float turns
the spare paddle into an outrigger for a self-rescue.
"""
COLD = "what should I wear in cold water, a wetsuit or a drysuit?"
MISSPELT = "colld watr wetsiut"


# --- combining full text and vectors -----------------------------------------------------------


def test_combine_weighs_scaled_scores() -> None:
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    # Full text's BM25 (a clear winner, then a near-tie) and the vectors' similarities.
    text = [(a, 10.0), (b, 5.0), (c, 4.9)]
    near = [(c, 0.9), (d, 0.8), (b, 0.5)]
    combined = vectors.combine(text, near, 0.5)
    # a: 1; c: 0.49 + 0.5 * 1; d: 0.5 * 0.75; b: 0.5 + 0 (the vectors' weakest scales to 0).
    assert [item for item, _ in combined] == [a, c, b, d]
    scores = dict(combined)
    assert scores[a] == pytest.approx(1 / 1.5)
    assert scores[c] == pytest.approx((0.49 + 0.5) / 1.5)
    assert scores[d] == pytest.approx(0.5 * 0.75 / 1.5)
    # A weak weight only breaks full text's near-ties; a heavy one overrules its winner.
    assert [item for item, _ in vectors.combine(text, near, 0.05)][:3] == [a, c, b]
    assert next(item for item, _ in vectors.combine(text, near, 10)) == c
    # Weight 0: full text's order, its scores scaled to its best.
    weightless = vectors.combine(text, near, 0)
    assert [item for item, _ in weightless] == [a, b, c]
    assert [score for _, score in weightless] == pytest.approx([1.0, 0.5, 0.49])


def test_combine_keeps_first_appearance_on_ties_and_counts_a_repeat_once() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    assert [item for item, _ in vectors.combine([(a, 1.0)], [(b, 0.7)], 1)] == [a, b]
    assert vectors.combine([(a, 2.0), (a, 1.0), (b, 1.0)], [], 1) == [(a, 0.5), (b, 0.25)]
    repeated = vectors.combine([], [(a, 0.9), (a, 0.5), (b, 0.7)], 1)
    assert [item for item, _ in repeated] == [a, b]
    assert [score for _, score in repeated] == pytest.approx([0.5, 0.25])
    assert vectors.combine([], [], 1) == []


# --- the client -------------------------------------------------------------------------------


@pytest.fixture
def stand_in() -> Iterator[EmbeddingsServer]:
    with EmbeddingsServer(api_key=KEY) as server:
        yield server


def embed(client: Embeddings, texts: list[str]) -> list[list[float]]:
    async def go() -> list[list[float]]:
        try:
            return await client.embed(texts)
        finally:
            await client.close()

    return asyncio.run(go())


def test_client_keeps_the_order_across_batches(stand_in: EmbeddingsServer) -> None:
    texts = [f"passage number {n} about kayaks" for n in range(7)]
    found = embed(Embeddings(stand_in.base_url, KEY, MODEL, batch_size=3), texts)
    for got, sent in zip(found, texts, strict=True):
        assert got == pytest.approx(vector(sent), abs=1e-6)
    assert [len(r["input"]) for r in stand_in.requests] == [3, 3, 1]
    assert {r["model"] for r in stand_in.requests} == {MODEL}
    assert "dimensions" not in stand_in.requests[0]
    assert stand_in.headers[0]["authorization"] == f"Bearer {KEY}"


def test_client_asks_for_dimensions_when_set(stand_in: EmbeddingsServer) -> None:
    found = embed(Embeddings(stand_in.base_url, KEY, MODEL, dimensions=64), ["a kayak"])
    assert len(found[0]) == 64 and stand_in.requests[0]["dimensions"] == 64


def test_client_errors_are_mapped_and_never_show_the_key(
    stand_in: EmbeddingsServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ProviderRejected, match="refused our credentials") as refused:
        embed(Embeddings(stand_in.base_url, "sk-wrong-key-456", MODEL, max_retries=0), ["x"])
    assert "sk-wrong-key-456" not in str(refused.value)

    stand_in.failing = 503
    stand_in.failure_message = f"upstream said {KEY} is over quota"
    with pytest.raises(ProviderUnavailable, match=r"failing \(503, after 1 retries\)") as failed:
        embed(Embeddings(stand_in.base_url, KEY, MODEL, max_retries=1), ["x"])
    assert len(stand_in.requests) == 3  # the refused one, then one try and one retry
    assert KEY not in str(failed.value) and "[redacted]" in str(failed.value)

    stand_in.failing = 400
    with pytest.raises(ProviderRejected, match=r"rejected the request \(400\)") as rejected:
        embed(Embeddings(stand_in.base_url, KEY, MODEL, max_retries=0), ["x"])
    assert KEY not in str(rejected.value)
    assert KEY not in caplog.text and "sk-wrong-key-456" not in caplog.text


def test_an_unreachable_server_is_unavailable() -> None:
    with EmbeddingsServer() as server:
        url = server.base_url
    with pytest.raises(ProviderUnavailable, match="connection"):
        embed(Embeddings(url, KEY, MODEL, max_retries=0), ["x"])


def test_a_query_vector_is_none_when_off_or_failing(stand_in: EmbeddingsServer) -> None:
    async def go() -> tuple[Any, Any, Any]:
        client = Embeddings(stand_in.base_url, KEY, MODEL, max_retries=0)
        try:
            off = await vectors.query_vector(None, "kayak")
            on = await vectors.query_vector(client, "kayak")
            stand_in.failing = 500
            failing = await vectors.query_vector(client, "kayak")
            return off, on, failing
        finally:
            await client.close()

    off, on, failing = asyncio.run(go())
    assert off is None and failing is None
    assert on == pytest.approx(vector("kayak"), abs=1e-6)


def test_settings_want_a_model_with_embeddings() -> None:
    with pytest.raises(ValueError, match="CONTENTPLATFORM_EMBEDDINGS_MODEL is required"):
        Settings(_env_file=None, embeddings_base_url="http://127.0.0.1:1/v1")  # type: ignore[call-arg]


# --- without embeddings -------------------------------------------------------------------------


def test_without_embeddings_nothing_is_stored(docs: Docs, settings: Settings) -> None:
    assert settings.embeddings_base_url is None
    document = docs.ingest("guide.md", GUIDE.encode())
    assert document["chunk_count"] > 0
    stored = select_all(
        settings,
        select(func.count())
        .select_from(DocumentChunkVector)
        .where(DocumentChunkVector.tenant_id == docs.tenant_id),
    )
    assert stored == [0]


# --- ingestion with embeddings, on service processes -------------------------------------------


def embedding_settings(server: EmbeddingsServer, **more: str) -> dict[str, str]:
    return {
        "embeddings_base_url": server.base_url,
        "embeddings_model": MODEL,
        "embeddings_api_key": KEY,
        "embeddings_max_retries": "0",
        "embeddings_batch_size": "2",
        "chunk_tokens": "60",
        "chunk_overlap_tokens": "0",
        # Hybrid search on (the default, 0, is full text alone).
        "embeddings_weight": "0.5",
        **more,
    }


def ready(client: ServiceClient, content: str = GUIDE, name: str = "guide.md") -> dict[str, Any]:
    document = client.upload(name, "md", content.encode())
    return wait_for(
        "the document to be ready",
        lambda: (
            (found := client.request("GET", f"/v1/documents/{document['id']}"))["status"] == "ready"
            and found
        ),
        client.service,
    )


def chunk_ids(stack: Stack, document_id: str) -> set[uuid.UUID]:
    rows = stack.rows(
        select(DocumentChunk.id).where(DocumentChunk.document_id == uuid.UUID(document_id))
    )
    return {uuid.UUID(str(row[0])) for row in rows}


def vectors_of(stack: Stack, chunks: set[uuid.UUID]) -> dict[uuid.UUID, tuple[str, int]]:
    rows = stack.rows(
        select(
            DocumentChunkVector.chunk_id, DocumentChunkVector.model, DocumentChunkVector.dimensions
        ).where(DocumentChunkVector.chunk_id.in_(chunks))
    )
    return {uuid.UUID(str(chunk)): (model, dimensions) for chunk, model, dimensions in rows}


def filled(stack: Stack, document_id: str, service: Service) -> set[uuid.UUID]:
    """Wait until every chunk of the document has a vector; the chunk ids."""

    def check() -> set[uuid.UUID] | None:
        chunks = chunk_ids(stack, document_id)
        found = vectors_of(stack, chunks)
        return chunks if chunks and set(found) == chunks else None

    return wait_for("every chunk's vector", check, service)


def nearest(
    stack: Stack, tenant_id: str, query: str, limit: int = 10
) -> list[tuple[uuid.UUID, float]]:
    """`vectors.nearest` from this process, on the stack's database (sqlite-vec loaded)."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=stack.data_dir,
        database_url=stack.database_url,
        embeddings_base_url="http://127.0.0.1:1/v1",
        embeddings_model=MODEL,
    )

    async def go() -> list[tuple[uuid.UUID, float]]:
        db = Database(
            settings.resolved_database_url,
            sqlite_extensions=runtime.sqlite_extensions(settings),
        )
        try:
            async with db.unit_of_work() as session:
                return await vectors.nearest(
                    session,
                    uuid.UUID(tenant_id),
                    vector(query),
                    document_ids=None,
                    limit=limit,
                    model=MODEL,
                )
        finally:
            await db.dispose()

    return asyncio.run(go())


def tenant_of(client: ServiceClient) -> str:
    return str(client.request("GET", "/v1/system/whoami")["tenant_id"])


def test_ingestion_fills_vectors_that_rank_by_meaning_within_the_tenant(
    services: Services, stack: Stack
) -> None:
    with EmbeddingsServer(api_key=KEY) as server:
        service = services.start(**embedding_settings(server))
        editor = ServiceClient.of_new_org(services, service, "vectors", role="admin")
        other = ServiceClient.of_new_org(services, service, "others")
        document = ready(editor)
        chunks = filled(stack, document["id"], service)
        assert len(chunks) == document["chunk_count"] >= 3
        assert set(vectors_of(stack, chunks).values()) == {(MODEL, 256)}
        # Batches of embeddings_batch_size, from the embed step.
        assert max(len(r["input"]) for r in server.requests) == 2

        theirs = filled(stack, ready(other)["id"], service)
        tenant_id = tenant_of(editor)
        found = nearest(stack, tenant_id, COLD)
        assert {chunk for chunk, _ in found} == chunks  # never another tenant's
        best = stack.one(select(DocumentChunk.content).where(DocumentChunk.id == found[0][0]))
        assert "wetsuit or drysuit" in best[0]
        assert found[0][1] > found[-1][1] and found == sorted(found, key=lambda f: -f[1])
        assert not {chunk for chunk, _ in nearest(stack, tenant_of(other), COLD)} & chunks
        assert {chunk for chunk, _ in nearest(stack, tenant_of(other), COLD)} == theirs

        # Hybrid search: misspelt words that full text cannot match (the failing-server test
        # below sees it find nothing) are found by meaning, fused with full text's hits.
        hits = editor.request("POST", "/v1/chat/retrieve", json={"query": MISSPELT})["data"]
        assert hits and "wetsuit or drysuit" in hits[0]["content"]
        assert {uuid.UUID(hit["chunk_id"]) for hit in hits} <= chunks
        assert 0 < hits[-1]["score"] <= hits[0]["score"] <= 1

        # A new version replaces the chunks, and their vectors with them.
        path = document["storage_path"]
        (stack.data_dir / "objects" / path).write_bytes(
            (GUIDE + "\n## Tides\n\nThe tide turns every six hours.\n").encode()
        )
        editor.request(
            "POST",
            "/v1/documents/confirm-upload",
            json={"filename": "guide.md", "fileType": "md", "storagePath": path},
        )
        # Version 2 ingested: its chunks replaced the first version's (confirm sets the version
        # at once; the chunks change when the ingestion commits).
        wait_for(
            "version 2 to be ready",
            lambda: (
                (found := editor.request("GET", f"/v1/documents/{document['id']}"))[
                    "document_version"
                ]
                == 2
                and found["status"] == "ready"
            ),
            service,
        )
        renewed = filled(stack, document["id"], service)
        assert not renewed & chunks
        assert vectors_of(stack, chunks) == {}

        # A deleted document's vectors never come back, and go.
        editor.request("DELETE", f"/v1/documents/{document['id']}")
        assert nearest(stack, tenant_id, COLD) == []
        wait_for("the vectors to go", lambda: vectors_of(stack, renewed) == {}, service)


def test_a_failing_server_leaves_the_document_searchable_and_vectors_come_later(
    services: Services, stack: Stack
) -> None:
    with EmbeddingsServer(api_key=KEY) as server:
        server.failing = 503
        service = services.start(**embedding_settings(server))
        editor = ServiceClient.of_new_org(services, service, "failing")
        document = ready(editor)
        # The embed step tries, and gives up after its retries (ingestion's workflow ends).
        wait_for(
            "the ingestion to end",
            lambda: stack.workflow_status(f"ingest:{document['id']}:1") == "SUCCESS",
            service,
        )
        assert len(server.requests) >= 2
        chunks = chunk_ids(stack, document["id"])
        assert vectors_of(stack, chunks) == {}
        hits = editor.request("POST", "/v1/chat/retrieve", json={"query": "wetsuit drysuit"})
        assert any("wetsuit" in hit["content"] for hit in hits["data"]), hits
        # Full text alone: the server cannot embed the query either.
        assert editor.request("POST", "/v1/chat/retrieve", json={"query": MISSPELT})["data"] == []

        server.failing = None
        assert filled(stack, document["id"], service) == chunks
        assert "could not embed document" in service.tail(100_000)


def test_the_vectors_weight_is_a_setting(services: Services, stack: Stack) -> None:
    with EmbeddingsServer(api_key=KEY) as server:
        service = services.start(**embedding_settings(server, embeddings_weight="0"))
        editor = ServiceClient.of_new_org(services, service, "weightless")
        document = ready(editor)
        filled(stack, document["id"], service)  # vectors are filled all the same
        embedded = server.texts_embedded
        # Weight 0: full text alone; the query is not even embedded.
        assert editor.request("POST", "/v1/chat/retrieve", json={"query": MISSPELT})["data"] == []
        hits = editor.request("POST", "/v1/chat/retrieve", json={"query": "wetsuit drysuit"})
        assert "wetsuit or drysuit" in hits["data"][0]["content"]
        assert server.texts_embedded == embedded


# --- start-up refusals --------------------------------------------------------------------------


def test_sqlite_that_cannot_load_sqlite_vec_refuses_embeddings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embeddings_base_url="http://127.0.0.1:1/v1",
        embeddings_model=MODEL,
    )
    assert runtime.sqlite_extensions(settings)  # here: pysqlite3 or a capable sqlite3

    def unable() -> Any:
        raise sqlite.ExtensionsUnavailable("no sqlite3 here loads extensions")

    monkeypatch.setattr(sqlite, "loading_module", unable)
    with pytest.raises(runtime.StartupRefused, match="install pysqlite3-binary"):
        runtime.Runtime.create(settings)
    # Without embeddings nothing asks for extensions.
    plain = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    assert runtime.sqlite_extensions(plain) == ()


def test_sqlite_with_sqlite_vec_keeps_sqlalchemys_error_mapping(tmp_path: Any) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embeddings_base_url="http://127.0.0.1:1/v1",
        embeddings_model=MODEL,
    )

    async def go() -> tuple[Any, str]:
        db = Database(
            settings.resolved_database_url, sqlite_extensions=runtime.sqlite_extensions(settings)
        )
        try:
            async with db.engine.connect() as connection:
                version = await connection.scalar(text("SELECT vec_version()"))
                try:
                    await connection.execute(text("SELECT * FROM no_such_table"))
                except Exception as error:
                    return error, str(version)
        finally:
            await db.dispose()
        raise AssertionError("no error")

    error, version = asyncio.run(go())
    assert isinstance(error, OperationalError) and "no_such_table" in str(error)
    assert version.startswith("v")


@pytest.mark.skipif(
    not os.environ.get("CONTENTPLATFORM_TEST_DATABASE_URL"), reason="PostgreSQL only"
)
def test_postgresql_without_the_vector_type_refuses_embeddings(tmp_path: Any) -> None:
    server_url = os.environ["CONTENTPLATFORM_TEST_DATABASE_URL"]
    # A database of its own where nobody created the extension (the server has pgvector).
    with postgres_databases(server_url, f"cp_test_novector_{uuid.uuid4().hex[:8]}") as (url, _):
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            data_dir=tmp_path,
            database_url=url,
            embeddings_base_url="http://127.0.0.1:1/v1",
            embeddings_model=MODEL,
        )

        async def go() -> None:
            current = runtime.Runtime.create(settings)
            try:
                await current.verify()
            finally:
                await current.close()

        with pytest.raises(runtime.StartupRefused, match="install pgvector"):
            asyncio.run(go())
