"""The rules of publisher connections: validated, guarded, sealed, tested. Never commits.

Publish attempts are in attempts.py, starting them (and auto-publish) in publishing.py.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.billing import service as billing
from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.events import service as events
from contentplatform.kit import outbound
from contentplatform.kit.db import Database, Required, utcnow
from contentplatform.kit.errors import FieldError
from contentplatform.publishers import repository, schemas, strategies
from contentplatform.publishers.errors import (
    ConnectionConfigRefused,
    ConnectionNotFound,
    NotAWebhook,
    TargetRefused,
    TargetUnavailable,
)
from contentplatform.publishers.models import PublishAttempt, PublisherConnection
from contentplatform.publishers.strategies import webhook
from contentplatform.publishers.strategies.base import (
    AuthFailed,
    PublishError,
    RemoteOptions,
    Strategy,
    TestResult,
)
from contentplatform.publishers.vault import vault
from contentplatform.tenants import service as tenants

# How long a connection's targets, read from its target, are answered again without asking it.
TARGETS_CACHE_SECONDS = 300.0
_TARGETS: TypeAdapter[Any] = TypeAdapter(schemas.Targets)


def policy(settings: Settings) -> outbound.Policy:
    return outbound.policy_of(settings)


require = Required(repository.connection, ConnectionNotFound)


async def find(
    session: AsyncSession, tenant_id: uuid.UUID, connection_id: uuid.UUID
) -> PublisherConnection | None:
    """The connection, or None when it was deleted (a job may still name it)."""
    return await repository.connection(session, tenant_id, connection_id)


async def attempt_exists(
    session: AsyncSession, tenant_id: uuid.UUID, attempt_id: uuid.UUID
) -> bool:
    """Whether the organization has this publish attempt (a support ticket may cite it)."""
    return await repository.attempt(session, tenant_id, attempt_id) is not None


async def default_connection(
    session: AsyncSession, tenant_id: uuid.UUID
) -> PublisherConnection | None:
    return await repository.default_connection(session, tenant_id)


# --- connections ---------------------------------------------------------------------------------


async def list_connections(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.ListConnectionsInput
) -> schemas.ConnectionPage:
    rows = await repository.connections(session, tenant_id, data.type, data.status)
    return schemas.ConnectionPage(data=rows, total=len(rows))


async def scheduled_between(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[tuple[PublishAttempt, str]]:
    """Publishes scheduled in [start, end), soonest first, with their draft's title (the
    dashboard's upcoming work)."""
    return await repository.scheduled_between(session, tenant_id, start, end, limit)


async def published_copies(
    session: AsyncSession, tenant_id: uuid.UUID, start: datetime, end: datetime, limit: int
) -> list[tuple[datetime, str, uuid.UUID, str, bool]]:
    """(when, URL, draft, title, first) of the copies put on a target in [start, end), newest
    first: `first` for a draft's first publication on that target, else an update of it (the
    content events SEO shows beside its series)."""
    return await repository.published_copies(session, tenant_id, start, end, limit)


async def publications(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    draft_ids: Sequence[uuid.UUID] | None = None,
    limit: int = 100_000,
) -> list[tuple[uuid.UUID, uuid.UUID, str, datetime | None]]:
    """(draft, publisher connection, URL, first published there) of every copy of a draft put
    on a target, oldest first (content analytics joins the providers' page URLs to these)."""
    return await repository.publications(session, tenant_id, draft_ids, limit)


async def connection_count(session: AsyncSession, tenant_id: uuid.UUID) -> int:
    return await repository.connection_count(session, tenant_id)


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
    # Who is the default, and whether the plan has room, are decided one transaction at a time
    # per tenant.
    await tenants.lock_tenant(session, tenant_id)
    await billing.check_limit(
        session, tenant_id, "publishers", used=lambda: connection_count(session, tenant_id)
    )
    if data.is_default or await repository.default_connection(session, tenant_id) is None:
        await repository.clear_default(session, tenant_id, keep=connection.id)
        connection.is_default = True
    session.add(connection)
    await session.flush()
    created = schemas.CreatedConnection.model_validate(connection)
    return created.model_copy(update={"signing_secret": signing_secret})


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
    return schemas.Connection.model_validate(connection)


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
        account_label=result.account_label,
        capabilities=result.capabilities,
        warnings=result.warnings,
    )


async def targets(
    session: AsyncSession, runtime: Runtime, tenant_id: uuid.UUID, data: schemas.ListTargetsInput
) -> schemas.Targets:
    """What the connection can publish into, read live from its target with the stored
    credentials and kept for TARGETS_CACHE_SECONDS per connection (`refresh` reads again). The
    answer is kept under the connection's version, so a changed config or credential is never
    answered from a read made with the old one; only successful reads are kept."""
    connection = await require(session, tenant_id, data.id)
    scope = f"publisher-targets:{tenant_id}:{connection.id}"
    if data.refresh:
        await runtime.cache.invalidate(scope)

    async def read() -> str:
        found = await _read_targets(runtime, connection)
        present = {k: v for k, v in dataclasses.asdict(found).items() if v is not None}
        answer = {"type": connection.type, "fetched_at": utcnow(), **present}
        return _TARGETS.dump_json(_TARGETS.validate_python(answer)).decode()

    version = connection.updated_at.isoformat()
    text = await runtime.cache.get_or_set(scope, version, TARGETS_CACHE_SECONDS, read)
    found: schemas.Targets = _TARGETS.validate_json(text)
    return found


