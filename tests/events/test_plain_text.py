"""Every text an event carries out is plain text, whatever its type: listeners, webhook receivers
and notification channels may show it as HTML. The rule is one (`kit.text.sent_as_text`, applied
where every event is written), so this walks the whole catalog with markup in every kind of text
field a payload holds, at every depth; what holds no markup (ids, URLs with `&`) is kept as
it is."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from contentplatform.events import catalog
from contentplatform.events import service as events
from contentplatform.events.models import Event
from contentplatform.kit.db import Database
from tests.support.orgs import new_tenant

MARKUP = (
    '<script>alert(1)</script><img src=x onerror=alert(2)><a href="javascript:alert(3)">'
    "Spring</a> <b>sale</b> &amp; more"
)
ONLY_MARKUP = "<img src=x onerror=alert(1)>"
URL = "https://example.com/a?b=1&para=2&lt=3"


def payload() -> dict[str, object]:
    return {
        "title": MARKUP,
        "excerpt": ONLY_MARKUP,
        "url": URL,
        "draft_id": str(uuid.uuid4()),
        "count": 3,
        "error": {"message": f"WordPress answered 400: {MARKUP}", "codes": ["a<b>c</b>"]},
        "names": [MARKUP, "a < b"],
    }


@pytest.mark.parametrize("type_", sorted(catalog.TYPES))
def test_every_type_of_the_catalog_carries_plain_text(run, type_: str) -> None:
    async def scenario(db: Database) -> dict[str, object]:
        tenant_id = await new_tenant(db)
        async with db.unit_of_work() as session:
            made = events.emit(session, tenant_id, type_, resource_id=None, payload=payload())
        async with db.unit_of_work() as session:
            return (
                (await session.execute(select(Event).where(Event.id == made.id)))
                .scalar_one()
                .payload
            )

    stored = run(scenario)
    assert stored["title"] == "Spring sale & more"
    assert stored["excerpt"] == "img src=x onerror=alert(1)"
    assert stored["error"] == {
        "message": "WordPress answered 400: Spring sale & more",
        "codes": ["ac"],
    }
    assert stored["names"] == ["Spring sale & more", "a < b"]
    # What holds no markup is kept exactly: an id, a number, a URL whose `&para=` is no entity.
    assert (stored["url"], stored["count"]) == (URL, 3)
    assert uuid.UUID(str(stored["draft_id"]))
