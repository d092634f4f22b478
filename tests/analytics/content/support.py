"""Content analytics' fixture: an organization with two published drafts (A live at two URLs of
its blog, one with a tracking parameter; B at one) and a page that is not ours, and the same
visits served by every provider stand-in (tests/analytics/content/standin.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import update

from contentplatform.analytics.content import durable
from contentplatform.analytics.models import AnalyticsSource
from contentplatform.config import Settings
from contentplatform.drafts.models import Draft, DraftRevision
from contentplatform.kit.db import Database
from contentplatform.publishers.models import PublishAttempt, PublisherConnection
from tests.analytics.content.standin import PLAUSIBLE_KEY, ContentStandIn, Visit
from tests.support.database import run_on
from tests.support.google import GoogleStandIn
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends

REDIRECT_URI = "https://app.example.test/seo/callback"


def today() -> date:
    return datetime.now(UTC).date()


class Content(Org):
    default_role = "admin"

    @property
    def host(self) -> str:
        return f"blog-{self.org[-8:]}.example.test"

    @property
    def ga4_property(self) -> str:
        return str(int(self.org[-8:], 16))

    def sources(self) -> list[dict[str, Any]]:
        return self.ok("analytics.listSources", role="member")["data"]  # type: ignore[no-any-return]

    def source(self, source_id: str) -> dict[str, Any]:
        return next(s for s in self.sources() if s["id"] == source_id)

    def connect_plausible(self) -> dict[str, Any]:
        found = self.ok(
            "analytics.connectSource",
            {
                "provider": "plausible",
                "property": self.host,
                "credentials": {"apiKey": PLAUSIBLE_KEY},
            },
        )
        return found["source"]  # type: ignore[no-any-return]

    def connect_ga4(self, google: GoogleStandIn) -> dict[str, Any]:
        started = self.ok(
            "analytics.connectSource",
            {"provider": "ga4", "property": self.ga4_property, "redirectUri": REDIRECT_URI},
        )
        assert started["source"]["status"] == "pending_auth"
        code = google.authorize(started["authorize_url"])
        state = dict(
            part.split("=", 1) for part in started["authorize_url"].split("?", 1)[1].split("&")
        )["state"]
        done = self.ok(
            "analytics.connectSource",
            {
                "provider": "ga4",
                "property": self.ga4_property,
                "credentials": {"code": code, "state": state},
            },
        )
        assert done["authorize_url"] is None
        return done["source"]  # type: ignore[no-any-return]


@dataclass
class Fixture:
    a: str
    b: str
    blog: str
    mirror: str


def visits(host: str) -> list[Visit]:
    """Two days of visits: A's (at /a-post and /mirror/a-post), B's, and /about (not ours)."""
    d1, d2 = today() - timedelta(days=3), today() - timedelta(days=2)
    return [
        Visit(d1, host, "/a-post", "Google", "GB", "desktop", 10, 12, 11),
        Visit(d1, host, "/mirror/a-post", "chatgpt.com", "US", "mobile", 3, 4, 3),
        Visit(d1, host, "/b-post", "", "US", "desktop", 5, 5, 5),
        Visit(d1, host, "/about", "Google", "US", "desktop", 7, 9, 8),
        Visit(d2, host, "/a-post", "perplexity.ai", "DE", "mobile", 2, 2, 2),
        Visit(d2, host, "/b-post", "Google", "GB", "desktop", 6, 8, 7),
    ]


# Per draft, what those visits make.
A_VIEWS, A_VISITORS, B_VIEWS, B_VISITORS = 18, 15, 13, 11


def publish(content: Content, settings: Settings) -> Fixture:
    """A and B, published (ten days ago) on two targets of the organization."""
    a = content.ok("drafts.createDraft", {"title": "Alpha post"}, role="editor")["id"]
    b = content.ok("drafts.createDraft", {"title": "Beta post"}, role="editor")["id"]
    tenant_id = content.tenant_id
    host = content.host
    at = datetime.now(UTC) - timedelta(days=10)

    async def scenario(db: Database) -> tuple[str, str]:
        async with db.unit_of_work() as session:
            blog = PublisherConnection(
                tenant_id=tenant_id, name="Blog", type="wordpress", config={}, status="active"
            )
            mirror = PublisherConnection(
                tenant_id=tenant_id, name="Mirror", type="ghost", config={}, status="active"
            )
            session.add_all([blog, mirror])
            await session.flush()
            for draft, connection, url in (
                (a, blog.id, f"https://{host}/a-post"),
                (a, mirror.id, f"https://{host.upper()}/mirror/a-post?utm_source=feed"),
                (b, blog.id, f"https://{host}/b-post"),
            ):
                session.add(
                    PublishAttempt(
                        tenant_id=tenant_id,
                        draft_id=uuid.UUID(draft),
                        connection_id=connection,
                        mode="publish",
                        status="succeeded",
                        draft_version=1,
                        external_url=url,
                        triggered_by="user",
                        finished_at=at,
                    )
                )
            for draft, score in ((a, 72), (b, 55)):
                await session.execute(
                    update(Draft)
                    .where(Draft.id == uuid.UUID(draft))
                    .values(
                        status="published",
                        published_at=at,
                        seo_score=score,
                        published_url=f"https://{host}/{'a' if draft == a else 'b'}-post",
                    )
                )
            # Only the scores below count: the revisions createDraft wrote carry none.
            await session.execute(
                update(DraftRevision)
                .where(DraftRevision.draft_id.in_([uuid.UUID(a), uuid.UUID(b)]))
                .values(seo_score=None)
            )
            for draft, version, author, score, days_ago in (
                (a, 101, "ai", 64, 5),
                (a, 102, "ai", 72, 4),
                (b, 101, "ai", 55, 4),
                (b, 102, "human", 90, 1),
            ):
                session.add(
                    DraftRevision(
                        tenant_id=tenant_id,
                        draft_id=uuid.UUID(draft),
                        version=version,
                        title="t",
                        content="<p>x</p>",
                        seo_meta={},
                        seo_score=score,
                        author_type=author,
                        change_summary="scored",
                        fields_changed=[],
                        created_at=datetime.now(UTC) - timedelta(days=days_ago),
                    )
                )
            return str(blog.id), str(mirror.id)

    blog, mirror = run_on(settings, scenario)
    return Fixture(a=a, b=b, blog=blog, mirror=mirror)


def serve(providers: ContentStandIn, *sites: str, host: str) -> None:
    for site in sites:
        providers.visits(site, visits(host))


def wait_synced(content: Content, settings: Settings, source_id: str) -> dict[str, Any]:
    """The source once its running sync ended."""

    async def row(db: Database) -> str:
        async with db.unit_of_work() as session:
            found = await session.get(AnalyticsSource, uuid.UUID(source_id))
            assert found is not None
            return durable.workflow_id(found)

    workflow = run_on(settings, row)

    def ended() -> dict[str, Any] | None:
        found = content.source(source_id)
        return found if found["sync_status"] != "running" else None

    return until_workflow_ends(workflow, ended, timeout=60, what=f"sync of {source_id}")
