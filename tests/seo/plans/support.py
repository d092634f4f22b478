"""SEO plans through one organization (`Plans`), and the fixture tenant of issue 44's
acceptance: Search Console queries synced for the last weeks, tracked keywords, open SEO actions
and two ingested knowledge documents; and the job instances of an approved plan run to the end
as the job runs and the publishers record them."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.drafts import publication
from contentplatform.drafts.models import Draft
from contentplatform.job_instances.models import JobInstance
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.models import SeoTrackedKeyword
from contentplatform.seo.plans import durable
from contentplatform.seo.search_console.schemas import Figures
from tests.conftest import Run
from tests.documents.support import Docs
from tests.notifications.support import settled
from tests.seo.search_console.support import Day, make_property, p, plant, q
from tests.support.waits import until_workflow_ends

SITE = "https://plans.example.com"
ZONE = "America/New_York"
# March 2027: New York's clocks go forward on Sunday the 14th.
MONTH = "2027-03"
GENERATION_TIMEOUT = 60.0

GARDEN = b"""# Composting at home

Composting turns kitchen scraps and garden waste into rich soil. A compost bin needs air,
moisture and a balance of green and brown materials. Hot composting kills weed seeds faster
than cold composting. Worm composting, or vermicomposting, works indoors in small flats.

## Mulching

Mulch keeps soil moist and suppresses weeds. Organic mulch such as bark chips and straw feeds
the soil as it breaks down. Spread mulch five centimetres deep around shrubs.
"""
WATER = b"""# Drip irrigation guide

Drip irrigation waters plants slowly at the roots and saves water. A drip irrigation kit has
tubing, emitters and a pressure regulator. Rainwater harvesting fills barrels from the roof
for dry weeks. Soaker hoses are a cheap alternative to drip emitters in raised beds.
"""
# query, page, clicks, impressions, position: a day's rows of the last weeks.
QUERIES = [
    ("compost bin", "/compost-bin", 4, 120, 8.0),
    ("how to start composting", "/composting", 2, 90, 12.0),
    ("raised bed soil", "/raised-beds", 1, 60, 15.0),
    ("best garden gloves", "/gloves", 1, 50, 24.0),
    ("tomato fertilizer", "/tomatoes", 0, 40, 31.0),
    ("garden shop", "/", 30, 200, 1.5),  # ranks top 3: never planned
    ("pruning roses", "/roses", 1, 35, 9.0),
    ("leaf mold", "/leaves", 0, 30, 18.0),
]
TRACKED = [
    # keyword, volume, difficulty, position
    ("drip irrigation kit", 2400, 35, 14),
    ("rainwater harvesting", 1900, 28, None),
    ("organic mulch", 1300, 22, 11),
    ("garden shop near me", 900, 40, 2),  # top 3: never planned
    ("vegetable garden layout", 3100, 45, None),
    ("soaker hose", 800, 18, 27),
]


class Plans(Docs):
    default_role = "editor"

    def plan(self, plan_id: str) -> dict[str, Any]:
        return self.ok("seoPlans.getById", {"id": plan_id}, role="member")  # type: ignore[no-any-return]

    def create(self, month: str = MONTH, **body: Any) -> dict[str, Any]:  # type: ignore[override]
        return self.ok("seoPlans.create", {"month": month, **body})  # type: ignore[no-any-return]

    def generate(self, month: str = MONTH, **body: Any) -> dict[str, Any]:
        return self.ok("seoPlans.generate", {"month": month, **body})  # type: ignore[no-any-return]

    def finished(self, plan_id: str, round_: int = 1) -> dict[str, Any]:
        """The plan once its generation (round `round_`) ended."""

        def done() -> dict[str, Any] | None:
            found = self.plan(plan_id)
            return found if found["status"] != "generating" else None

        return until_workflow_ends(
            durable.workflow_id(uuid.UUID(plan_id), round_),
            done,
            timeout=GENERATION_TIMEOUT,
            what=f"plan {plan_id}",
        )

    def add(self, plan_id: str, day: str, **body: Any) -> dict[str, Any]:
        fields = {"title": "Soil testing at home", "primaryKeyword": "soil test", **body}
        return self.ok("seoPlans.addItem", {"id": plan_id, "targetDate": day, **fields})  # type: ignore[no-any-return]

    def balance(self) -> int:
        return int(self.ok("credits.getBalance", {}, role="member")["available"])


def zone_of(org: Plans) -> None:
    org.ok("jobs.updateTimezone", {"timezone": ZONE}, role="admin")


def seed(org: Plans, settings: Settings, run: Run) -> dict[str, str]:
    """The acceptance's fixture tenant; the ids of what it planted."""
    zone_of(org)
    property_id = make_property(settings, org.tenant_id, SITE + "/")
    today = datetime.now(UTC).date()
    planted = []
    for offset in range(5, 19):
        day = today - timedelta(days=offset)
        queries = [q(query, SITE + page, c, i, pos) for query, page, c, i, pos in QUERIES]
        pages = [p(SITE + page, c, i, pos) for _, page, c, i, pos in QUERIES]
        planted.append(Day(day, Figures(40, 625, 8.0), pages=pages, queries=queries))
    plant(settings, org.tenant_id, property_id, planted)

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            for keyword, volume, difficulty, position in TRACKED:
                session.add(
                    SeoTrackedKeyword(
                        tenant_id=org.tenant_id,
                        keyword=keyword,
                        location_code=2840,
                        language_code="en",
                        device="desktop",
                        tags=[],
                        status="active",
                        search_volume=volume,
                        keyword_difficulty=difficulty,
                        position=position,
                        url=None if position is None else f"{SITE}/{keyword.replace(' ', '-')}",
                        serp_features=[],
                        competitors=[],
                        cannibalization=[],
                    )
                )

    run(scenario)
    content = org.ok(
        "seo.createAction",
        {
            "title": "Write a guide to companion planting",
            "type": "create_content",
            "keywords": ["companion planting"],
        },
    )
    geo = org.ok(
        "seo.createAction",
        {
            "title": "Answer: when to plant garlic",
            "type": "improve_geo",
            "keywords": ["when to plant garlic"],
        },
    )
    garden = org.ingest("composting.md", GARDEN)
    water = org.ingest("irrigation.md", WATER)
    return {
        "property": str(property_id),
        "content_action": content["id"],
        "geo_action": geo["id"],
        "garden": garden["id"],
        "water": water["id"],
    }


