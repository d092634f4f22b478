"""Helpers for the Documents API tests: one organization seen through the API, and direct looks
at the database and object store behind it (each on a fresh event loop with its own engine)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.credits import service as credits
from contentplatform.credits.models import CreditReservation
from contentplatform.documents import index as search
from contentplatform.documents.models import Document
from contentplatform.kit.db import Database
from contentplatform.storage.store import ObjectStore
from tests.support.database import run_on
from tests.support.orgs import Org

# A bound, not a wait: under CI a file whose worker is killed twice took over 30 s.
INGEST_TIMEOUT = 90.0
# An OLE2 compound file header (legacy .doc, .xls, ...), padded to one 512-byte sector and more.
OLE2_DOC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 1016


class Docs(Org):
    """One organization's documents through one transport (`call`), with a token per role.
    Writes go as the admin unless told otherwise."""

    # --- the upload flow -----------------------------------------------------------------------

    def upload(self, filename: str, file_type: str, data: bytes) -> str:
        """createUploadUrl, then PUT the bytes where it says; returns the storagePath."""
        target = self.ok(
            "documents.createUploadUrl",
            {"filename": filename, "fileType": file_type, "contentLength": len(data)},
            role="editor",
        )
        put = self.client.request(
            target["method"], target["upload_url"], content=data, headers=target["headers"]
        )
        assert put.status_code == 200, put.text
        return target["storage_path"]

    def confirm(self, filename: str, file_type: str, storage_path: str) -> httpx.Response:
        return self.request(
            "documents.confirmUpload",
            {"filename": filename, "fileType": file_type, "storagePath": storage_path},
            role="editor",
        )

    def submit(self, filename: str, data: bytes, file_type: str | None = None) -> dict[str, Any]:
        """Upload and confirm; the confirmed document (not yet ingested)."""
        file_type = file_type or filename.rsplit(".", 1)[1]
        response = self.confirm(filename, file_type, self.upload(filename, file_type, data))
        assert response.status_code == 200, response.text
        return response.json()

    def wait(self, document_id: str, until: tuple[str, ...] = ("ready", "error")) -> dict[str, Any]:
        """Poll getById until the status is one of `until` (bounded)."""
        deadline = time.monotonic() + INGEST_TIMEOUT
        while True:
            document = self.ok("documents.getById", {"id": document_id}, role="member")
            if document["status"] in until:
                return document
            assert time.monotonic() < deadline, f"still {document['status']}: {document}"
            time.sleep(0.05)

    def ingest(self, filename: str, data: bytes, file_type: str | None = None) -> dict[str, Any]:
        """Upload, confirm, and wait until ready."""
        document = self.wait(self.submit(filename, data, file_type)["id"])
        assert document["status"] == "ready", document
        return document

    def create(self, filename: str, file_type: str | None = None, path: str | None = None):
        """documents.create: a pending document registered for a path of this organization."""
        file_type = file_type or filename.rsplit(".", 1)[1]
        return self.ok(
            "documents.create",
            {
                "filename": filename,
                "fileType": file_type,
                "storagePath": path or f"{self.org}/library/{uuid.uuid4().hex}/{filename}",
            },
            role="editor",
        )

    def list(self, role: str = "member", **query: Any) -> dict[str, Any]:
        return self.ok("documents.list", query, role=role)

    def names(self, **query: Any) -> list[str]:
        return [d["filename"] for d in self.list(**query)["data"]]


# --- behind the API ---------------------------------------------------------------------------


run = run_on


def document_row(settings: Settings, document_id: str) -> Document | None:
    """The stored row, deleted or not."""

    async def scenario(db: Database) -> Document | None:
        async with db.unit_of_work() as session:
            return await session.get(Document, uuid.UUID(document_id))

    return run(settings, scenario)


def reservations(settings: Settings, tenant_id: uuid.UUID, kind: str = "documents.ingest"):
    """(idempotency key, status) of the tenant's reservations of `kind`, oldest first."""

    async def scenario(db: Database) -> list[tuple[str, str]]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(CreditReservation.idempotency_key, CreditReservation.status)
                .where(CreditReservation.tenant_id == tenant_id, CreditReservation.kind == kind)
                .order_by(CreditReservation.created_at)
            )
            return [tuple(row) for row in rows]

    return run(settings, scenario)


def available_credits(settings: Settings, tenant_id: uuid.UUID) -> int:
    async def scenario(db: Database) -> int:
        async with db.unit_of_work() as session:
            balance = await credits.balance(
                session, tenant_id, monthly_grant=settings.monthly_credit_grant
            )
            return balance.available

    return run(settings, scenario)


def hold_all_but(settings: Settings, tenant_id: uuid.UUID, left: int) -> None:
    """Hold (in a committed transaction) every available credit of the tenant but `left`."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            balance = await credits.balance(
                session, tenant_id, monthly_grant=settings.monthly_credit_grant
            )
            await credits.reserve(
                session,
                tenant_id,
                kind="generation.blog",
                idempotency_key=f"test-hold-{uuid.uuid4()}",
                amount=balance.available - left,
                ttl_seconds=600,
                monthly_grant=settings.monthly_credit_grant,
            )

    run(settings, scenario)


def searched(settings: Settings, tenant_id: uuid.UUID, query: str) -> set[str]:
    """Ids of the documents whose chunks `search_chunks` finds for `query`."""

    async def scenario(db: Database) -> set[str]:
        async with db.unit_of_work() as session:
            hits = await search.search_chunks(session, tenant_id, query, limit=50)
            return {str(hit.document_id) for hit in hits}

    return run(settings, scenario)


def put_object(settings: Settings, path: str, data: bytes) -> None:
    asyncio.run(ObjectStore.from_settings(settings).put(path, data))


def delete_object(settings: Settings, path: str) -> None:
    asyncio.run(ObjectStore.from_settings(settings).delete(path))


def object_exists(settings: Settings, path: str) -> bool:
    return asyncio.run(ObjectStore.from_settings(settings).head(path)) is not None
