"""The rules of analytics exports: create, read, list, cancel or delete. Never commits.

An export names a report (exports/reports.py), a format and a period of at most MAX_DAYS days
in the organization's time zone (frozen when it is created, as are the report's filters). An
organization has at most MAX_ACTIVE exports queued or running (429): the tenant is locked while
one is created. The same idempotency key returns the export it created. The file is written by
a durable workflow (durable.py), queued once this commits, and kept FILE_DAYS days; each
getExport signs a download URL of it valid URL_SECONDS (never past the file's expiry).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.analytics import service as analytics
from contentplatform.analytics.exports import durable as workflows
from contentplatform.analytics.exports import reports, repository, schemas
from contentplatform.analytics.exports.encoding import EXTENSIONS
from contentplatform.analytics.exports.errors import (
    ExportNotFound,
    NotYourExport,
    TooManyActiveExports,
)
from contentplatform.analytics.models import ACTIVE_STATUSES, Export
from contentplatform.analytics.schemas import PeriodInput
from contentplatform.auth.context import Role, TenantAccess
from contentplatform.kit.db import Required, utcnow
from contentplatform.kit.errors import BadRequest, FieldError, validation_failed
from contentplatform.kit.schemas import window_of
from contentplatform.storage import paths
from contentplatform.storage.store import ObjectStore
from contentplatform.tenants import service as tenants

MAX_ACTIVE = 5
MAX_DAYS = 366
URL_SECONDS = 3600

require = Required(repository.get, ExportNotFound)


def _status(export: Export, now: datetime) -> str:
    """Its status as the API shows it: a succeeded export past its file's expiry is expired,
    whether or not the sweep has deleted the file yet."""
    if export.status == "succeeded" and _past(export, now):
        return "expired"
    return export.status


def _past(export: Export, now: datetime) -> bool:
    return export.file_expires_at is not None and export.file_expires_at <= now


def record(
    export: Export, *, download_url: str | None = None, now: datetime | None = None
) -> schemas.ExportJob:
    error = (
        schemas.ExportError(code=export.error_code, message=export.error_message or "")
        if export.error_code
        else None
    )
    return schemas.ExportJob(
        id=export.id,
        report=export.report,
        format=export.format,
        params=export.params,
        status=_status(export, now or utcnow()),
        row_count=export.row_count,
        bytes=export.bytes,
        download_url=download_url,
        file_expires_at=export.file_expires_at,
        error=error,
        created_by=export.created_by,
        created_at=export.created_at,
        finished_at=export.finished_at,
    )


def _filters(report: reports.Report, given: dict[str, Any] | None) -> dict[str, Any]:
    """The report's filters, checked (400 naming `filters.<field>`), as stored."""
    try:
        filters = report.filters.model_validate(given or {})
    except ValidationError as error:
        problems = [{**e, "loc": ("filters", *e["loc"])} for e in error.errors()]
        raise validation_failed(problems) from None
    return filters.model_dump(mode="json", exclude_none=True)


def _check_days(data: schemas.CreateExportInput) -> None:
    days = (data.date_to - data.date_from).days + 1
    if days > MAX_DAYS:
        problem = (
            f"An export covers at most {MAX_DAYS} days; {data.date_from} to {data.date_to} "
            f"is {days}."
        )
        raise BadRequest(problem, errors=[FieldError(path="dateTo", message=problem)])


async def create(
    session: AsyncSession, tenant: TenantAccess, created_by: str, data: schemas.CreateExportInput
) -> schemas.ExportJob:
    """A queued export, its workflow enqueued once this commits; the export the idempotency key
    already created, if any."""
    report = reports.REPORTS[data.report]
    filters = _filters(report, data.filters)
    _check_days(data)
    period = await analytics.period(
        session, tenant.tenant_id, PeriodInput(date_from=data.date_from, date_to=data.date_to)
    )
    await tenants.lock_tenant(session, tenant.tenant_id)
    if data.idempotency_key is not None:
        earlier = await repository.by_idempotency_key(
            session, tenant.tenant_id, data.idempotency_key
        )
        if earlier is not None:
            return record(earlier)
    active = await repository.active_count(session, tenant.tenant_id)
    if active >= MAX_ACTIVE:
        raise TooManyActiveExports(
            f"The organization already has {active} exports queued or running, the most it may "
            f"have at once ({MAX_ACTIVE}); create this one when one of them ends."
        )
    now = utcnow()
    export_id = uuid.uuid4()
    export = Export(
        id=export_id,
        tenant_id=tenant.tenant_id,
        report=data.report,
        format=data.format,
        params={
            "date_from": period.dates.first.isoformat(),
            "date_to": period.dates.last.isoformat(),
            "time_zone": period.zone.key,
            "filters": filters,
        },
        status="queued",
        storage_path=paths.export_path(tenant.org_id, export_id, EXTENSIONS[data.format]),
        idempotency_key=data.idempotency_key,
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )
    session.add(export)
    await session.flush()
    workflows.enqueue_after_commit(session, export)
    return record(export, now=now)


async def get(
    session: AsyncSession,
    store: ObjectStore,
    tenant_id: uuid.UUID,
    export_id: uuid.UUID,
    *,
    base_url: str,
) -> schemas.ExportJob:
    """The export, with a fresh signed download URL when it succeeded. One whose file is past
    its expiry is expired here and then (its file deleted), not only when the sweep comes."""
    export = await require(session, tenant_id, export_id)
    now = utcnow()
    if export.status == "succeeded" and _past(export, now):
        # Locked only then: a poll of an export is a read (on SQLite a lock is the write lock).
        await session.refresh(export, with_for_update=True)
        if export.status == "succeeded":
            await workflows.expire(store, export)
    url = None
    if export.status == "succeeded" and export.storage_path and export.file_expires_at:
        left = int((export.file_expires_at - now).total_seconds())
        url = await store.download_url(
            export.storage_path, expires_in=max(1, min(URL_SECONDS, left)), base_url=base_url
        )
    return record(export, download_url=url, now=now)


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, data: schemas.ListExportsInput
) -> schemas.ExportPage:
    now = utcnow()
    rows, total = await repository.page(
        session,
        tenant_id,
        status=None if data.status == "all" else data.status,
        created_by=subject if data.mine else None,
        now=now,
        **window_of(data),
    )
    return schemas.ExportPage(
        data=[record(row, now=now) for row in rows], total=total, page=data.page, limit=data.limit
    )


async def delete(
    session: AsyncSession,
    store: ObjectStore,
    tenant: TenantAccess,
    subject: str,
    export_id: uuid.UUID,
) -> schemas.DeletedExport:
    """Queued or running: cancelled (the record stays; the workflow stops before its next batch
    and deletes what it wrote). Otherwise the file and the record are deleted. A member acts
    only on the exports they created (403), an admin on any."""
    export = await require(session, tenant.tenant_id, export_id, for_update=True)
    if not tenant.role.includes(Role.admin) and export.created_by != subject:
        raise NotYourExport("Only its creator or an admin may cancel or delete this export.")
    if export.status in ACTIVE_STATUSES:
        now = utcnow()
        export.status = "cancelled"
        export.finished_at = now
        export.updated_at = now
        return schemas.DeletedExport(success=True, status="cancelled")
    if export.storage_path is not None and export.status == "succeeded":
        await store.delete(export.storage_path)
    await session.delete(export)
    return schemas.DeletedExport(success=True, status="deleted")