async def _read_targets(runtime: Runtime, connection: PublisherConnection) -> RemoteOptions:
    settings = runtime.settings
    async with outbound.GuardedClient(policy(settings)) as client:
        try:
            return await build(connection, settings, client).targets()
        except AuthFailed as error:
            await _mark_refused(runtime.db, connection, error.message)
            raise TargetRefused(error.message) from None
        except PublishError as error:
            if not error.retryable:
                raise TargetRefused(error.message) from None
            wait = (
                {"Retry-After": str(max(1, round(error.retry_after)))} if error.retry_after else {}
            )
            raise TargetUnavailable(
                error.message, headers=wait, extensions={"retryable": True}
            ) from None


async def _mark_refused(db: Database, read: PublisherConnection, message: str) -> None:
    """The target refused the credentials: the connection is `error` until a test or publish
    succeeds. Written in a transaction of its own, as the request's rolls back with the 409 it
    answers; skipped when the connection changed since it was read (new credentials)."""
    async with db.unit_of_work() as session:
        connection = await repository.connection(session, read.tenant_id, read.id, for_update=True)
        if connection is None or connection.updated_at != read.updated_at:
            return
        if connection.status != "disabled":
            connection.status = "error"
        connection.last_error = message
        connection.updated_at = utcnow()


async def rotate_secret(
    session: AsyncSession,
    settings: Settings,
    tenant_id: uuid.UUID,
    data: schemas.RotateConnectionSecretInput,
) -> schemas.RotatedConnectionSecret:
    """A new signing secret for a webhook connection (400 for any other type), answered this
    once. The current one keeps signing beside it for `expire_current_in_seconds` (0: retired
    now); a secret replaced before by an earlier rotation stops signing at once."""
    connection = await require(session, tenant_id, data.id, for_update=True)
    if connection.type != "webhook":
        raise NotAWebhook(
            f"The connection is a {connection.type} connection: only webhook connections sign "
            "what they send with a secret."
        )
    now = utcnow()
    expires_at = now + timedelta(seconds=data.expire_current_in_seconds)
    overlap = data.expire_current_in_seconds > 0 and connection.signing_secret_sealed is not None
    connection.previous_signing_secret_sealed = (
        connection.signing_secret_sealed if overlap else None
    )
    connection.previous_secret_expires_at = expires_at if overlap else None
    secret = webhook.new_signing_secret()
    connection.signing_secret_sealed = vault(settings).seal(secret)
    connection.updated_at = now
    events.emit(
        session,
        tenant_id,
        "publisher.secret_rotated",
        resource_id=connection.id,
        # Never a secret: what changed and until when the old one holds.
        payload={
            "publisher_connection_id": connection.id,
            "name": connection.name,
            "previous_secret_expires_at": expires_at,
        },
    )
    return schemas.RotatedConnectionSecret(
        signing_secret=secret, previous_secret_expires_at=expires_at
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
    strategy: type[Strategy[Any, Any]], raw: dict[str, Any], settings: Settings
) -> dict[str, Any]:
    """The config validated by the target's model, every URL in it through the outbound guard
    (resolved and checked now, so a private address is refused before anything is stored)."""
    config = _validated(strategy.Config, raw, "config")
    guard = policy(settings)
    for url in strategy.urls(config):
        try:
            await outbound.checked_address(outbound.check_url(url, guard), guard)
        except outbound.OutboundError as error:
            raise ConnectionConfigRefused(
                f"The connection's URL is not allowed: {error}",
                errors=[FieldError("config", str(error))],
            ) from None
    stored: dict[str, Any] = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    return stored


def _set_credentials(
    connection: PublisherConnection,
    strategy: type[Strategy[Any, Any]],
    raw: dict[str, Any] | None,
    settings: Settings,
    *,
    required: bool,
) -> None:
    if strategy.Credentials is None:
        if raw:
            raise ConnectionConfigRefused(
                f"A {strategy.type} connection takes no credentials.",
                errors=[FieldError("credentials", "must be empty")],
            )
        return
    if raw is None:
        if required:
            raise ConnectionConfigRefused(
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
        raise ConnectionConfigRefused(
            f"The {where} is invalid ({listed}).", errors=fields
        ) from None


def build(
    connection: PublisherConnection, settings: Settings, client: outbound.GuardedClient
) -> Strategy[Any, Any]:
    """The connection's strategy with its config and decrypted credentials."""
    strategy = strategies.of(connection.type)
    config = strategy.Config.model_validate(connection.config)
    credentials = None
    if strategy.Credentials is not None and connection.credentials_sealed:
        credentials = strategy.Credentials.model_validate(
            vault(settings).open(connection.credentials_sealed)
        )
    secret = previous = None
    if connection.signing_secret_sealed:
        secret = vault(settings).open(connection.signing_secret_sealed)
    expires_at = connection.previous_secret_expires_at
    if connection.previous_signing_secret_sealed and expires_at and expires_at > utcnow():
        previous = vault(settings).open(connection.previous_signing_secret_sealed)
    return strategy(
        config, credentials, client, signing_secret=secret, previous_signing_secret=previous
    )
