"""The Website Scan operations on configurations and their schedules: declarations only; the
rules live in service.py (crawl runs are crawls/).

Every member reads configs; editors create, change and schedule them; admins delete them (and
alone may turn off respecting robots.txt).
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.website_scan import schemas, service
from contentplatform.website_scan.crawls import service as crawls
from contentplatform.website_scan.errors import (
    BadCrawlSchedule,
    CrawlConfigNotFound,
    CrawlScheduleNotFound,
    CrawlSettingUnavailable,
    DuplicateStartUrl,
    RobotsOverrideForbidden,
    StartUrlRefused,
)

router = ProcedureRouter("websiteScan", tag="Website Scan")

_SETTINGS = (
    "The start URL must be https and resolve to public addresses only (400 otherwise, nothing "
    "is sent to it); the crawler checks every request, redirect hop and discovered host again. "
    "Include and exclude patterns are regular expressions on the URL path (exclude wins), "
    "refused with a 400 naming the pattern when they do not compile or backtrack without end "
    "on a long path; every match also runs with a timeout. maxPages 1-5000, maxDepth 0-10, "
    "requestsPerSecond 0.2-10 and concurrency 1-2, per host. robots.txt is respected unless an "
    "admin turns it off (403 for others). renderJavascript is not available (only false). "
    "Every request sends the User-Agent the config shows (`user_agent`, fixed by the service). "
    "The plan may cap the pages of one crawl (`crawl_pages`): a larger maxPages is a 403 naming "
    "the limit."
)


@router.get("listConfigs", "/v1/website-scan/configs", access=Access.member)
async def list_configs(ctx: Context, data: schemas.ListConfigsInput) -> schemas.CrawlConfigPage:
    """List crawl configurations (one per site/section).

    Newest first, each with its schedule (or null) and its last run (null until runs come).
    `search` matches the name or start URL; `scheduled` keeps configs with (true) or without
    (false) an enabled schedule. Deleted configs are hidden."""
    return await service.page(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "createConfig",
    "/v1/website-scan/configs",
    access=Access.editor,
    description=_SETTINGS + " 409 when another config of the organization starts at the same "
    "(normalized) URL.",
    errors=[
        StartUrlRefused,
        CrawlSettingUnavailable,
        RobotsOverrideForbidden,
        DuplicateStartUrl,
        PlanLimitReached,
    ],
)
async def create_config(ctx: Context, data: schemas.CreateConfigInput) -> schemas.CrawlConfig:
    """Create a crawl configuration."""
    return await service.create(
        ctx.session,
        ctx.settings,
        ctx.tenant.tenant_id,
        ctx.tenant.role,
        ctx.identity.subject,
        data,
    )


@router.get(
    "getConfig",
    "/v1/website-scan/configs/{id}",
    access=Access.member,
    errors=[CrawlConfigNotFound],
)
async def get_config(ctx: Context, data: schemas.ConfigIdInput) -> schemas.CrawlConfig:
    """Get one crawl configuration.

    Its start URL, scope (include and exclude patterns, depth, page limit), request rate and
    concurrency, robots.txt and sitemap handling, schedule and last run. Another organization's
    configuration is 404."""
    return await service.get(ctx.session, ctx.tenant.tenant_id, data.id)


@router.patch(
    "updateConfig",
    "/v1/website-scan/configs/{id}",
    access=Access.editor,
    description="Fields given (and not null) change; the others stay. Applies to the next run "
    "only: a running crawl keeps the settings it started with. " + _SETTINGS,
    errors=[
        CrawlConfigNotFound,
        StartUrlRefused,
        CrawlSettingUnavailable,
        RobotsOverrideForbidden,
        DuplicateStartUrl,
        PlanLimitReached,
    ],
)
async def update_config(ctx: Context, data: schemas.UpdateConfigInput) -> schemas.CrawlConfig:
    """Update crawl settings (partial)."""
    return await service.update(
        ctx.session, ctx.settings, ctx.tenant.tenant_id, ctx.tenant.role, data
    )


@router.delete(
    "deleteConfig",
    "/v1/website-scan/configs/{id}",
    access=Access.admin,
    errors=[CrawlConfigNotFound],
)
async def delete_config(ctx: Context, data: schemas.ConfigIdInput) -> Success:
    """Soft-delete a config, its schedule and its queued runs.

    The config disappears from every operation (404) and its schedule stops. A queued crawl is
    cancelled and a running one stops before its next page (its pages so far make a partial
    snapshot). Its snapshots and imported documents are kept."""
    await crawls.delete_config(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS


@router.procedure(
    "setSchedule",
    "PUT",
    "/v1/website-scan/configs/{id}/schedule",
    access=Access.editor,
    errors=[CrawlConfigNotFound, BadCrawlSchedule],
)
async def set_schedule(ctx: Context, data: schemas.SetScheduleInput) -> schemas.CrawlSchedule:
    """Create or replace the recurring-scan schedule of a config.

    `cronExpression` has 5 fields read on the wall clock of `timezone` (default: the
    organization's zone as it is now, jobs.schedulingConfig; the schedule keeps the zone it
    was set with). A crawl runs at most once a day: the minute and the hour must each be one
    number (`30 2 * * *`, `0 6 * * MON`), else 400 naming `cronExpression`; it then fires once
    per local day it names, across daylight-saving changes. `next_run_at` (UTC) is recomputed
    on every change, and null while disabled."""
    return await service.set_schedule(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteSchedule",
    "/v1/website-scan/configs/{id}/schedule",
    access=Access.admin,
    errors=[CrawlConfigNotFound, CrawlScheduleNotFound],
)
async def delete_schedule(ctx: Context, data: schemas.ConfigIdInput) -> Success:
    """Remove the recurring schedule.

    404 when the config has no schedule."""
    await service.delete_schedule(ctx.session, ctx.tenant.tenant_id, data.id)
    return SUCCESS
