"""The rules of publishing: connections (validated, guarded, sealed), publish attempts and what
a target's answer does to a draft. Never commits; the workflow in workflows.py makes the calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.drafts import service as drafts
from contentplatform.drafts.models import Draft
from contentplatform.kit import durable, outbound
from contentplatform.kit.db import utcnow
from contentplatform.kit.errors import BadRequest, Conflict, FieldError, NotFound
from contentplatform.publishers import repository, schemas, strategies
from contentplatform.publishers.models import Publication, PublishAttempt, PublisherConnection
from contentplatform.publishers.strategies import webhook
from contentplatform.publishers.strategies.base import (
    Article,
    AuthFailed,
    PublishError,
    Remote,
    Result,
    Strategy,
    TestResult,
)
from contentplatform.publishers.vault import vault
from contentplatform.tenants import repository as tenants

IN_FLIGHT = ("pending", "running")


def policy(settings: Settings) -> outbound.Policy:
    return outbound.Policy(
        allow_http=settings.outbound_allow_http,
        allow_loopback=settings.outbound_allow_loopback,
        timeout=settings.outbound_timeout_seconds,
        max_response_bytes=settings.outbound_max_response_bytes,
    )


# --- records as the API shows them ---------------------------------------------------------------


def to_schema(connection: PublisherConnection) -> schemas.Connection:
    return schemas.Connection(
        id=connection.id,
        name=connection.name,
        type=connection.type,
        config=connection.config,
        credentials_hint=connection.credentials_hint,
        status=connection.status,
        is_default=connection.is_default,
        capabilities=connection.capabilities,
        last_tested_at=connection.last_tested_at,
        last_test_ok=connection.last_test_ok,
        last_error=connection.last_error,
        created_at=connection.created_at,
        updated_at=connection.updated_at,
    )


def attempt_schema(attempt: PublishAttempt) -> schemas.Attempt:
    return schemas.Attempt(
        id=attempt.id,
        draft_id=attempt.draft_id,
        publisher_connection_id=attempt.connection_id,
        mode=attempt.mode,
        status=attempt.status,
        tries=attempt.tries,
        draft_version=attempt.draft_version,
        external_id=attempt.external_id,
        external_url=attempt.external_url,
        error=schemas.AttemptError(**attempt.error) if attempt.error else None,
        triggered_by=attempt.triggered_by,
        triggered_by_id=attempt.triggered_by_id,
        scheduled_at=attempt.scheduled_at,
        started_at=attempt.started_at,
        finished_at=attempt.finished_at,
        created_at=attempt.created_at,
    )


async def require(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    connection_id: uuid.UUID,
    *,
    for_update: bool = False,
) -> PublisherConnection:
    found = await repository.connection(session, tenant_id, connection_id, for_update=for_update)
    if found is None:
        raise NotFound(f"There is no publisher connection {connection_id}.")
    return found


# --- connections ---------------------------------------------------------------------------------


async def list_connections(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListConnectionsInput
) -> schemas.ConnectionPage:
    rows = await repository.connections(session, tenant_id, data.type, data.status)
    return schemas.ConnectionPage(data=[to_schema(row) for row in rows], total=len(rows))


async def create(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.CreateConnectionInput,
) -> schemas.CreatedConnection:
    strategy = strategies.of(data.type)
    config = await _checked_config(strategy, data.config, settings)
    now = utcnow()
    connection = PublisherConnection(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=data.name,
        type=data.type,
        config=config,
        status="active",
        is_default=False,
        capabilities=[],
        created_at=now,
        updated_at=now,
    )
    _set_credentials(connection, strategy, data.credentials, settings, required=True)
    signing_secret = None
    if data.type == "webhook":
        signing_secret = webhook.new_signing_secret()
        connection.signing_secret_sealed = vault(settings).seal(signing_secret)
    # Who is the default is decided one transaction at a time per tenant.
    await tenants.lock_tenant(session, tenant_id)
    if data.is_default or await repository.default_connection(session, tenant_id) is None:
        await repository.clear_default(session, tenant_id, keep=connection.id)
        connection.is_default = True
    session.add(connection)
    await session.flush()
    return schemas.CreatedConnection(
        **to_schema(connection).model_dump(), signing_secret=signing_secret
    )


async def update(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.UpdateConnectionInput,
) -> schemas.Connection:
    connection = await require(session, tenant_id, data.id)
    strategy = strategies.of(connection.type)
    # The URL check resolves names: done before any lock is taken.
    config = None
    if data.config is not None:
        config = await _checked_config(strategy, data.config, settings)
    await tenants.lock_tenant(session, tenant_id)
    connection = await require(session, tenant_id, data.id, for_update=True)
    if data.name is not None:
        connection.name = data.name
    if config is not None:
        connection.config = config
    if data.credentials is not None:
        _set_credentials(connection, strategy, data.credentials, settings, required=True)
    if data.status is not None:
        connection.status = data.status
    if data.config is not None or data.credentials is not None:
        # What was tested is no longer what is stored.
        connection.last_test_ok = None
        if connection.status == "error":
            connection.status = "active"
    if data.is_default:
        # Cleared before this one is set: at most one default at any moment (a unique index).
        await repository.clear_default(session, tenant_id, keep=connection.id)
    if data.is_default is not None:
        connection.is_default = data.is_default
    connection.updated_at = utcnow()
    return to_schema(connection)


async def delete(session: AsyncSession, tenant_id: uuid.UUID, connection_id: uuid.UUID) -> None:
    """Soft delete. Jobs that point at it keep the id; their auto-publish holds drafts for review
    with the reason recorded."""
    connection = await require(session, tenant_id, connection_id, for_update=True)
    connection.deleted_at = connection.updated_at = utcnow()
    connection.is_default = False


async def test(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID, connection_id: uuid.UUID
) -> schemas.TestOutcome:
    """Ask the target who we are and what we may do there. A refusal is an answer, not an error:
    `ok` false with the target's words in `warnings`, and the connection marked `error`.

    Nothing is locked while the target answers (it may take its time); the outcome is recorded
    after, unless the connection was changed meanwhile."""
    connection = await require(session, tenant_id, connection_id)
    tested_version = connection.updated_at
    async with outbound.GuardedClient(policy(settings)) as client:
        try:
            result = await build(connection, settings, client).test_connection()
        except PublishError as error:
            result = TestResult(
                ok=False, account_label=None, capabilities=[], warnings=[error.message]
            )
    connection = await require(session, tenant_id, connection_id, for_update=True)
    if connection.updated_at == tested_version:
        _record_test(connection, result)
    return schemas.TestOutcome(
        ok=result.ok,
        accountLabel=result.account_label,
        capabilities=result.capabilities,
        warnings=result.warnings,
    )


def _record_test(connection: PublisherConnection, result: TestResult) -> None:
    connection.last_tested_at = connection.updated_at = utcnow()
    connection.last_test_ok = result.ok
    if result.ok:
        connection.capabilities = result.capabilities
        connection.last_error = None
        if connection.status == "error":
            connection.status = "active"
    else:
        connection.last_error = "; ".join(result.warnings) or "The test failed."
        if connection.status != "disabled":
            connection.status = "error"


async def _checked_config(
    strategy: type[Strategy], raw: dict[str, Any], settings: Settings
) -> dict[str, Any]:
    """The config validated by the target's model, every URL in it through the outbound guard
    (resolved and checked now, so a private address is refused before anything is stored)."""
    config = _validated(strategy.Config, raw, "config")
    guard = policy(settings)
    for url in strategy.urls(config):
        try:
            await outbound.checked_address(outbound.check_url(url, guard), guard)
        except outbound.OutboundError as error:
            raise BadRequest(
                f"The connection's URL is not allowed: {error}",
                errors=[FieldError("config", str(error))],
            ) from None
    stored: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    return stored


def _set_credentials(
    connection: PublisherConnection,
    strategy: type[Strategy],
    raw: dict[str, Any] | None,
    settings: Settings,
    *,
    required: bool,
) -> None:
    if strategy.Credentials is None:
        if raw:
            raise BadRequest(
                f"A {strategy.type} connection takes no credentials.",
                errors=[FieldError("credentials", "must be empty")],
            )
        return
    if raw is None:
        if required:
            raise BadRequest(
                f"A {strategy.type} connection needs credentials.",
                errors=[FieldError("credentials", "is required")],
            )
        return
    credentials = _validated(strategy.Credentials, raw, "credentials")
    connection.credentials_sealed = vault(settings).seal(credentials.model_dump(mode="json"))
    connection.credentials_hint = strategy.credentials_hint(credentials)


def _validated(model: Any, raw: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        fields = [
            FieldError(
                ".".join([where, *(str(part) for part in item["loc"])]),
                str(item["msg"]),
            )
            for item in error.errors(include_url=False)
        ]
        listed = "; ".join(f"{f.path}: {f.message}" for f in fields[:3])
        raise BadRequest(f"The {where} is invalid ({listed}).", errors=fields) from None


def build(
    connection: PublisherConnection, settings: Settings, client: outbound.GuardedClient
) -> Strategy:
    """The connection's strategy with its config and decrypted credentials."""
    strategy = strategies.of(connection.type)
    config = strategy.Config.model_validate(connection.config)
    credentials = None
    if strategy.Credentials is not None and connection.credentials_sealed:
        credentials = strategy.Credentials.model_validate(
            vault(settings).open(connection.credentials_sealed)
        )
    secret = None
    if connection.signing_secret_sealed:
        secret = vault(settings).open(connection.signing_secret_sealed)
    return strategy(config, credentials, client, signing_secret=secret)


