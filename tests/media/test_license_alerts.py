"""Licence alerts (media/durable.py): an asset a draft uses whose licence ends within 30 days
is told once as `media.license_expiring`, once ended as `media.license_expired`, again when a
renewed licence nears its new end; admins are notified, members are not; an asset no draft
uses, or another organization's, tells nothing here."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from contentplatform.media import durable
from tests.conftest import Run
from tests.media.support import Media, jpeg
from tests.notifications.support import Members, settled
from tests.support.orgs import org_fixture


class Licences(Members, Media):
    """An organization whose members are all known (for notifications), with its media."""


media = org_fixture(Licences)
other = org_fixture(Licences, second=True)


def instant(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


def check(run: Run, days: float = 0) -> None:
    """One pass of the alerts, `days` from now."""

    async def scenario(db: Database) -> int:
        return await durable.alert_licences(db, datetime.now(UTC) + timedelta(days=days))

    run(scenario)


def alerts(run: Run, tenant_id: uuid.UUID) -> list[tuple[str, str, dict[str, Any]]]:
    """The tenant's licence alerts, oldest first: (type, asset id, payload)."""

    async def scenario(db: Database) -> list[tuple[str, str, dict[str, Any]]]:
        async with db.unit_of_work() as session:
            rows = await session.scalars(
                select(Event)
                .where(Event.tenant_id == tenant_id, Event.type.like("media.license_%"))
                .order_by(Event.created_at, Event.id)
            )
            return [(row.type, str(row.resource_id), dict(row.payload)) for row in rows]

    found: list[tuple[str, str, dict[str, Any]]] = run(scenario)
    return found


def licensed(org: Licences, days: float, *, attached: bool) -> dict[str, Any]:
    asset = org.add(jpeg(320, 240), license={"type": "royalty_free", "expiresAt": instant(days)})
    if attached:
        response = org.attach(asset["id"], org.draft(), role="featured")
        assert response.status_code == 200, response.text
    return asset


def test_a_licence_drafts_use_is_told_once_as_it_nears_its_end_and_once_ended(
    media: Licences, other: Licences, run: Run
) -> None:
    ending = licensed(media, 10, attached=True)
    licensed(media, 10, attached=False)  # no draft uses it
    licensed(media, 90, attached=True)  # not yet within 30 days
    licensed(other, 10, attached=False)

    check(run)
    check(run)
    told = alerts(run, media.tenant_id)
    assert [(kind, asset) for kind, asset, _ in told] == [("media.license_expiring", ending["id"])]
    payload = told[0][2]
    assert payload["filename"] == ending["filename"]
    assert (payload["drafts"], payload["published_drafts"]) == (1, 0)
    assert payload["expires_at"][:10] == instant(10)[:10]

    check(run, days=11)
    check(run, days=12)
    assert [(kind, asset) for kind, asset, _ in alerts(run, media.tenant_id)] == [
        ("media.license_expiring", ending["id"]),
        ("media.license_expired", ending["id"]),
    ]
    assert alerts(run, other.tenant_id) == []

    settled(run, media.tenant_id)
    told_admin = media.notifications("admin")["data"]
    ended, nearing = told_admin[0], told_admin[1]
    assert (nearing["type"], nearing["title"]) == ("media.license_expiring", "Licence ending")
    assert f"ends on {instant(10)[:10]}; 1 draft uses it" in nearing["body"]
    assert ended["type"] == "media.license_expired"
    assert nearing["url"] == f"/media/{ending['id']}"
    assert not [t for t in media.types("member") if t.startswith("media.")]


def test_a_renewed_licence_is_told_again_when_its_new_end_nears(media: Licences, run: Run) -> None:
    asset = licensed(media, 5, attached=True)
    check(run)
    renewed = media.update(asset["id"], license={"expiresAt": instant(20)})
    assert renewed.status_code == 200, renewed.text
    check(run)
    told = alerts(run, media.tenant_id)
    assert [kind for kind, _, _ in told] == ["media.license_expiring"] * 2
    assert told[1][2]["expires_at"][:10] == instant(20)[:10]


def test_a_deleted_asset_or_a_deleted_draft_tells_nothing(media: Licences, run: Run) -> None:
    deleted = licensed(media, 3, attached=True)
    media.ok("media.delete", {"id": deleted["id"]}, role="admin")
    kept = media.add(jpeg(200, 100), license={"type": "royalty_free", "expiresAt": instant(3)})
    draft = media.draft()
    assert media.attach(kept["id"], draft, role="featured").status_code == 200
    media.ok("drafts.delete", {"id": draft}, role="admin")
    check(run)
    assert alerts(run, media.tenant_id) == []
