"""Every query on workflows and their versions; the tenant always comes first."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import Select, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.kit.db import Owned, cross_tenant, owned_by, page_of
from contentplatform.workflows.models import Workflow, WorkflowVersion

get = Owned(Workflow)


async def any_of(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID
) -> Workflow | None:
    """The workflow, deleted or not (the versions of a deleted one still run)."""
    return await owned_by(session, Workflow, tenant_id, id=workflow_id)


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


# --- for many tenants at once (the scheduler's tick) --------------------------------------------


async def defaults_of(
    session: AsyncSession, tenant_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, Workflow]:
    """The default workflow of each of these tenants that has one."""
    if not tenant_ids:
        return {}
    statement = select(Workflow).where(
        Workflow.tenant_id.in_(set(tenant_ids)),
        Workflow.deleted_at.is_(None),
        Workflow.is_default.is_(True),
    )
    return {row.tenant_id: row for row in (await session.execute(statement)).scalars()}


@cross_tenant("keys by (tenant, workflow): each tenant's own")
async def workflows_of(
    session: AsyncSession, named: Collection[tuple[uuid.UUID, uuid.UUID]], *, live: bool
) -> dict[tuple[uuid.UUID, uuid.UUID], Workflow]:
    """These (tenant, workflow id)'s workflows, by that pair: not deleted, when `live`."""
    if not named:
        return {}
    statement = select(Workflow).where(
        Workflow.tenant_id.in_({tenant_id for tenant_id, _ in named}),
        Workflow.id.in_({workflow_id for _, workflow_id in named}),
    )
    if live:
        statement = statement.where(Workflow.deleted_at.is_(None))
    found = {(row.tenant_id, row.id): row for row in (await session.execute(statement)).scalars()}
    return {pair: row for pair, row in found.items() if pair in named}


@cross_tenant("keys by (tenant, workflow, version): each tenant's own")
async def versions_of(
    session: AsyncSession, wanted: Collection[tuple[uuid.UUID, uuid.UUID, int]]
) -> dict[tuple[uuid.UUID, uuid.UUID, int], WorkflowVersion]:
    """These (tenant, workflow id, version number)'s versions, by that triple."""
    if not wanted:
        return {}
    statement = select(WorkflowVersion).where(
        WorkflowVersion.tenant_id.in_({tenant_id for tenant_id, _, _ in wanted}),
        WorkflowVersion.workflow_id.in_({workflow_id for _, workflow_id, _ in wanted}),
        WorkflowVersion.version.in_({number for _, _, number in wanted}),
    )
    found = {
        (row.tenant_id, row.workflow_id, row.version): row
        for row in (await session.execute(statement)).scalars()
    }
    return {key: row for key, row in found.items() if key in wanted}


# --- versions -----------------------------------------------------------------------------------


async def version(
    session: AsyncSession, tenant_id: uuid.UUID, workflow_id: uuid.UUID, number: int
) -> WorkflowVersion | None:
    """Version `number` of the workflow (deleted or not: runs keep reading theirs)."""
    return await owned_by(
        session, WorkflowVersion, tenant_id, workflow_id=workflow_id, version=number
    )


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
