"""Lists and their totals read the partial indexes of live rows (migration 0008), not wide rows.

On a freshly migrated SQLite database, the plan of a page of a tenant's live drafts (or
documents), as `page_of` runs it over `plain(...)`, and of its count search a `_live` index.
"""

from __future__ import annotations

import sqlite3
import uuid

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import sqlite

from contentplatform.config import Settings
from contentplatform.documents.models import Document
from contentplatform.drafts.models import Draft
from contentplatform.kit import migrations
from contentplatform.kit.db import count_of, plain


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    data_dir = tmp_path_factory.mktemp("live")
    migrations.upgrade(Settings(_env_file=None, data_dir=data_dir))  # type: ignore[call-arg]
    return sqlite3.connect(data_dir / "contentplatform.db")


def plan(database: sqlite3.Connection, statement: object) -> str:
    sql = statement.compile(  # type: ignore[attr-defined]
        dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}
    )
    return " | ".join(row[3] for row in database.execute(f"EXPLAIN QUERY PLAN {sql}"))


@pytest.mark.parametrize("model", [Draft, Document])
def test_a_page_and_its_total_read_the_live_index(database, model):
    live = plain(select(model).where(model.tenant_id == uuid.uuid4(), model.deleted_at.is_(None)))
    page = plan(database, live.order_by(model.created_at.desc(), model.id).limit(50))
    assert f"USING INDEX ix_{model.__tablename__}_tenant_id_created_at_live" in page, page
    total = plan(database, count_of(live))
    assert total.startswith(f"SEARCH {model.__tablename__} USING"), total
    assert "_live (tenant_id=?)" in total, total
