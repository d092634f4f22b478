"""A document registered with documents.create whose upload is never confirmed fails as
`upload_missing` once an upload URL's lifetime (UPLOAD_URL_TTL_SECONDS) has passed since it was
registered, over REST and RPC. The service's reconcile pass (every second in the suite) does it;
instead of waiting the real lifetime, a test moves the document's registration back in time.
A confirm that comes after is refused (409) rather than bringing the document back silently,
and so is a retry; deleting it frees the path."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from contentplatform.documents.models import Document
from contentplatform.kit.db import Database, utcnow
from tests.documents.support import Docs, run
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

NOTICED_WITHIN = 15.0  # seconds; the suite's reconcile pass runs every second
NOTES = b"Notes on watering the garden early in the morning.\n"

docs = org_fixture(Docs)


def registered_long_ago(settings, document_id: str) -> None:
    """Move the document's registration back past an upload URL's lifetime."""
    then = utcnow() - timedelta(seconds=settings.upload_url_ttl_seconds + 60)

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            chosen = Document.id == uuid.UUID(document_id)
            await session.execute(update(Document).where(chosen).values(created_at=then))

    run(settings, scenario)


def failed(docs: Docs, document_id: str) -> dict[str, Any]:
    """Poll getById until the document is in error (bounded): the document."""
    deadline = time.monotonic() + NOTICED_WITHIN
    while True:
        document = docs.ok("documents.getById", {"id": document_id}, role="member")
        if document["status"] == "error":
            return document
        assert document["status"] == "pending", document
        assert time.monotonic() < deadline, f"still pending: {document}"
        time.sleep(0.1)


@pytest.mark.own_org
def test_a_registered_document_never_uploaded_fails_as_upload_missing(docs: Docs, settings):
    path = docs.upload("notes.txt", "txt", NOTES)  # uploaded, but the confirm never comes
    stale = docs.create("notes.txt", path=path)
    fresh = docs.create("fresh.txt")
    assert stale["status"] == fresh["status"] == "pending"

    registered_long_ago(settings, stale["id"])
    document = failed(docs, stale["id"])

    assert (document["status"], document["error"]) == ("error", "upload_missing")
    assert document["content_hash"] is None and document["chunk_count"] == 0
    # Shown wherever failures are: the list filtered on error, the stats.
    assert [d["id"] for d in docs.list(status="error")["data"]] == [stale["id"]]
    stats = docs.ok("documents.getStats", role="member")
    assert (stats["error"], stats["pending"]) == (1, 1)
    # One registered within the lifetime waits for its upload.
    assert docs.ok("documents.getById", {"id": fresh["id"]})["status"] == "pending"


@pytest.mark.own_org
def test_a_late_confirm_is_refused_until_the_document_is_deleted(docs: Docs, settings):
    path = docs.upload("notes.txt", "txt", NOTES)
    document = docs.create("notes.txt", path=path)
    registered_long_ago(settings, document["id"])
    failed(docs, document["id"])

    late = docs.confirm("notes.txt", "txt", path)
    body = problem(late, 409, "CONFLICT")
    assert "upload_missing" in body["detail"] and document["id"] in body["detail"]
    retry = docs.request("documents.retryIngestion", {"id": document["id"]}, role="editor")
    assert "upload_missing" in problem(retry, 409, "CONFLICT")["detail"]
    still = docs.ok("documents.getById", {"id": document["id"]})
    assert (still["status"], still["error"]) == ("error", "upload_missing")

    # Deleted, the path is free: the same upload confirmed makes a new document.
    docs.ok("documents.delete", {"id": document["id"]}, role="admin")
    confirmed = docs.confirm("notes.txt", "txt", path)
    assert confirmed.status_code == 200, confirmed.text
    assert confirmed.json()["id"] != document["id"]
    assert docs.wait(confirmed.json()["id"])["status"] == "ready"


@pytest.mark.own_org
def test_a_confirmed_document_is_never_failed_for_its_age(docs: Docs, settings):
    path = docs.upload("notes.txt", "txt", NOTES)
    registered = docs.create("notes.txt", path=path)
    confirmed = docs.confirm("notes.txt", "txt", path)
    assert confirmed.status_code == 200, confirmed.text
    assert docs.wait(registered["id"])["status"] == "ready"
    marker = docs.create("marker.txt")  # fails once a pass has run

    registered_long_ago(settings, registered["id"])
    registered_long_ago(settings, marker["id"])
    failed(docs, marker["id"])

    assert docs.ok("documents.getById", {"id": registered["id"]})["status"] == "ready"
