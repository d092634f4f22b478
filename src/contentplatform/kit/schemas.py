"""The shapes every operation shares: its input base, its record base, the list pages, Success.

Casing, said once: an operation's input fields are camelCase on the wire (snake_case in Python).
A record (a stored resource as the API shows it: Document, Draft, Job, ...) keeps the reference's
snake_case field names and is read straight from the stored row by attribute name. A small answer
that is not a record (stats, an upload URL, an outcome) names its fields as the reference does,
camelCase where it says so.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

T = TypeVar("T")


class Input(BaseModel):
    """Base of every operation input: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class Empty(Input):
    """The input of an operation that takes none."""


def header(name: str, description: str) -> Any:
    """A required input field read from the request header `name`, over REST and RPC alike."""
    return Field(alias=name, description=description, json_schema_extra={"in": "header"})


def is_header(info: FieldInfo) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and extra.get("in") == "header"


class Record(BaseModel):
    """A stored resource as the API shows it, validated from the row's attributes of the same
    (snake_case) names: `Draft.model_validate(row)`, or a row wherever a record is expected."""

    model_config = ConfigDict(from_attributes=True)


class Listing(BaseModel, Generic[T]):
    """A list answer: `{data, total}`."""

    data: list[T]
    total: int


class Page(Listing[T], Generic[T]):
    """A numbered page: `{data, total, page, limit}`."""

    page: int
    limit: int


class OffsetPage(Listing[T], Generic[T]):
    """A page by offset: `{data, total, limit, offset}`."""

    limit: int
    offset: int


class Success(BaseModel):
    model_config = ConfigDict(frozen=True)

    success: bool


SUCCESS = Success(success=True)


def offset_of(page: int, limit: int) -> int:
    """Where page `page` (from 1) of `limit` rows starts."""
    return (page - 1) * limit
