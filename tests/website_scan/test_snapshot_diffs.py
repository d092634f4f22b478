"""websiteScan.diffSnapshots and getBrokenLinks over REST and RPC, on snapshots written straight
to the database (seed.py): pages matched by URL, the fields a change names, the default base
(the previous complete snapshot, never a partial one), no base at all, 400 across configs and
404 across organizations; broken links by scope with the pages that link to them."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from contentplatform.kit.db import Database, utcnow
from contentplatform.website_scan.crawling.pages import PageRecord
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


def seed(run: Run, org: Scanner, config_id: str, pages: list[PageRecord], **fields: Any) -> Seeded:
    async def scenario(db: Database) -> Seeded:
        return await seed_snapshot(db, org.tenant_id, uuid.UUID(config_id), pages, **fields)

    seeded: Seeded = run(scenario)
    return seeded


def hours_ago(hours: float) -> datetime:
    return utcnow() - timedelta(hours=hours)


def diff(org: Scanner, snapshot: Seeded, **query: Any) -> dict[str, Any]:
    data = {"id": str(snapshot.snapshot_id), **query}
    return org.ok("websiteScan.diffSnapshots", data, role="member")


def before() -> list[PageRecord]:
    return [
        crawled(f"{SITE}/", title="Home", text="Welcome"),
        crawled(f"{SITE}/about", title="About us", text="Who we are"),
        crawled(f"{SITE}/compost", text="Compost, the old way"),
        crawled(f"{SITE}/soil", meta_description="Soil", canonical_url=f"{SITE}/soil"),
        crawled(f"{SITE}/tools", headings=[("h1", "Tools")]),
        crawled(f"{SITE}/offer", title="Offer"),
        crawled(f"{SITE}/retired"),
    ]


def after() -> list[PageRecord]:
    return [
        crawled(f"{SITE}/", title="Home", text="Welcome"),  # unchanged
        crawled(f"{SITE}/about", title="About the shop", text="Who we are"),
        crawled(f"{SITE}/compost", text="Compost, the new way"),
        crawled(f"{SITE}/soil", meta_description="Good soil", canonical_url=f"{SITE}/soil/"),
        crawled(f"{SITE}/tools", headings=[("h1", "Tools"), ("h2", "Spades")]),
        crawled(f"{SITE}/offer", status=404),  # gone: no title, no content
        crawled(f"{SITE}/blog"),  # new
    ]


def test_a_diff_names_added_removed_and_changed_pages(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    base = seed(run, scanner, config["id"], before(), created_at=hours_ago(3))
    # A partial snapshot between them is never the default base.
    seed(run, scanner, config["id"], after()[:2], partial=True, created_at=hours_ago(2))
    latest = seed(run, scanner, config["id"], after(), created_at=hours_ago(1))

    found = diff(scanner, latest)
    assert found["base_snapshot_id"] == str(base.snapshot_id)
    assert found["snapshot_id"] == str(latest.snapshot_id)
    assert found["summary"] == {"added": 1, "removed": 1, "changed": 5, "unchanged": 1}
    assert (found["total"], found["page"], found["limit"]) == (7, 1, 20)
    entries = {entry["url"].removeprefix(SITE): entry for entry in found["data"]}
    # By URL.
    assert list(entries) == ["/about", "/blog", "/compost", "/offer", "/retired", "/soil", "/tools"]
    assert {url: (e["change"], e["fields_changed"]) for url, e in entries.items()} == {
        "/about": ("changed", ["title"]),
        "/blog": ("added", []),
        "/compost": ("changed", ["content"]),
        "/offer": ("changed", ["content", "title", "status_code"]),
        "/retired": ("removed", []),
        "/soil": ("changed", ["meta_description", "canonical"]),
        "/tools": ("changed", ["headings"]),
    }
    assert entries["/about"]["page_id"] == str(latest.page_ids[f"{SITE}/about"])
    assert entries["/about"]["base_page_id"] == str(base.page_ids[f"{SITE}/about"])
    assert (entries["/blog"]["base_page_id"], entries["/blog"]["page_id"]) == (
        None,
        str(latest.page_ids[f"{SITE}/blog"]),
    )
    assert (entries["/retired"]["base_page_id"], entries["/retired"]["page_id"]) == (
        str(base.page_ids[f"{SITE}/retired"]),
        None,
    )

    def urls(**query: Any) -> list[str]:
        return [e["url"].removeprefix(SITE) for e in diff(scanner, latest, **query)["data"]]

    assert urls(change="added") == ["/blog"]
    assert urls(change="removed") == ["/retired"]
    assert urls(change="changed") == ["/about", "/compost", "/offer", "/soil", "/tools"]
    narrowed = diff(scanner, latest, change="changed", page=2, limit=2)
    assert narrowed["total"] == 5 and narrowed["summary"] == found["summary"]
    assert [e["url"].removeprefix(SITE) for e in narrowed["data"]] == ["/offer", "/soil"]

    # The other way round, named explicitly: what was added is removed.
    backwards = diff(scanner, base, baseSnapshotId=str(latest.snapshot_id))
    assert backwards["base_snapshot_id"] == str(latest.snapshot_id)
    assert backwards["summary"] == {"added": 1, "removed": 1, "changed": 5, "unchanged": 1}
    assert urls_of(backwards, "added") == ["/retired"]
    assert urls_of(backwards, "removed") == ["/blog"]
    # With itself: nothing changed.
    itself = diff(scanner, latest, baseSnapshotId=str(latest.snapshot_id))
    assert itself["summary"] == {"added": 0, "removed": 0, "changed": 0, "unchanged": 7}
    assert itself["data"] == [] and itself["total"] == 0


def urls_of(found: dict[str, Any], change: str) -> list[str]:
    return [e["url"].removeprefix(SITE) for e in found["data"] if e["change"] == change]


def test_without_a_previous_snapshot_every_page_is_added(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    # Only a partial one came before: no base.
    seed(run, scanner, config["id"], before(), partial=True, created_at=hours_ago(2))
    first = seed(run, scanner, config["id"], after(), created_at=hours_ago(1))
    found = diff(scanner, first)
    assert found["base_snapshot_id"] is None
    assert found["summary"] == {"added": 7, "removed": 0, "changed": 0, "unchanged": 0}
    assert {e["change"] for e in found["data"]} == {"added"}
    assert all(e["base_page_id"] is None for e in found["data"])


def test_snapshots_of_two_configs_are_not_compared(
    scanner: Scanner, other: Scanner, run: Run
) -> None:
    shop = scanner.config()
    blog = scanner.config()
    mine = seed(run, scanner, shop["id"], after())
    elsewhere = seed(run, scanner, blog["id"], before())
    data = {"id": str(mine.snapshot_id), "baseSnapshotId": str(elsewhere.snapshot_id)}
    body = problem(
        scanner.request("websiteScan.diffSnapshots", data, role="member"), 400, "BAD_REQUEST"
    )
    assert "configuration" in body["detail"]
    assert [error["path"] for error in body["errors"]] == ["baseSnapshotId"]

    # Another organization's snapshot as the base is not found, whatever its config.
    theirs_config = other.config()
    theirs = seed(run, other, theirs_config["id"], before())
    data = {"id": str(mine.snapshot_id), "baseSnapshotId": str(theirs.snapshot_id)}
    body = problem(
        scanner.request("websiteScan.diffSnapshots", data, role="member"), 404, "NOT_FOUND"
    )
    assert str(theirs.snapshot_id) in body["detail"]
    unknown = {"id": str(mine.snapshot_id), "baseSnapshotId": str(uuid.uuid4())}
    problem(scanner.request("websiteScan.diffSnapshots", unknown, role="member"), 404, "NOT_FOUND")


# --- broken links -----------------------------------------------------------------------------


def broken_links() -> list[dict[str, Any]]:
    return [
        {
            "target_url": f"{SITE}/gone",
            "status_code": 404,
            "error": None,
            "internal": True,
            "occurrences": [
                {"source_url": f"{SITE}/", "link_text": "Old offer"},
                {"source_url": f"{SITE}/about", "link_text": "Offer"},
            ],
        },
        {
            "target_url": f"{SITE}/slow",
            "status_code": None,
            "error": "timeout",
            "internal": True,
            "occurrences": [{"source_url": f"{SITE}/about", "link_text": ""}],
        },
        {
            "target_url": "https://elsewhere.example/dead",
            "status_code": 410,
            "error": None,
            "internal": False,
            # A source the snapshot does not hold (kept, without a page id).
            "occurrences": [{"source_url": f"{SITE}/not-stored", "link_text": "Partner"}],
        },
    ]


def test_the_broken_link_report(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    pages = [
        crawled(f"{SITE}/"),
        crawled(f"{SITE}/about"),
        crawled(f"{SITE}/gone", status=404),
        crawled(f"{SITE}/slow", status=None, error="timeout"),
    ]
    seeded = seed(run, scanner, config["id"], pages, broken=broken_links())

    def report(**query: Any) -> dict[str, Any]:
        data = {"id": str(seeded.snapshot_id), **query}
        return scanner.ok("websiteScan.getBrokenLinks", data, role="member")

    every = report()
    assert every["summary"] == {"internal": 2, "external": 1, "pages_affected": 3}
    assert (every["total"], every["page"], every["limit"]) == (3, 1, 20)
    # By target URL.
    assert [link["target_url"] for link in every["data"]] == [
        "https://elsewhere.example/dead",
        f"{SITE}/gone",
        f"{SITE}/slow",
    ]
    by_target = {link["target_url"]: link for link in every["data"]}
    assert by_target[f"{SITE}/gone"] == {
        "target_url": f"{SITE}/gone",
        "status_code": 404,
        "error": None,
        "internal": True,
        "occurrence_count": 2,
        "occurrences": [
            {
                "page_id": str(seeded.page_ids[f"{SITE}/"]),
                "source_url": f"{SITE}/",
                "link_text": "Old offer",
            },
            {
                "page_id": str(seeded.page_ids[f"{SITE}/about"]),
                "source_url": f"{SITE}/about",
                "link_text": "Offer",
            },
        ],
    }
    slow = by_target[f"{SITE}/slow"]
    assert (slow["status_code"], slow["error"]) == (None, "timeout")
    dead = by_target["https://elsewhere.example/dead"]
    assert dead["internal"] is False
    assert dead["occurrences"] == [
        {"page_id": None, "source_url": f"{SITE}/not-stored", "link_text": "Partner"}
    ]

    internal = report(scope="internal")
    assert [link["target_url"] for link in internal["data"]] == [f"{SITE}/gone", f"{SITE}/slow"]
    assert internal["total"] == 2 and internal["summary"] == every["summary"]
    external = report(scope="external")
    assert [link["target_url"] for link in external["data"]] == ["https://elsewhere.example/dead"]
    second = report(page=2, limit=1)
    assert second["total"] == 3 and len(second["data"]) == 1
    assert second["data"][0]["target_url"] == every["data"][1]["target_url"]

    # The report is the snapshot's own: a clean one has none.
    clean = seed(run, scanner, config["id"], pages[:2])
    empty = scanner.ok("websiteScan.getBrokenLinks", {"id": str(clean.snapshot_id)}, role="member")
    assert empty["summary"] == {"internal": 0, "external": 0, "pages_affected": 0}
    assert (empty["data"], empty["total"]) == ([], 0)
