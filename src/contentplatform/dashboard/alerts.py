"""Alerts (dashboard.alerts): derived from the current state on each read, so one clears when
its condition does; each carries the caller's notification of the event that raised it.

| kind | condition now | raised by (notification) |
|---|---|---|
| job_failed | a job in status error | `job.run_failed` about the job |
| publisher_disconnected | a connection in status error | none (no event is told of it) |
| credits_low | available credits under the low-balance line (0: critical) | `credits.low_balance` |
| license_expiring | an asset in use whose licence ends within 30 days | `media.license_expiring` |
| license_expired | the same, ended | `media.license_expired` |
| crawl_failed | a crawl configuration whose last run failed | `crawl.failed` about the run |
| broken_links | the last run's snapshot has broken links | `crawl.completed` about the run |
| review_overdue | a draft in review longer than queue.REVIEW_DUE | none |

Acknowledging an alert is reading its notification (notifications.markRead with the id): the
alert stays while its condition holds, `acknowledged`. The catalog's analytics_source_error
comes with the content-analytics sources (a later issue): no source exists to raise it yet.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.credits import service as credits
from contentplatform.dashboard import queue, schemas, service
from contentplatform.jobs import service as jobs
from contentplatform.jobs.schemas import ListJobsInput
from contentplatform.kit.db import utcnow
from contentplatform.kit.schemas import window_of
from contentplatform.media import service as media
from contentplatform.notifications import service as notifications
from contentplatform.publishers import service as publishers
from contentplatform.publishers.schemas import ListConnectionsInput

# Alerts read of each kind at most.
MAX_ALERTS = 500
_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def _alert(
    kind: schemas.AlertKind,
    severity: schemas.Severity,
    title: str,
    message: str,
    ref_type: str,
    ref_id: uuid.UUID,
    at: datetime,
    raised_by: str | None,
) -> tuple[schemas.Alert, str | None]:
    alert = schemas.Alert(
        id=f"{kind}:{ref_id}",
        kind=kind,
        severity=severity,
        title=title,
        message=message,
        ref=schemas.Ref(type=ref_type, id=ref_id),
        created_at=at,
        notification_id=None,
        acknowledged=False,
    )
    return alert, raised_by


async def current(session: AsyncSession, tenant_id: uuid.UUID, subject: str) -> list[schemas.Alert]:
    """Every alert of the tenant now, the most severe first, then the newest."""
    now = utcnow()
    found: list[tuple[schemas.Alert, str | None]] = []
    for job in await jobs.list_jobs(
        session, tenant_id, ListJobsInput(status="error", limit=MAX_ALERTS)
    ):
        found.append(
            _alert(
                "job_failed",
                "critical",
                f"Job {job.name} failed",
                "Its last run failed; see the job's runs, then resume it.",
                "job",
                job.id,
                job.updated_at,
                "job.run_failed",
            )
        )
    failing = await publishers.list_connections(
        session, tenant_id, ListConnectionsInput(status="error")
    )
    for connection in failing.data:
        found.append(
            _alert(
                "publisher_disconnected",
                "critical",
                f"Connection {connection.name} is failing",
                connection.last_error or "Its last test or publish failed; reconnect it.",
                "publisher",
                connection.id,
                connection.last_tested_at or connection.updated_at,
                None,
            )
        )
    balance = await credits.balance(session, tenant_id)
    if balance.available < balance.low_balance_threshold or balance.available <= 0:
        empty = balance.available <= 0
        found.append(
            _alert(
                "credits_low",
                "critical" if empty else "warning",
                "No credits left" if empty else "Credits are running low",
                f"{balance.available} credits available "
                f"(low-balance line {balance.low_balance_threshold}).",
                "tenant",
                tenant_id,
                now,
                "credits.low_balance",
            )
        )
    _, _, ending = await media.licence_figures(session, tenant_id, now, MAX_ALERTS)
    for asset in ending:
        ends = asset.license_expires_at
        assert ends is not None, "licence_figures lists assets whose licence ends"
        expired = ends <= now
        found.append(
            _alert(
                "license_expired" if expired else "license_expiring",
                "critical" if expired else "warning",
                f"Licence of {asset.filename} {'has ended' if expired else 'ends soon'}",
                f"It {'ended' if expired else 'ends'} {ends.date().isoformat()}; drafts use it.",
                "media",
                asset.id,
                ends if expired else asset.updated_at,
                "media.license_expired" if expired else "media.license_expiring",
            )
        )
    website = await service.site(session, tenant_id)
    for config in website.configs:
        run = config.last_run
        if run is None:
            continue
        if run.status == "failed":
            found.append(
                _alert(
                    "crawl_failed",
                    "warning",
                    f"Crawl of {config.name} failed",
                    "Its last crawl failed; what it fetched is kept as a partial snapshot.",
                    "crawl_run",
                    run.id,
                    run.finished_at or run.started_at or now,
                    "crawl.failed",
                )
            )
        snapshot = website.snapshots.get(config.id)
        if snapshot is not None and snapshot.broken_link_count > 0:
            found.append(
                _alert(
                    "broken_links",
                    "warning",
                    f"{snapshot.broken_link_count} broken links on {config.name}",
                    "The last crawl found links that answer an error; see its broken links.",
                    "crawl_run",
                    run.id,
                    snapshot.created_at,
                    "crawl.completed",
                )
            )
    for item in await queue.items(session, tenant_id, now):
        if item.type == "draft_review" and item.overdue and item.draft_id is not None:
            found.append(
                _alert(
                    "review_overdue",
                    "warning",
                    f"Review overdue: {item.title}",
                    "In review for more than 48 hours.",
                    "draft",
                    item.draft_id,
                    item.due_at or now,
                    None,
                )
            )
    keys = [(raised, alert.ref.id) for alert, raised in found if raised is not None]
    told = await notifications.latest_about(session, tenant_id, subject, keys)
    alerts: list[schemas.Alert] = []
    for alert, raised in found:
        notification = told.get((raised, alert.ref.id)) if raised is not None else None
        if notification is not None:
            alert.notification_id = notification.id
            alert.acknowledged = notification.read_at is not None
        alerts.append(alert)
    alerts.sort(key=lambda a: (_SEVERITY_RANK[a.severity], -a.created_at.timestamp(), a.id))
    return alerts


async def page(
    session: AsyncSession, tenant_id: uuid.UUID, subject: str, data: schemas.AlertsInput
) -> schemas.AlertPage:
    found = await current(session, tenant_id, subject)
    if data.severity != "all":
        found = [alert for alert in found if alert.severity == data.severity]
    window = window_of(data)
    return schemas.AlertPage(
        data=found[window["offset"] : window["offset"] + window["limit"]],
        total=len(found),
        page=data.page,
        limit=data.limit,
    )
