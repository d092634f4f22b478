"""Generating a site profile as durable work: generating -> ready | failed.

One DBOS workflow per refresh (`site-profile:<profile id>:<attempt>`), started once the refresh
has committed. Its one step, `website_scan.profile_read`, reads the snapshot's sample of pages
and infers the profile (inference.py), outside any transaction; DBOS checkpoints what
it found, so a process that crashes after it settles without asking the model again (the
model's client retries an unavailable model itself). Then, in one
transaction, the profile is ready and its credits (`website_scan.profile`) are committed at
what the tokens cost (1 per started 1,000, at least 1, at most the hold); or it failed, with a
reason a person can act on, and its credits are released.

Each write checks the profile is still generating this attempt, so a late run never overwrites
a newer refresh. The reconciler restarts a refresh whose workflow is missing and fails one whose
workflow ended in error or that has been generating for longer than `STALL_SECONDS`: a profile
is never left `generating`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from dbos import DBOS
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.ai.base import ProviderError, ProviderUnavailable
from contentplatform.core import runtime
from contentplatform.credits import service as credits
from contentplatform.kit import durable
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import Conflict
from contentplatform.website_scan import repository
from contentplatform.website_scan.models import CrawlPage, SiteProfile
from contentplatform.website_scan.profiles import inference as profile_inference
from contentplatform.website_scan.profiles import repository as profile_queries
from contentplatform.website_scan.profiles import site_pages
from contentplatform.website_scan.profiles.schemas import ProfileFields

log = logging.getLogger(__name__)

# A refresh generating for longer than this is given up (its workflow cancelled): reading 20
# pages and one model call take seconds, a slow model a few minutes.
STALL_SECONDS = 15 * 60


def workflow_id(profile_id: uuid.UUID, attempt: int) -> str:
    return f"site-profile:{profile_id}:{attempt}"


class _Settled(Exception):
    """The profile is no longer this run's to generate (a newer refresh, or it ended)."""


class NothingToRead(Exception):
    """The snapshot has no page that answered 2xx."""


@DBOS.workflow(name="website_scan.site_profile")
async def generate(tenant_id: str, profile_id: str, attempt: int) -> str:
    tenant, profile = uuid.UUID(tenant_id), uuid.UUID(profile_id)
    try:
        found = await read(tenant_id, profile_id, attempt)
    except _Settled:
        return "settled"
    except Exception as error:
        await fail(tenant, profile, attempt, reason_for(error))
        return "failed"
    if found is None:
        return "settled"
    await finish(tenant, profile, attempt, found)
    return "ready"


def reason_for(error: Exception) -> str:
    if isinstance(error, NothingToRead):
        return (
            "The snapshot has no page that answered with content (2xx) to read a profile "
            "from; crawl the site again, then refresh the profile."
        )
    if isinstance(error, ProviderUnavailable):
        return (
            f"The language model is unavailable ({error.message}); refresh the profile again "
            "in a few minutes."
        )
    if isinstance(error, ProviderError):
        return (
            f"The language model refused the request ({error.message}); check the model "
            "settings, then refresh the profile again."
        )
    log.exception("site profile failed", exc_info=error)
    return (
        f"Generating the profile failed unexpectedly ({type(error).__name__}); refresh it again "
        "or contact support."
    )


@DBOS.step(name="website_scan.profile_read")
async def read(tenant_id: str, profile_id: str, attempt: int) -> dict[str, Any] | None:
    """The inferred profile and what it cost, as plain values (DBOS keeps them); None when the
    profile is no longer generating this attempt."""
    current = runtime.current()
    tenant, profile_key = uuid.UUID(tenant_id), uuid.UUID(profile_id)
    async with current.db.unit_of_work() as session:
        profile = await profile_queries.get_profile(session, tenant, profile_key)
        if profile is None or not _ours(profile, attempt) or profile.snapshot_id is None:
            return None
        config = await repository.get_config(session, tenant, profile.config_id)
        start_url = config.start_url if config is not None else ""
        rows = await profile_queries.sample_pages(
            session, tenant, profile.snapshot_id, site_pages.MAX_PAGES
        )
        pages = [_site_page(row) for row in rows]
    if not pages:
        raise NothingToRead()
    inference = await profile_inference.infer(current.model, start_url, pages)
    return {
        "profile": inference.profile.model_dump(mode="json"),
        "input_tokens": inference.input_tokens,
        "output_tokens": inference.output_tokens,
        "model": inference.model,
        "extractive": inference.extractive,
    }


