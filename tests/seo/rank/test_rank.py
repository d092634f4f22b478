"""Rank tracking over REST and RPC against the DataForSEO stand-in: keywords added, listed,
updated and deleted; checks in task mode (100 tasks) and live mode (20), their credits held
per SERP page and committed for the tasks that succeeded, a provider failure making the run
partial; positions, movement and changes; the stored SERP with cannibalization; visibility
and traffic against figures computed here by hand."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from contentplatform.kit.db import Database
from contentplatform.seo.models import SeoKeywordPosition, SeoTrackedKeyword
from contentplatform.seo.rank import durable
from tests.conftest import Run
from tests.seo.rank.standin import LOGIN, PASSWORD, SerpStandIn
from tests.support.orgs import Org, org_fixture
from tests.support.problems import problem
from tests.support.waits import until_workflow_ends


class Rank(Org):
    default_role = "editor"

    @property
    def host(self) -> str:
        return f"{self.org.replace('_', '-')}.example.com"

    def connect(self) -> None:
        self.ok(
            "seo.connect",
            {"provider": "dataforseo", "credentials": {"login": LOGIN, "password": PASSWORD}},
            role="admin",
        )
        self.ok("seo.updateSettings", {"siteUrl": f"https://{self.host}/"}, role="admin")

    def add(self, keywords: list[str], **body: Any) -> dict[str, Any]:
        """Tracked without their first check (checkNow false), unless the test asks for it."""
        sent = {"keywords": keywords, "checkNow": False, **body}
        return self.ok("seo.addTrackedKeywords", sent)  # type: ignore[no-any-return]

    def checked(self, body: dict[str, Any] | None = None) -> dict[str, Any]:
        run = self.ok("seo.checkRankings", body or {})
        return self.wait(run["id"])

    def wait(self, run_id: str) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            run = self.ok("seo.getSyncRun", {"id": run_id}, role="member")
            return run if run["status"] not in ("queued", "running") else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(run_id)), ended, timeout=60, what="rank check"
        )

    def keywords(self, **filters: Any) -> dict[str, Any]:
        return self.ok("seo.listTrackedKeywords", filters, role="member")  # type: ignore[no-any-return]


rank = org_fixture(Rank)
other = org_fixture(Rank, second=True)


@pytest.fixture(autouse=True)
def _standin(serp: SerpStandIn) -> SerpStandIn:
    return serp


def test_task_mode_100_keywords_credits_per_page_and_a_partial_run(
    rank: Rank, serp: SerpStandIn
) -> None:
    rank.connect()
    words = [f"{rank.org} task {n}" for n in range(100)]
    added = rank.add(words, devices=["desktop"])
    assert len(added["created"]) == 100 and added["skipped"] == []
    preview = rank.ok("seo.checkRankings", {"preview": True})
    assert {key: preview[key] for key in ("keywords", "devices", "tasks", "pages", "credits")} == {
        "keywords": 100,
        "devices": 1,
        "tasks": 100,
        "pages": 2,
        "credits": 200,
    }
    assert preview["mode"] == "task" and preview["sufficient"] is True
    # A preview holds nothing and opens no run.
    assert rank.ok("seo.listSyncRuns", {"kind": "rank_check"}, role="member")["total"] == 0
    serp.fail(words[0], words[1], words[2])
    posts_before = serp.calls["/task_post"]
    run = rank.checked({"idempotencyKey": f"check-{rank.org}"})
    assert run["kind"] == "rank_check" and run["provider"] == "dataforseo"
    assert run["params"]["mode"] == "task" and run["params"]["tasks"] == 100
    assert run["status"] == "partial", run
    assert run["credits_reserved"] == 200  # 100 keywords x 1 device x 2 pages
    assert run["credits_used"] == 194  # the 97 tasks that succeeded, 2 pages each
    assert run["progress"] == {"done": 100, "total": 100}
    assert run["error"]["code"] == "rank_checks_failed"
    assert {item["keyword"] for item in run["error"]["items"]} == set(words[:3])
    assert serp.calls["/task_post"] == posts_before + 1  # one batch of 100
    mine = [task for task in serp.posted if task["keyword"] in set(words)]
    assert len(mine) == 100 and all(task["depth"] == 20 for task in mine)
    # The same key answers the same run; the hold is not taken twice.
    again = rank.ok("seo.checkRankings", {"idempotencyKey": f"check-{rank.org}"})
    assert again["id"] == run["id"]
    holds = rank.ok("credits.listReservations", {"kind": "seo.checkRankings"}, role="admin")
    assert [(h["amount_held"], h["amount_committed"]) for h in holds["data"]] == [(200, 194)]
    listed = rank.keywords(bucket="not_ranking", limit=500)
    assert listed["total"] == 97  # the failed three were never checked: no position, no bucket


def test_live_mode_positions_movement_and_serp(rank: Rank, serp: SerpStandIn, run: Run) -> None:
    rank.connect()
    words = [f"{rank.org} live {n}" for n in range(10)]
    rank.add(words)  # both devices: 20 tasks, live mode at the default threshold of 20
    first = words[0]
    serp.place(first, rank.host, 3)
    serp.place(first, f"blog.{rank.host}", 20)  # a second URL of ours: cannibalization
    serp.ai_overview(first, rank.host)
    live_before = serp.calls["/live/advanced"]
    done = rank.checked()
    assert done["status"] == "succeeded" and done["params"]["mode"] == "live"
    assert done["credits_reserved"] == 40 and done["credits_used"] == 40
    assert serp.calls["/live/advanced"] == live_before + 20
    found = rank.keywords(search=first, device="desktop")["data"][0]
    assert (
        found["position"] == 3 and found["url"] == f"https://{rank.host}/{first.replace(' ', '-')}"
    )
    assert found["movement"] == "new" and found["previous_position"] is None
    assert found["ai_overview"] == {"present": True, "cited": True}
    assert [u["position"] for u in found["cannibalization"]] == [3, 20]
    snapshot = rank.ok("seo.getKeywordSerp", {"id": found["id"], "depth": 10}, role="member")
    assert snapshot["provider"] == "dataforseo" and snapshot["depth"] == 20
    assert len([i for i in snapshot["items"] if i["type"] == "organic"]) == 10
    assert snapshot["items"][0]["type"] == "ai_overview"
    assert snapshot["items"][0]["references"][0]["owner"] == "self"
    assert [
        i["owner"]
        for i in snapshot["items"]
        if i["rank_group"] in (3, 20) and i["type"] == "organic"
    ] == ["self"]

    # The first check a week older, then our page falls to 14.
    async def a_week_back(db: Database) -> None:
        async with db.unit_of_work() as session:
            statement = select(SeoKeywordPosition).where(
                SeoKeywordPosition.tenant_id == rank.tenant_id
            )
            for row in (await session.execute(statement)).scalars():
                row.check_date -= timedelta(days=7)

    run(a_week_back)
    serp.place(first, rank.host, 14)
    rank.checked()
    found = rank.keywords(search=first, device="desktop")["data"][0]
    assert found["position"] == 14 and found["previous_position"] == 3
    assert found["movement"] == "declined"
    assert found["change_1d"] == -11 and found["change_7d"] == -11 and found["change_30d"] is None
    assert found["best_position"] == 3
    assert rank.keywords(movement="declined")["total"] == 2  # desktop and mobile
    history = rank.ok("seo.getKeywordRankHistory", {"id": found["id"]}, role="member")
    assert [point["position"] for point in history["series"]] == [3, 14]


def test_visibility_and_traffic_match_the_hand_computed_figures(
    rank: Rank, serp: SerpStandIn, run: Run
) -> None:
    rank.connect()
    words = [f"{rank.org} vis {n}" for n in range(4)]
    rank.add(words, devices=["mobile"])
    for word, position in zip(words, (1, 3, 14), strict=False):
        serp.place(word, rank.host, position)  # the fourth ranks nowhere
    volumes = dict(zip(words, (1000, 500, 200, None), strict=True))

    async def set_volumes(db: Database) -> None:
        async with db.unit_of_work() as session:
            for word, volume in volumes.items():
                await session.execute(
                    update(SeoTrackedKeyword)
                    .where(
                        SeoTrackedKeyword.tenant_id == rank.tenant_id,
                        SeoTrackedKeyword.keyword == word,
                    )
                    .values(search_volume=volume)
                )

    run(set_volumes)
    rank.checked()
    # CTR: position 1 27.6 %, 3 11.0 %, 14 0.063 % (Backlinko); unknown volume left out.
    earned = 1000 * 0.276 + 500 * 0.110 + 200 * 0.00063
    best = (1000 + 500 + 200) * 0.276
    overview = rank.ok("seo.rankOverview", {}, role="member")
    assert overview["visibility"] == round(earned / best * 100, 2)
    assert overview["estimated_traffic"] == round(earned, 2)
    assert overview["avg_position"] == round((1 + 3 + 14 + 100) / 4, 2)
    assert overview["distribution"] == {
        "top3": 2,
        "top4_10": 0,
        "top11_20": 1,
        "top21_100": 0,
        "not_ranking": 1,
    }
    assert overview["movement"]["new"] == 3 and overview["movement"]["unchanged"] == 1
    assert len(overview["trend"]) == 1
    top = rank.keywords(sortBy="estimated_traffic", sortOrder="desc", limit=1)["data"][0]
    assert top["keyword"] == words[3]  # null volume: no traffic, sorted as the largest
    best_row = rank.keywords(sortBy="position", limit=1)["data"][0]
    assert best_row["keyword"] == words[0] and best_row["estimated_traffic"] == 276.0


def test_keywords_are_normalized_updated_deleted_and_checked(rank: Rank, other: Rank) -> None:
    added = rank.add(
        ["  Garden   SOIL ", "garden soil", "mulch"], devices=["desktop"], tags=["beds"]
    )
    assert [row["keyword"] for row in added["created"]] == ["garden soil", "mulch"]
    again = rank.add(["garden soil"], devices=["desktop"])
    assert again["skipped"] == [
        {"keyword": "garden soil", "device": "desktop", "reason": "duplicate"}
    ]
    keyword_id = added["created"][0]["id"]
    changed = rank.ok(
        "seo.updateTrackedKeyword",
        {
            "id": keyword_id,
            "status": "paused",
            "targetUrl": "https://example.com/soil",
            "tags": ["x"],
        },
    )
    assert changed["status"] == "paused" and changed["tags"] == ["x"]
    assert rank.keywords(tag="beds")["total"] == 1
    # Inputs are checked.
    for body in (
        {"keywords": ["<b>soil</b>"]},
        {"keywords": ["a\u0000b"]},
        {"keywords": ["x" * 101]},
        {"keywords": ["ok"], "tags": ["t" * 51]},
        {"keywords": ["ok"], "targetUrl": "javascript:alert(1)"},
        {"keywords": []},
    ):
        problem(rank.request("seo.addTrackedKeywords", body), 400, "BAD_REQUEST")
    # Roles: members read, editors write, admins delete.
    problem(
        rank.request("seo.addTrackedKeywords", {"keywords": ["x"]}, role="member"), 403, "FORBIDDEN"
    )
    problem(rank.request("seo.deleteTrackedKeyword", {"id": keyword_id}), 403, "FORBIDDEN")
    # No SERP provider connected: 409 (a preview still prices the check).
    problem(rank.request("seo.checkRankings", {}), 409, "CONFLICT")
    assert rank.ok("seo.checkRankings", {"preview": True})["credits"] == 2
    # Another organization's keyword is not found.
    for operation in (
        "seo.updateTrackedKeyword",
        "seo.getKeywordRankHistory",
        "seo.getKeywordSerp",
    ):
        problem(other.request(operation, {"id": keyword_id}, role="admin"), 404, "NOT_FOUND")
    problem(
        other.request("seo.deleteTrackedKeyword", {"id": keyword_id}, role="admin"),
        404,
        "NOT_FOUND",
    )
    problem(rank.request("seo.getKeywordSerp", {"id": keyword_id}), 404, "NOT_FOUND")
    assert rank.ok("seo.deleteTrackedKeyword", {"id": keyword_id}, role="admin") == {
        "success": True
    }
    problem(
        rank.request("seo.updateTrackedKeyword", {"id": keyword_id, "status": "active"}),
        404,
        "NOT_FOUND",
    )


def test_short_credits_are_402_and_nothing_is_held(rank: Rank) -> None:
    rank.connect()
    rank.add([f"{rank.org} short"], devices=["desktop"])
    available = rank.ok("credits.getBalance", {}, role="admin")["available"]
    rank.ok(
        "credits.reserve",
        {"kind": "generation.blog", "idempotencyKey": "eat-it-all", "amount": available},
        role="admin",
    )
    problem(rank.request("seo.checkRankings", {}), 402, "PAYMENT_REQUIRED")
    assert rank.ok("seo.listSyncRuns", {"kind": "rank_check"}, role="member")["total"] == 0


def test_stopping_at_our_domain_reads_fewer_pages_and_leaves_competitors_past_it_unknown(
    rank: Rank, other: Rank, serp: SerpStandIn
) -> None:
    rank.connect()
    rank.ok("seo.updateSettings", {"rank": {"depth": 30, "stopAtOwnDomain": True}}, role="admin")
    near = rank.ok(
        "seo.createCompetitor",
        {"name": "Near", "domain": f"near-{rank.host}", "trackRank": True},
        role="admin",
    )
    far = rank.ok(
        "seo.createCompetitor",
        {"name": "Far", "domain": f"far-{rank.host}", "trackRank": True},
        role="admin",
    )
    word = f"{rank.org} stop"
    rank.add([word], devices=["desktop"])
    serp.place(word, f"near-{rank.host}", 2)
    serp.place(word, rank.host, 4)
    serp.place(word, f"far-{rank.host}", 25)
    done = rank.checked()
    # 3 pages held (depth 30); the SERP stopped after the first, the page we show on.
    assert done["status"] == "succeeded"
    assert done["credits_reserved"] == 3 and done["credits_used"] == 1
    found = rank.keywords(search=word)["data"][0]
    assert found["position"] == 4
    positions = {c["competitor_id"]: (c["position"], c["known"]) for c in found["competitors"]}
    assert positions[near["id"]] == (2, True)
    # Past the page read, the far competitor is unknown: not "not ranking".
    assert positions[far["id"]] == (None, False)

    # Another organization sees none of it.
    assert other.keywords()["total"] == 0
    overview = other.ok("seo.rankOverview", {}, role="member")
    assert overview["visibility"] is None and overview["avg_position"] is None
    assert overview["competitors"] == []