# --- publishing ----------------------------------------------------------------------------------


async def publish(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    data: schemas.PublishDraftInput,
    *,
    by: str,
    connection_of_job: Callable[[uuid.UUID], Awaitable[uuid.UUID | None]],
) -> schemas.Published:
    """Record an attempt to publish a draft and start its workflow once this commits.
    `connection_of_job` names a job's publisher connection (the jobs domain knows it)."""
    draft = await drafts.require(session, tenant_id, data.id, for_update=True)
    drafts.check_publishable(draft)
    if data.mode == "draft" and draft.status == "published":
        raise Conflict("The draft is published; it cannot be sent to a target as a draft.")
    job_connection_id = None
    if data.publisher_connection_id is None and draft.job_id is not None:
        job_connection_id = await connection_of_job(draft.job_id)
    connection = await _connection_for(
        session, tenant_id, data.publisher_connection_id, job_connection_id
    )
    scheduled_at = _scheduled_at(data)
    await _supersede(session, tenant_id, draft.id, connection.id)
    attempt = _new_attempt(draft, connection, data.mode, "user", by, scheduled_at=scheduled_at)
    session.add(attempt)
    await session.flush()
    _start_after_commit(session, attempt)
    return schemas.Published(draft=drafts.to_schema(draft), attempt=attempt_schema(attempt))


