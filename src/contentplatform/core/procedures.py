"""One declaration per operation -> its REST route, its RPC route and its OpenAPI operation.

A procedure is declared once on a ProcedureRouter, over its handler:

    @router.get("getById", "/v1/drafts/{id}", access=Access.member, errors=[DraftNotFound])
    async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
        '''One draft.'''

Its operationId is `<router>.<name>`; its input and output models are the handler's annotations;
its summary and description the handler's docstring (first line, then the rest); `errors` names
the domain errors it may raise. `routing.mount()` turns each into two real FastAPI routes sharing
that handler, so validation, dependencies and docs behave the same in both:

- REST: input fields named in the path are path parameters; on GET and DELETE the rest are query
  parameters; on other methods they form the JSON body.
- RPC: `POST /api/rpc/<operationId>` with the whole input as one JSON object.

Fields declared with `header(...)` are request headers in both forms (a public feed's
`x-tenant-id`), never part of the query or a body. The caller's credentials are no input field:
the document declares them as the operation's security (openapi_document.py). An event stream
declared with `stream_token=` is also opened over REST by a stream URL's token (`?streamToken=`,
auth/stream_tokens.py), for a browser's EventSource.

This module holds the declaration; routing.py serves it (REST and RPC), openapi_document.py
documents it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import UnionType
from typing import (
    Any,
    Generic,
    Required,
    TypedDict,
    TypeVar,
    Union,
    Unpack,
    get_args,
    get_origin,
    get_type_hints,
)

from fastapi import Request, Response
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Access, Identity, Principal, TenantAccess
from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.kit.errors import PlatformError
from contentplatform.kit.schemas import is_header

# The header naming the organization a tenant-scoped operation acts in, and its shape.
ORG_HEADER = "x-idp-org-id"
ORGANIZATION_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


@dataclass
class Context:
    """What a handler gets besides its input: the caller, the transaction, settings."""

    session: AsyncSession
    principal: Principal
    request_id: str
    runtime: Runtime
    request: Request = field(repr=False)

    @property
    def base_url(self) -> str:
        """Where this service is reached, as the client called it (for links it hands out)."""
        return str(self.request.base_url).rstrip("/")

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def tenant(self) -> TenantAccess:
        if self.principal.tenant is None:
            raise RuntimeError("tenant context used by an operation that is not tenant-scoped")
        return self.principal.tenant

    @property
    def identity(self) -> Identity:
        if self.principal.identity is None:
            raise RuntimeError("identity used by a public operation")
        return self.principal.identity


InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT")
Handler = Callable[[Context, InT], Awaitable[OutT]]


@dataclass(frozen=True)
class Procedure(Generic[InT, OutT]):
    operation_id: str
    method: str
    path: str
    access: Access
    input: type[InT]
    output: Any
    handler: Handler[InT, OutT]
    summary: str
    description: str | None
    tag: str
    errors: tuple[type[PlatformError], ...] = ()  # see Declared
    cached: Cached | None = None
    events: EventStream | None = None
    # Whether an API key may call it (tenant-scoped operations only; see Declared).
    api_keys: bool = True
    # The feature flag it sits behind (features/flags.py): off for the tenant, it answers 403.
    feature: str | None = None
    # The stream a stream token must name to open it, from its input (see Declared).
    stream_token: Callable[[Any], str] | None = None

    @property
    def path_names(self) -> set[str]:
        return set(re.findall(r"{(\w+)}", self.path))

    def location(self, name: str, info: FieldInfo) -> str:
        if is_header(info):
            return "header"
        if (info.alias or name) in self.path_names:
            return "path"
        return "query" if self.method in {"GET", "DELETE"} else "body"


class Declared(TypedDict, total=False):
    """What a declaration says besides its name, method and path. Summary and description
    default to the handler's docstring: its first line, then the rest (whitespace folded,
    paragraphs kept)."""

    access: Required[Access]
    summary: str
    description: str
    # The errors it raises beyond the ones every operation may (400, 401, 403, 429, 500, and
    # 404 when its path names a record): domain error classes, listed in its OpenAPI responses.
    errors: Sequence[type[PlatformError]]
    # Its answers are cached (tenant-scoped reads only; see Cached).
    cached: Cached
    # It answers `text/event-stream` (see EventStream).
    events: EventStream
    # Whether an API key may call it; default: the router's (`ProcedureRouter.api_keys`).
    api_keys: bool
    # The feature flag it sits behind; default: the router's (`ProcedureRouter.feature`).
    feature: str | None
    # A tenant-scoped GET event stream that a stream token (`?streamToken=`, made for one
    # stream: auth/stream_tokens.py) also opens over REST, for a browser's EventSource: the name
    # of the stream its input asks for, which the token must name (else 403).
    stream_token: Callable[[Any], str]


@dataclass(frozen=True)
class EventStream:
    """An operation whose 200 is `text/event-stream` (kit/streams/): its handler returns the
    streaming response, made once its unit of work has committed, so every problem before the
    stream opens (400, 402, 404, 409, 429) is still problem+json. `events` maps each event name
    to the model of its `data`; the API document lists them with their fields. When the
    handler's annotation also names a model, the operation may answer that as JSON instead."""

    events: Mapping[str, type[BaseModel]]
    terminal: Sequence[str]


