"""Helpers for the Generation API tests: knowledge documents worth writing from, an organization
that generates through the API (documents via tests.documents.support.Docs), and direct looks at
the database behind it."""

from __future__ import annotations

import time
import uuid
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from contentplatform.config import Settings
from contentplatform.credits.models import CreditReservation
from contentplatform.documents.models import DocumentChunk
from contentplatform.drafts import service as drafts
from contentplatform.generation import schemas, service
from contentplatform.generation.pipeline.run import workflow_id
from contentplatform.kit.db import AFTER_COMMIT_KEY, Database
from tests.documents.support import Docs
from tests.support.database import run_on, select_all
from tests.support.orgs import Org
from tests.support.waits import until_workflow_ends

# A bound, not a wait: under CI (two suites of three workers on two cores) a run took over 30 s.
RUN_TIMEOUT = 90.0
BLOG_KIND = "generation.blog"
FINISHED = ("succeeded", "failed", "cancelled")

# A product handbook with distinct sections, each on one subject, as a content team would have.
HANDBOOK = """# Fernleaf Smart Irrigation Controller: Product Handbook

## Installation

The Fernleaf controller mounts on any wall within ten metres of your outdoor tap. Installation \
takes about twenty minutes and needs only a screwdriver and the two wall plugs in the box. \
Choose a spot out of direct rain, such as a garage wall or the inside of a garden shed, because \
the housing is splash-proof but not waterproof. Connect up to eight watering zones to the \
numbered terminals, one valve wire per terminal, and twist the shared common wires together \
under the terminal marked C. Plug in the power adapter last, once every wire is tight. The \
status light blinks blue while the controller starts and turns green when it joins your home \
Wi-Fi network. Open the Fernleaf app, scan the code printed under the cover, and name each zone \
after the part of the garden it waters, for example "front lawn" or "herb bed". The app then \
runs every zone for thirty seconds so you can walk the garden and confirm that each valve opens. \
A zone that stays dry during this test usually has its wires in the wrong terminal, and swapping \
two wires fixes it without any tools. Installers should leave the manual override switch in the \
automatic position before closing the cover.

## Watering schedules

Each zone keeps its own irrigation schedule, so lawns, vegetable beds and shrubs get different \
amounts of water. A schedule sets the days, the start time and the run time for one zone, and \
the controller waters zones one after another so the water pressure never drops. Early morning \
starts lose the least water to evaporation and give leaves time to dry before the evening. The \
controller reads the local weather forecast every morning and skips a scheduled watering when \
rain is expected within the next twelve hours. Seasonal adjustment lowers irrigation run times \
in cool months and raises them during summer heat waves, without anyone editing the schedules. \
Gardeners who prefer full control can switch seasonal adjustment off for any single zone. A \
watering schedule can also follow local hosepipe rules: enter the allowed days once, and the \
controller never plans a watering outside them. Most gardens save around thirty percent of \
their water in the first year of smart irrigation, mainly because no watering runs in the rain. \
The history screen shows every watering the controller ran or skipped, with the reason for each \
skipped one.

## Soil moisture sensors

Optional soil moisture sensors measure how wet the ground is at root depth. Push each sensor \
into the soil beside the plants it serves, with the tip about fifteen centimetres down for lawns \
and deeper for shrubs. When a sensor reports moist soil, the controller postpones watering for \
that zone until the soil dries out. Sensors pair with the controller over radio in under a \
minute and work up to eighty metres away in open ground. Each sensor runs for two years on a \
single AA battery and reports every fifteen minutes. The app warns you a month before a battery \
runs flat, so a zone never falls back to its plain schedule without notice. Sandy soils dry \
quickly and clay soils hold water for days, which is why one sensor per soil type gives the best \
results. Sensors also record soil temperature, and the controller delays the first spring \
watering until the ground is warm enough for roots to take up water.

## Plans and pricing

| Plan | Price | Zones |
|---|---|---|
| Basic | $9 per month | 4 |
| Garden | $15 per month | 8 |
| Estate | $29 per month | 16 |

Every plan includes weather-based irrigation, the mobile app and the watering history. The \
Garden and Estate plans add soil moisture sensor support and shared access for a second \
gardener. Annual billing saves two months of fees on any plan. You can move to a larger plan at \
any time, and the price difference is charged only for the rest of the current month. \
Cancelling stops the next payment, and the controller keeps running its last schedules without \
the weather service.

## Troubleshooting

If the status light blinks red, the controller has lost its Wi-Fi connection. Move the router \
closer or add a range extender, then hold the reset button for five seconds to reconnect. A \
zone that never waters usually has a loose wire at its terminal or a closed manual valve. A zone \
that never stops watering points to a stuck valve, which needs cleaning or replacing. When the \
app shows the controller as offline but the light is green, sign out of the app and sign in \
again. Our support team answers questions by chat every day from eight in the morning to eight \
in the evening.
"""

BEEKEEPING = """# Backyard Beekeeping Guide

## Hive placement

Place the beehive where it gets morning sun and shelter from strong wind. Bees fly straight out \
of the entrance, so face it away from footpaths and neighbours. A hive stand keeps the colony \
dry and away from ants.

## Harvesting honey

Harvest honey in late summer, when most frames are capped with wax. Leave at least twenty \
kilograms of honey in the hive so the colony survives the winter. An extractor spins the frames \
and the honey flows out without damaging the comb.
"""

