"""websiteScan.listSnapshots, getSnapshot, listPages, getPage and getPageContent over REST and
RPC, on snapshots written straight to the database as a finished crawl leaves them (seed.py):
totals and the previous snapshot, only finished snapshots seen, the page filters, sorts and
bounds, links with the status their target answered, content in three formats (cut at 250,000
bytes, sanitized, a reason when there is none), 410 once retention purged it, the role, and a
second organization that sees none of it. Diffs and broken links: test_snapshot_diffs.py."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.kit.db import Database, utcnow
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.crawls import repository
from contentplatform.website_scan.models import CrawlPage, CrawlRun, CrawlSnapshot
from tests.conftest import Run
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.seed import Seeded, crawled, seed_snapshot
from tests.website_scan.support import Scanner

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

SITE = "https://shop.example"

SNAPSHOT_FIELDS = {
    "id",
    "config_id",
    "crawl_run_id",
    "partial",
    "page_count",
    "status_counts",
    "broken_link_count",
    "total_words",
    "content_purged",
    "created_at",
}
SUMMARY_FIELDS = {
    "id",
    "url",
    "status_code",
    "title",
    "meta_description",
    "canonical_url",
    "word_count",
    "depth",
    "content_hash",
    "document_id",
}
PAGE_FIELDS = {
    "id",
    "snapshot_id",
    "url",
    "final_url",
    "status_code",
    "redirect_chain",
    "content_type",
    "language",
    "title",
    "meta_description",
    "canonical_url",
    "robots_meta",
    "x_robots_tag",
    "noindex",
    "hreflang",
    "json_ld",
    "headings",
    "links",
    "word_count",
    "content_hash",
    "depth",
    "load_ms",
    "ttfb_ms",
    "audit",
    "sitemaps",
    "size_bytes",
    "fetched_at",
    "error",
    "document_id",
}


def seed(run: Run, org: Scanner, config_id: str, pages: list[PageRecord], **fields: Any) -> Seeded:
    """A finished snapshot of the config holding `pages` (seed.py's seed_snapshot)."""

    async def scenario(db: Database) -> Seeded:
        return await seed_snapshot(db, org.tenant_id, uuid.UUID(config_id), pages, **fields)

    seeded: Seeded = run(scenario)
    return seeded


def hours_ago(hours: float) -> Any:
    return utcnow() - timedelta(hours=hours)


def shop_pages() -> list[PageRecord]:
    """Two pages that answered, a 404 and one that timed out."""
    return [
        crawled(f"{SITE}/", text="Welcome to the garden shop", depth=0),
        crawled(f"{SITE}/a", text="Compost and soil for the garden beds"),
        crawled(f"{SITE}/gone", status=404),
        crawled(f"{SITE}/down", status=None, error="timeout"),
    ]


def unfinished(run: Run, org: Scanner, config_id: str) -> tuple[str, str]:
    """A snapshot not finished (as while its crawl runs) with one page: (snapshot id, page
    id). Its run is marked completed, so the reconciler leaves it alone: what hides the
    snapshot is its own `finished_at`."""

    async def scenario(db: Database) -> tuple[str, str]:
        now = utcnow()
        run_id, snapshot_id = uuid.uuid4(), uuid.uuid4()
        async with db.unit_of_work() as session:
            session.add(
                CrawlRun(
                    id=run_id,
                    tenant_id=org.tenant_id,
                    config_id=uuid.UUID(config_id),
                    status="completed",
                    trigger="manual",
                    settings={},
                    snapshot_id=snapshot_id,
                    started_at=now,
                )
            )
            await session.flush()
            session.add(
                CrawlSnapshot(
                    id=snapshot_id,
                    tenant_id=org.tenant_id,
                    config_id=uuid.UUID(config_id),
                    crawl_run_id=run_id,
                )
            )
            await session.flush()
            page = crawled(f"{SITE}/in-progress")
            await repository.add_pages(session, org.tenant_id, snapshot_id, [page], now)
        async with db.unit_of_work() as session:
            page_id = await session.scalar(
                select(CrawlPage.id).where(CrawlPage.snapshot_id == snapshot_id)
            )
        return str(snapshot_id), str(page_id)

    result: tuple[str, str] = run(scenario)
    return result


def listed(org: Scanner, **query: Any) -> dict[str, Any]:
    return org.ok("websiteScan.listSnapshots", query, role="member")


def pages_of(org: Scanner, snapshot_id: uuid.UUID | str, **query: Any) -> dict[str, Any]:
    return org.ok("websiteScan.listPages", {"id": str(snapshot_id), **query}, role="member")


def content_of(org: Scanner, page_id: uuid.UUID | str, **query: Any) -> dict[str, Any]:
    return org.ok("websiteScan.getPageContent", {"id": str(page_id), **query}, role="member")


# --- snapshots --------------------------------------------------------------------------------


@pytest.mark.own_org
def test_snapshots_are_listed_newest_first_with_their_totals(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    second = scanner.config()
    broken = [
        {
            "target_url": f"{SITE}/gone",
            "status_code": 404,
            "error": None,
            "internal": True,
            "occurrences": [{"source_url": f"{SITE}/", "link_text": "Old"}],
        }
    ]
    first = seed(run, scanner, config["id"], shop_pages(), broken=broken, created_at=hours_ago(3))
    partial = seed(
        run, scanner, config["id"], shop_pages()[:1], partial=True, created_at=hours_ago(2)
    )
    elsewhere = seed(run, scanner, second["id"], shop_pages()[:2], created_at=hours_ago(1))
    running, _ = unfinished(run, scanner, config["id"])

    every = listed(scanner)
    assert (every["total"], every["page"], every["limit"]) == (3, 1, 20)
    ids = [s["id"] for s in every["data"]]
    assert ids == [str(elsewhere.snapshot_id), str(partial.snapshot_id), str(first.snapshot_id)]
    assert running not in ids
    oldest = every["data"][2]
    assert set(oldest) == SNAPSHOT_FIELDS
    assert oldest["config_id"] == config["id"]
    assert oldest["crawl_run_id"] == str(first.run_id)
    assert (oldest["partial"], oldest["content_purged"]) == (False, False)
    assert oldest["page_count"] == 4
    assert oldest["status_counts"] == {"2xx": 2, "3xx": 0, "4xx": 1, "5xx": 0, "error": 1}
    assert oldest["broken_link_count"] == 1
    assert oldest["total_words"] == 5 + 7
    assert every["data"][1]["partial"] is True

    mine = listed(scanner, configId=config["id"])
    assert [s["id"] for s in mine["data"]] == [str(partial.snapshot_id), str(first.snapshot_id)]
    complete = listed(scanner, configId=config["id"], includePartial=False)
    assert [s["id"] for s in complete["data"]] == [str(first.snapshot_id)]
    second_page = listed(scanner, page=2, limit=2)
    assert (second_page["total"], [s["id"] for s in second_page["data"]]) == (
        3,
        [str(first.snapshot_id)],
    )
    assert listed(scanner, page=3, limit=2)["data"] == []

    detail = scanner.ok("websiteScan.getSnapshot", {"id": oldest["id"]}, role="member")
    assert detail == {**oldest, "previous_snapshot_id": None}


def test_a_snapshot_names_the_previous_complete_one(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    unrelated = scanner.config()
    first = seed(run, scanner, config["id"], shop_pages(), created_at=hours_ago(4))
    seed(run, scanner, unrelated["id"], shop_pages(), created_at=hours_ago(3))
    partial = seed(run, scanner, config["id"], shop_pages(), partial=True, created_at=hours_ago(2))
    latest = seed(run, scanner, config["id"], shop_pages(), created_at=hours_ago(1))

    def previous(seeded: Seeded) -> str | None:
        snapshot = scanner.ok(
            "websiteScan.getSnapshot", {"id": str(seeded.snapshot_id)}, role="member"
        )
        value: str | None = snapshot["previous_snapshot_id"]
        return value

    # The partial one between them is skipped, the other config's never counts.
    assert previous(latest) == str(first.snapshot_id)
    assert previous(partial) == str(first.snapshot_id)
    assert previous(first) is None


@pytest.mark.own_org
def test_a_snapshot_is_seen_only_once_its_run_has_finished(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    snapshot_id, page_id = unfinished(run, scanner, config["id"])
    assert listed(scanner)["total"] == 0
    for operation, named in (
        ("websiteScan.getSnapshot", snapshot_id),
        ("websiteScan.listPages", snapshot_id),
        ("websiteScan.diffSnapshots", snapshot_id),
        ("websiteScan.getBrokenLinks", snapshot_id),
        ("websiteScan.getPage", page_id),
        ("websiteScan.getPageContent", page_id),
    ):
        response = scanner.request(operation, {"id": named}, role="member")
        assert named in problem(response, 404, "NOT_FOUND")["detail"], operation


# --- pages ------------------------------------------------------------------------------------


def test_pages_are_searched_filtered_sorted_and_paged(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    pages = [
        crawled(f"{SITE}/", title="Garden Shop", text="one two three", depth=0),
        crawled(f"{SITE}/blog/compost", title="All about COMPOST", text="w " * 40, depth=2),
        crawled(f"{SITE}/moved", status=301, depth=1),
        crawled(f"{SITE}/missing", status=404, depth=1),
        crawled(f"{SITE}/broken", status=503, depth=2),
        crawled(f"{SITE}/slow", status=None, error="timeout", depth=3),
        crawled(f"{SITE}/shop/soil", title="Soil 100%", text="w " * 10, depth=1),
    ]
    seeded = seed(run, scanner, config["id"], pages)
    ids = seeded.page_ids
    document_id = uuid.uuid4()

    async def imported(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(CrawlPage)
                .where(CrawlPage.id == ids[f"{SITE}/shop/soil"])
                .values(document_id=document_id)
            )

    run(imported)

    def urls(**query: Any) -> list[str]:
        return [
            p["url"].removeprefix(SITE)
            for p in pages_of(scanner, seeded.snapshot_id, **query)["data"]
        ]

    every = pages_of(scanner, seeded.snapshot_id)
    assert (every["total"], every["page"], every["limit"]) == (7, 1, 20)
    assert urls() == ["/", "/blog/compost", "/broken", "/missing", "/moved", "/shop/soil", "/slow"]
    soil = next(p for p in every["data"] if p["url"] == f"{SITE}/shop/soil")
    assert set(soil) == SUMMARY_FIELDS
    assert soil["id"] == str(ids[f"{SITE}/shop/soil"])
    assert (soil["title"], soil["word_count"], soil["depth"]) == ("Soil 100%", 10, 1)
    assert soil["document_id"] == str(document_id)
    assert soil["status_code"] == 200 and len(soil["content_hash"]) == 64

    assert urls(search="compost") == ["/blog/compost"]
    assert urls(search="garden shop") == ["/"]  # the title, any case
    assert urls(search="100%") == ["/shop/soil"]  # % is a character, not a wildcard
    assert urls(search="nothing-like-it") == []
    assert urls(statusClass="2xx") == ["/", "/blog/compost", "/shop/soil"]
    assert urls(statusClass="3xx") == ["/moved"]
    assert urls(statusClass="4xx") == ["/missing"]
    assert urls(statusClass="5xx") == ["/broken"]
    assert urls(statusClass="error") == ["/slow"]
    assert urls(imported=True) == ["/shop/soil"]
    assert "/shop/soil" not in urls(imported=False) and len(urls(imported=False)) == 6
    assert urls(minWords=10) == ["/blog/compost", "/shop/soil"]
    assert urls(minWords=11) == ["/blog/compost"]
    assert urls(sortBy="word_count", sortOrder="desc")[:3] == ["/blog/compost", "/shop/soil", "/"]
    assert urls(sortBy="depth", sortOrder="desc")[:3] == ["/slow", "/blog/compost", "/broken"]
    # Pages without a status come last either way.
    by_status = urls(sortBy="status_code")
    assert by_status[-1] == "/slow" and by_status[-2:] == ["/broken", "/slow"]
    assert urls(sortBy="status_code", sortOrder="desc")[:1] == ["/broken"]
    assert urls(sortBy="status_code", sortOrder="desc")[-1] == "/slow"
    second = pages_of(scanner, seeded.snapshot_id, page=2, limit=3)
    assert (second["total"], [p["url"] for p in second["data"]]) == (
        7,
        [f"{SITE}/missing", f"{SITE}/moved", f"{SITE}/shop/soil"],
    )


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ({"limit": 101}, "limit"),
        ({"limit": 0}, "limit"),
        ({"page": 0}, "page"),
        ({"search": "s" * 256}, "search"),
        ({"statusClass": "6xx"}, "statusClass"),
        ({"sortBy": "title"}, "sortBy"),
        ({"sortOrder": "up"}, "sortOrder"),
        ({"minWords": -1}, "minWords"),
        ({"id": "not-a-uuid"}, "id"),
    ],
)
def test_a_page_list_out_of_bounds_is_400_naming_it(
    scanner: Scanner, run: Run, query: dict[str, Any], path: str
) -> None:
    config = scanner.config()
    seeded = seed(run, scanner, config["id"], shop_pages())
    data = {"id": str(seeded.snapshot_id), **query}
    body = problem(
        scanner.request("websiteScan.listPages", data, role="member"), 400, "BAD_REQUEST"
    )
    assert path in {error["path"] for error in body["errors"]}, body


@pytest.mark.parametrize(
    ("operation", "query", "path"),
    [
        ("websiteScan.listSnapshots", {"limit": 101}, "limit"),
        ("websiteScan.listSnapshots", {"page": 0}, "page"),
        ("websiteScan.listSnapshots", {"configId": "shop"}, "configId"),
        ("websiteScan.getPageContent", {"format": "pdf"}, "format"),
        ("websiteScan.diffSnapshots", {"change": "moved"}, "change"),
        ("websiteScan.diffSnapshots", {"limit": 101}, "limit"),
        ("websiteScan.diffSnapshots", {"baseSnapshotId": "previous"}, "baseSnapshotId"),
        ("websiteScan.getBrokenLinks", {"scope": "everything"}, "scope"),
        ("websiteScan.getBrokenLinks", {"page": 0}, "page"),
    ],
)
def test_other_inputs_out_of_bounds_are_400_naming_them(
    scanner: Scanner, operation: str, query: dict[str, Any], path: str
) -> None:
    data = {"id": str(uuid.uuid4()), **query} if operation != "websiteScan.listSnapshots" else query
    body = problem(scanner.request(operation, data, role="member"), 400, "BAD_REQUEST")
    assert path in {error["path"] for error in body["errors"]}, body


def test_a_page_shows_its_headings_and_links_with_their_status(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    home = crawled(
        f"{SITE}/",
        depth=0,
        headings=[
            ("h1", "Garden shop"),
            ("h2", "Soil"),
            ("h3", "Loam"),
            ("h2", "Tools"),
            ("h5", "Small print"),
        ],
        links=[
            (f"{SITE}/a", "Compost", True),
            (f"{SITE}/gone", "Old offer", True),
            (f"{SITE}/never-crawled", "Deep", True),
            ("https://elsewhere.example/dead", "Partner", False),
            ("https://elsewhere.example/fine", "", False),
        ],
        meta_description="Everything for the garden",
        canonical_url=f"{SITE}/",
        language="en",
        hreflang={"de": f"{SITE}/de/"},
        json_ld=[{"@type": "Store"}],
        redirect_chain=[f"{SITE}/index.html"],
        load_ms=120,
        size=2048,
    )
    pages = [home, crawled(f"{SITE}/a"), crawled(f"{SITE}/gone", status=404)]
    broken = [
        {
            "target_url": "https://elsewhere.example/dead",
            "status_code": 410,
            "error": None,
            "internal": False,
            "occurrences": [{"source_url": f"{SITE}/", "link_text": "Partner"}],
        }
    ]
    seeded = seed(run, scanner, config["id"], pages, broken=broken)
    page = scanner.ok(
        "websiteScan.getPage", {"id": str(seeded.page_ids[f"{SITE}/"])}, role="member"
    )
    assert set(page) == PAGE_FIELDS
    assert page["snapshot_id"] == str(seeded.snapshot_id)
    assert (page["url"], page["status_code"], page["depth"]) == (f"{SITE}/", 200, 0)
    assert page["redirect_chain"] == [f"{SITE}/index.html"]
    assert (page["meta_description"], page["language"]) == ("Everything for the garden", "en")
    assert page["hreflang"] == {"de": f"{SITE}/de/"} and page["json_ld"] == [{"@type": "Store"}]
    assert (page["load_ms"], page["size_bytes"], page["error"]) == (120, 2048, None)
    # Recorded as a page crawled before its audit facts were kept: null, never empty.
    assert (page["ttfb_ms"], page["audit"], page["sitemaps"]) == (None, None, None)
    assert page["headings"] == {
        "h1": ["Garden shop"],
        "h2": ["Soil", "Tools"],
        "h3": ["Loam"],
        "h4": [],
        "h5": ["Small print"],
        "h6": [],
    }
    assert page["links"] == {
        "internal": [
            {"url": f"{SITE}/a", "text": "Compost", "status_code": 200},
            {"url": f"{SITE}/gone", "text": "Old offer", "status_code": 404},
            {"url": f"{SITE}/never-crawled", "text": "Deep", "status_code": None},
        ],
        "external": [
            {"url": "https://elsewhere.example/dead", "text": "Partner", "status_code": 410},
            {"url": "https://elsewhere.example/fine", "text": "", "status_code": None},
        ],
        "internal_truncated": False,
        "external_truncated": False,
    }
    assert "content" not in page

    failed = scanner.ok(
        "websiteScan.getPage", {"id": str(seeded.page_ids[f"{SITE}/gone"])}, role="member"
    )
    assert (failed["status_code"], failed["title"], failed["content_hash"]) == (404, None, None)


def test_a_page_shows_500_links_of_each_kind(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    links = [(f"{SITE}/p/{i}", f"P{i}", True) for i in range(501)]
    links += [(f"https://elsewhere.example/{i}", "", False) for i in range(3)]
    seeded = seed(run, scanner, config["id"], [crawled(f"{SITE}/", links=links)])
    page = scanner.ok(
        "websiteScan.getPage", {"id": str(seeded.page_ids[f"{SITE}/"])}, role="member"
    )
    shown = page["links"]
    assert len(shown["internal"]) == 500 and shown["internal_truncated"] is True
    assert shown["internal"][-1]["url"] == f"{SITE}/p/499"
    assert len(shown["external"]) == 3 and shown["external_truncated"] is False


# --- content ----------------------------------------------------------------------------------

MARKDOWN = (
    "# Compost\n\nRich **soil** for <script>alert(1)</script> beds, "
    "[see more](javascript:alert(1)) or [the shop](https://shop.example/).\n\n"
    "- leaves\n- peel\n"
)


def test_a_pages_content_in_each_format(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    seeded = seed(run, scanner, config["id"], [crawled(f"{SITE}/compost", text=MARKDOWN)])
    page_id = seeded.page_ids[f"{SITE}/compost"]

    markdown = content_of(scanner, page_id)
    assert markdown == {
        "id": str(page_id),
        "url": f"{SITE}/compost",
        "format": "markdown",
        "content": MARKDOWN,
        "truncated": False,
        "content_error": None,
    }

    text = content_of(scanner, page_id, format="text")
    assert text["format"] == "text" and text["content_error"] is None
    assert text["content"].startswith("Compost\n\nRich soil for ")
    assert "leaves\npeel" in text["content"]
    assert "**" not in text["content"] and "# " not in text["content"]

    html = content_of(scanner, page_id, format="html")["content"]
    assert "<h1>Compost</h1>" in html and "<strong>soil</strong>" in html
    assert "<li>leaves</li>" in html
    assert '<a href="https://shop.example/"' in html
    # Markup in the markdown stays text, and a javascript: link is no link.
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="javascript:' not in html and "<a " in html and html.count("<a ") == 1


def test_long_content_is_cut_at_250000_bytes(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    # Two bytes a character: the cut may not split one.
    long = "é" * 130_001
    seeded = seed(run, scanner, config["id"], [crawled(f"{SITE}/long", text=long)])
    page_id = seeded.page_ids[f"{SITE}/long"]
    for format in ("markdown", "text", "html"):
        answer = content_of(scanner, page_id, format=format)
        encoded = answer["content"].encode()
        assert answer["truncated"] is True, format
        assert 249_990 <= len(encoded) <= 250_000, (format, len(encoded))
        assert "\ufffd" not in answer["content"]
    short = seed(run, scanner, config["id"], [crawled(f"{SITE}/short", text="é" * 1000)])
    answer = content_of(scanner, short.page_ids[f"{SITE}/short"], format="text")
    assert (answer["content"], answer["truncated"]) == ("é" * 1000, False)


def test_a_page_without_content_says_why(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    pages = [
        crawled(f"{SITE}/missing", status=404),
        crawled(f"{SITE}/slow", status=None, error="timeout"),
        crawled(f"{SITE}/brochure.pdf", text="", content_type="application/pdf"),
        crawled(f"{SITE}/empty", text=""),
    ]
    seeded = seed(run, scanner, config["id"], pages)
    reasons = {}
    for url, page_id in seeded.page_ids.items():
        for format in ("markdown", "html"):
            answer = content_of(scanner, page_id, format=format)
            assert (answer["content"], answer["truncated"]) == ("", False)
            reasons[url.removeprefix(SITE)] = answer["content_error"]
    assert "404" in reasons["/missing"]
    assert "timeout" in reasons["/slow"]
    assert "application/pdf" in reasons["/brochure.pdf"]
    assert "No main text" in reasons["/empty"]


@pytest.mark.own_org
def test_purged_content_is_410_and_the_metadata_remains(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    old = seed(run, scanner, config["id"], shop_pages(), created_at=hours_ago(2))
    new = seed(run, scanner, config["id"], shop_pages(), created_at=hours_ago(1))

    async def purge(db: Database) -> int:
        async with db.unit_of_work() as session:
            return await repository.purge_old_content(
                session, scanner.tenant_id, uuid.UUID(config["id"]), keep=1
            )

    assert run(purge) == 1
    old_page = old.page_ids[f"{SITE}/a"]
    body = problem(
        scanner.request("websiteScan.getPageContent", {"id": str(old_page)}, role="member"),
        410,
        "NOT_FOUND",
    )
    assert "retention" in body["detail"]
    # Even a page that never had content: the whole snapshot's is gone.
    missing = {"id": str(old.page_ids[f"{SITE}/gone"])}
    problem(scanner.request("websiteScan.getPageContent", missing, role="member"), 410, "NOT_FOUND")
    page = scanner.ok("websiteScan.getPage", {"id": str(old_page)}, role="member")
    assert page["title"] == "A page" and page["word_count"] == 7
    purged = scanner.ok("websiteScan.getSnapshot", {"id": str(old.snapshot_id)}, role="member")
    assert purged["content_purged"] is True and purged["page_count"] == 4
    assert [s["content_purged"] for s in listed(scanner)["data"]] == [False, True]
    assert content_of(scanner, new.page_ids[f"{SITE}/a"])["content"].startswith("Compost")


# --- who may read -----------------------------------------------------------------------------


def every_operation(snapshot_id: str, page_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("websiteScan.listSnapshots", {}),
        ("websiteScan.getSnapshot", {"id": snapshot_id}),
        ("websiteScan.listPages", {"id": snapshot_id}),
        ("websiteScan.getPage", {"id": page_id}),
        ("websiteScan.getPageContent", {"id": page_id}),
        ("websiteScan.diffSnapshots", {"id": snapshot_id}),
        ("websiteScan.getBrokenLinks", {"id": snapshot_id}),
    ]


def test_a_member_reads_and_a_stranger_is_refused(
    scanner: Scanner, other: Scanner, run: Run
) -> None:
    config = scanner.config()
    seeded = seed(run, scanner, config["id"], shop_pages())
    operations = every_operation(str(seeded.snapshot_id), str(seeded.page_ids[f"{SITE}/a"]))
    for operation, data in operations:
        assert scanner.request(operation, data, role="member").status_code == 200, operation
        problem(scanner.call(operation, data, org=scanner.org), 401, "UNAUTHORIZED")
        # Another organization's member naming this organization.
        stranger = other.tokens["member"]
        problem(scanner.call(operation, data, token=stranger, org=scanner.org), 403, "FORBIDDEN")


@pytest.mark.own_org
def test_another_organization_sees_none_of_it(scanner: Scanner, other: Scanner, run: Run) -> None:
    config = scanner.config()
    seeded = seed(run, scanner, config["id"], shop_pages())
    operations = every_operation(str(seeded.snapshot_id), str(seeded.page_ids[f"{SITE}/a"]))
    for operation, data in operations[1:]:
        body = problem(other.request(operation, data, role="admin"), 404, "NOT_FOUND")
        assert data["id"] in body["detail"], operation
        unknown = {"id": str(uuid.uuid4())}
        problem(scanner.request(operation, unknown, role="member"), 404, "NOT_FOUND")
    assert listed(other)["total"] == 0
    assert listed(other, configId=config["id"])["total"] == 0
    # Their own snapshot of the same site is theirs alone.
    theirs = other.config(startUrl=config["start_url"])
    mine_too = seed(run, other, theirs["id"], shop_pages())
    assert [s["id"] for s in listed(other)["data"]] == [str(mine_too.snapshot_id)]
    assert [s["id"] for s in listed(scanner)["data"]] == [str(seeded.snapshot_id)]
