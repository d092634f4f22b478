"""The rules of the tenant's settings, brand voice, content strategy and content rules.

Settings are stored as what the tenant changed over the defaults (schemas.DEFAULT_SETTINGS);
the name is the tenant's own (`tenants.name`). The brand voice and the content strategy are
versioned: each update is a new row, version + 1 (0 is the defaults, until an admin sets one),
and `expectedVersion` makes a stale update a 409. Content rules are linted by rules.py.

Below generation, jobs and the flows, which read the voice (generation_guidance), the strategy
(topic_strategy) and the rules (check_draft, which holds auto-publish).

Every write that changes something is one `settings.updated` event (the audit trail), its
`changes` the diff of the fields it changed (`group.field` for the settings' groups), with the
resource it changed: `settings` (the tenant's id), `brand_voice` and `content_strategy` (the
tenant's id; `version` is among the changes), `content_rule` (the rule's id).
"""

from __future__ import annotations

import asyncio
import copy
import re
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.documents import service as documents
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.events import service as events
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import FieldError, NotFound
from contentplatform.kit.schemas import SUCCESS, Success
from contentplatform.publishers import service as publishers
from contentplatform.settings import repository, rule_schemas, rules, schemas
from contentplatform.settings.errors import (
    InvalidRuleConfig,
    RuleNotFound,
    StaleVersion,
    TooManyRules,
    UnknownReference,
)
from contentplatform.settings.models import BrandVoice, ContentRule, ContentStrategy, TenantSettings
from contentplatform.tenants import service as tenants


