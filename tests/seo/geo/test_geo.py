"""seo.geoReadiness, listGeoPages, getLlmsTxt and generateLlmsTxt over REST and RPC, from a
website-scan snapshot planted as a crawl leaves it (with its robots.txt and llms.txt): AI
crawlers' access per agent, the citability rubric, llms.txt generated and parsed back, the
roles, 409 before any scan, and another organization that sees none of it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contentplatform.kit.db import Database
from contentplatform.seo.geo import llms_txt
from contentplatform.website_scan.models import CrawlSnapshot
from tests.conftest import Run
from tests.support.orgs import Org
from tests.support.problems import problem
from tests.website_scan.seed import crawled, seed_snapshot
from tests.website_scan.support import site_url

pytestmark = pytest.mark.shared_org

SITE = "https://shop.example"
SCANNED_AT = datetime.now(UTC) - timedelta(days=1)
ROBOTS = (
    "User-agent: GPTBot\nDisallow: /\n\nUser-agent: OAI-SearchBot\nDisallow: /\n\n"
    "User-agent: *\nAllow: /\n"
)
LIVE_LLMS = (
    "# Garden shop\n\n> Tools for every season.\n\n## Blog\n\n"
    f"- [How to compost]({SITE}/blog/how-to-compost): Compost in four steps\n"
)
COMPOST_TEXT = (
    "Compost is rotted organic matter that feeds soil.\n\n"
    "## What is compost?\n\nIt is what leaves and scraps become in about 50% of a year.\n\n"
    "- Gather greens\n- Add browns\n- Turn weekly\n"
)
OLD_TEXT = " ".join(["This long opening paragraph keeps going without answering anything"] * 8)
_planted: dict[str, dict[str, str]] = {}


def pages() -> list[Any]:
    howto = {
        "@context": "https://schema.org",
        "@type": "HowTo",
        "name": "How to compost",
        "author": {"@type": "Person", "name": "Ada Gardener"},
        "dateModified": (SCANNED_AT - timedelta(days=30)).date().isoformat(),
    }
    return [
        crawled(
            f"{SITE}/",
            title="Garden shop",
            text="We sell garden tools. Since 1990.",
            depth=0,
            meta_description="Tools for every season.",
            json_ld=[{"@type": "Organization", "name": "Garden shop"}],
        ),
        crawled(
            f"{SITE}/blog/how-to-compost",
            title="How to compost",
            text=COMPOST_TEXT,
            depth=1,
            meta_description="Compost in four steps",
            headings=[
                ("h1", "How to compost"),
                ("h2", "What is compost?"),
                ("h2", "Steps"),
                ("h2", "Tips"),
            ],
            links=[("https://extension.example/soil", "Soil study", False)],
            json_ld=[howto],
            word_count=350,
        ),
        crawled(f"{SITE}/blog/old-post", title="Old post", text=OLD_TEXT, depth=2),
        crawled(f"{SITE}/docs/setup/advanced/deep", title="Deep page", text="Deep.", depth=3),
        crawled(f"{SITE}/private/hidden", title="Hidden", noindex=True, depth=1),
        crawled(f"{SITE}/gone", status=404, depth=1),
    ]


def plant_scan(org: Org, run: Run, *, with_site_files: bool = True) -> dict[str, str]:
    config = org.ok(
        "websiteScan.createConfig", {"name": "Shop", "startUrl": site_url()}, role="editor"
    )

    async def scenario(db: Database) -> str:
        seeded = await seed_snapshot(
            db, org.tenant_id, uuid.UUID(config["id"]), pages(), created_at=SCANNED_AT
        )
        async with db.unit_of_work() as session:
            snapshot = await session.get(CrawlSnapshot, seeded.snapshot_id)
            assert snapshot is not None
            if with_site_files:
                snapshot.robots_txt = {"status": 200, "body": ROBOTS, "declared_sitemaps": []}
                snapshot.llms_txt = {"status": 200, "body": LIVE_LLMS}
        return str(seeded.snapshot_id)

    return {"snapshot": run(scenario), "config": config["id"]}


@pytest.fixture
def geo(tenant: Org, run: Run) -> tuple[Org, dict[str, str]]:
    if tenant.org not in _planted:
        _planted[tenant.org] = plant_scan(tenant, run)
    return tenant, _planted[tenant.org]


def test_readiness_reads_crawler_access_llms_txt_and_the_pages(
    geo: tuple[Org, dict[str, str]],
) -> None:
    org, ids = geo
    ready = org.ok("seo.geoReadiness", {"snapshotId": ids["snapshot"]}, role="member")
    assert ready["snapshot_id"] == ids["snapshot"]
    access = {agent["bot"]: agent for agent in ready["crawler_access"]}
    assert len(access) == 12
    assert access["OAI-SearchBot"]["effect"] == "blocked_from_answers"
    assert access["OAI-SearchBot"]["matched_rule"] == "User-agent: OAI-SearchBot"
    assert access["GPTBot"]["effect"] == "excluded_from_training"
    assert access["ClaudeBot"]["allowed"] is True
    assert access["ClaudeBot"]["matched_rule"] == "User-agent: *"
    by_code = {(issue["code"], issue["severity"]) for issue in ready["issues"]}
    assert ("ai_search_blocked", "error") in by_code
    assert ("ai_training_blocked", "notice") in by_code
    assert ready["llms_txt"] == {
        "present": True,
        "url": "http://127.0.0.1:9/llms.txt",
        "valid": True,
        "problems": [],
        "links": 1,
        "differs_from_generated": ready["llms_txt"]["differs_from_generated"],
    }
    # Four indexable pages (the noindex one and the 404 are not), two with JSON-LD.
    assert ready["structured_data"]["pages_with_json_ld_pct"] == 50.0
    assert ready["structured_data"]["types"] == {"Organization": 1, "HowTo": 1, "Person": 1}
    assert sum(ready["citability"]["distribution"].values()) == 4
    assert ready["citability"]["distribution"]["high"] == 1
    # 30 of 40 for access (one search agent blocked), 20 for llms.txt, 10 for structured data.
    assert ready["score"] == 30 + 20 + 10 + round(20 * ready["citability"]["avg"] / 100)
    assert org.ok("seo.geoReadiness", {}, role="member")["snapshot_id"] == ids["snapshot"]


def test_each_page_scores_by_the_rubric(geo: tuple[Org, dict[str, str]]) -> None:
    org, _ = geo
    listed = org.ok("seo.listGeoPages", {"sortBy": "citability"}, role="member")
    assert listed["total"] == 4
    scores = {row["url"].removeprefix(SITE): row for row in listed["data"]}
    compost = scores["/blog/how-to-compost"]
    assert compost["citability_score"] == 100 and compost["recommendations"] == []
    assert compost["factors"]["question_headings"] == 1
    assert compost["factors"]["freshness_days"] == 30
    assert compost["clicks_28d"] is None and compost["ai_citations_28d"] is None
    old = scores["/blog/old-post"]
    assert old["citability_score"] == 0 and len(old["recommendations"]) == 9
    assert listed["data"][0]["url"] == f"{SITE}/blog/how-to-compost"
    low = org.ok("seo.listGeoPages", {"maxScore": 0, "search": "OLD"}, role="member")
    assert [row["url"] for row in low["data"]] == [f"{SITE}/blog/old-post"]


def test_an_llms_txt_is_generated_and_parses_back(geo: tuple[Org, dict[str, str]]) -> None:
    org, _ = geo
    before = org.ok("seo.getLlmsTxt", {}, role="member")
    assert before["live"]["present"] is True
    problem(org.request("seo.generateLlmsTxt", {}, role="member"), 403, "FORBIDDEN")
    made = org.ok(
        "seo.generateLlmsTxt",
        {"excludeUrlPatterns": ["/blog/old-*"], "maxLinks": 10},
        role="editor",
    )
    parsed = llms_txt.parse(made["content"])
    assert parsed.problems == []
    assert (parsed.title, parsed.summary) == ("Garden shop", "Tools for every season.")
    sections = {section.title: [link.url for link in section.links] for section in parsed.sections}
    assert sections == {
        "Pages": [f"{SITE}/"],
        "Blog": [f"{SITE}/blog/how-to-compost"],
        "Optional": [f"{SITE}/docs/setup/advanced/deep"],
    }
    assert made["link_count"] == 3 and made["live"]["differs"] is True
    assert org.ok("seo.getLlmsTxt", {}, role="member")["content"] == made["content"]

    ruled = org.ok(
        "seo.generateLlmsTxt",
        {
            "summary": "Everything for the garden.",
            "sections": [{"title": "Guides", "urlPatterns": ["/blog/*"]}],
            "optionalSection": False,
        },
        role="editor",
    )
    assert [section["title"] for section in ruled["sections"]] == ["Guides"]
    assert "> Everything for the garden." in ruled["content"]

    body = problem(
        org.request(
            "seo.generateLlmsTxt", {"includeUrls": [f"{SITE}/private/hidden"]}, role="editor"
        ),
        400,
        "BAD_REQUEST",
    )
    assert body["errors"][0]["path"] == "includeUrls.0"


def test_an_older_scan_says_not_evaluated(tenant: Org, other_tenant: Org, run: Run) -> None:
    """In the second organization (its own old scan): never the first one's."""
    first = (_planted.get(tenant.org) or plant_scan(tenant, run))["snapshot"]
    _planted.setdefault(tenant.org, {"snapshot": first})
    problem(
        other_tenant.request("seo.geoReadiness", {"snapshotId": first}, role="member"),
        404,
        "NOT_FOUND",
    )
    if other_tenant.org not in _planted:  # before its first scan (the module shares it)
        problem(other_tenant.request("seo.geoReadiness", {}, role="member"), 409, "CONFLICT")
        problem(other_tenant.request("seo.generateLlmsTxt", {}, role="editor"), 409, "CONFLICT")
        assert other_tenant.ok("seo.listGeoPages", {}, role="member")["data"] == []
        assert other_tenant.ok("seo.getLlmsTxt", {}, role="member")["content"] is None
        _planted[other_tenant.org] = plant_scan(other_tenant, run, with_site_files=False)
    ready = other_tenant.ok("seo.geoReadiness", {}, role="member")
    assert ready["crawler_access"] == []
    assert {issue["code"] for issue in ready["issues"]} >= {"not_evaluated", "llms_txt_missing"}