def run_to_the_end(run: Run, org: Plans, job_id: str) -> dict[str, str]:
    """Each instance of the job taken by a run that wrote its draft, approved and published by a
    webhook target at its URL, as the job runs and the publishers record them; the events
    heard. URL by instance id."""

    async def scenario(db: Database) -> dict[str, str]:
        urls: dict[str, str] = {}
        async with db.unit_of_work() as session:
            rows = (
                await session.scalars(
                    select(JobInstance).where(
                        JobInstance.tenant_id == org.tenant_id,
                        JobInstance.job_id == uuid.UUID(job_id),
                    )
                )
            ).all()
            now = utcnow()
            for index, instance in enumerate(sorted(rows, key=lambda row: row.scheduled_date)):
                draft = Draft(
                    tenant_id=org.tenant_id,
                    title=instance.topic or "Post",
                    content="<p>Written.</p>",
                    status="approved",
                    job_id=instance.job_id,
                    instance_id=instance.id,
                )
                session.add(draft)
                await session.flush()
                instance.status, instance.draft_id = "completed", draft.id
                instance.started_at = instance.finished_at = now
                url = f"{SITE}/posts/{index}"
                await publication.mark_published(session, draft, url, now)
                urls[str(instance.id)] = url
        return urls

    found: dict[str, str] = run(scenario)
    settled(run, org.tenant_id)
    return found


def plant_page_days(
    settings: Settings, tenant_id: uuid.UUID, property_id: str, urls: list[str], start: date
) -> None:
    """40 days of page rows for each URL from `start`: 3 clicks, 50 impressions at 7.0 a day."""
    planted = []
    for offset in range(40):
        day = start + timedelta(days=offset)
        pages = [p(url, 3, 50, 7.0) for url in urls]
        planted.append(Day(day, Figures(3 * len(urls), 50 * len(urls), 7.0), pages=pages))
    plant(settings, tenant_id, uuid.UUID(property_id), planted)
