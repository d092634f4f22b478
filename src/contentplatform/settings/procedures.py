"""The Settings operations (tenant settings, brand voice, content strategy, content rules):
declarations only; the rules live in service.py and rules.py.

Every member reads them and may lint (`checkRules`); every write is the admin's.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts.errors import DraftNotFound
from contentplatform.kit.schemas import Empty, Success
from contentplatform.settings import schemas, service
from contentplatform.settings.errors import (
    InvalidRuleConfig,
    RuleNotFound,
    StaleVersion,
    TooManyRules,
    UnknownReference,
)

router = ProcedureRouter("settings", tag="Team and Settings")


@router.get("get", "/v1/settings", access=Access.member)
async def get(ctx: Context, _: Empty) -> schemas.TenantSettings:
    """Tenant settings.

    What was never changed reads as its default. The scheduling time zone stays in a job's
    `schedulingConfig`."""
    return await service.get_settings(ctx.session, ctx.tenant.tenant_id)


@router.patch("update", "/v1/settings", access=Access.admin, errors=[UnknownReference])
async def update(ctx: Context, data: schemas.UpdateSettingsInput) -> schemas.TenantSettings:
    """Change tenant settings (partial).

    Only the fields sent change, within a group too. `name` is the organization's name.
    Referenced ids (a default reviewer, default documents, a default publisher connection) must
    be this organization's: another is 400, naming the field."""
    return await service.update_settings(ctx.session, ctx.tenant, ctx.identity.subject, data)


@router.get("getBrandVoice", "/v1/settings/brand-voice", access=Access.member)
async def get_brand_voice(ctx: Context, _: Empty) -> schemas.BrandVoice:
    """The brand voice generation writes in.

    Version 0 (the defaults) until an admin sets it."""
    return await service.get_voice(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "updateBrandVoice",
    "PUT",
    "/v1/settings/brand-voice",
    access=Access.admin,
    errors=[StaleVersion],
)
async def update_brand_voice(
    ctx: Context, data: schemas.UpdateBrandVoiceInput
) -> schemas.BrandVoice:
    """Replace the brand voice.

    Each update is a new version (+1); with `expectedVersion`, a voice that moved on is 409.
    Articles generated from then on are written in it (the prompt carries it) and each draft's
    provenance records `brand_voice_version`."""
    return await service.update_voice(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.get("getStrategy", "/v1/settings/content-strategy", access=Access.member)
async def get_strategy(ctx: Context, _: Empty) -> schemas.ContentStrategy:
    """Content strategy: goals, pillars, personas, cadence.

    Version 0 (the defaults) until an admin sets it."""
    return await service.get_strategy(ctx.session, ctx.tenant.tenant_id)


@router.procedure(
    "updateStrategy",
    "PUT",
    "/v1/settings/content-strategy",
    access=Access.admin,
    errors=[StaleVersion],
)
async def update_strategy(
    ctx: Context, data: schemas.UpdateStrategyInput
) -> schemas.ContentStrategy:
    """Replace the content strategy.

    Each update is a new version (+1); with `expectedVersion`, a strategy that moved on is 409.
    Topic suggestions rank topics near a pillar's keywords higher (by its weight) and name the
    pillar; excluded topics are never suggested, nor rotated into a job's runs."""
    return await service.update_strategy(
        ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data
    )


@router.get("listRules", "/v1/settings/content-rules", access=Access.member)
async def list_rules(ctx: Context, data: schemas.ListRulesInput) -> schemas.RuleList:
    """Content rules (editorial lint), oldest first."""
    return await service.list_rules(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "createRule",
    "/v1/settings/content-rules",
    access=Access.admin,
    errors=[InvalidRuleConfig, TooManyRules],
)
async def create_rule(ctx: Context, data: schemas.CreateRuleInput) -> schemas.ContentRule:
    """Add a content rule.

    `config` is validated for the `type` (a regex must compile: 400 with the compiler's
    message). Regexes run with a match timeout. At most 100 rules per organization (403)."""
    return await service.create_rule(ctx.session, ctx.tenant.tenant_id, ctx.identity.subject, data)


@router.patch(
    "updateRule",
    "/v1/settings/content-rules/{id}",
    access=Access.admin,
    errors=[RuleNotFound, InvalidRuleConfig],
)
async def update_rule(ctx: Context, data: schemas.UpdateRuleInput) -> schemas.ContentRule:
    """Change a content rule (its type stays; a new config is validated for it)."""
    return await service.update_rule(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteRule", "/v1/settings/content-rules/{id}", access=Access.admin, errors=[RuleNotFound]
)
async def delete_rule(ctx: Context, data: schemas.RuleIdInput) -> Success:
    """Delete a content rule."""
    return await service.delete_rule(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "checkRules", "/v1/settings/content-rules/check", access=Access.member, errors=[DraftNotFound]
)
async def check_rules(ctx: Context, data: schemas.CheckRulesInput) -> schemas.CheckResult:
    """Lint a draft or a piece of content against the rules.

    The enabled rules of `stage` are checked against the title and the text of the HTML
    content; each violation has an excerpt and its offsets in the checked text. `passed` is
    false when an error-level rule is broken. A regex cut off by its timeout, and `llm_check`
    rules (which need a language model), are listed under `skipped` with the reason. The same
    check at stage `publish` holds a job's auto-publish."""
    offline = ctx.runtime.model.provider == "offline"
    return await service.check_rules(ctx.session, ctx.tenant.tenant_id, data, offline=offline)
