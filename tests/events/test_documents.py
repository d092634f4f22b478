"""Ingestion's events over REST and RPC: a confirmed upload that becomes ready is told as
`document.ready`, one that fails as `document.failed` with the reason, both by the system (the
background work), in the transaction that settles the document; another organization sees
neither."""

from __future__ import annotations

from contentplatform.config import Settings
from tests.documents.support import Docs
from tests.events.support import SYSTEM, Trail, payloads
from tests.support.files import PROSE
from tests.support.orgs import org_fixture

docs = org_fixture(Docs)
other = org_fixture(Trail, second=True)


def test_a_document_that_becomes_ready_is_told(
    docs: Docs, other: Trail, settings: Settings
) -> None:
    document = docs.ingest("Composting.md", f"# Composting\n\n{PROSE}".encode())
    trail = Trail.of(docs)

    # Written with the document's ready: there as soon as it is.
    row = trail.one("document.ready", document["id"])
    assert row["resource_type"] == "document"
    assert row["actor"] == SYSTEM
    assert trail.activity("member", resourceType="document")["total"] == 1
    (told,) = payloads(settings, docs.tenant_id, "document.ready")
    assert told["document_id"] == document["id"]
    assert told["filename"] == "Composting.md"
    assert told["chunk_count"] == document["chunk_count"]
    assert other.activity(resourceId=document["id"])["total"] == 0


def test_a_document_that_fails_is_told_with_the_reason(docs: Docs, settings: Settings) -> None:
    # Markup with no text in it: nothing to extract.
    data = b"<html><body><script>var tracking = 1;</script></body></html>\n"
    failed = docs.wait(docs.submit("Empty page.html", data)["id"])
    assert failed["status"] == "error", failed
    trail = Trail.of(docs)

    row = trail.one("document.failed", failed["id"])
    assert row["actor"] == SYSTEM
    assert trail.activity(action="document.ready")["total"] == 0
    (told,) = payloads(settings, docs.tenant_id, "document.failed")
    assert told == {
        "document_id": failed["id"],
        "filename": "Empty page.html",
        "error": failed["error"],
    }
