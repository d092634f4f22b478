"""SEO actions through one organization (`Actions`), and the stored signals they are made from,
planted as each part leaves them: a Search Console or URL-inspection run ended (what its
workflow does last, which generates that source's actions), tracked keywords with their
checks, and a draft of a job instance published as the publishers record it."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

from contentplatform.config import Settings
from contentplatform.drafts import publication
from contentplatform.drafts.models import Draft
from contentplatform.kit.db import Database, utcnow
from contentplatform.seo.models import SeoKeywordPosition, SeoTrackedKeyword, SeoUrlInspection
from contentplatform.seo.sync_runs import service as sync_runs
from tests.conftest import Run
from tests.notifications.support import settled
from tests.seo.audits.support import Auditor
from tests.support.database import run_on


class Actions(Auditor):
    """An organization's SEO actions (and, through Auditor, its scans and audits)."""

    default_role = "editor"

    def actions(self, **query: Any) -> dict[str, Any]:
        return self.ok("seo.listActions", {"limit": 100, **query}, role="member")  # type: ignore[no-any-return]

    def every(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every action by (type, subject)."""
        listed = self.actions(status="all")
        assert listed["total"] <= 100
        return {(row["type"], row["evidence"]["subject"]): row for row in listed["data"]}

    def add(self, title: str = "Write the compost guide", **body: Any) -> dict[str, Any]:
        return self.ok("seo.createAction", {"title": title, **body})  # type: ignore[no-any-return]

    def generate(self, **body: Any) -> dict[str, Any]:
        return self.ok("seo.generateActions", body)  # type: ignore[no-any-return]

    def detail(self, action_id: str) -> dict[str, Any]:
        return self.ok("seo.getAction", {"id": action_id}, role="member")  # type: ignore[no-any-return]


def end_run(
    settings: Settings,
    tenant_id: uuid.UUID,
    kind: str,
    *,
    property_id: uuid.UUID | None = None,
    inspections: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> None:
    """A sync run of `kind` opened and ended succeeded, with these inspections completed in it."""

    async def scenario(db: Database) -> None:
        async with db.unit_of_work() as session:
            opened, _ = await sync_runs.open_run(
                session,
                tenant_id,
                kind=kind,
                provider="google_search_console",
                run_key=f"{kind}:{uuid.uuid4().hex}",
                trigger="manual",
                params={},
                property_id=property_id,
                created_by=None,
            )
            for fields in inspections:
                session.add(
                    SeoUrlInspection(
                        tenant_id=tenant_id,
                        run_id=opened.id,
                        status="completed",
                        completed_at=utcnow(),
                        **fields,
                    )
                )
            await session.flush()
            await sync_runs.mark_running(session, tenant_id, opened.id)
            await sync_runs.finish(session, tenant_id, opened.id, status="succeeded")

    run_on(settings, scenario)


def track(run: Run, tenant_id: uuid.UUID, keyword: str, positions: list[int | None]) -> str:
    """A tracked keyword (desktop, US) checked once a day with these positions, oldest first."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            row = SeoTrackedKeyword(
                tenant_id=tenant_id,
                keyword=keyword,
                location_code=2840,
                language_code="en",
                device="desktop",
                tags=[],
                status="active",
                search_volume=1000,
                position=positions[-1],
                url=f"https://example.com/{keyword.replace(' ', '-')}",
                serp_features=[],
                competitors=[],
                cannibalization=[],
            )
            session.add(row)
            await session.flush()
            first = date(2026, 3, 1)
            for offset, position in enumerate(positions):
                day = first + timedelta(days=offset)
                session.add(
                    SeoKeywordPosition(
                        tenant_id=tenant_id,
                        keyword_id=row.id,
                        sync_run_id=uuid.uuid4(),
                        status="completed",
                        check_date=day,
                        checked_at=datetime(day.year, day.month, day.day, 6, tzinfo=UTC),
                        position=position,
                    )
                )
            return str(row.id)

    result: str = run(scenario)
    return result


def publish(run: Run, tenant_id: uuid.UUID, job_id: str, instance_id: str, url: str) -> str:
    """The draft the job's instance wrote, approved and taken live at `url` by a target, as the
    publishers record it; its `draft.published` heard."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            draft = Draft(
                tenant_id=tenant_id,
                title="Widget colors, explained",
                content="<p>Colors.</p>",
                status="approved",
                job_id=uuid.UUID(job_id),
                instance_id=uuid.UUID(instance_id),
            )
            session.add(draft)
            await session.flush()
            await publication.mark_published(session, draft, url, utcnow())
            return str(draft.id)

    draft_id: str = run(scenario)
    settled(run, tenant_id)
    return draft_id