def _announce(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    resource_type: str,
    resource_id: uuid.UUID,
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    """One `settings.updated` for a write, with what it changed (nothing changed: no event)."""
    changes = events.changes_between(before, after)
    if changes:
        events.emit(
            session,
            tenant_id,
            "settings.updated",
            resource_type=resource_type,
            resource_id=resource_id,
            payload={"fields": sorted(changes)},
            changes=changes,
        )


# --- tenant settings ----------------------------------------------------------------------------


def _merged(defaults: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """The defaults with what was stored over them, group by group."""
    values = copy.deepcopy(defaults)
    for key, value in stored.items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key].update(value)
        elif key in values:
            values[key] = value
    return values


def _applied(stored: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """What the tenant changed, with these changes over it (a group's other fields kept)."""
    values = copy.deepcopy(stored)
    for key, value in changes.items():
        values[key] = {**values.get(key, {}), **value} if isinstance(value, dict) else value
    return values


def _settings_of(
    tenant_id: uuid.UUID, name: str, row: TenantSettings | None
) -> schemas.TenantSettings:
    values = _merged(schemas.DEFAULT_SETTINGS, row.values if row is not None else {})
    return schemas.TenantSettings.model_validate(
        {
            **values,
            "tenant_id": tenant_id,
            "name": name,
            "updated_at": row.updated_at if row is not None else None,
            "updated_by": row.updated_by if row is not None else None,
        }
    )


async def get_settings(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.TenantSettings:
    row = await repository.settings_of(session, tenant_id)
    return _settings_of(tenant_id, await tenants.name_of(session, tenant_id), row)


async def redirect_origins(session: AsyncSession, tenant_id: uuid.UUID) -> list[str]:
    """The origins the organization allows return URLs on (security.allowedRedirectOrigins)."""
    return (await get_settings(session, tenant_id)).security.allowed_redirect_origins


async def update_settings(
    session: AsyncSession, tenant: TenantAccess, by: str, data: schemas.UpdateSettingsInput
) -> schemas.TenantSettings:
    tenant_id = tenant.tenant_id
    await tenants.lock_tenant(session, tenant_id)
    changes = await _checked_changes(session, tenant, data)
    row = await repository.settings_of(session, tenant_id)
    name = await tenants.name_of(session, tenant_id)
    before = _fields(name, row.values if row is not None else {})
    if data.name is not None:
        await tenants.rename(session, tenant_id, data.name)
        name = data.name
    if row is None:
        row = TenantSettings(id=uuid.uuid4(), tenant_id=tenant_id, values={})
        session.add(row)
    # A new dict: the JSON column notices a replaced value, not one changed in place.
    row.values = _applied(row.values or {}, changes)
    row.updated_by = by
    row.updated_at = utcnow()
    await session.flush()
    _announce(session, tenant_id, "settings", tenant_id, before, _fields(name, row.values))
    return _settings_of(tenant_id, name, row)


def _fields(name: str, stored: dict[str, Any]) -> dict[str, Any]:
    """The settings in effect as `field` and `group.field` -> value, for the audit's diff."""
    fields: dict[str, Any] = {"name": name}
    for key, value in _merged(schemas.DEFAULT_SETTINGS, stored).items():
        if isinstance(value, dict):
            fields.update({f"{key}.{field}": each for field, each in value.items()})
        else:
            fields[key] = value
    return fields


# The fields null clears; null leaves every other one as it is.
_NULLABLE = {"canonical_base_url", "default_reviewer_id", "default_publisher_connection_id"}


async def _checked_changes(
    session: AsyncSession, tenant: TenantAccess, data: schemas.UpdateSettingsInput
) -> dict[str, Any]:
    """What the update changes, as stored values, its references checked (400 naming each)."""
    changes: dict[str, Any] = {}
    if data.default_language is not None:
        changes["default_language"] = data.default_language
    for group in ("blog", "review", "generation", "publishing", "security", "notifications"):
        patch = getattr(data, group)
        if patch is None:
            continue
        sent = patch.model_dump(mode="json", exclude_unset=True)
        fields = {k: v for k, v in sent.items() if v is not None or k in _NULLABLE}
        if fields:
            changes[group] = fields
    problems: list[FieldError] = []
    reviewer = changes.get("review", {}).get("default_reviewer_id")
    if reviewer is not None:
        subject = await tenants.member_subject(session, tenant.tenant_id, reviewer)
        if subject is None:
            problems.append(FieldError("review.defaultReviewerId", "is not a member"))
        changes["review"]["default_reviewer_id"] = subject
    for index, document_id in enumerate(
        changes.get("generation", {}).get("default_document_ids", [])
    ):
        try:
            await documents.require(session, tenant, uuid.UUID(document_id))
        except NotFound:
            where = f"generation.defaultDocumentIds.{index}"
            problems.append(FieldError(where, "is not a document of this organization"))
    connection = changes.get("publishing", {}).get("default_publisher_connection_id")
    if connection is not None and (
        await publishers.find(session, tenant.tenant_id, uuid.UUID(connection)) is None
    ):
        where = "publishing.defaultPublisherConnectionId"
        problems.append(FieldError(where, "is not a publisher connection of this organization"))
    if problems:
        summary = "; ".join(f"{p.path} {p.message}" for p in problems[:3])
        raise UnknownReference(
            f"The settings name what this organization has not ({summary}).", errors=problems
        )
    return changes


# --- versioned: brand voice and content strategy ------------------------------------------------


def _versioned(
    defaults: dict[str, Any], row: BrandVoice | ContentStrategy | None
) -> dict[str, Any]:
    if row is None:
        return {**copy.deepcopy(defaults), "version": 0, "updated_at": None, "updated_by": None}
    values = _merged(defaults, row.values)
    return {
        **values,
        "version": row.version,
        "updated_at": row.created_at,
        "updated_by": row.updated_by,
    }


async def _replace(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    model: type[BrandVoice] | type[ContentStrategy],
    defaults: dict[str, Any],
    values: dict[str, Any],
    expected: int | None,
    by: str,
) -> BrandVoice | ContentStrategy:
    """A new current version with `values`; 409 when `expected` is not the current one."""
    await tenants.lock_tenant(session, tenant_id)
    current = await repository.latest(session, tenant_id, model)
    version = current.version if current is not None else 0
    if expected is not None and expected != version:
        raise StaleVersion(
            f"The current version is {version}, not {expected}: read it again and reapply "
            "your change."
        )
    row = model(id=uuid.uuid4(), tenant_id=tenant_id, version=version + 1, values=values)
    row.updated_by = by
    session.add(row)
    await session.flush()
    resource = "brand_voice" if model is BrandVoice else "content_strategy"
    _announce(
        session,
        tenant_id,
        resource,
        tenant_id,
        _version_fields(defaults, current),
        _version_fields(defaults, row),
    )
    return row


def _version_fields(
    defaults: dict[str, Any], row: BrandVoice | ContentStrategy | None
) -> dict[str, Any]:
    """A version's fields and its number, for the audit's diff."""
    values = _versioned(defaults, row)
    return {k: v for k, v in values.items() if k not in ("updated_at", "updated_by")}


async def get_voice(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.BrandVoice:
    row = await repository.latest(session, tenant_id, BrandVoice)
    return schemas.BrandVoice.model_validate(_versioned(schemas.DEFAULT_VOICE, row))


async def update_voice(
    session: AsyncSession, tenant_id: uuid.UUID, by: str, data: schemas.UpdateBrandVoiceInput
) -> schemas.BrandVoice:
    values = data.model_dump(mode="json", exclude={"expected_version"})
    row = await _replace(
        session, tenant_id, BrandVoice, schemas.DEFAULT_VOICE, values, data.expected_version, by
    )
    return schemas.BrandVoice.model_validate(_versioned(schemas.DEFAULT_VOICE, row))


async def get_strategy(session: AsyncSession, tenant_id: uuid.UUID) -> schemas.ContentStrategy:
    row = await repository.latest(session, tenant_id, ContentStrategy)
    return schemas.ContentStrategy.model_validate(_versioned(schemas.DEFAULT_STRATEGY, row))


async def update_strategy(
    session: AsyncSession, tenant_id: uuid.UUID, by: str, data: schemas.UpdateStrategyInput
) -> schemas.ContentStrategy:
    values = data.model_dump(mode="json", exclude={"expected_version"})
    row = await _replace(
        session,
        tenant_id,
        ContentStrategy,
        schemas.DEFAULT_STRATEGY,
        values,
        data.expected_version,
        by,
    )
    return schemas.ContentStrategy.model_validate(_versioned(schemas.DEFAULT_STRATEGY, row))


# --- what generation and the jobs read ----------------------------------------------------------


async def generation_guidance(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, Any]:
    """What an article is written with: the brand voice's version, the voice itself once an
    admin set one (None for the defaults: the prompt stays as it was), and the constraints of
    the enabled rules checked at stage `generation` that a writer can follow (phrases to avoid
    or use, a sentence length, a disclaimer). Plain JSON: it goes into a durable step's output."""
    voice = await get_voice(session, tenant_id)
    constraints: list[str] = []
    for rule in await repository.rules(session, tenant_id, enabled=True):
        if "generation" in rule.stages:
            constraint = _constraint(rule.type, rule.config)
            if constraint:
                constraints.append(constraint)
    values = voice.model_dump(mode="json", exclude={"version", "updated_at", "updated_by"})
    return {
        "version": voice.version,
        "voice": values if voice.version else None,
        "constraints": constraints,
    }


def _constraint(rule_type: str, config: dict[str, Any]) -> str | None:
    phrases = ", ".join(f'"{p}"' for p in config.get("phrases", [])[:30])
    if rule_type == "banned_phrase":
        return f"Never use these phrases: {phrases}."
    if rule_type == "required_phrase":
        which = "all" if config.get("match", "all") == "all" else "at least one"
        return f"Use {which} of these phrases: {phrases}."
    if rule_type == "max_sentence_words":
        return f"Keep every sentence under {config.get('max_words')} words."
    if rule_type == "disclaimer":
        return f'The article must include this disclaimer: "{str(config.get("text"))[:500]}".'
    return None


@dataclass(frozen=True)
class TopicStrategy:
    """What steers topics: the pillars (name, keywords, weight) and the excluded topics."""

    pillars: list[tuple[str, list[str], float]]
    excluded: list[str]

    def excludes(self, topic: str) -> bool:
        return is_excluded(topic, self.excluded)


async def topic_strategy(session: AsyncSession, tenant_id: uuid.UUID) -> TopicStrategy:
    return _topic_strategy(await get_strategy(session, tenant_id))


async def topic_strategies(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, TopicStrategy]:
    """`topic_strategy` of each of these tenants, in one query (the scheduler's tick)."""
    if not tenant_ids:
        return {}
    rows = await repository.latest_strategies(session, tenant_ids)
    strategies = {
        tenant_id: _topic_strategy(
            schemas.ContentStrategy.model_validate(_versioned(schemas.DEFAULT_STRATEGY, row))
        )
        for tenant_id, row in rows.items()
    }
    if len(strategies) < len(tenant_ids):  # the default, made once for all that have none
        default = _topic_strategy(
            schemas.ContentStrategy.model_validate(_versioned(schemas.DEFAULT_STRATEGY, None))
        )
        strategies |= {tenant_id: default for tenant_id in tenant_ids if tenant_id not in rows}
    return strategies


def _topic_strategy(strategy: schemas.ContentStrategy) -> TopicStrategy:
    return TopicStrategy(
        pillars=[(p.name, list(p.keywords), p.weight) for p in strategy.pillars],
        excluded=list(strategy.excluded_topics),
    )


_WORD = re.compile(r"\w+")


def is_excluded(topic: str, excluded: Sequence[str]) -> bool:
    """A topic holding every word of an excluded topic (ignoring case) is excluded: "pricing"
    excludes "Pricing plans for teams"."""
    words = set(_WORD.findall(topic.casefold()))
    return any(
        (wanted := set(_WORD.findall(phrase.casefold()))) and wanted <= words for phrase in excluded
    )


# --- content rules ------------------------------------------------------------------------------


def _config_of(rule_type: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config validated for its type, as stored; 400 naming each field that fails."""
    try:
        return rules.stored_config(rules.parse_config(rule_type, config))
    except ValidationError as error:
        problems = []
        for item in error.errors():
            place = [str(p) for p in item.get("loc", ()) if str(p) != rule_type]
            message = str(item.get("msg", "is invalid")).removeprefix("Value error, ")
            problems.append(FieldError(".".join(["config", *place]), message))
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems[:3])
        raise InvalidRuleConfig(
            f"The config does not fit a {rule_type} rule ({summary}).", errors=problems
        ) from None


async def list_rules(
    session: AsyncSession, tenant_id: uuid.UUID, data: rule_schemas.ListRulesInput
) -> rule_schemas.RuleList:
    found = await repository.rules(session, tenant_id, enabled=data.enabled, rule_type=data.type)
    return rule_schemas.RuleList(
        data=[rule_schemas.ContentRule.model_validate(rule) for rule in found], total=len(found)
    )


async def create_rule(
    session: AsyncSession, tenant_id: uuid.UUID, by: str, data: rule_schemas.CreateRuleInput
) -> rule_schemas.ContentRule:
    config = _config_of(data.type, data.config)
    # Locked: two creates at the 99th rule must not both pass the count.
    await tenants.lock_tenant(session, tenant_id)
    if await repository.count_rules(session, tenant_id) >= rule_schemas.MAX_RULES:
        raise TooManyRules(
            f"An organization has at most {rule_schemas.MAX_RULES} content rules; delete one first."
        )
    rule = ContentRule(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        type=data.type,
        config=config,
        severity=data.severity,
        stages=list(data.stages),
        enabled=data.enabled,
        created_by=by,
    )
    session.add(rule)
    await session.flush()
    _announce(session, tenant_id, "content_rule", rule.id, {}, _rule_fields(rule))
    return rule_schemas.ContentRule.model_validate(rule)


def _rule_fields(rule: ContentRule) -> dict[str, Any]:
    """A rule's fields, for the audit's diff."""
    return {
        "name": rule.name,
        "type": rule.type,
        "config": rule.config,
        "severity": rule.severity,
        "stages": list(rule.stages),
        "enabled": rule.enabled,
    }


async def update_rule(
    session: AsyncSession, tenant_id: uuid.UUID, data: rule_schemas.UpdateRuleInput
) -> rule_schemas.ContentRule:
    rule = await repository.rule(session, tenant_id, data.id)
    if rule is None:
        raise RuleNotFound(data.id)
    before = _rule_fields(rule)
    if data.config is not None:
        rule.config = _config_of(rule.type, data.config)
    if data.name is not None:
        rule.name = data.name
    if data.severity is not None:
        rule.severity = data.severity
    if data.stages is not None:
        rule.stages = list(data.stages)
    if data.enabled is not None:
        rule.enabled = data.enabled
    rule.updated_at = utcnow()
    await session.flush()
    _announce(session, tenant_id, "content_rule", rule.id, before, _rule_fields(rule))
    return rule_schemas.ContentRule.model_validate(rule)


async def delete_rule(session: AsyncSession, tenant_id: uuid.UUID, rule_id: uuid.UUID) -> Success:
    rule = await repository.rule(session, tenant_id, rule_id)
    if rule is None or not await repository.delete_rule(session, tenant_id, rule_id):
        raise RuleNotFound(rule_id)
    _announce(session, tenant_id, "content_rule", rule_id, _rule_fields(rule), {})
    return SUCCESS


async def _lint(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    title: str | None,
    content: str,
    *,
    stage: str,
    offline: bool,
) -> rule_schemas.CheckResult:
    """The enabled rules of `stage` checked against the text, in a worker thread."""
    found = [
        rules.Rule(rule.id, rule.name, rule.type, dict(rule.config), rule.severity)
        for rule in await repository.rules(session, tenant_id, enabled=True)
        if stage in rule.stages
    ]
    if not found:
        return rule_schemas.CheckResult(passed=True, violations=[], checked=0, skipped=[])
    return await asyncio.to_thread(rules.lint, found, title, content, offline=offline)


async def check_rules(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    data: rule_schemas.CheckRulesInput,
    *,
    offline: bool,
) -> rule_schemas.CheckResult:
    title: str | None
    if data.draft_id is not None:
        draft = await drafts.require(session, tenant_id, data.draft_id)
        title, content = draft.title, draft.content
    else:
        title, content = data.title, data.content or ""
    return await _lint(session, tenant_id, title, content, stage=data.stage, offline=offline)


async def check_draft(
    session: AsyncSession, tenant_id: uuid.UUID, draft: Draft, *, stage: str, offline: bool
) -> rule_schemas.CheckResult:
    """The draft linted at `stage` (auto-publish asks at `publish`)."""
    return await _lint(session, tenant_id, draft.title, draft.content, stage=stage, offline=offline)


# Violations an auto-publish decision keeps (the draft's check lists them all).
MAX_NOTED = 10


def note_of(result: rule_schemas.CheckResult) -> dict[str, Any] | None:
    """The check as an auto-publish decision keeps it (None when no rule applied)."""
    if not result.checked and not result.skipped:
        return None
    return {
        "passed": result.passed,
        "checked": result.checked,
        "violations": [
            v.model_dump(mode="json", exclude={"excerpt"}) for v in result.violations[:MAX_NOTED]
        ],
        "skipped": [s.model_dump(mode="json") for s in result.skipped],
    }


def verdict_of(result: rule_schemas.CheckResult) -> str:
    """The violations of error-level rules, in one sentence: an auto-publish reason."""
    errors = [v for v in result.violations if v.severity == "error"]
    named = "; ".join(f"{v.rule_name}: {v.message}" for v in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return f"It breaks {len(errors)} error-level content rule(s) at stage publish: {named}{more}"
