"""The shapes every operation shares: its input base, its record base, the list pages, Success.

Casing, said once: an operation's input fields are camelCase on the wire (snake_case in Python).
Every field of every answer is snake_case, as the reference's records are: a record (a stored
resource as the API shows it: Document, Draft, Job, ...) is read straight from the stored row by
attribute name, and a small answer that is not a record (an upload URL, a calendar entry, a
connection test's outcome, a problem) is named the same way. The only camelCase in an answer is
where the reference itself spells a field so in an answer it details (REFERENCE_CAMEL_CASE):
the API keeps its contract there. tests/test_openapi_document.py holds every answer to this.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Annotated, Any, Generic, Protocol, TypedDict, TypeVar, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from contentplatform.kit import text

T = TypeVar("T")

# The answer fields the reference spells in camelCase (platform-api-0.2.0.md): documents.getContent
# {contentError}, drafts.getStats {byStatus}, jobs.getAnalytics {totalDrafts, approvedDrafts,
# publishedDrafts, avgSeoScore, publishSuccessRate}, a document's `usage` {generationCount,
# lastUsedAt} and its knowledge metadata {isPrimary}. No other answer field is camelCase.
REFERENCE_CAMEL_CASE = frozenset(
    {
        "contentError",
        "byStatus",
        "totalDrafts",
        "approvedDrafts",
        "publishedDrafts",
        "avgSeoScore",
        "publishSuccessRate",
        "generationCount",
        "lastUsedAt",
        "isPrimary",
    }
)

# The furthest page a numbered list goes (`page: int = Field(1, ge=1, le=MAX_PAGE)`): far past
# any tenant's rows, so a page past the last is an empty page, and small enough that its offset
# is an ordinary integer to every database. Further is a 400.
MAX_PAGE = 100_000


class Input(BaseModel):
    """Base of every operation input: camelCase on the wire, unknown fields refused, and every
    field held to kit/text.py's rule: each string in it (in lists, dict keys and values too) as
    its `TextRule` marker says, one line of text when it has none; each integer within
    `text.MIN_INT`..`text.MAX_INT` on each side where the field declares no bound of its own
    (`le=`/`lt=`, `ge=`/`gt=`). So an operation added later cannot forget either: a refusal is
    a 400 naming the field."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    @field_validator("*", mode="after")
    @classmethod
    def _text_and_bounds(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name is None:
            return value
        rule, has_max, has_min = _rules_of(cls, info.field_name)
        return text.checked(value, rule, has_max=has_max, has_min=has_min)


@cache
def _rules_of(model: type[BaseModel], name: str) -> tuple[text.TextRule, bool, bool]:
    """The text rule a field's annotation names (one line when none) and whether it declares an
    upper and a lower bound of its own, wherever they sit (`list[Name] | None`, `Field(le=)`)."""
    info = model.model_fields[name]
    found = list(_metadata_in(info.annotation, info.metadata))
    rule = next((m for m in found if isinstance(m, text.TextRule)), text.LINE)
    has_max = any(isinstance(m, Le | Lt) for m in found)
    has_min = any(isinstance(m, Ge | Gt) for m in found)
    return rule, has_max, has_min


def _metadata_in(annotation: Any, metadata: list[Any]) -> Iterator[Any]:
    """Every metadata object of a field: its own and those of the Annotated types inside it."""
    for item in metadata:
        yield item
        if isinstance(item, FieldInfo):
            yield from item.metadata
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        yield from _metadata_in(base, extra)
        return
    for argument in get_args(annotation):
        yield from _metadata_in(argument, [])


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


class Numbered(Protocol):
    """The input of a numbered list: which page (from 1), of how many rows."""

    @property
    def page(self) -> int: ...

    @property
    def limit(self) -> int: ...


class Window(TypedDict):
    """The rows a repository's page reads: `limit` of them, after skipping `offset`."""

    limit: int
    offset: int


def window_of(data: Numbered) -> Window:
    """The rows of the numbered page `data` asks for, as a repository's page takes them:
    `await repository.page(session, tenant_id, status=data.status, **window_of(data))`."""
    return Window(limit=data.limit, offset=offset_of(data.page, data.limit))