async def _connection_for(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    chosen: uuid.UUID | None,
    job_connection_id: uuid.UUID | None,
) -> PublisherConnection:
    """The connection named, else the job's (when it still exists), else the default."""
    connection = None
    if chosen is not None:
        connection = await require(session, tenant_id, chosen)
    elif job_connection_id is not None:
        connection = await repository.connection(session, tenant_id, job_connection_id)
    if connection is None:
        connection = await repository.default_connection(session, tenant_id)
    if connection is None:
        raise BadRequest(
            "Say where to publish: the draft's job has no publisher connection and the "
            "organization has no default one.",
            errors=[FieldError("publisherConnectionId", "is required")],
        )
    if connection.status == "disabled":
        raise Conflict(f"The publisher connection {connection.name!r} is disabled.")
    return connection


def _scheduled_at(data: schemas.PublishDraftInput) -> datetime | None:
    if data.mode != "schedule":
        if data.scheduled_at is not None:
            raise BadRequest(
                "scheduledAt is only for mode schedule.",
                errors=[FieldError("scheduledAt", "is only allowed with mode schedule")],
            )
        return None
    when = data.scheduled_at
    if when is None or when.tzinfo is None or when <= utcnow():
        raise BadRequest(
            "Scheduling needs scheduledAt: a future instant with a time zone.",
            errors=[FieldError("scheduledAt", "must be a future instant with a time zone")],
        )
    return when


async def _supersede(
    session: AsyncSession, tenant_id: uuid.UUID, draft_id: uuid.UUID, connection_id: uuid.UUID
) -> None:
    """One attempt per draft and target at a time: a scheduled one gives way to the new
    request; one already under way makes the new request a 409."""
    rows, _ = await repository.attempts(
        session, tenant_id, limit=20, offset=0, draft_id=draft_id, connection_id=connection_id
    )
    for attempt in rows:
        if attempt.status in IN_FLIGHT:
            raise Conflict(
                "This draft is already being published to that connection; wait for the "
                f"attempt {attempt.id} to finish."
            )
        if attempt.status == "scheduled":
            attempt.status = "cancelled"
            attempt.finished_at = attempt.updated_at = utcnow()


