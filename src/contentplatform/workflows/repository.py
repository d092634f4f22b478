"""Every query on workflows and their versions; the tenant always comes first."""

from __future__ import annotations

import uuid

from sqlalchemy import Select, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, page_of
from contentplatform.workflows.models import Workflow, WorkflowVersion

get = Owned(Workflow)


async def any_of(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> Workflow | None:
    """The workflow, deleted or not (the versions of a deleted one still run)."""
    statement = select(Workflow).where(Workflow.tenant_id == tenant_id, Workflow.id == workflow_id)
    return (await session.execute(statement)).scalar_one_or_none()


def _live(tenant_id: uuid.UUID) -> Select[Workflow]:
    return select(Workflow).where(Workflow.tenant_id == tenant_id, Workflow.deleted_at.is_(None))


async def page(
    session: AsyncSession,
    tenant_id: uuid.UUID,
    *,
    search: str | None,
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Workflow], int]:
    """Live workflows, the default first, then the most recently changed."""
    statement = _live(tenant_id)
    if search:
        needle = search.lower()
        statement = statement.where(
            or_(
                func.lower(Workflow.name).contains(needle, autoescape=True),
                func.lower(Workflow.description).contains(needle, autoescape=True),
            )
        )
    if status is not None:
        statement = statement.where(Workflow.status == status)
    return await page_of(
        session,
        statement,
        Workflow.is_default.desc(),
        Workflow.updated_at.desc(),
        Workflow.id,
        limit=limit,
        offset=offset,
    )


async def default_of(session: AsyncSession, tenant_id: uuid.UUID) -> Workflow | None:
    """The tenant's default workflow, if it has one."""
    statement = _live(tenant_id).where(Workflow.is_default.is_(True))
    return (await session.execute(statement)).scalar_one_or_none()


# --- versions -----------------------------------------------------------------------------------


async def version(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID, number: int
) -> WorkflowVersion | None:
    """Version `number` of the workflow (deleted or not: runs keep reading theirs)."""
    statement = select(WorkflowVersion).where(
        WorkflowVersion.tenant_id == tenant_id,
        WorkflowVersion.workflow_id == workflow_id,
        WorkflowVersion.version == number,
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def page_versions(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[WorkflowVersion], int]:
    """The workflow's versions, newest first."""
    statement = select(WorkflowVersion).where(
        WorkflowVersion.tenant_id == tenant_id, WorkflowVersion.workflow_id == workflow_id
    )
    return await page_of(
        session, statement, WorkflowVersion.version.desc(), limit=limit, offset=offset
    )