SOURDOUGH = """# Sourdough Baking Notes

## Feeding the starter

A sourdough starter is a living culture of wild yeast and bacteria. Feed the starter with equal \
weights of flour and water every day and keep it at room temperature. A healthy starter doubles \
in size within six hours of feeding. A spoon of honey in the dough feeds the yeast and gives \
the crust a deeper colour when baking.

## Shaping and baking

Shape the dough gently so the gas bubbles stay inside the loaf. Bake the sourdough loaf in a \
covered pot for the first twenty minutes to trap the steam. The crust turns deep brown when the \
lid comes off for the last half hour of baking.
"""

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'

# Text that talks about markup: a support article on what customers paste into forms.
MARKUP_NOTES = f"""# Widget Form Security Notes

## Form input testing

Testers paste {SCRIPT} into the widget feedback form to check that form input is shown as \
plain text. The widget form must also display {IMG} exactly as typed, never as an image. \
Every widget form field escapes angle brackets before it stores the input.

## Form review

Security reviews of the widget form happen before every release. The review checks every widget \
form field for escaping and records the results in the release notes.
"""


class Writer(Org):
    """One organization generating articles through one transport, with its documents (`docs`,
    the same users). Writes go as the admin unless told otherwise."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.docs = Docs.of(self)

    def ingest(self, filename: str, text: str) -> dict[str, Any]:
        return self.docs.ingest(filename, text.encode())

    def blog(self, role: str = "editor", **data: Any):
        return self.request("generation.blog", data, role=role)

    def start(self, **data: Any) -> dict[str, Any]:
        """generation.blog, which must succeed: the draft in generating with its run."""
        response = self.blog(**data)
        assert response.status_code == 200, response.text
        return response.json()

    def get_run(self, run_id: str, role: str = "member") -> dict[str, Any]:
        return self.ok("generation.getRun", {"id": run_id}, role=role)

    def wait(self, run_id: str) -> dict[str, Any]:
        """The run once it has finished (bounded): its workflow is waited for, not the API
        polled (tests/support/waits.py)."""

        def finished() -> dict[str, Any] | None:
            run = self.get_run(run_id)
            return run if run["status"] in FINISHED else None

        return until_workflow_ends(
            workflow_id(uuid.UUID(run_id)), finished, timeout=RUN_TIMEOUT, what=f"run {run_id}"
        )

    def watch(self, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Poll getRun until the run finishes (bounded), for tests of the progress a user sees
        on the way: the last run and every one seen."""
        deadline = time.monotonic() + RUN_TIMEOUT
        seen: list[dict[str, Any]] = []
        while True:
            current = self.get_run(run_id)
            seen.append(current)
            if current["status"] in FINISHED:
                return current, seen
            assert time.monotonic() < deadline, f"still {current['status']}: {current}"
            time.sleep(0.01)

    def generate(self, **data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start and wait: the finished run and its draft as it then is."""
        started = self.start(**data)
        run = self.wait(started["run"]["id"])
        return run, self.draft(started["id"])

    def draft(self, draft_id: str) -> dict[str, Any]:
        return self.ok("drafts.getById", {"id": draft_id}, role="member")

    def make_primary(self, document_id: str) -> None:
        self.ok(
            "documents.updateKnowledgeMetadata",
            {"id": document_id, "metadata": {"isPrimary": True}},
            role="editor",
        )


# --- behind the API ---------------------------------------------------------------------------


def blog_reservations(settings: Settings, tenant_id: uuid.UUID) -> list[dict[str, Any]]:
    """The tenant's generation.blog holds, oldest first."""
    holds = select_all(
        settings,
        select(CreditReservation)
        .where(CreditReservation.tenant_id == tenant_id, CreditReservation.kind == BLOG_KIND)
        .order_by(CreditReservation.created_at),
    )
    return [
        {
            "id": str(hold.id),
            "key": hold.idempotency_key,
            "status": hold.status,
            "amount": hold.amount,
            "committed_amount": hold.committed_amount,
        }
        for hold in holds
    ]


def chunk_ids_of(settings: Settings, document_id: str) -> set[str]:
    """The ids of a document's chunks in the search index."""
    query = select(DocumentChunk.id).where(DocumentChunk.document_id == uuid.UUID(document_id))
    return {str(chunk_id) for chunk_id in select_all(settings, query)}


def start_for_a_deleted_draft(settings: Settings, tenant_id: uuid.UUID, topic: str) -> str:
    """What generation.blog does (service.start_blog: hold, draft, queued run), and then what
    drafts.delete does, in one transaction, without starting the workflow: the service's
    reconciler finds the queued run without a workflow and starts it, deterministically after
    the draft is gone. The run's id."""

    async def scenario(db: Database) -> str:
        async with db.unit_of_work() as session:
            _, run = await service.start_blog(
                session,
                SimpleNamespace(settings=settings),  # type: ignore[arg-type]
                tenant_id,
                schemas.BlogInput(topic=topic),
                created_by="test",
            )
            # The workflow would start after commit (in this process, without DBOS): the
            # reconciler of the service under test starts it instead.
            session.info.pop(AFTER_COMMIT_KEY, None)
            await drafts.delete(session, tenant_id, run.draft_id)
            return str(run.id)

    return run_on(settings, scenario)