def _new_attempt(
    draft: Draft,
    connection: PublisherConnection,
    mode: str,
    triggered_by: str,
    by: str | None,
    *,
    scheduled_at: datetime | None = None,
) -> PublishAttempt:
    now = utcnow()
    return PublishAttempt(
        id=uuid.uuid4(),
        tenant_id=draft.tenant_id,
        draft_id=draft.id,
        connection_id=connection.id,
        mode=mode,
        status="scheduled" if scheduled_at else "pending",
        tries=0,
        draft_version=draft.version,
        triggered_by=triggered_by,
        triggered_by_id=by,
        scheduled_at=scheduled_at,
        created_at=now,
        updated_at=now,
    )


def _start_after_commit(session: AsyncSession, attempt: PublishAttempt) -> None:
    from contentplatform.publishers import workflows  # the workflow calls back into this module

    durable.start_after_commit(
        session,
        workflows.publish_draft,
        workflows.workflow_id(attempt.id),
        str(attempt.tenant_id),
        str(attempt.id),
    )


async def draft_attempts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.DraftAttemptsInput
) -> schemas.DraftAttemptPage:
    await drafts.require(session, tenant_id, data.id)
    rows, total = await repository.attempts(
        session, tenant_id, limit=data.limit, offset=(data.page - 1) * data.limit, draft_id=data.id
    )
    return schemas.DraftAttemptPage(data=[attempt_schema(row) for row in rows], total=total)


