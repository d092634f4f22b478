"""GEO's queries: the generated llms.txt, and the pages' recent clicks. The tenant first."""

from __future__ import annotations

import uuid
from datetime import date

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.seo.models import SeoLlmsTxt, SeoPageDay


async def llms_txt(session: AsyncSession, tenant_id: uuid.UUID) -> SeoLlmsTxt | None:
    statement = select(SeoLlmsTxt).where(SeoLlmsTxt.tenant_id == tenant_id)
    return (await session.execute(statement)).scalar_one_or_none()


async def page_clicks(
    session: AsyncSession, tenant_id: uuid.UUID, property_id: uuid.UUID, first: date, last: date
) -> dict[str, int]:
    """Web-search clicks of each page of the property in [first, last]."""
    statement = (
        select(SeoPageDay.page, func.sum(SeoPageDay.clicks))
        .where(
            SeoPageDay.tenant_id == tenant_id,
            SeoPageDay.property_id == property_id,
            SeoPageDay.search_type == "web",
            SeoPageDay.day >= first,
            SeoPageDay.day <= last,
        )
        .group_by(SeoPageDay.page)
    )
    return {page: int(clicks or 0) for page, clicks in (await session.execute(statement)).tuples()}
