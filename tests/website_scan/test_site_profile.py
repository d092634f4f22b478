"""websiteScan.getSiteProfile and refreshSiteProfile over REST and RPC: `none` before any
refresh; a refresh reading the latest finished, non-partial snapshot (or the one named) in the
background, extractively with the offline model, to a ready profile whose credits
(`website_scan.profile`) are committed; a failed one releases them; 409 while generating, 400
without a snapshot, 410 for a purged one, 402 without credits; the reconciler restarting a
refresh whose workflow is missing and failing one that stalled; the roles; and another
organization's config or snapshot, 404. Then the inference itself against a real model's
protocol (tests/support/llm.py): a valid JSON answer is used, made plain and bounded; an
invalid one falls back to the extractive reading."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from contentplatform.ai.openai_compatible import OpenAICompatible
from contentplatform.config import Settings
from contentplatform.kit.db import Database, utcnow
from contentplatform.website_scan.crawling.pages import PageRecord
from contentplatform.website_scan.models import CrawlSnapshot, SiteProfile
from contentplatform.website_scan.profiles import inference as profile_inference
from contentplatform.website_scan.profiles import site_pages
from tests.conftest import Run
from tests.documents.support import hold_all_but
from tests.support.llm import ChatServer
from tests.support.orgs import org_fixture
from tests.support.problems import problem
from tests.website_scan.seed import Seeded, crawled, seed_snapshot
from tests.website_scan.support import Scanner

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

scanner = org_fixture(Scanner)
other = org_fixture(Scanner, second=True)

KIND = "website_scan.profile"
PROFILE_FIELDS = {
    "config_id",
    "snapshot_id",
    "status",
    "error",
    "business",
    "products",
    "audiences",
    "tone",
    "topics",
    "languages",
    "confidence",
    "evidence_page_ids",
    "generated_at",
}
ORGANIZATION = {
    "@context": "https://schema.org",
    "@type": "GardenStore",
    "name": "Green <b>Thumb</b> Tools",
    "address": {"@type": "PostalAddress", "addressLocality": "Bristol", "addressCountry": "GB"},
}
HOME_TEXT = (
    "# Garden tools that last\n\nWe forge every trowel by hand in our Bristol workshop. "
    "You'll feel the difference the first time you dig! Our spades don't bend.\n\n"
    "## Composting basics\n\nGood compost needs air, water and time."
)


def site(base: str) -> list[PageRecord]:
    """A garden shop: its home page, a product page and a blog post."""
    return [
        crawled(
            base,
            depth=0,
            title="Home | Green Thumb Tools",
            text=HOME_TEXT,
            meta_description="Hand-forged garden tools for home gardeners and allotment growers.",
            headings=[("h1", "Garden tools that last"), ("h2", "Composting basics")],
            json_ld=[ORGANIZATION],
            language="en-GB",
        ),
        crawled(
            base + "products/trowel",
            title="Hand trowel | Green Thumb Tools",
            text="The trowel is forged from carbon steel. It lasts for decades.",
            meta_description="A forged steel trowel.",
            headings=[("h1", "Hand trowel"), ("h2", "Composting basics")],
            language="en-GB",
        ),
        crawled(
            base + "blog/soil",
            title="Soil care | Green Thumb Tools",
            text="Soil is alive. Feed it with compost every spring.",
            headings=[("h1", "Soil care for beginners")],
            language="en",
        ),
    ]


def seed(run: Run, scanner: Scanner, config_id: str, pages: list[PageRecord], **more: Any):
    seeded: Seeded = run(
        lambda db: seed_snapshot(db, scanner.tenant_id, uuid.UUID(config_id), pages, **more)
    )
    return seeded


def refresh(scanner: Scanner, config_id: str, role: str = "editor", **more: Any) -> httpx.Response:
    return scanner.request("websiteScan.refreshSiteProfile", {"id": config_id, **more}, role=role)


def profile_of(scanner: Scanner, config_id: str, role: str = "member") -> dict[str, Any]:
    body: dict[str, Any] = scanner.ok("websiteScan.getSiteProfile", {"id": config_id}, role=role)
    return body


def wait_for(scanner: Scanner, config_id: str, statuses: set[str], seconds: float = 30) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        profile = profile_of(scanner, config_id)
        if profile["status"] in statuses:
            return profile
        assert time.monotonic() < deadline, profile
        time.sleep(0.05)


def strings(value: Any) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


def holds(scanner: Scanner) -> list[dict[str, Any]]:
    page = scanner.ok("credits.listReservations", {"kind": KIND}, role="member")
    data: list[dict[str, Any]] = page["data"]
    return data


def test_a_config_has_no_profile_before_its_first_refresh(scanner: Scanner) -> None:
    config = scanner.config()
    profile = profile_of(scanner, config["id"])
    assert set(profile) == PROFILE_FIELDS
    assert profile == {
        "config_id": config["id"],
        "snapshot_id": None,
        "status": "none",
        "error": None,
        "business": {"name": None, "summary": None, "industry": None, "locations": []},
        "products": [],
        "audiences": [],
        "tone": {"descriptors": [], "formality": None, "person": None, "sample_phrases": []},
        "topics": [],
        "languages": [],
        "confidence": 0.0,
        "evidence_page_ids": [],
        "generated_at": None,
    }


@pytest.mark.own_org
def test_a_refresh_reads_the_latest_complete_snapshot_to_a_ready_profile_and_pays_for_it(
    scanner: Scanner, run: Run
) -> None:
    config = scanner.config()
    base = config["start_url"]
    complete = seed(run, scanner, config["id"], site(base))
    # A newer partial snapshot (a cancelled crawl) is never the default.
    seed(run, scanner, config["id"], [crawled(base, depth=0, title="Other")], partial=True)

    started = refresh(scanner, config["id"])
    assert started.status_code == 200, started.text
    body = started.json()
    assert (body["status"], body["snapshot_id"]) == ("generating", str(complete.snapshot_id))
    assert (body["business"]["name"], body["generated_at"]) == (None, None)

    profile = wait_for(scanner, config["id"], {"ready", "failed"})
    assert profile["status"] == "ready", profile
    assert profile["error"] is None and profile["generated_at"]
    assert profile["business"] == {
        "name": "Green Thumb Tools",  # plain text: the markup is gone
        "summary": "Hand-forged garden tools for home gardeners and allotment growers.",
        "industry": "Garden store",
        "locations": ["Bristol, GB"],
    }
    assert profile["products"] == [
        {
            "name": "Hand trowel",
            "description": "A forged steel trowel.",
            "url": base + "products/trowel",
        }
    ]
    assert profile["audiences"][:2] == ["home gardeners", "allotment growers"]
    assert "beginners" in profile["audiences"]
    tone = profile["tone"]
    assert tone["person"] in ("first", "second")
    assert 0 <= tone["formality"] < 0.5  # contractions, an exclamation, short sentences
    assert "We forge every trowel by hand in our Bristol workshop." in tone["sample_phrases"]
    assert profile["topics"][0] == "Composting basics"  # on every page that has headings
    assert profile["languages"] == ["en-GB", "en"]
    assert 0 < profile["confidence"] <= 1
    page_ids = {str(page_id) for page_id in complete.page_ids.values()}
    assert profile["evidence_page_ids"] and set(profile["evidence_page_ids"]) <= page_ids
    # Everything it says is plain text on one line.
    for text in strings(profile):
        assert not set(text) & set("<>\n"), text

    [hold] = holds(scanner)
    assert (hold["status"], hold["amount_held"]) == ("committed", 10)
    assert 1 <= hold["amount_committed"] <= 10
    debits = scanner.ok("credits.listLedger", {"type": "debit", "kind": KIND}, role="member")
    assert sum(-entry["amount"] for entry in debits["data"]) == hold["amount_committed"]

    # Refreshing again reads the snapshot named, and replaces the profile.
    other_snapshot = seed(run, scanner, config["id"], site(base))
    again = refresh(scanner, config["id"], snapshotId=str(other_snapshot.snapshot_id))
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "generating"
    replaced = wait_for(scanner, config["id"], {"ready", "failed"})
    assert (replaced["status"], replaced["snapshot_id"]) == (
        "ready",
        str(other_snapshot.snapshot_id),
    )
    assert set(replaced["evidence_page_ids"]) <= {
        str(page_id) for page_id in other_snapshot.page_ids.values()
    }
    assert [hold["status"] for hold in holds(scanner)] == ["committed", "committed"]


@pytest.mark.own_org
def test_a_snapshot_without_a_readable_page_fails_the_refresh_and_releases_its_credits(
    scanner: Scanner, run: Run
) -> None:
    config = scanner.config()
    base = config["start_url"]
    seed(run, scanner, config["id"], [crawled(base, depth=0, status=503)])
    assert refresh(scanner, config["id"]).status_code == 200
    profile = wait_for(scanner, config["id"], {"ready", "failed"})
    assert profile["status"] == "failed", profile
    assert "crawl the site again" in profile["error"]
    assert profile["business"]["name"] is None
    assert [hold["status"] for hold in holds(scanner)] == ["released"]
    # A failed profile may be refreshed again.
    assert refresh(scanner, config["id"]).status_code == 200
    assert wait_for(scanner, config["id"], {"ready", "failed"})["status"] == "failed"


@pytest.mark.own_org
def test_a_config_without_a_complete_snapshot_is_400(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    body = problem(refresh(scanner, config["id"]), 400, "BAD_REQUEST")
    assert "startCrawl" in body["detail"]
    seed(run, scanner, config["id"], site(config["start_url"]), partial=True)
    problem(refresh(scanner, config["id"]), 400, "BAD_REQUEST")
    assert profile_of(scanner, config["id"])["status"] == "none"
    assert holds(scanner) == []


def test_a_snapshot_named_must_be_a_finished_one_of_the_config_with_its_content(
    scanner: Scanner, other: Scanner, run: Run
) -> None:
    config = scanner.config()
    second = scanner.config()
    mine = seed(run, scanner, config["id"], site(config["start_url"]))
    theirs = seed(run, scanner, second["id"], site(second["start_url"]))
    foreign_config = other.config()
    foreign = seed(run, other, foreign_config["id"], site(foreign_config["start_url"]))
    for snapshot_id in (theirs.snapshot_id, foreign.snapshot_id, uuid.uuid4()):
        response = refresh(scanner, config["id"], snapshotId=str(snapshot_id))
        problem(response, 404, "NOT_FOUND")

    async def change(db: Database, **values: Any) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(CrawlSnapshot).where(CrawlSnapshot.id == mine.snapshot_id).values(**values)
            )

    run(lambda db: change(db, finished_at=None))
    problem(refresh(scanner, config["id"], snapshotId=str(mine.snapshot_id)), 404, "NOT_FOUND")
    run(lambda db: change(db, finished_at=utcnow(), content_purged=True))
    problem(refresh(scanner, config["id"], snapshotId=str(mine.snapshot_id)), 410, "NOT_FOUND")
    assert profile_of(scanner, config["id"])["status"] == "none"


@pytest.mark.own_org
def test_without_credits_a_refresh_is_402_and_changes_nothing(
    scanner: Scanner, run: Run, settings: Settings
) -> None:
    config = scanner.config()
    seed(run, scanner, config["id"], site(config["start_url"]))
    hold_all_but(settings, scanner.tenant_id, left=9)
    body = problem(refresh(scanner, config["id"]), 402, "PAYMENT_REQUIRED")
    assert "10 credits" in body["detail"], body
    assert profile_of(scanner, config["id"])["status"] == "none"
    assert holds(scanner) == []


def put_profile(run: Run, tenant_id: uuid.UUID, config_id: str, **values: Any) -> uuid.UUID:
    """A profile row as a refresh leaves it, but whose workflow never started (a crash right
    after the commit), generating attempt 1 unless told otherwise."""
    profile_id = uuid.uuid4()

    async def write(db: Database) -> None:
        async with db.unit_of_work() as session:
            fields: dict[str, Any] = {
                "status": "generating",
                "attempt": 1,
                "profile": {},
                "updated_at": utcnow(),
            } | values
            session.add(
                SiteProfile(
                    id=profile_id, tenant_id=tenant_id, config_id=uuid.UUID(config_id), **fields
                )
            )

    run(write)
    return profile_id


@pytest.mark.own_org
def test_409_while_generating_and_the_reconciler_never_leaves_a_profile_generating(
    scanner: Scanner, run: Run
) -> None:
    config = scanner.config()
    seed(run, scanner, config["id"], site(config["start_url"]))
    # Generating from no snapshot: its workflow, once the reconciler starts it, has nothing to
    # read and leaves the profile to the stall rule; until then every refresh is 409.
    profile_id = put_profile(run, scanner.tenant_id, config["id"], snapshot_id=None)
    body = problem(refresh(scanner, config["id"]), 409, "CONFLICT")
    assert "being generated" in body["detail"]
    assert profile_of(scanner, config["id"])["status"] == "generating"

    async def stall(db: Database) -> None:
        async with db.unit_of_work() as session:
            await session.execute(
                update(SiteProfile)
                .where(SiteProfile.id == profile_id)
                .values(updated_at=utcnow() - timedelta(hours=1))
            )

    run(stall)
    failed = wait_for(scanner, config["id"], {"failed"})
    assert "longer than 15 minutes" in failed["error"]
    assert refresh(scanner, config["id"]).status_code == 200
    assert wait_for(scanner, config["id"], {"ready", "failed"})["status"] == "ready"


def test_the_reconciler_restarts_a_refresh_whose_workflow_never_started(
    scanner: Scanner, run: Run
) -> None:
    config = scanner.config()
    seeded = seed(run, scanner, config["id"], site(config["start_url"]))
    put_profile(run, scanner.tenant_id, config["id"], snapshot_id=seeded.snapshot_id)
    profile = wait_for(scanner, config["id"], {"ready", "failed"})
    assert (profile["status"], profile["business"]["name"]) == ("ready", "Green Thumb Tools")


@pytest.mark.own_org
def test_members_read_the_profile_and_only_editors_refresh_it(scanner: Scanner, run: Run) -> None:
    config = scanner.config()
    seed(run, scanner, config["id"], site(config["start_url"]))
    problem(refresh(scanner, config["id"], role="member"), 403, "FORBIDDEN")
    assert profile_of(scanner, config["id"], role="member")["status"] == "none"
    assert refresh(scanner, config["id"], role="editor").status_code == 200
    assert wait_for(scanner, config["id"], {"ready", "failed"})["status"] == "ready"


def test_another_organizations_config_is_404(scanner: Scanner, other: Scanner, run: Run) -> None:
    config = scanner.config()
    seed(run, scanner, config["id"], site(config["start_url"]))
    for operation in ("websiteScan.getSiteProfile", "websiteScan.refreshSiteProfile"):
        for config_id in (config["id"], str(uuid.uuid4())):
            response = other.request(operation, {"id": config_id}, role="admin")
            problem(response, 404, "NOT_FOUND")
    # A deleted config has no profile either.
    deleted = scanner.config()
    scanner.ok("websiteScan.deleteConfig", {"id": deleted["id"]}, role="admin")
    problem(scanner.request("websiteScan.getSiteProfile", {"id": deleted["id"]}), 404, "NOT_FOUND")
    assert profile_of(scanner, config["id"])["status"] == "none"


# --- the inference against a real model's protocol -------------------------------------------


def pages() -> list[site_pages.SitePage]:
    return [
        site_pages.SitePage(
            id=str(uuid.uuid4()),
            url=record.url,
            depth=record.depth,
            title=record.title,
            meta_description=record.meta_description,
            headings=list(record.headings),
            json_ld=list(record.json_ld),
            language=record.language,
            text=site_pages.capped(record.main_text),
        )
        for record in site("https://shop.example/")
    ]


@pytest.fixture
def llm() -> Any:
    with ChatServer() as server:
        yield server


def infer(llm: ChatServer, read: list[site_pages.SitePage]):
    async def main() -> profile_inference.Inference:
        model = OpenAICompatible(llm.base_url, "key", "stub-model", max_retries=0)
        try:
            return await profile_inference.infer(model, "https://shop.example/", read)
        finally:
            await model.close()

    return asyncio.run(main())


def test_a_model_answer_is_used_made_plain_and_bounded(llm: ChatServer) -> None:
    read = pages()
    answer = {
        "business": {
            "name": "<b>Green Thumb</b>",
            "summary": "Tools.\nForged by hand.",
            "industry": "Retail",
            "locations": ["Bristol"] * 3 + [f"Town {n}" for n in range(20)],
        },
        "products": [{"name": "Trowel", "description": "A trowel.", "url": "javascript:x"}],
        "audiences": ["gardeners", "x" * 500],
        "tone": {"descriptors": ["warm"], "formality": 1.7, "person": "Second"},
        "topics": ["Compost"],
        "languages": [],
        "confidence": 0.9,
        "evidence_pages": [2, 99],
    }
    llm.script(json.dumps(answer))
    inference = infer(llm, read)
    assert inference.extractive is False and inference.model == "stub-model"
    assert inference.input_tokens > 0 and inference.output_tokens > 0
    profile = inference.profile
    assert profile.business.name == "Green Thumb"
    assert profile.business.summary == "Tools. Forged by hand."
    assert profile.business.locations[:2] == ["Bristol", "Town 0"]
    assert len(profile.business.locations) == 10
    assert profile.products[0].url is None  # not an http(s) address
    assert profile.audiences[0] == "gardeners" and len(profile.audiences[1]) == 100
    assert (profile.tone.formality, profile.tone.person) == (1.0, "second")
    assert profile.languages == ["en-GB", "en"]  # none answered: the pages' own
    assert [str(page_id) for page_id in profile.evidence_page_ids] == [read[1].id]
    # One prompt with the pages' text, asking for one JSON object.
    [request] = llm.requests
    assert request.json["response_format"] == {"type": "json_object"}
    prompt = request.json["messages"][-1]["content"]
    assert "We forge every trowel by hand" in prompt and "products/trowel" in prompt


def test_an_invalid_model_answer_falls_back_to_the_extractive_reading(llm: ChatServer) -> None:
    read = pages()
    llm.script("Sure! Here is the profile you asked for.", json.dumps({"products": "many"}))
    for _ in range(2):
        inference = infer(llm, read)
        assert inference.extractive is True and inference.model == "stub-model"
        assert inference.input_tokens > 0  # the call was made, and is paid for
        assert inference.profile.business.name == "Green Thumb Tools"