@dataclass(frozen=True)
class Cached:
    """A tenant-scoped read whose answers are kept in the runtime's cache (kit/cache.py) per
    scope and input, and sent again exactly as they were first written: a hit runs no handler
    and validates or serializes nothing, so it costs little more than the caller's check.

    `scope(tenant)` names what one change retires at once (`runtime.cache.invalidate(scope)`,
    e.g. a tenant's documents); `seconds(settings)` is how long an answer is kept at most."""

    scope: Callable[[TenantAccess], str]
    seconds: Callable[[Settings], float]


@dataclass
class ProcedureRouter:
    """The procedures of one router (`documents`, `jobs`, ...)."""

    name: str
    tag: str
    # What its procedures declare unless one says otherwise: whether API keys may call them
    # (never team, settings, billing administration, webhook endpoints: their routers say so),
    # and the feature flag they sit behind.
    api_keys: bool = True
    feature: str | None = None
    procedures: list[Procedure[Any, Any]] = field(default_factory=list)

    def procedure(
        self, name: str, method: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        """Declare `handler(ctx, data: Input) -> Output` as operation `<router>.<name>`. Its
        input and output models are the ones its signature names (`-> None`: an empty body)."""

        def register(handler: Handler[InT, OutT]) -> Handler[InT, OutT]:
            input, output = _models_of(handler)
            if "cached" in declared and declared["access"].tenant_role is None:
                raise TypeError(f"{self.name}.{name}: only tenant-scoped reads are cached")
            if "stream_token" in declared and (
                declared["access"].tenant_role is None
                or method.upper() != "GET"
                or "events" not in declared
            ):
                raise TypeError(
                    f"{self.name}.{name}: only tenant-scoped GET event streams take stream tokens"
                )
            summary, description = declared.get("summary"), declared.get("description")
            if summary is None:
                summary, described = _documentation(handler)
                description = description or described
            feature = declared.get("feature", self.feature)
            if feature is not None:
                flagged = f"Behind the feature flag `{feature}`: 403 while it is off."
                description = f"{description}\n\n{flagged}" if description else flagged
            self.procedures.append(
                Procedure(
                    operation_id=f"{self.name}.{name}",
                    method=method.upper(),
                    path=path,
                    access=declared["access"],
                    input=input,
                    output=output,
                    handler=handler,
                    summary=summary,
                    description=description,
                    tag=self.tag,
                    errors=tuple(declared.get("errors", ())),
                    cached=declared.get("cached"),
                    events=declared.get("events"),
                    api_keys=declared.get("api_keys", self.api_keys),
                    feature=feature,
                    stream_token=declared.get("stream_token"),
                )
            )
            return handler

        return register

    def get(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "GET", path, **declared)

    def post(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "POST", path, **declared)

    def patch(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "PATCH", path, **declared)

    def delete(
        self, name: str, path: str, **declared: Unpack[Declared]
    ) -> Callable[[Handler[InT, OutT]], Handler[InT, OutT]]:
        return self.procedure(name, "DELETE", path, **declared)


def declared_headers(routers: Sequence[ProcedureRouter]) -> set[str]:
    """The request headers the operations of `routers` read as input (`header(...)` fields),
    besides the credentials' (for CORS: what a browser may send)."""
    return {
        (info.alias or name).lower()
        for router in routers
        for procedure in router.procedures
        for name, info in procedure.input.model_fields.items()
        if is_header(info)
    }


def _documentation(handler: Callable[..., Any]) -> tuple[str, str | None]:
    """The summary (first line) and description (the rest) of the handler's docstring."""
    first, _, rest = inspect.cleandoc(handler.__doc__ or "").partition("\n")
    if not first.strip():
        raise TypeError(f"{handler.__qualname__} needs a docstring (its summary) or a summary=")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", rest) if p.strip()]
    return first.strip(), "\n\n".join(paragraphs) or None


def _models_of(handler: Callable[..., Any]) -> tuple[type[BaseModel], Any]:
    """The input model of `handler(ctx, data)` and what it returns, from its annotations (a
    streaming response it may return is not part of its output model)."""
    hints = get_type_hints(handler)
    data = list(inspect.signature(handler).parameters)[1]
    output = hints["return"]
    kinds = get_args(output) if get_origin(output) in UNIONS else (output,)
    models = [kind for kind in kinds if not _is_response(kind)]
    if len(models) != len(kinds):
        output = Union[tuple(models)] if models else None  # noqa: UP007
    return hints[data], None if output is type(None) else output


def _is_response(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, Response)


UNIONS = (Union, UnionType)
