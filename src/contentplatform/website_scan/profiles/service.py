"""The rules of a configuration's site profile: what a site says about the business behind it
(name, summary, products, audiences, tone), read from one of its snapshots. Never commits.

A suggestion only: nothing here writes the brand voice; applying it is a Team and Settings
action. none -> generating -> ready | failed; each refresh replaces the one profile of the
configuration. A refresh reads the given snapshot of the configuration (finished; 404 otherwise,
410 when retention removed its content), by default its latest finished, non-partial one (400
when there is none); holds `website_scan.profile` credits (402 when short) and is 409 while one
is generating. The reading itself is a durable workflow started once this commits
(durable.py; the inference in inference.py).
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.core.runtime import Runtime
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.tenants import service as tenants
from contentplatform.website_scan import service
from contentplatform.website_scan.errors import (
    ContentPurged,
    NoSnapshotToProfile,
    SiteProfileGenerating,
    SnapshotNotFound,
)
from contentplatform.website_scan.models import CrawlSnapshot, SiteProfile
from contentplatform.website_scan.profiles import durable as profile_durable
from contentplatform.website_scan.profiles import repository as profile_queries
from contentplatform.website_scan.profiles.schemas import (
    ProfileFields,
    RefreshProfileInput,
)
from contentplatform.website_scan.profiles.schemas import SiteProfile as SiteProfileRecord
from contentplatform.website_scan.snapshots import service as snapshots

KIND = "website_scan.profile"


def record(config_id: uuid.UUID, profile: SiteProfile | None) -> SiteProfileRecord:
    """The profile as the API shows it; status `none` and empty fields before any refresh."""
    if profile is None:
        return SiteProfileRecord(
            config_id=config_id, snapshot_id=None, status="none", generated_at=None
        )
    fields = ProfileFields.model_validate(profile.profile or {})
    return SiteProfileRecord(
        **fields.model_dump(),
        config_id=profile.config_id,
        snapshot_id=profile.snapshot_id,
        status=profile.status,
        error=profile.error,
        generated_at=profile.generated_at,
    )


async def get(
    session: AsyncSession, tenant_id: uuid.UUID, config_id: uuid.UUID
) -> SiteProfileRecord:
    config = await service.require(session, tenant_id, config_id)
    return record(config.id, await profile_queries.profile_of(session, tenant_id, config.id))


async def refresh(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, data: RefreshProfileInput
) -> SiteProfileRecord:
    """The profile generating from the snapshot, its credits held; its workflow starts once
    this commits."""
    config = await service.require(session, tenant_id, data.id)
    # One refresh of the organization's profiles at a time: two cannot both start one.
    await tenants.lock_tenant(session, tenant_id)
    snapshot = await _snapshot(session, tenant_id, config.id, data.snapshot_id)
    profile = await profile_queries.profile_of(session, tenant_id, config.id)
    if profile is not None and profile.status == "generating":
        raise SiteProfileGenerating(
            "The site profile of this configuration is being generated; wait for it to be "
            "ready or failed, then refresh it again."
        )
    profile_id = profile.id if profile is not None else uuid.uuid4()
    attempt = (profile.attempt if profile is not None else 0) + 1
    # Held before the profile changes: a refusal (402) leaves it as it was.
    hold = await credits.reserve(
        session,
        tenant_id,
        kind=KIND,
        idempotency_key=f"site-profile:{profile_id}:{attempt}",
        amount=credits.price(KIND).amount,
        ttl_seconds=runtime.settings.credit_reservation_ttl_seconds,
        monthly_grant=runtime.settings.monthly_credit_grant,
        creator=credits.Creator(resource_type="crawl_config", resource_id=str(config.id)),
    )
    now = utcnow()
    if profile is None:
        profile = SiteProfile(id=profile_id, tenant_id=tenant_id, config_id=config.id)
        profile.created_at = now
        session.add(profile)
    profile.attempt = attempt
    profile.snapshot_id = snapshot.id
    profile.status = "generating"
    profile.profile = {}
    profile.error = None
    profile.reservation_id = hold.id
    profile.generated_at = None
    profile.updated_at = now
    await session.flush()
    durable.start_after_commit(
        session,
        profile_durable.generate,
        profile_durable.workflow_id(profile.id, attempt),
        str(tenant_id),
        str(profile.id),
        attempt,
    )
    return record(config.id, profile)


async def _snapshot(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    config_id: uuid.UUID,
    snapshot_id: uuid.UUID | None,
) -> CrawlSnapshot:
    """The snapshot to read: the one named, when it is a finished snapshot of this config
    whose content is kept; else the config's latest finished, non-partial one."""
    if snapshot_id is None:
        latest = await profile_queries.latest_complete_snapshot(session, tenant_id, config_id)
        if latest is None:
            raise NoSnapshotToProfile(
                "The configuration has no finished, non-partial snapshot to read a site profile "
                "from; run a crawl (websiteScan.startCrawl) and refresh once it completes."
            )
        return latest
    snapshot = await snapshots.require_snapshot(session, tenant_id, snapshot_id)
    if snapshot.config_id != config_id:
        raise SnapshotNotFound(snapshot_id)
    if snapshot.content_purged:
        raise ContentPurged(
            "The snapshot's page content was removed by retention (only the latest 20 snapshots "
            "of a configuration keep it); refresh from a newer snapshot."
        )
    return snapshot
