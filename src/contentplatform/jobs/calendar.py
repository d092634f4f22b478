"""The calendar: every occurrence of the organization's jobs in a window, planned and run."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.jobs import repository, schedule, schemas
from contentplatform.jobs.errors import CalendarWindowRefused
from contentplatform.jobs.service import spec_of
from contentplatform.kit.errors import FieldError
from contentplatform.tenants import service as tenants


async def calendar(
    session: AsyncSession, tenant_id: uuid.UUID, data: schemas.CalendarInput
) -> list[schemas.CalendarEntry]:
    """Every occurrence in the window: existing instances, and what the schedules plan beyond
    them (from each job's next run on), oldest first, at most MAX_CALENDAR_ENTRIES."""
    timezone = await tenants.timezone_of(session, tenant_id)
    start, end = (
        tenants.in_zone(data.start_date, timezone),
        tenants.in_zone(data.end_date, timezone),
    )
    if end <= start:
        raise CalendarWindowRefused(
            "endDate must be after startDate.",
            errors=[FieldError("endDate", "must be after startDate")],
        )
    if end - start > timedelta(days=schemas.MAX_CALENDAR_DAYS):
        message = f"The window spans at most {schemas.MAX_CALENDAR_DAYS} days."
        raise CalendarWindowRefused(message, errors=[FieldError("endDate", message)])
    limit = schemas.MAX_CALENDAR_ENTRIES
    entries: dict[tuple[uuid.UUID, datetime], schemas.CalendarEntry] = {}
    for job in await repository.scheduled(session, tenant_id):
        if job.next_run_at is None:
            continue
        for moment in schedule.occurrences(
            spec_of(job), timezone, max(start, job.next_run_at), end, limit
        ):
            entries[(job.id, moment)] = schemas.CalendarEntry(
                job_id=job.id,
                job_name=job.name,
                date=moment,
                instance_id=None,
                status="planned",
                draft_id=None,
            )
    existing = await repository.instances_between(session, tenant_id, start, end, limit)
    names = {
        job.id: job.name
        for job in await repository.many(session, tenant_id, list({i.job_id for i in existing}))
    }
    for instance in existing:
        entries[(instance.job_id, instance.scheduled_date)] = schemas.CalendarEntry(
            job_id=instance.job_id,
            job_name=names.get(instance.job_id, ""),
            date=instance.scheduled_date,
            instance_id=instance.id,
            status=instance.status,
            draft_id=instance.draft_id,
        )
    return sorted(entries.values(), key=lambda entry: (entry.date, entry.job_name))[:limit]
