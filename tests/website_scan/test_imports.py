"""websiteScan.importPages over REST and RPC: pages of a seeded snapshot become knowledge
documents (source website_scan, file type url) that the documents' own workflow ingests to
ready and documents.list finds by source and type; a page imported before is `unchanged` or a
new version; pages skipped for their status, their missing content, retention and quota (the
others go on); the idempotency key; the roles; and another organization's snapshot, a page of
another snapshot and an unfinished snapshot, all 404."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from contentplatform.config import Settings
from contentplatform.kit.db import Database
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.models import CrawlPage, CrawlSnapshot
from tests.conftest import Run
from tests.documents.support import Docs, hold_all_but, reservations
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.seed import Seeded, crawled, seed_snapshot
from tests.website_scan.support import Scanner

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

ABOUT = "# About the shop\n\nWe forge garden tools by hand in **Bristol**. Each trowel is tested."
TROWEL = "A forged trowel with an ash handle. It digs through clay without bending."


def seed(run: Run, scanner: Scanner, config_id: str, pages: list[PageRecord]) -> Seeded:
    seeded: Seeded = run(
        lambda db: seed_snapshot(db, scanner.tenant_id, uuid.UUID(config_id), pages)
    )
    return seeded


def import_pages(
    scanner: Scanner,
    snapshot_id: uuid.UUID | str,
    page_ids: list[Any],
    role: str = "editor",
    **more: Any,
) -> httpx.Response:
    data = {"id": str(snapshot_id), "pageIds": [str(page_id) for page_id in page_ids], **more}
    return scanner.request("websiteScan.importPages", data, role=role)


def imported(scanner: Scanner, snapshot_id: uuid.UUID | str, page_ids: list[Any], **more: Any):
    response = import_pages(scanner, snapshot_id, page_ids, **more)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def page_documents(run: Run, snapshot_id: uuid.UUID) -> dict[str, uuid.UUID | None]:
    """The document each page of the snapshot was imported as (None: not imported), by URL."""

    async def read(db: Database) -> dict[str, uuid.UUID | None]:
        async with db.unit_of_work() as session:
            rows = await session.execute(
                select(CrawlPage.url, CrawlPage.document_id).where(
                    CrawlPage.snapshot_id == snapshot_id
                )
            )
            return {url: document_id for url, document_id in rows.tuples()}

    result: dict[str, uuid.UUID | None] = run(read)
    return result


@pytest.mark.own_org
def test_pages_become_documents_ingested_to_ready_and_listed_by_source_and_type(
    scanner: Scanner, run: Run, settings: Settings
) -> None:
    config = scanner.config()
    base = config["start_url"].rstrip("/")
    seeded = seed(
        run,
        scanner,
        config["id"],
        [
            crawled(f"{base}/about", title="About us | Green Thumb", text=ABOUT, language="en-GB"),
            crawled(f"{base}/products/trowel", title=None, text=TROWEL),
            crawled(f"{base}/gone", status=404),
            crawled(f"{base}/down", status=None, error="timeout"),
            crawled(f"{base}/blank", text=""),
        ],
    )
    ids = seeded.page_ids
    about, trowel = ids[f"{base}/about"], ids[f"{base}/products/trowel"]
    knowledge = {"tags": ["website", " shop ", "website"], "description": "From our site"}
    wanted = [about, trowel, ids[f"{base}/gone"], ids[f"{base}/down"], ids[f"{base}/blank"]]
    body = imported(scanner, seeded.snapshot_id, [*wanted, about], knowledge=knowledge)

    assert set(body) == {"imported", "unchanged", "skipped"}
    assert [entry["page_id"] for entry in body["imported"]] == [str(about), str(trowel)]
    assert all(entry["document_version"] == 1 for entry in body["imported"])
    assert body["unchanged"] == []
    assert body["skipped"] == [
        {"page_id": str(ids[f"{base}/gone"]), "reason": "not_2xx"},
        {"page_id": str(ids[f"{base}/down"]), "reason": "not_2xx"},
        {"page_id": str(ids[f"{base}/blank"]), "reason": "empty"},
    ]

    docs = Docs.of(scanner)
    about_id, trowel_id = (entry["document_id"] for entry in body["imported"])
    ready = {document_id: docs.wait(document_id) for document_id in (about_id, trowel_id)}
    assert {document["status"] for document in ready.values()} == {"ready"}, ready
    first = ready[about_id]
    assert (first["source"], first["file_type"], first["filename"]) == (
        "website_scan",
        "url",
        "About us | Green Thumb",
    )
    assert first["storage_path"] == f"{scanner.org}/website-scan/{seeded.snapshot_id}/{about}.md"
    metadata = first["source_metadata"]
    assert (metadata["url"], metadata["snapshot_id"], metadata["page_id"]) == (
        f"{base}/about",
        str(seeded.snapshot_id),
        str(about),
    )
    assert first["knowledge"] == {
        "isPrimary": False,
        "description": "From our site",
        "tags": ["website", "shop"],
        "language": "en-GB",  # the page's, as none was given
    }
    assert first["chunk_count"] >= 1
    # No title: named after the URL, without its scheme and slashes.
    assert ready[trowel_id]["filename"] == f"{base.split('://', 1)[1]}/products/trowel".replace(
        "/", " \u203a "
    )
    content = docs.ok("documents.getContent", {"id": about_id}, role="member")
    assert "We forge garden tools by hand" in content["content"]

    listed = docs.list(source="website_scan", fileType="url")
    assert {document["id"] for document in listed["data"]} == {about_id, trowel_id}
    assert docs.list(source="upload")["total"] == 0
    assert docs.list(fileType="pdf")["total"] == 0
    # The pages remember their documents.
    assert page_documents(run, seeded.snapshot_id) == {
        f"{base}/about": uuid.UUID(about_id),
        f"{base}/products/trowel": uuid.UUID(trowel_id),
        f"{base}/gone": None,
        f"{base}/down": None,
        f"{base}/blank": None,
    }
    # One documents.ingest hold per imported page, committed once it was ingested.
    holds = reservations(settings, scanner.tenant_id)
    assert [status for _, status in holds] == ["committed", "committed"], holds


@pytest.mark.own_org
def test_a_page_imported_again_is_unchanged_or_a_new_version_of_its_document(
    scanner: Scanner, run: Run
) -> None:
    config = scanner.config()
    url = config["start_url"] + "care"
    first = seed(run, scanner, config["id"], [crawled(url, title="Care", text=TROWEL)])
    made = imported(scanner, first.snapshot_id, [first.page_ids[url]])["imported"][0]
    docs = Docs.of(scanner)
    assert docs.wait(made["document_id"])["status"] == "ready"

    # The same content in a later snapshot: unchanged, and the page points at the document.
    same = seed(run, scanner, config["id"], [crawled(url, title="Care (new)", text=TROWEL)])
    body = imported(scanner, same.snapshot_id, [same.page_ids[url]])
    assert body == {
        "imported": [],
        "unchanged": [{"page_id": str(same.page_ids[url]), "document_id": made["document_id"]}],
        "skipped": [],
    }
    assert page_documents(run, same.snapshot_id)[url] == uuid.UUID(made["document_id"])

    # Changed content: the next version of the same document, ingested again.
    changed = seed(run, scanner, config["id"], [crawled(url, title="Care", text=ABOUT)])
    body = imported(scanner, changed.snapshot_id, [changed.page_ids[url]])
    assert body["imported"] == [
        {
            "page_id": str(changed.page_ids[url]),
            "document_id": made["document_id"],
            "document_version": 2,
        }
    ]
    document = docs.wait(made["document_id"])
    assert (document["status"], document["document_version"]) == ("ready", 2)
    assert document["storage_path"].endswith(f"/{changed.snapshot_id}/{changed.page_ids[url]}.md")
    content = docs.ok("documents.getContent", {"id": made["document_id"]}, role="member")
    assert "We forge garden tools" in content["content"]
    assert "ash handle" not in content["content"]
    assert docs.list(source="website_scan")["total"] == 1


@pytest.mark.own_org
def test_pages_the_credits_do_not_cover_are_skipped_for_quota_and_the_rest_go_on(
    scanner: Scanner, run: Run, settings: Settings
) -> None:
    config = scanner.config()
    base = config["start_url"]
    pages = [crawled(f"{base}p{n}", text=f"Page {n} talks about soil.") for n in range(3)]
    seeded = seed(run, scanner, config["id"], [*pages, crawled(f"{base}gone", status=500)])
    hold_all_but(settings, scanner.tenant_id, left=1)
    wanted = [seeded.page_ids[f"{base}p{n}"] for n in range(3)] + [seeded.page_ids[f"{base}gone"]]
    body = imported(scanner, seeded.snapshot_id, wanted)
    assert [entry["page_id"] for entry in body["imported"]] == [str(wanted[0])]
    assert body["skipped"] == [
        {"page_id": str(wanted[1]), "reason": "quota"},
        {"page_id": str(wanted[2]), "reason": "quota"},
        {"page_id": str(wanted[3]), "reason": "not_2xx"},
    ]
    assert len(reservations(settings, scanner.tenant_id)) == 1
    docs = Docs.of(scanner)
    assert docs.wait(body["imported"][0]["document_id"])["status"] == "ready"
    assert docs.list(source="website_scan")["total"] == 1
    assert page_documents(run, seeded.snapshot_id)[f"{base}p1"] is None


@pytest.mark.own_org
def test_a_purged_snapshot_skips_its_pages_as_content_purged(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    url = config["start_url"] + "old"
    seeded = seed(run, scanner, config["id"], [crawled(url)])

    async def purge(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(CrawlSnapshot)
                .where(CrawlSnapshot.id == seeded.snapshot_id)
                .values(content_purged=True)
            )
            await session.execute(
                update(CrawlPage)
                .where(CrawlPage.snapshot_id == seeded.snapshot_id)
                .values(content=None)
            )

    run(purge)
    body = imported(scanner, seeded.snapshot_id, [seeded.page_ids[url]])
    assert body["skipped"] == [{"page_id": str(seeded.page_ids[url]), "reason": "content_purged"}]
    assert Docs.of(scanner).list(source="website_scan")["total"] == 0


@pytest.mark.own_org
def test_the_same_idempotency_key_answers_the_same_and_imports_nothing_more(
    scanner: Scanner, run: Run, settings: Settings
) -> None:
    config = scanner.config()
    base = config["start_url"]
    seeded = seed(
        run,
        scanner,
        config["id"],
        [crawled(f"{base}a", text=TROWEL), crawled(f"{base}b", status=404)],
    )
    wanted = [seeded.page_ids[f"{base}a"], seeded.page_ids[f"{base}b"]]
    key = {"idempotencyKey": f"import-{uuid.uuid4().hex[:12]}"}
    first = imported(scanner, seeded.snapshot_id, wanted, **key)
    assert len(first["imported"]) == 1 and len(first["skipped"]) == 1
    again = imported(scanner, seeded.snapshot_id, wanted, **key)
    assert again == first
    assert len(reservations(settings, scanner.tenant_id)) == 1
    docs = Docs.of(scanner)
    assert docs.wait(first["imported"][0]["document_id"])["status"] == "ready"
    assert imported(scanner, seeded.snapshot_id, wanted, **key) == first
    # Another key imports afresh: the page is there already, unchanged.
    fresh = imported(scanner, seeded.snapshot_id, wanted, idempotencyKey="another-key-123")
    assert fresh["unchanged"] == [
        {"page_id": str(wanted[0]), "document_id": first["imported"][0]["document_id"]}
    ]
    assert docs.list(source="website_scan")["total"] == 1
    assert len(reservations(settings, scanner.tenant_id)) == 1
    # The key of another request: pages that leave out the one its import made.
    reused = import_pages(scanner, seeded.snapshot_id, [wanted[1]], **key)
    assert "other pages" in problem(reused, 409, "CONFLICT")["detail"]
    assert docs.list(source="website_scan")["total"] == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pageIds": []}, "pageIds"),
        ({"pageIds": [str(uuid.uuid4()) for _ in range(101)]}, "pageIds"),
        ({"pageIds": ["not-a-uuid"]}, "pageIds"),
        ({"idempotencyKey": "short"}, "idempotencyKey"),
        ({"knowledge": {"isPrimary": True}}, "knowledge"),
        ({"knowledge": {"language": "x"}}, "knowledge"),
    ],
)
def test_bad_input_is_400_naming_the_field(
    scanner: Scanner, fields: dict[str, Any], field: str
) -> None:
    data = {"id": str(uuid.uuid4()), "pageIds": [str(uuid.uuid4())], **fields}
    body = problem(scanner.request("websiteScan.importPages", data), 400, "BAD_REQUEST")
    assert any(error["path"].startswith(field) for error in body["errors"]), body


def test_a_member_may_not_import(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    url = config["start_url"] + "x"
    seeded = seed(run, scanner, config["id"], [crawled(url)])
    problem(
        import_pages(scanner, seeded.snapshot_id, [seeded.page_ids[url]], role="member"),
        403,
        "FORBIDDEN",
    )
    assert Docs.of(scanner).list(source="website_scan")["total"] == 0


def test_unknown_foreign_and_unfinished_snapshots_and_pages_are_404(
    scanner: Scanner, other: Scanner, run: Run
) -> None:
    config = scanner.config()
    url = config["start_url"] + "x"
    seeded = seed(run, scanner, config["id"], [crawled(url)])
    elsewhere = seed(run, scanner, config["id"], [crawled(url)])
    page = seeded.page_ids[url]
    # Another organization's snapshot.
    body = problem(import_pages(other, seeded.snapshot_id, [page], role="admin"), 404, "NOT_FOUND")
    assert "snapshot" in body["detail"]
    problem(import_pages(scanner, uuid.uuid4(), [page]), 404, "NOT_FOUND")
    # A page of another snapshot, or none at all.
    body = problem(
        import_pages(scanner, seeded.snapshot_id, [page, elsewhere.page_ids[url]]), 404, "NOT_FOUND"
    )
    assert str(elsewhere.page_ids[url]) in body["detail"]
    problem(import_pages(scanner, seeded.snapshot_id, [uuid.uuid4()]), 404, "NOT_FOUND")

    async def unfinish(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(CrawlSnapshot)
                .where(CrawlSnapshot.id == elsewhere.snapshot_id)
                .values(finished_at=None)
            )

    run(unfinish)
    problem(
        import_pages(scanner, elsewhere.snapshot_id, [elsewhere.page_ids[url]]), 404, "NOT_FOUND"
    )
    assert Docs.of(scanner).list(source="website_scan")["total"] == 0