def _site_page(row: CrawlPage) -> site_pages.SitePage:
    return site_pages.SitePage(
        id=str(row.id),
        url=row.url,
        depth=row.depth,
        title=row.title,
        meta_description=row.meta_description,
        headings=[(str(tag), str(text)) for tag, text in row.headings or ()],
        json_ld=list(row.json_ld or ()),
        language=row.language,
        text=site_pages.capped(row.content),
    )


def _ours(profile: SiteProfile, attempt: int) -> bool:
    return profile.status == "generating" and profile.attempt == attempt


def cost_of(tokens: int) -> int:
    """1 credit per started 1,000 tokens, at least 1 (the hold caps it)."""
    return max(1, credits.tokens_charge(tokens))


async def finish(
    tenant_id: uuid.UUID, profile_id: uuid.UUID, attempt: int, found: dict[str, Any]
) -> None:
    """The profile ready, its credits committed at what its tokens cost, in one transaction."""
    fields = ProfileFields.model_validate(found["profile"])
    async with runtime.current().db.unit_of_work() as session:
        profile = await profile_queries.get_profile(session, tenant_id, profile_id, for_update=True)
        if profile is None or not _ours(profile, attempt):
            return
        if profile.reservation_id is not None:
            tokens = int(found["input_tokens"]) + int(found["output_tokens"])
            try:
                held = await credits.get_reservation(session, tenant_id, profile.reservation_id)
                spent = credits.Spent(
                    int(found["input_tokens"]),
                    int(found["output_tokens"]),
                    "crawl_config",
                    str(profile.config_id),
                    model=found.get("model"),
                )
                await credits.commit(
                    session,
                    tenant_id,
                    profile.reservation_id,
                    min(cost_of(tokens), held.amount),
                    spent=spent,
                )
            except Conflict:
                log.warning("site profile %s outlived its credit hold", profile_id)
        now = utcnow()
        profile.status = "ready"
        profile.profile = fields.model_dump(mode="json")
        profile.error = None
        profile.generated_at = now
        profile.updated_at = now


async def fail(tenant_id: uuid.UUID, profile_id: uuid.UUID, attempt: int, reason: str) -> None:
    async with runtime.current().db.unit_of_work() as session:
        await mark_failed(session, tenant_id, profile_id, attempt, reason)


async def mark_failed(
    session: AsyncSession, tenant_id: uuid.UUID, profile_id: uuid.UUID, attempt: int, reason: str
) -> None:
    """The profile failed with `reason` and its credits given back, unless it ended meanwhile."""
    profile = await profile_queries.get_profile(session, tenant_id, profile_id, for_update=True)
    if profile is None or not _ours(profile, attempt):
        return
    if profile.reservation_id is not None:
        try:
            await credits.release(session, tenant_id, profile.reservation_id)
        except Conflict:
            log.warning("the credits of site profile %s were settled already", profile_id)
    profile.status = "failed"
    profile.error = reason
    profile.updated_at = utcnow()


@durable.reconcile_source("website_scan.site_profile")
async def unfinished_profiles(session: AsyncSession) -> list[durable.Unfinished]:
    """Profiles generating: restarted if their workflow is missing (a crash before it started),
    failed when it ended in error or they have been generating too long."""
    now = utcnow()
    work = []
    for profile in await profile_queries.generating_profiles(session):
        stalled = (now - profile.updated_at).total_seconds() > STALL_SECONDS
        work.append(
            durable.Unfinished(
                workflow_id=workflow_id(profile.id, profile.attempt),
                restart=durable.restarter(
                    generate,
                    workflow_id(profile.id, profile.attempt),
                    str(profile.tenant_id),
                    str(profile.id),
                    profile.attempt,
                ),
                give_up=_giver_up(profile.tenant_id, profile.id, profile.attempt),
                stalled_reason="stalled" if stalled else None,
            )
        )
    return work


def _giver_up(tenant_id: uuid.UUID, profile_id: uuid.UUID, attempt: int) -> Any:
    async def give_up(session: AsyncSession, reason: str) -> None:
        message = (
            "Generating the profile took longer than 15 minutes and was stopped; refresh it again."
            if reason == "stalled"
            else f"Generating the profile ended unexpectedly ({reason}); refresh it again."
        )
        await mark_failed(session, tenant_id, profile_id, attempt, message)

    return give_up
