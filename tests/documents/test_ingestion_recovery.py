"""Ingestion survives crashes and stalls, proven on real `contentplatform serve` processes.

Each test runs the real service in a child process (`python -m contentplatform.cli serve`) with a
data directory, databases and DBOS system database of its own: SQLite files in a temporary
directory, or two PostgreSQL databases created here and dropped after when
CONTENTPLATFORM_TEST_DATABASE_URL is set (plus Redis, under a prefix of its own, when
CONTENTPLATFORM_TEST_REDIS_URL is). Files go in through the HTTP API exactly as a client sends
them (createUploadUrl -> PUT -> confirmUpload), tokens come from `contentplatform dev-token`, and
what the API does not show (credits, DBOS's records) is read from the databases directly. States
a crash leaves behind (a commit whose workflow never started, work processing for an hour) are
arranged directly in the database too, the service stopped when it matters.

The last two tests pin bugs found while writing these (see their docstrings).
"""

from __future__ import annotations

import functools
import hashlib
import signal
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from sqlalchemy import Table, func, insert, select, update

from contentplatform.credits.models import CreditLedgerEntry, CreditReservation
from contentplatform.documents.models import Document, DocumentChunk
from contentplatform.documents.service import INGEST_KIND, ingest_cost
from tests.support.files import PROSE, pdf
from tests.support.processes import TIMEOUT, Service, ServiceClient, Services, Stack, wait_for

STALL_NOTICED_WITHIN = 15.0  # the reconciler runs every 0.5 s here
BIG_PDF_PAGES = 1200  # about 1.5 s of extraction; doubled while ingestion outruns the poll
ATTEMPTS = 4  # up to 9,600 pages: on a busy machine the reconciler's pass comes late

DOCUMENTS = cast(Table, Document.__table__)
RESERVATIONS = cast(Table, CreditReservation.__table__)
LEDGER = cast(Table, CreditLedgerEntry.__table__)
CHUNKS = cast(Table, DocumentChunk.__table__)


# --- the API, as a client uses it ---------------------------------------------------------------


