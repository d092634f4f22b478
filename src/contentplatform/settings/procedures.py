"""The Settings operations (tenant settings, brand voice, content strategy, content rules, API
keys): declarations only; the rules live in service.py, rules.py and keys.py.

Every member reads them and may lint (`checkRules`); every write, and every API key operation,
is the admin's. No API key reaches any of them.
"""

from __future__ import annotations

from contentplatform.auth.context import Access
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.drafts.errors import DraftNotFound
from contentplatform.kit.schemas import Empty, Success
from contentplatform.settings import keys, rule_schemas, schemas, service
from contentplatform.settings.errors import (
    ApiKeyNotFound,
    ApiKeysDisabled,
    InvalidRuleConfig,
    RuleNotFound,
    StaleVersion,
    TooManyApiKeys,
    TooManyRules,
    UnknownReference,
)

router = ProcedureRouter("settings", tag="Team and Settings", api_keys=False)


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
    updated = await service.update_settings(ctx.session, ctx.tenant, ctx.identity.subject, data)
    if data.security is not None and data.security.api_keys_enabled is not None:
        # Keys on or off: every process drops the keys it holds of this organization.
        keys.announce_after_commit(ctx.session, ctx.runtime.invalidations, ctx.tenant.org_id)
    return updated


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
async def list_rules(ctx: Context, data: rule_schemas.ListRulesInput) -> rule_schemas.RuleList:
    """Content rules (editorial lint), oldest first.

    Every rule of the organization, optionally only enabled ones or of one `type`; drafts are
    checked against the enabled ones."""
    return await service.list_rules(ctx.session, ctx.tenant.tenant_id, data)


@router.post(
    "createRule",
    "/v1/settings/content-rules",
    access=Access.admin,
    errors=[InvalidRuleConfig, TooManyRules],
)
async def create_rule(ctx: Context, data: rule_schemas.CreateRuleInput) -> rule_schemas.ContentRule:
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
async def update_rule(ctx: Context, data: rule_schemas.UpdateRuleInput) -> rule_schemas.ContentRule:
    """Change a content rule (its type stays; a new config is validated for it).

    Name, config, severity, stages and enabled may change; a config invalid for the rule's type
    (a regex that does not compile, say) is 400 naming the field."""
    return await service.update_rule(ctx.session, ctx.tenant.tenant_id, data)


@router.delete(
    "deleteRule", "/v1/settings/content-rules/{id}", access=Access.admin, errors=[RuleNotFound]
)
async def delete_rule(ctx: Context, data: rule_schemas.RuleIdInput) -> Success:
    """Delete a content rule.

    Drafts are no longer checked against it. Another organization's rule, or one already
    deleted, is 404."""
    return await service.delete_rule(ctx.session, ctx.tenant.tenant_id, data.id)


@router.post(
    "checkRules", "/v1/settings/content-rules/check", access=Access.member, errors=[DraftNotFound]
)
async def check_rules(ctx: Context, data: rule_schemas.CheckRulesInput) -> rule_schemas.CheckResult:
    """Lint a draft or a piece of content against the rules.

    The enabled rules of `stage` are checked against the title and the text of the HTML
    content; each violation has an excerpt and its offsets in the checked text. `passed` is
    false when an error-level rule is broken. A regex cut off by its timeout, and `llm_check`
    rules (which need a language model), are listed under `skipped` with the reason. The same
    check at stage `publish` holds a job's auto-publish."""
    offline = ctx.runtime.model.provider == "offline"
    return await service.check_rules(ctx.session, ctx.tenant.tenant_id, data, offline=offline)


@router.get("listApiKeys", "/v1/settings/api-keys", access=Access.admin)
async def list_api_keys(ctx: Context, _: Empty) -> schemas.ApiKeyList:
    """API keys of the tenant.

    Newest first, revoked ones included; never a key's secret, only its prefix."""
    return await keys.list_keys(ctx.session, ctx.tenant.tenant_id)


@router.post(
    "createApiKey",
    "/v1/settings/api-keys",
    access=Access.admin,
    errors=[ApiKeysDisabled, TooManyApiKeys, PlanLimitReached],
)
async def create_api_key(ctx: Context, data: schemas.CreateApiKeyInput) -> schemas.CreatedApiKey:
    """Create an API key for server-to-server use.

    The answer holds the secret, shown this once: only its hash is kept. Call the API with
    `Authorization: Bearer cpk_...` alone: the key fixes the organization (an `x-idp-org-id`
    naming another one is 403). It acts as `role` (member or editor, never admin) and can never
    reach team, settings, billing administration, webhook endpoints or admin operations (403).
    At most 50 live keys (403); 403 when `security.apiKeysEnabled` is off. A key made by a
    member who is later removed is revoked with the removal."""
    return await keys.create_key(ctx.session, ctx.tenant, ctx.identity.subject, data)


@router.delete(
    "revokeApiKey", "/v1/settings/api-keys/{id}", access=Access.admin, errors=[ApiKeyNotFound]
)
async def revoke_api_key(ctx: Context, data: schemas.ApiKeyIdInput) -> Success:
    """Revoke an API key.

    Refused everywhere at once (within 5 seconds on every process); revoking it again changes
    nothing."""
    return await keys.revoke_key(
        ctx.session, ctx.runtime.invalidations, ctx.tenant, ctx.identity.subject, data.id
    )