async def connection_attempts(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListAttemptsInput
) -> schemas.AttemptPage:
    await require(session, tenant_id, data.id)
    rows, total = await repository.attempts(
        session,
        tenant_id,
        limit=data.limit,
        offset=(data.page - 1) * data.limit,
        connection_id=data.id,
        status=data.status,
    )
    return schemas.AttemptPage(
        data=[attempt_schema(row) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def success_rate(session: AsyncSession, tenant_id: uuid.UUID, job_id: uuid.UUID) -> float:
    """Of a job's drafts' finished publish attempts, the share that succeeded (0 with none)."""
    succeeded, finished = await repository.job_attempt_outcomes(session, tenant_id, job_id)
    return round(succeeded / finished, 4) if finished else 0.0


# --- auto-publish --------------------------------------------------------------------------------


async def auto_publish(
    session: AsyncSession,
    draft: Draft,
    *,
    connection_id: uuid.UUID | None,
    threshold: int | None,
) -> None:
    """A job's run wrote `draft` (in review) and the job publishes automatically: approve and
    publish it when its SEO score reaches the threshold, else hold it for review with the reason."""
    note: dict[str, Any] = {
        "seo_score": draft.seo_score,
        "threshold": threshold,
        "decided_at": utcnow().isoformat(),
    }
    connection = None
    if connection_id is not None:
        connection = await repository.connection(session, draft.tenant_id, connection_id)
    reason = _hold_reason(draft, connection, connection_id, threshold)
    if reason is not None:
        drafts.hold_for_review(draft, {**note, "decision": "held", "reason": reason})
        return
    assert connection is not None
    score = draft.seo_score
    drafts.approve_automatically(
        draft,
        {
            **note,
            "decision": "published",
            "reason": f"SEO score {score} reached the threshold {threshold}."
            if threshold is not None
            else "The job publishes every draft it writes.",
        },
    )
    attempt = _new_attempt(draft, connection, "publish", "auto_publish", None)
    session.add(attempt)
    await session.flush()
    _start_after_commit(session, attempt)


def _hold_reason(
    draft: Draft,
    connection: PublisherConnection | None,
    connection_id: uuid.UUID | None,
    threshold: int | None,
) -> str | None:
    if connection_id is None:
        return "The job has no publisher connection."
    if connection is None:
        return "The job's publisher connection was deleted."
    if connection.status == "disabled":
        return f"The publisher connection {connection.name!r} is disabled."
    if threshold is not None and (draft.seo_score or 0) < threshold:
        return f"SEO score {draft.seo_score or 0} is below the threshold {threshold}."
    return None


# --- what the workflow does (each in its own transaction) ----------------------------------------


class Stop(Exception):
    """The attempt cannot go on (cancelled, draft gone or changed); the reason is recorded."""


async def begin_try(
    session: AsyncSession, settings: Settings, tenant_id: uuid.UUID, attempt_id: uuid.UUID
) -> tuple[PublishAttempt, PublisherConnection, Article, Remote | None] | None:
    """Start one try: the attempt running with one more try, and what to send where. None
    when there is nothing to do (the attempt finished or was cancelled); a draft that can no
    longer be published fails the attempt here."""
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None or attempt.status not in ("scheduled", *IN_FLIGHT):
        return None
    now = utcnow()
    failure = None
    draft = await drafts.require_or_none(session, tenant_id, attempt.draft_id, for_update=True)
    connection = await repository.connection(session, tenant_id, attempt.connection_id)
    if draft is None:
        failure = "The draft was deleted."
    elif connection is None:
        failure = "The publisher connection was deleted."
    elif connection.status == "disabled":
        failure = f"The publisher connection {connection.name!r} is disabled."
    elif draft.status not in ("approved", "published"):
        failure = f"The draft is {draft.status} now; it needs approving before it is published."
    if failure is not None or draft is None or connection is None:
        _finish(attempt, "failed", {"code": "invalid", "message": failure, "retryable": False})
        return None
    attempt.status = "running"
    attempt.tries += 1
    attempt.started_at = attempt.started_at or now
    attempt.draft_version = draft.version
    attempt.updated_at = now
    publication = await repository.publication(session, tenant_id, draft.id, connection.id)
    remote = None
    if publication is not None:
        remote = Remote(
            publication.external_id, publication.remote_version, publication.external_url
        )
    return attempt, connection, article_of(draft), remote


def article_of(draft: Draft) -> Article:
    meta = draft.seo_meta
    keywords = meta.get("focus_keywords")
    return Article(
        draft_id=draft.id,
        version=draft.version,
        title=draft.title,
        html=draft.content,
        excerpt=draft.excerpt,
        slug=drafts.slug_of(draft),
        seo_title=_text(meta.get("seo_title")),
        meta_description=_text(meta.get("meta_description")),
        tags=[k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else [],
        canonical_url=_text(meta.get("canonical_url")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


async def record_success(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID, result: Result
) -> None:
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None:
        return
    attempt.external_id = result.external_id
    attempt.external_url = result.external_url
    attempt.error = None
    _finish(attempt, "succeeded", None)
    publication = await repository.publication(
        session, tenant_id, attempt.draft_id, attempt.connection_id
    )
    if publication is None:
        publication = Publication(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            draft_id=attempt.draft_id,
            connection_id=attempt.connection_id,
        )
        session.add(publication)
    publication.external_id = result.external_id
    publication.external_url = result.external_url
    publication.remote_version = result.remote_version
    publication.remote_status = result.status
    publication.published_at = result.published_at
    publication.updated_at = utcnow()
    connection = await repository.connection(session, tenant_id, attempt.connection_id)
    if connection is not None and connection.status == "error":
        connection.status, connection.last_error = "active", None
    draft = await drafts.require_or_none(session, tenant_id, attempt.draft_id, for_update=True)
    if draft is not None and result.status == "published":
        await drafts.mark_published(session, draft, result.external_url, result.published_at)


async def record_failure(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    attempt_id: uuid.UUID,
    error: PublishError,
    *,
    final: bool,
) -> None:
    """Keep the error on the attempt; `final` fails it (else it waits for its next try). The
    draft keeps its status. A refusal of our credentials marks the connection `error`."""
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is None:
        return
    attempt.error = error.as_json()
    attempt.updated_at = utcnow()
    if final:
        _finish(attempt, "failed", error.as_json())
    if isinstance(error, AuthFailed):
        connection = await repository.connection(session, tenant_id, attempt.connection_id)
        if connection is not None and connection.status == "active":
            connection.status, connection.last_error = "error", error.message


async def give_up(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID, reason: str
) -> None:
    attempt = await repository.attempt(session, tenant_id, attempt_id, for_update=True)
    if attempt is not None and attempt.status in ("scheduled", *IN_FLIGHT):
        _finish(attempt, "failed", {"code": "transient", "message": reason, "retryable": True})


def _finish(attempt: PublishAttempt, status: str, error: dict[str, Any] | None) -> None:
    attempt.status = status
    attempt.error = error
    attempt.finished_at = attempt.updated_at = utcnow()
