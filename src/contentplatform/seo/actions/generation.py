"""seo.generateActions: the rules (rules.py) applied to the newest local signals, reconciled with
the actions there are. Never commits; idempotent: the same signals twice make nothing new.

Each source is read as stored (never a provider call): `audit`, the newest completed audit (or
the one named); `search_console`, the insights of the last 28 final days (listSearchInsights'
rules, their default 100 impressions); `url_inspection`, the newest completed inspection of
each URL; `rank`, the last three checks of each active tracked keyword; `geo`, the readiness of
the newest complete scan of the site. A source with nothing stored yet (no audit, no property,
no scan) is not evaluated: it creates nothing and moves nothing. `ai_visibility`, the newest
run's reading of each active prompt: close_ai_gap where competitors were named and the brand
not.

Per signal, by fingerprint: none yet, a new open action (at most MAX_PER_RULE per type, the
highest impact first); open or in progress, its evidence, impact, URLs and pages refreshed (and
its priority, unless a person changed it); done, verification `still_present`; verified, a
regression: reopened. dismissed ones are left alone until restored. A done action whose signal
an evaluated source no longer shows is verified (`fixed`); an open one stays as it is (a person
decides).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import utcnow
from contentplatform.seo.actions import repository, rules, schemas
from contentplatform.seo.actions.rules import Candidate
from contentplatform.seo.actions.service import SYSTEM, move, record, set_priority, written
from contentplatform.seo.ai_visibility import reports as ai_visibility
from contentplatform.seo.audits import service as audits
from contentplatform.seo.audits.errors import AuditNotCompleted
from contentplatform.seo.geo import service as geo
from contentplatform.seo.geo.errors import NoCompleteScan
from contentplatform.seo.geo.schemas import ReadinessInput
from contentplatform.seo.insights import service as insights
from contentplatform.seo.insights.schemas import InsightType
from contentplatform.seo.models import SeoAction
from contentplatform.seo.pages.inventory import key_of
from contentplatform.tenants import service as tenants

# New actions per type and generation: the highest impact first. A signal past it still counts
# as present (an action of it is refreshed, not verified), so the next generation on the same
# data makes nothing new.
MAX_PER_RULE = 50
MAX_LISTED = 50
INSIGHTS: tuple[InsightType, ...] = (
    "low_ctr",
    "striking_distance",
    "decaying_page",
    "cannibalization",
)


@dataclass
class Signals:
    """What one source shows now: its candidates, which of the existing actions of the source
    it speaks for (one it did not evaluate is never verified), and what it was."""

    candidates: list[Candidate]
    covers: Callable[[SeoAction], bool]
    read: str


def _always(row: SeoAction) -> bool:
    return True


async def _audit(
    session: AsyncSession, tenant_id: uuid.UUID, audit_id: uuid.UUID | None
) -> Signals | None:
    if audit_id is not None:
        audit = await audits.require_audit(session, tenant_id, audit_id)
        if audit.status != "completed":
            raise AuditNotCompleted(f"The audit {audit_id} is {audit.status}: it has no issues.")
    else:
        found = await repository.latest_audit(session, tenant_id)
        if found is None:
            return None
        audit = found
    issues = await repository.audit_issues(session, tenant_id, audit.id)
    traffic = await repository.audit_traffic(session, tenant_id, audit.id)
    return Signals(rules.from_audit(audit.id, issues, traffic), _always, f"the audit {audit.id}")


async def _search_console(session: AsyncSession, tenant_id: uuid.UUID) -> Signals | None:
    found: list[Candidate] = []
    for kind in INSIGHTS:
        computed = await insights.compute(session, tenant_id, kind)
        if computed is None:
            return None
        found += [rules.from_insight(insight) for insight in computed.insights]
    return Signals(found, _always, "the Search Console insights")


async def _inspections(session: AsyncSession, tenant_id: uuid.UUID) -> Signals:
    rows = await repository.latest_inspections(session, tenant_id)
    keys = {row.id: key_of(row.url) for row in rows}
    pages = await repository.pages_of(
        session, tenant_id, {key[1] for key in keys.values() if key is not None}
    )
    found = []
    for row in rows:
        key = keys[row.id]
        page = pages.get(key[1]) if key is not None else None
        candidate = rules.from_inspection(row, page[1:] if page else None)
        if candidate is not None:
            found.append(candidate)
    return Signals(found, _always, "the newest URL inspections")


async def _rank(session: AsyncSession, tenant_id: uuid.UUID) -> Signals:
    found = []
    active = set()
    for keyword, positions in await repository.rank_series(session, tenant_id, rules.RANK_CHECKS):
        active.add(str(keyword.id))
        candidate = rules.from_rank(
            rules.RankSeries(
                keyword_id=keyword.id,
                keyword=keyword.keyword,
                device=keyword.device,
                location_code=keyword.location_code,
                search_volume=keyword.search_volume,
                url=keyword.url,
                target_url=keyword.target_url,
                positions=positions,
            )
        )
        if candidate is not None:
            found.append(candidate)

    def covers(row: SeoAction) -> bool:
        # A keyword paused, deleted or never checked says nothing of the ranking.
        return row.evidence.get("keyword_id") in active

    return Signals(found, covers, "the last rank checks")


async def _geo(session: AsyncSession, tenant_id: uuid.UUID) -> Signals | None:
    try:
        readiness = await geo.readiness(session, tenant_id, ReadinessInput())
    except NoCompleteScan:
        return None
    robots_read = any(agent.allowed is not None for agent in readiness.crawler_access)

    def covers(row: SeoAction) -> bool:
        # A scan without a readable robots.txt says nothing of the crawlers.
        return robots_read or "bot" not in row.evidence

    return Signals(rules.from_geo(readiness), covers, f"the scan {readiness.snapshot_id}")


async def _ai_visibility(session: AsyncSession, tenant_id: uuid.UUID) -> Signals:
    gaps = await ai_visibility.gaps(session, tenant_id)
    active = await ai_visibility.active_prompt_ids(session, tenant_id)

    def covers(row: SeoAction) -> bool:
        # A prompt paused, deleted or never answered says nothing of the gap.
        return row.evidence.get("prompt_id") in active

    return Signals(
        [rules.from_ai_gap(gap) for gap in gaps], covers, "the latest AI visibility runs"
    )


async def _gather(
    session: AsyncSession, tenant_id: uuid.UUID, source: str, audit_id: uuid.UUID | None
) -> Signals | None:
    if source == "audit":
        return await _audit(session, tenant_id, audit_id)
    if source == "search_console":
        return await _search_console(session, tenant_id)
    if source == "url_inspection":
        return await _inspections(session, tenant_id)
    if source == "rank":
        return await _rank(session, tenant_id)
    if source == "geo":
        return await _geo(session, tenant_id)
    if source == "ai_visibility":
        return await _ai_visibility(session, tenant_id)
    return None


def _page_ids(candidate: Candidate, pages: dict[str, tuple[uuid.UUID, int, int]]) -> list[str]:
    found = []
    for url in candidate.target_urls:
        key = key_of(url)
        if key is not None and key[1] in pages:
            found.append(str(pages[key[1]][0]))
    return list(dict.fromkeys(found))


def _new(
    tenant_id: uuid.UUID, candidate: Candidate, page_ids: list[str], now: datetime
) -> SeoAction:
    row = SeoAction(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        type=candidate.type,
        source=candidate.source,
        title=candidate.title,
        description=candidate.description,
        impact_score=candidate.impact,
        effort=rules.EFFORT[candidate.type],
        status="open",
        target_urls=candidate.target_urls,
        page_ids=page_ids,
        keywords=candidate.keywords,
        evidence=candidate.evidence,
        fingerprint=candidate.fingerprint,
        audit_id=candidate.audit_id,
        check_id=candidate.check_id,
        created_at=now,
        updated_at=now,
    )
    set_priority(row, rules.priority_of(candidate.impact, candidate.type, candidate.evidence))
    return row


def _refresh(row: SeoAction, candidate: Candidate, page_ids: list[str]) -> bool:
    """The action's figures as its signal shows them now; whether any changed. Its priority
    follows its impact unless a person set another."""
    derived = rules.priority_of(row.impact_score, row.type, row.evidence)
    fresh: dict[str, Any] = {
        "evidence": candidate.evidence,
        "impact_score": candidate.impact,
        "target_urls": candidate.target_urls,
        "page_ids": page_ids,
        "keywords": candidate.keywords,
        "audit_id": candidate.audit_id,
        "check_id": candidate.check_id,
    }
    changed = [name for name, value in fresh.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, fresh[name])
    if row.priority == derived:
        set_priority(row, rules.priority_of(row.impact_score, row.type, row.evidence))
    return bool(changed)


async def generate(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    sources: Collection[str],
    audit_id: uuid.UUID | None = None,
    lock: bool = True,
) -> schemas.GeneratedActions:
    """Apply the rules of `sources`. `lock`: serialize with the tenant's other generations (the
    operation); the runs after an audit or a sync take no tenant lock inside their own
    transaction and rely on the unique fingerprint instead (a race fails theirs, not the run)."""
    if lock:
        await tenants.lock_tenant(session, tenant_id)
    gathered: dict[str, Signals] = {}
    for source in schemas.SIGNAL_SOURCES:
        if source in sources:
            found = await _gather(session, tenant_id, source, audit_id)
            if found is not None:
                gathered[source] = found
    existing = await repository.generated(session, tenant_id, list(gathered))
    present: dict[str, Candidate] = {}
    creatable: set[str] = set()
    for signals in gathered.values():
        by_type: dict[str, list[Candidate]] = defaultdict(list)
        for candidate in signals.candidates:
            by_type[candidate.type].append(candidate)
        for found_of_type in by_type.values():
            found_of_type.sort(key=lambda candidate: (-candidate.impact, candidate.subject))
            for index, candidate in enumerate(found_of_type):
                present.setdefault(candidate.fingerprint, candidate)
                if index < MAX_PER_RULE:
                    creatable.add(candidate.fingerprint)
    urls = {url for candidate in present.values() for url in candidate.target_urls}
    pages = await repository.pages_of(
        session, tenant_id, {key[1] for url in urls if (key := key_of(url)) is not None}
    )
    counts: Counter[str] = Counter()
    listed: list[SeoAction] = []
    now = utcnow()
    for fingerprint, candidate in present.items():
        row = existing.get(fingerprint)
        read = gathered[candidate.source].read
        if row is None:
            if fingerprint in creatable:
                row = _new(tenant_id, candidate, _page_ids(candidate, pages), now)
                session.add(row)
                written(session, row, None, SYSTEM, f"Generated from {read}.", at=now)
                counts["created"] += 1
                listed.append(row)
            continue
        if row.status == "dismissed":
            counts["unchanged"] += 1  # stays dismissed until a person restores it
            continue
        changed = _refresh(row, candidate, _page_ids(candidate, pages))
        if row.status == "verified":
            detail = f"The signal is back in {read} after it was verified fixed: a regression."
            row.verification = _verification(now, "still_present", detail)
            move(session, row, "open", SYSTEM, f"Reopened: {detail}")
            counts["reopened"] += 1
            listed.append(row)
        elif row.status == "done":
            row.verification = _verification(now, "still_present", f"Still shown by {read}.")
            counts["updated" if changed else "unchanged"] += 1
        else:
            counts["updated" if changed else "unchanged"] += 1
    for fingerprint, row in existing.items():
        signals = gathered[row.source]
        if fingerprint in present or row.status != "done" or not signals.covers(row):
            continue
        detail = f"No longer shown by {signals.read}."
        row.verification = _verification(now, "fixed", detail)
        move(session, row, "verified", SYSTEM, f"Verified: {detail}")
        counts["verified"] += 1
    await session.flush()
    listed.sort(key=lambda row: (-row.impact_score, row.title))
    return schemas.GeneratedActions(
        created=counts["created"],
        updated=counts["updated"],
        reopened=counts["reopened"],
        verified=counts["verified"],
        unchanged=counts["unchanged"],
        data=[record(row) for row in listed[:MAX_LISTED]],
    )


def _verification(now: datetime, result: str, detail: str) -> dict[str, Any]:
    return {"checked_at": now.isoformat(), "result": result, "detail": detail}