class Api(ServiceClient):
    """A tenant's editor following its documents."""

    def get(self, document_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/documents/{document_id}")

    def content(self, document_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/documents/{document_id}/content")

    def retry(self, document_id: str) -> dict[str, Any]:
        return self.request("POST", f"/v1/documents/{document_id}/retry")

    def listed(self, status: str) -> list[str]:
        page = self.request("GET", "/v1/documents", params={"status": status})
        return [document["id"] for document in page["data"]]

    def past_pending(self, document_id: str) -> dict[str, Any]:
        """The document as soon as it is no longer pending (polled as fast as it answers)."""
        return wait_for(
            f"document {document_id} to leave pending",
            lambda: (document := self.get(document_id))["status"] != "pending" and document,
            self.service,
            interval=0,
        )

    def settled(self, document_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The document once its ingestion has ended, either way."""
        return wait_for(
            f"document {document_id} to be ready or in error",
            lambda: (
                (document := self.get(document_id))["status"] in ("ready", "error") and document
            ),
            self.service,
            timeout=timeout,
            interval=0.1,
        )

    def wait_until(
        self, document_id: str, status: str, timeout: float = TIMEOUT, **expected: Any
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            document = self.get(document_id)
            wanted = {"status": status, **expected}
            return document if all(document[k] == v for k, v in wanted.items()) else None

        return wait_for(
            f"document {document_id} to be {status} {expected or ''}".rstrip(),
            reached,
            self.service,
            timeout=timeout,
            interval=0.1,
        )


def notes_ingested(services: Services, name: str) -> tuple[Service, Api, str]:
    """A first service with a new organization's notes (a small PDF on composting) ingested on
    it: the service, the organization's editor on it, and the document's id."""
    first = services.start()
    api = Api.of_new_org(services, first, name)
    document_id = api.upload("notes.pdf", "pdf", small_pdf("Composting"))["id"]
    api.wait_until(document_id, "ready")
    return first, api, document_id


# --- the records behind the API -----------------------------------------------------------------


def document_row(stack: Stack, document_id: str) -> Any:
    return stack.one(select(DOCUMENTS).where(DOCUMENTS.c.id == uuid.UUID(document_id)))


def reservations(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    return stack.rows(
        select(RESERVATIONS)
        .where(RESERVATIONS.c.tenant_id == tenant_id)
        .order_by(RESERVATIONS.c.created_at)
    )


def debits(stack: Stack, tenant_id: uuid.UUID) -> list[Any]:
    return stack.rows(
        select(LEDGER)
        .where(LEDGER.c.tenant_id == tenant_id, LEDGER.c.entry_type == "debit")
        .order_by(LEDGER.c.created_at)
    )


def stored_chunks(stack: Stack, document_id: str) -> int:
    with stack.engine.connect() as connection:
        return int(
            connection.scalar(
                select(func.count())
                .select_from(CHUNKS)
                .where(CHUNKS.c.document_id == uuid.UUID(document_id))
            )
            or 0
        )


def assert_settled_once(stack: Stack, reservation: Any) -> None:
    """Committed at its full amount, with exactly one debit of that amount."""
    assert reservation.status == "committed"
    assert reservation.committed_amount == reservation.amount
    spent = [
        row for row in debits(stack, reservation.tenant_id) if row.reservation_id == reservation.id
    ]
    assert [(row.amount, row.kind) for row in spent] == [(-reservation.amount, INGEST_KIND)]


def confirm_new_version_behind_the_services_back(
    stack: Stack, document_id: str, content: bytes, status: str, started_at: datetime | None
) -> uuid.UUID:
    """What `confirmUpload` commits for the next version of a document, without its workflow start:
    the new bytes at the document's storagePath, a held reservation, version + 1, and `status`.
    The process "died" between that commit and starting `ingest:<id>:<version + 1>`."""
    document = document_row(stack, document_id)
    stored = stack.data_dir / "objects" / document.storage_path
    assert stored.is_file(), f"the local store keeps objects elsewhere than {stored}"
    stored.write_bytes(content)
    content_hash = hashlib.sha256(content).hexdigest()
    version = document.document_version + 1
    reservation_id = uuid.uuid4()
    now = datetime.now(UTC)
    with stack.engine.begin() as connection:
        connection.execute(
            insert(RESERVATIONS).values(
                id=reservation_id,
                tenant_id=document.tenant_id,
                kind=INGEST_KIND,
                idempotency_key=f"{document.tenant_id}:{content_hash}:v{version}",
                amount=ingest_cost(len(content)),
                status="held",
                expires_at=now + timedelta(hours=1),
            )
        )
        connection.execute(
            update(DOCUMENTS)
            .where(DOCUMENTS.c.id == document.id)
            .values(
                document_version=version,
                ingest_attempt=0,
                status=status,
                error=None,
                content_hash=content_hash,
                size_bytes=len(content),
                chunk_count=0,
                text_path=None,
                ingest_reservation_id=reservation_id,
                ingest_started_at=started_at,
                updated_at=now,
            )
        )
    return reservation_id


# --- files --------------------------------------------------------------------------------------


@functools.cache
def big_pdf(pages: int) -> bytes:
    """Hundreds of pages of prose: a real PDF whose text extraction takes a noticeable time."""
    return pdf(*(f"Page {n + 1}. {PROSE}" for n in range(pages)), title="Composting manual")


def small_pdf(subject: str) -> bytes:
    return pdf(
        f"{subject} is the subject of this page. {PROSE}",
        f"More about {subject}. {PROSE}",
        title=f"{subject} notes",
    )


# --- the tests ----------------------------------------------------------------------------------


def test_a_crash_mid_ingestion_resumes_after_restart_and_commits_its_credits_once(
    stack: Stack, services: Services
) -> None:
    service = services.start()
    pages = BIG_PDF_PAGES
    for _ in range(ATTEMPTS):
        api = Api.of_new_org(services, service, "crash")  # a tenant of its own per attempt
        confirmed = api.upload("manual.pdf", "pdf", big_pdf(pages))
        document_id = confirmed["id"]
        assert confirmed["unchanged"] is False
        if api.past_pending(document_id)["status"] == "processing":
            service.kill()
            killed = document_row(stack, document_id)
            if killed.status == "processing":
                break
            service = services.start()  # it finished between the poll and the kill
        else:
            api.wait_until(document_id, "ready")
        pages *= 2  # ingestion outran the poll: give it more to do
    else:
        pytest.fail(f"ingestion always finished before the kill, even with {pages // 2} pages")

    # Killed for real while processing: DBOS left the workflow pending, nothing was settled.
    assert service.process.returncode == -signal.SIGKILL
    workflow_id = f"ingest:{document_id}:1"
    assert stack.workflow_status(workflow_id) == "PENDING"
    (held,) = reservations(stack, killed.tenant_id)
    assert held.status == "held"
    assert debits(stack, killed.tenant_id) == []

    restarted = services.start()
    api = Api(restarted, services.token(api.org), api.org)
    ready = api.wait_until(document_id, "ready")

    assert ready["id"] == document_id
    assert ready["document_version"] == 1
    assert ready["error"] is None
    assert ready["chunk_count"] > 0
    assert stored_chunks(stack, document_id) == ready["chunk_count"]  # none left twice
    content = api.content(document_id)
    assert content["contentError"] is None
    assert content["content"].startswith("Page 1.")
    # Every page was extracted (the API returns at most 250,000 bytes of it).
    full_text = (
        stack.data_dir / "objects" / document_row(stack, document_id).text_path
    ).read_text()
    assert f"Page {pages}. " in full_text
    assert stack.ended_workflow_status(workflow_id) == "SUCCESS"
    (reservation,) = reservations(stack, killed.tenant_id)
    assert reservation.id == held.id
    assert reservation.amount == ingest_cost(len(big_pdf(pages)))
    assert_settled_once(stack, reservation)
    assert len(debits(stack, killed.tenant_id)) == 1
    assert "Traceback" not in restarted.tail(100_000)


def test_a_confirmed_document_whose_workflow_never_started_is_started_by_the_reconciler(
    stack: Stack, services: Services
) -> None:
    first, api, document_id = notes_ingested(services, "missing")
    first.stop()

    new_reservation = confirm_new_version_behind_the_services_back(
        stack, document_id, small_pdf("Beekeeping"), status="pending", started_at=None
    )
    workflow_id = f"ingest:{document_id}:2"
    assert stack.workflow_status(workflow_id) is None

    second = services.start()
    api = Api(second, services.token(api.org), api.org)
    ready = api.wait_until(document_id, "ready", document_version=2)

    assert ready["id"] == document_id
    assert ready["chunk_count"] > 0
    text_now = api.content(document_id)["content"]
    assert "Beekeeping is the subject" in text_now
    assert "Composting is the subject" not in text_now
    assert stack.ended_workflow_status(workflow_id) == "SUCCESS"
    restarts = f"restarting {workflow_id}: its workflow is missing"
    assert restarts in second.tail(100_000)

    tenant_id = document_row(stack, document_id).tenant_id
    first_reservation, second_reservation = reservations(stack, tenant_id)
    assert second_reservation.id == new_reservation
    assert_settled_once(stack, first_reservation)
    assert_settled_once(stack, second_reservation)
    assert len(debits(stack, tenant_id)) == 2

    # Started once: later passes find the workflow and leave the document be.
    time.sleep(1.5)
    assert second.tail(1_000_000).count(restarts) == 1
    assert api.get(document_id)["status"] == "ready"


def test_a_stalled_ingestion_is_failed_with_its_credits_released_and_a_retry_recovers_it(
    stack: Stack, services: Services
) -> None:
    first, api, document_id = notes_ingested(services, "stalled")
    assert api.listed("error") == []  # cached for 60 s (in Redis across restarts when configured)
    first.stop()

    # Processing for an hour with no workflow behind it (lost, or never started): nothing would
    # ever finish it.
    stuck_reservation = confirm_new_version_behind_the_services_back(
        stack,
        document_id,
        small_pdf("Beekeeping"),
        status="processing",
        started_at=datetime.now(UTC) - timedelta(hours=1),
    )

    second = services.start(ingest_stall_seconds="2")
    api = Api(second, services.token(api.org), api.org)
    failed = api.wait_until(document_id, "error", timeout=STALL_NOTICED_WITHIN)

    assert failed["error"] == "stalled"
    assert failed["document_version"] == 2
    assert document_id in api.listed("error")  # the reconciler's change invalidated the cache
    assert stack.workflow_status(f"ingest:{document_id}:2") is None  # given up, not started
    tenant_id = document_row(stack, document_id).tenant_id
    _, stalled_reservation = reservations(stack, tenant_id)
    assert stalled_reservation.id == stuck_reservation
    assert stalled_reservation.status == "released"
    assert stalled_reservation.committed_amount is None
    assert len(debits(stack, tenant_id)) == 1  # only version 1's

    # The retry on a service with the ordinary stall limit: on a loaded machine a fresh
    # service's first ingestion (its extraction worker starting) can take longer than 2 s.
    second.stop()
    third = services.start()
    api = Api(third, services.token(api.org), api.org)
    assert api.retry(document_id) == {"success": True}
    ready = api.wait_until(document_id, "ready")

    assert ready["id"] == document_id
    assert ready["document_version"] == 2
    assert ready["error"] is None
    assert ready["chunk_count"] > 0
    assert "Beekeeping is the subject" in api.content(document_id)["content"]
    assert stack.ended_workflow_status(f"ingest:{document_id}:2:1") == "SUCCESS"
    rows = reservations(stack, tenant_id)
    assert [row.status for row in rows] == ["committed", "released", "committed"]
    assert_settled_once(stack, rows[0])
    assert_settled_once(stack, rows[2])
    assert len(debits(stack, tenant_id)) == 2
    assert document_id not in api.listed("error")


def test_a_stalled_ingestion_whose_workflow_still_runs_is_cancelled_and_stays_failed(
    stack: Stack, services: Services
) -> None:
    service = services.start()
    pages = BIG_PDF_PAGES
    for _ in range(ATTEMPTS):
        api = Api.of_new_org(services, service, "hung")
        document_id = api.upload("manual.pdf", "pdf", big_pdf(pages))["id"]
        if api.past_pending(document_id)["status"] == "processing":
            # As if it had been processing for an hour (a step hanging on a pathological file).
            with stack.engine.begin() as connection:
                backdated = connection.execute(
                    update(DOCUMENTS)
                    .where(
                        DOCUMENTS.c.id == uuid.UUID(document_id),
                        DOCUMENTS.c.status == "processing",
                    )
                    .values(ingest_started_at=datetime.now(UTC) - timedelta(hours=1))
                ).rowcount
            outcome = api.settled(document_id)
            if backdated and outcome["status"] == "error":
                assert outcome["error"] == "stalled", outcome
                break
        api.wait_until(document_id, "ready")  # it finished before the reconciler's next pass
        pages *= 2
    else:
        pytest.fail(
            f"ingestion always finished before the reconciler, even with {pages // 2} pages"
        )

    workflow_id = f"ingest:{document_id}:1"
    wait_for(
        "DBOS to record the cancellation",
        lambda: stack.workflow_status(workflow_id) == "CANCELLED",
        service,
    )
    tenant_id = document_row(stack, document_id).tenant_id
    (released,) = reservations(stack, tenant_id)
    assert released.status == "released"
    # The cancelled workflow does not come back to finish it (its extraction, cut short, would
    # have been over by now): no ready, no debit.
    time.sleep(3)
    still = api.get(document_id)
    assert (still["status"], still["error"]) == ("error", "stalled")
    assert debits(stack, tenant_id) == []

    assert api.retry(document_id) == {"success": True}
    ready = api.wait_until(document_id, "ready")
    assert ready["id"] == document_id
    assert ready["chunk_count"] > 0
    assert stored_chunks(stack, document_id) == ready["chunk_count"]
    first, retried = reservations(stack, tenant_id)
    assert (first.status, retried.status) == ("released", "committed")
    assert_settled_once(stack, retried)
    assert len(debits(stack, tenant_id)) == 1


# --- regressions ------------------------------------------------------------------------------

# Readable as plain text; as HTML nothing is left once the script is dropped.
SCRIPT_ONLY_PAGE = (
    b"<!doctype html><html><head><title></title>"
    b"<script>window.analytics = 'loaded';</script></head><body></body></html>"
)


def test_reuploading_a_deleted_documents_content_that_then_fails_ends_in_error(
    stack: Stack, services: Services
) -> None:
    """The same bytes as a .txt (ingested), then, once that document is deleted, as an .html:
    a new document, whose ingestion fails and must say so, releasing a hold of its own.

    Was: the credit key (tenant, hash, version) of the new document was the deleted one's, so
    it adopted that committed hold (ingested for free); when the ingestion failed, releasing the
    committed hold raised Conflict, the workflow ended in ERROR, the reconciler's give-up raised
    the same on every pass, and the document stayed `processing` forever."""
    service = services.start()
    api = Api.of_new_org(services, service, "reupload", role="admin")
    first_id = api.upload("page.txt", "txt", SCRIPT_ONLY_PAGE)["id"]
    api.wait_until(first_id, "ready")
    api.request("DELETE", f"/v1/documents/{first_id}")

    second = api.upload("page.html", "html", SCRIPT_ONLY_PAGE)
    assert second["id"] != first_id
    assert second["unchanged"] is False
    failed = api.settled(second["id"], timeout=15)

    assert failed["error"] == "The page has no readable text."
    tenant_id = document_row(stack, first_id).tenant_id
    first_hold, second_hold = reservations(stack, tenant_id)
    assert (first_hold.status, second_hold.status) == ("committed", "released")
    assert len(debits(stack, tenant_id)) == 1
    assert "reconcile pass failed" not in service.tail(1_000_000)


def test_one_record_the_reconciler_cannot_give_up_does_not_block_the_others(
    stack: Stack, services: Services
) -> None:
    """Was: the whole pass ran in one transaction, so one give-up that raised rolled back every
    other item's and stopped the pass, on every pass: no stalled document was failed anymore."""
    healthy_org, broken_org = (f"org_{name}_{uuid.uuid4().hex[:8]}" for name in ("ok", "bad"))
    first = services.start()
    ids = {}
    for org in (healthy_org, broken_org):
        api = Api(first, services.token(org), org)
        ids[org] = api.upload("notes.pdf", "pdf", small_pdf(f"Subject {org}"))["id"]
        api.wait_until(ids[org], "ready")
    first.stop()

    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    for org in (healthy_org, broken_org):
        confirm_new_version_behind_the_services_back(
            stack, ids[org], small_pdf(f"Next {org}"), status="processing", started_at=an_hour_ago
        )
    # The broken one's hold cannot be found (say, purged by a future retention job).
    with stack.engine.begin() as connection:
        connection.execute(
            update(DOCUMENTS)
            .where(DOCUMENTS.c.id == uuid.UUID(ids[broken_org]))
            .values(ingest_reservation_id=uuid.uuid4())
        )

    second = services.start(ingest_stall_seconds="2")
    api = Api(second, services.token(healthy_org), healthy_org)
    failed = api.wait_until(ids[healthy_org], "error", timeout=STALL_NOTICED_WITHIN)
    assert failed["error"] == "stalled"
