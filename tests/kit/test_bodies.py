"""JSON bodies (kit.http.encoder): byte for byte what pydantic writes, whichever writes them.

Plain output models are written by orjson from their fields, others by pydantic; either way the
body must be exactly pydantic's (by alias), which is what FastAPI sent before.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from contentplatform.documents import schemas as documents
from contentplatform.drafts import schemas as drafts
from contentplatform.kit.http import encoder
from contentplatform.kit.schemas import Record


class Colour(StrEnum):
    red = "red"
    green = "green"


class Inner(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, serialize_by_alias=True)

    some_name: str
    tags: list[str] = Field(default_factory=list)


class Outer(Record):
    id: uuid.UUID
    at: datetime
    maybe_at: datetime | None
    colour: Colour
    kind: Literal["a", "b"]
    score: float
    count: int
    meta: dict[str, Any]
    inner: Inner
    items: list[Inner]


def pydantic_json(shape: Any, value: Any) -> bytes:
    return TypeAdapter(shape).dump_json(value, by_alias=True)


def outer(**changes: Any) -> Outer:
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "at": datetime(2026, 11, 24, 19, 35, 4, 123456, tzinfo=UTC),
        "maybe_at": None,
        "colour": Colour.green,
        "kind": "a",
        "score": 0.1,
        "count": 7,
        "meta": {"nested": [1, 2.5, None, True, 'é<b>\u2028"q"'], "n": {"k": {}}},
        "inner": {"someName": "x", "tags": ["a"]},
        "items": [{"someName": "y"}, {"someName": "z", "tags": ["b", "c"]}],
    }
    return Outer.model_validate({**values, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"at": datetime(2026, 1, 1, tzinfo=UTC), "maybe_at": datetime(2026, 1, 1, 1, 2, 3)},
        {"at": datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=5, minutes=30)))},
        {"score": 1e16, "count": -(2**62)},
        {"score": float("nan")},
        {"meta": {"when": datetime(2026, 1, 1, tzinfo=UTC), "id": uuid.UUID(int=5)}},
    ],
)
def test_a_plain_model_is_written_exactly_as_pydantic_writes_it(changes):
    value = outer(**changes)
    assert encoder(Outer)(value) == pydantic_json(Outer, value)


def test_what_orjson_refuses_is_written_by_pydantic():
    value = outer(meta={"big": 2**70, "money": Decimal("1.10"), "gap": timedelta(seconds=90)})
    assert encoder(Outer)(value) == pydantic_json(Outer, value)


def test_a_driver_uuid_type_is_written_as_a_uuid():
    class DriverUUID(uuid.UUID):  # as asyncpg's own UUID type
        pass

    value = outer(id=DriverUUID(int=42))
    assert encoder(Outer)(value) == pydantic_json(Outer, value)


def test_only_the_declared_fields_of_a_subclass_are_written():
    class Wider(Outer):
        secret: str = "not for the wire"

    value = Wider.model_validate(outer().model_dump())
    written = encoder(Outer)(value)
    assert b"not for the wire" not in written
    assert written == pydantic_json(Outer, value)


def test_a_dict_result_is_validated_into_the_declared_shape():
    value = outer()
    as_dict = value.model_dump(by_alias=True)
    assert encoder(Outer)(as_dict) == pydantic_json(Outer, value)
    with pytest.raises(ValidationError):
        encoder(Outer)({**as_dict, "count": "many"})


def test_real_pages_are_written_as_pydantic_writes_them():
    draft = {
        "id": uuid.uuid4(),
        "tenant_id": uuid.uuid4(),
        "title": "Soil <b>first</b>",
        "content": "<p>Compost &amp; mulch</p>",
        "excerpt": None,
        "seo_meta": {"focus_keywords": ["soil"], "score_breakdown": {"total": 40, "checks": []}},
        "seo_score": 40,
        "status": "reviewing",
        "job_id": None,
        "instance_id": None,
        "run_id": uuid.uuid4(),
        "assignee_id": None,
        "rejection_reason": None,
        "provenance": {"sources": [{"number": 1, "heading": "Beds"}]},
        "version": 1,
        "created_at": datetime.now(UTC),
        "updated_at": datetime.now(UTC),
        "approved_at": None,
        "approved_by": None,
        "published_at": None,
        "published_url": None,
        "slug": None,
        "auto_publish": None,
    }
    page = drafts.DraftPage(data=[draft, {**draft, "id": uuid.uuid4()}], total=2)
    assert encoder(drafts.DraftPage)(page) == pydantic_json(drafts.DraftPage, page)

    document = {
        "id": uuid.uuid4(),
        "filename": "guide.pdf",
        "file_type": "pdf",
        "storage_path": "org/uploads/guide.pdf",
        "source": "upload",
        "source_metadata": {"knowledge": {"isPrimary": True}},
        "status": "ready",
        "error": None,
        "chunk_count": 3,
        "document_version": 1,
        "content_hash": "ab" * 32,
        "size_bytes": 1000,
        "knowledge": {"is_primary": True, "tags": ["soil"]},
        "usage": {"generation_count": 2, "last_used_at": datetime.now(UTC)},
        "created_at": datetime.now(UTC),
        "updated_at": datetime.now(UTC),
        "archived_at": None,
    }
    documents_page = documents.DocumentPage(data=[document], total=1, limit=50, offset=0)
    written = encoder(documents.DocumentPage)(documents_page)
    assert written == pydantic_json(documents.DocumentPage, documents_page)
    assert b'"isPrimary":true' in written and b'"generationCount":2' in written


def test_plain_models_take_the_fast_writer(monkeypatch):
    encode = encoder(Outer)

    def refuse(*_: Any, **__: Any) -> bytes:
        raise AssertionError("pydantic's serializer was used")

    monkeypatch.setattr(TypeAdapter, "dump_json", refuse)
    assert encode(outer()).startswith(b'{"id":"')
