"""One declaration per operation -> its REST route, its RPC route and its OpenAPI operation.

A procedure is declared once on a ProcedureRouter, over its handler:

    @router.get("getById", "/v1/drafts/{id}", access=Access.member, errors=[DraftNotFound])
    async def get_by_id(ctx: Context, data: schemas.DraftIdInput) -> schemas.Draft:
        '''One draft.'''

Its operationId is `<router>.<name>`; its input and output models are the handler's annotations;
its summary and description the handler's docstring (first line, then the rest); `errors` names
the domain errors it may raise. `mount()` turns each into two real FastAPI routes sharing that
handler, so validation, dependencies and docs behave the same in both:

- REST: input fields named in the path are path parameters; on GET and DELETE the rest are query
  parameters; on other methods they form the JSON body.
- RPC: `POST /api/rpc/<operationId>` with the whole input as one JSON object.

Fields declared with `header(...)` are request headers in both forms (a public feed's
`x-tenant-id`), never part of the query or a body. The caller's credentials are no input field:
the document declares them as the operation's security (`security_schemes()`, `_security`).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import UnionType
from typing import (
    Annotated,
    Any,
    Generic,
    Protocol,
    Required,
    TypedDict,
    TypeVar,
    Union,
    Unpack,
    get_args,
    get_origin,
    get_type_hints,
)

from fastapi import Body, FastAPI, Header, Path, Query, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi.security.base import SecurityBase
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.fields import FieldInfo
from pydantic.json_schema import models_json_schema
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.routing import BaseRoute

from contentplatform.auth.context import Access, Identity, Principal, TenantAccess
from contentplatform.config import Settings
from contentplatform.core import actors
from contentplatform.core.runtime import Runtime
from contentplatform.kit import logs, text
from contentplatform.kit.errors import (
    ALL_ERRORS,
    PROBLEM_JSON,
    BadRequest,
    MethodNotAllowed,
    NotFound,
    PlatformError,
    validation_failed,
)
from contentplatform.kit.http import encoder
from contentplatform.kit.schemas import Input, is_header

ORG_HEADER = "x-idp-org-id"
ORGANIZATION_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
RPC_PREFIX = "/api/rpc"

# How callers prove who they are, as the API document declares it (`_server` reads both headers
# itself, in this order: a missing token is 401 before a missing organization is 400).
bearer_scheme = HTTPBearer(
    auto_error=False,
    bearerFormat="JWT",
    scheme_name="bearerAuth",
    description=(
        "A session JWT issued by the identity provider (RS256, ES256 or EdDSA). "
        "On a local service, mint one with "
        "`.venv/bin/contentplatform dev-token --org org_a --user u1 --role admin` "
        "(or `python3 dev.py token --org org_a --user u1 --role admin`)."
    ),
)
organization_scheme = APIKeyHeader(
    name=ORG_HEADER,
    scheme_name="organization",
    auto_error=False,
    description=(
        "The identity provider's organization id (e.g. `org_a`): it selects the tenant a "
        "tenant-scoped operation acts in. Letters, digits, `_`, `.` and `-`, at most 255 "
        "characters, starting with a letter or digit."
    ),
)
api_key_scheme = HTTPBearer(
    auto_error=False,
    bearerFormat="cpk_...",
    scheme_name="apiKeyAuth",
    description=(
        "An API key (`Authorization: Bearer cpk_...`), made by an admin with "
        "settings.createApiKey: it fixes the organization (no x-idp-org-id needed) and acts as "
        "member or editor. Operations that do not list it refuse keys (403)."
    ),
)
SECURITY_SCHEMES: tuple[SecurityBase, ...] = (bearer_scheme, organization_scheme, api_key_scheme)


def security_schemes() -> dict[str, Any]:
    """The API document's `components.securitySchemes`."""
    return {
        scheme.scheme_name: scheme.model.model_dump(mode="json", by_alias=True, exclude_none=True)
        for scheme in SECURITY_SCHEMES
    }


def _security(access: Access, api_keys: bool) -> list[dict[str, list[str]]]:
    """An operation's security requirement: the bearer token and the organization together for
    tenant-scoped operations (one requirement object: both are needed), or an API key alone where
    keys are allowed; the token alone for the others that need a caller, none for public ones."""
    if access is Access.public:
        return []
    if access.tenant_role is None:
        return [{bearer_scheme.scheme_name: []}]
    token: dict[str, list[str]] = {
        bearer_scheme.scheme_name: [],
        organization_scheme.scheme_name: [],
    }
    return [token, {api_key_scheme.scheme_name: []}] if api_keys else [token]


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


class Authorizer(Protocol):
    async def __call__(
        self,
        request: Request,
        access: Access,
        token: str | None,
        org_id: str | None,
        *,
        api_keys: bool = True,
        feature: str | None = None,
    ) -> Principal: ...


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


@dataclass(frozen=True)
class Cached:
    """A tenant-scoped read whose answers are kept in the runtime's cache (kit/cache.py) per
    scope and input, and sent again exactly as they were first written: a hit runs no handler
    and validates or serializes nothing, so it costs little more than the caller's check.

    `scope(tenant)` names what one change retires at once (`runtime.cache.invalidate(scope)`,
    e.g. a tenant's documents); `seconds(settings)` is how long an answer is kept at most."""

    scope: Callable[[TenantAccess], str]
    seconds: Callable[[Settings], float]


@dataclass(frozen=True)
class EventStream:
    """An operation whose 200 is `text/event-stream` (kit/streams.py): its handler returns the
    streaming response, made once its unit of work has committed, so every problem before the
    stream opens (400, 402, 404, 409, 429) is still problem+json. `events` maps each event name
    to the model of its `data`; the API document lists them with their fields. When the
    handler's annotation also names a model, the operation may answer that as JSON instead."""

    events: Mapping[str, type[BaseModel]]
    terminal: Sequence[str]

    def document(self) -> dict[str, Any]:
        """The operation's 200 answer: the stream's frames, one schema per event (its `data` a
        JSON text of the event's model, `stream_components` puts the models in the document)."""
        ends = " or ".join(f"`{name}`" for name in self.terminal)
        rows = "\n".join(
            f"| `{name}` | {', '.join(f'`{field}`' for field in model.model_fields) or '-'} |"
            for name, model in self.events.items()
        )
        frames = [
            {
                "type": "object",
                "title": name,
                "required": ["event", "data"],
                "properties": {
                    "id": {"type": "string"},
                    "event": {"const": name},
                    "retry": {"type": "integer"},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": REF_TEMPLATE.format(model=model.__name__)},
                    },
                },
            }
            for name, model in self.events.items()
        ]
        return {
            "description": (
                "A `text/event-stream`: each frame has an `id:` (to resume after it, send it "
                "back as the `Last-Event-ID` header, or as `lastEventId` in the query), an "
                f"`event:` and a JSON `data:` (which also holds the frame's `seq`). It ends "
                f"with exactly one {ends}; a `: ping` comment keeps the connection open every "
                "15 seconds.\n\n"
                f"| event | data |\n|---|---|\n{rows}"
            ),
            "content": {EVENT_STREAM: {"schema": {"oneOf": frames}}},
        }


def stream_components(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The schemas the event streams of `routes` refer to (each event's data model and the
    models it holds), for the document's components."""
    models = {
        model
        for route in routes
        if (stream := getattr(getattr(route, "endpoint", None), "events", None)) is not None
        for model in stream.events.values()
    }
    ordered = sorted(models, key=lambda model: model.__name__)
    _, top = models_json_schema(
        [(model, "serialization") for model in ordered], ref_template=REF_TEMPLATE
    )
    found: dict[str, Any] = top.get("$defs", {})
    return found


EVENT_STREAM = "text/event-stream"
REF_TEMPLATE = "#/components/schemas/{model}"


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


def mount(
    app: FastAPI, routers: Sequence[ProcedureRouter], authorize: Authorizer
) -> list[BaseRoute]:
    """Add every procedure's REST and RPC routes; returns the REST routes in declaration order
    (the order of the API document)."""
    procedures = {p.operation_id: p for r in routers for p in r.procedures}
    if len(procedures) != sum(len(r.procedures) for r in routers):
        raise RuntimeError("two procedures share an operationId")
    declared: list[BaseRoute] = []
    for procedure in procedures.values():
        answer = _answerer(procedure.output)
        common: dict[str, Any] = {
            "response_model": procedure.output,
            "responses": _error_responses(procedure),
            "summary": procedure.summary,
            "description": procedure.description,
            "tags": [procedure.tag],
        }
        if procedure.events is not None:
            common["responses"][200] = procedure.events.document()
            if procedure.output is None:
                common["response_class"] = Response
        elif procedure.output is None:  # the operation answers 200 with an empty body
            common["response_class"] = Response
            common["responses"][200] = {"description": "Done; the body is empty."}
        rest, rpc = _Reading.rest(procedure), _Reading.rpc(procedure)
        app.router.add_api_route(
            procedure.path,
            _documented(
                procedure.operation_id.replace(".", "_"),
                _signature(rest),
                _server(procedure, rest, authorize, answer),
                events=procedure.events,
            ),
            methods=[procedure.method],
            operation_id=procedure.operation_id,
            openapi_extra={"security": _security(procedure.access, procedure.api_keys)},
            route_class_override=_ProcedureRoute,
            **common,
        )
        declared.append(app.router.routes[-1])
        app.router.add_api_route(
            f"{RPC_PREFIX}/{procedure.operation_id}",
            _documented(
                "rpc_" + procedure.operation_id.replace(".", "_"),
                _signature(rpc),
                _server(procedure, rpc, authorize, answer),
            ),
            methods=["POST"],
            include_in_schema=False,
            route_class_override=_ProcedureRoute,
            **common,
        )

    async def unknown_procedure(request: Request, operation_id: str) -> None:
        if operation_id in procedures:
            raise MethodNotAllowed(f"{operation_id} is called with POST.", allow=["POST"])
        raise NotFound(f"There is no procedure {operation_id!r}.")

    app.add_api_route(
        f"{RPC_PREFIX}/{{operation_id:path}}",
        unknown_procedure,
        methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        include_in_schema=False,
    )
    _match_literals_first(app, declared)
    return declared


def _match_literals_first(app: FastAPI, routes: list[BaseRoute]) -> None:
    """Starlette takes the first route that matches, so a literal segment must come before a
    parameter in the same place (`/v1/jobs/bulk/pause` is not the pause of job "bulk"),
    whichever router declared its route first. Other routes keep their order."""

    def literals_first(route: BaseRoute) -> tuple[int, ...]:
        path = getattr(route, "path", "")
        return tuple(int(part.startswith("{")) for part in path.strip("/").split("/"))

    ours = {id(route) for route in routes}
    places = [i for i, route in enumerate(app.router.routes) if id(route) in ours]
    for place, route in zip(places, sorted(routes, key=literals_first), strict=True):
        app.router.routes[place] = route


async def invoke(
    procedure: Procedure[Any, Any], request: Request, principal: Principal, data: BaseModel
) -> Any:
    """Run the handler on its validated input, in one unit of work."""
    runtime: Runtime = request.app.state.runtime
    request_id = logs.request_id()
    with actors.acting(_actor_of(principal, request, request_id)):
        async with runtime.db.unit_of_work() as session:
            ctx = Context(
                session=session,
                principal=principal,
                request_id=request_id,
                runtime=runtime,
                request=request,
            )
            return await procedure.handler(ctx, data)


def _actor_of(principal: Principal, request: Request, request_id: str) -> actors.Actor:
    """The caller as the events of this request name them."""
    identity = principal.identity
    if identity is None:
        return actors.Actor(
            type="system",
            id=None,
            display_name="System",
            ip=principal.client_address,
            request_id=request_id,
        )
    return actors.of_identity(
        identity,
        ip=principal.client_address,
        user_agent=text.cleaned(request.headers.get("user-agent") or "", 500) or None,
        request_id=request_id,
    )


def _parameter(
    name: str, annotation: Any, default: Any = inspect.Parameter.empty
) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


# Where FastAPI reads an input field that is not in the JSON body.
PARAMETER_SOURCES: dict[str, Callable[..., Any]] = {"path": Path, "query": Query, "header": Header}


@dataclass(frozen=True)
class _Reading:
    """Where one transport of an operation reads its input: the fields in the path, the query
    string and the headers, and the model of the JSON body that holds the others (none when no
    field is in it)."""

    procedure: Procedure[Any, Any]
    parameters: dict[str, tuple[str, FieldInfo]]  # field name -> (path|query|header, field)
    body: type[BaseModel] | None

    @classmethod
    def rest(cls, procedure: Procedure[Any, Any]) -> _Reading:
        return cls._of(procedure, lambda name, info: procedure.location(name, info))

    @classmethod
    def rpc(cls, procedure: Procedure[Any, Any]) -> _Reading:
        # Everything but the headers is the one JSON object, which is always there to check
        # (an operation without input refuses fields).
        return cls._of(
            procedure, lambda _, info: "header" if is_header(info) else "body", always_body=True
        )

    @classmethod
    def _of(
        cls,
        procedure: Procedure[Any, Any],
        where: Callable[[str, FieldInfo], str],
        *,
        always_body: bool = False,
    ) -> _Reading:
        parameters: dict[str, tuple[str, FieldInfo]] = {}
        body_fields: dict[str, Any] = {}
        for name, info in procedure.input.model_fields.items():
            place = where(name, info)
            if place == "body":
                body_fields[name] = (info.annotation, info)
            else:
                parameters[name] = (place, info)
        body = _body_model(procedure, body_fields) if body_fields or always_body else None
        return cls(procedure, parameters, body)

    @cached_property
    def body_keys(self) -> frozenset[str]:
        """The names a body may use: each body field's name, wire name and other accepted
        names (`seoMeta` beside `seo_meta`)."""
        fields = self.body.model_fields if self.body is not None else {}
        return frozenset(key for name, info in fields.items() for key in _names_of(name, info))

    @cached_property
    def wire_names(self) -> frozenset[tuple[str]]:
        """The error locations of the parameters (path, query, header), as pydantic names them."""
        return frozenset((info.alias or name,) for name, (_, info) in self.parameters.items())

    @cached_property
    def body_required(self) -> bool:
        fields = self.body.model_fields if self.body is not None else {}
        return any(info.is_required() for info in fields.values())

    @cached_property
    def sources(self) -> list[tuple[str, str, bool]]:
        """(where, wire name, is a list) of each parameter."""
        return [
            (place, info.alias or name, _is_sequence(info.annotation))
            for name, (place, info) in self.parameters.items()
        ]

    def read(self, request: Request, body: Any, *, also: Sequence[Any] = ()) -> BaseModel:
        """The operation's input, validated once, from the parameters and the body read as
        FastAPI reads them; 400 naming each field that fails (and the problems `also` lists)."""
        raw: dict[str, Any] = {}
        for place, key, many in self.sources:
            if place == "query":
                found = request.query_params.getlist(key) if many else request.query_params.get(key)
                if found is not None and found != []:
                    raw[key] = found
            elif place == "path":
                raw[key] = request.path_params[key]
            elif (value := request.headers.get(key)) is not None:
                raw[key] = value
        errors = list(also)
        refused: list[Any] = []
        if self.body is not None:
            if isinstance(body, dict) and body.keys() <= self.body_keys:
                raw.update(body)
            else:
                checked, refused = self._checked_body(body)
                raw.update(checked)
        try:
            data: BaseModel = self.procedure.input.model_validate(raw)
        except ValidationError as error:
            problems = error.errors(include_url=False)
            if refused:  # with a refused body, only the parameters' own problems are news
                problems = [e for e in problems if tuple(e["loc"][:1]) in self.wire_names]
            errors += problems
        else:
            if not errors and not refused:
                return data
        raise validation_failed([*errors, *refused])

    def _checked_body(self, body: Any) -> tuple[dict[str, Any], list[Any]]:
        """A body that is not plainly an object of body fields (none, an array, not JSON, a
        field named otherwise or not at all), read by the body model: its fields, or what is
        wrong with it."""
        assert self.body is not None
        if body is None:
            required = {"type": "missing", "loc": ("body",), "msg": "Field required"}
            return {}, [required] if self.body_required else []
        try:
            return self.body.model_validate(body).model_dump(exclude_unset=True), []
        except ValidationError as error:
            errors = error.errors(include_url=False)
            return {}, [{**e, "loc": ("body", *e["loc"])} for e in errors]


def _names_of(name: str, info: FieldInfo) -> set[str]:
    """Every key a JSON object may give a field under: its name, alias and validation aliases."""
    names = {name, info.alias or name}
    choices = info.validation_alias
    for choice in choices.choices if isinstance(choices, AliasChoices) else [choices]:
        if isinstance(choice, str):
            names.add(choice)
        elif isinstance(choice, AliasPath) and isinstance(choice.path[0], str):
            names.add(choice.path[0])
    return names


def _is_sequence(annotation: Any) -> bool:
    """Whether a query parameter takes several values (`?id=a&id=b`)."""
    kinds = (
        [annotation, *get_args(annotation)] if get_origin(annotation) in UNIONS else [annotation]
    )
    return any(get_origin(kind) in (list, set, tuple, frozenset) for kind in kinds)


UNIONS = (Union, UnionType)


async def _json_body(request: Request) -> Any:
    """The request body as FastAPI reads it: JSON when its content type says so (400 if it is
    not), the bytes as they are otherwise (refused by the body model), None when empty."""
    try:
        content = await request.body()
    except Exception:
        raise BadRequest("There was an error parsing the body") from None
    if not content:
        return None
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    main, _, sub = kind.partition("/")
    if main != "application" or not (sub == "json" or sub.endswith("+json")):
        return content
    try:
        return json.loads(content)
    except json.JSONDecodeError as error:
        invalid = {"type": "json_invalid", "loc": ("body", error.pos), "msg": "JSON decode error"}
        raise validation_failed([invalid]) from None
    except (ValueError, RecursionError):
        # Bytes that are not UTF-8 (UnicodeDecodeError), or nesting deeper than the parser goes.
        invalid = {"type": "json_invalid", "loc": ("body",), "msg": "JSON decode error"}
        raise validation_failed([invalid]) from None


def _bearer(request: Request) -> str | None:
    """The bearer token, read as FastAPI's HTTPBearer reads it (any other scheme: none)."""
    scheme, credentials = get_authorization_scheme_param(request.headers.get("authorization"))
    return credentials if credentials and scheme.lower() == "bearer" else None


_ORGANIZATION: TypeAdapter[str | None] = TypeAdapter(
    Annotated[str | None, StringConstraints(max_length=255, pattern=ORGANIZATION_ID)]
)


def _server(
    procedure: Procedure[Any, Any],
    reading: _Reading,
    authorize: Authorizer,
    answer: Callable[[Any], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """How a route of `procedure` serves a request, in FastAPI's order: the body is read (not
    JSON: 400), the organization header checked, the caller authorized (401, 403, 429), the
    input validated (400), the handler run and its result answered."""
    access = procedure.access

    async def serve(request: Request) -> Response:
        body = await _json_body(request) if reading.body is not None else None
        if access is Access.public:
            principal = await authorize(request, access, None, None)
        elif access.tenant_role is None:
            principal = await authorize(request, access, _bearer(request), None)
        else:
            try:
                org = _ORGANIZATION.validate_python(request.headers.get(ORG_HEADER))
            except ValidationError as error:
                # Listed with whatever else is wrong with the input, the caller unchecked.
                header = [{**e, "loc": ("header", ORG_HEADER)} for e in error.errors()]
                reading.read(request, body, also=header)
            principal = await authorize(
                request,
                access,
                _bearer(request),
                org,
                api_keys=procedure.api_keys,
                feature=procedure.feature,
            )
        data = reading.read(request, body)
        logs.bind(operation=procedure.operation_id)
        if procedure.cached is None:
            return answer(await invoke(procedure, request, principal, data))
        return await _cached_answer(procedure, procedure.cached, request, principal, data, answer)

    return serve


async def _cached_answer(
    procedure: Procedure[Any, Any],
    cached: Cached,
    request: Request,
    principal: Principal,
    data: BaseModel,
    answer: Callable[[Any], Response],
) -> Response:
    """The answer kept for this input in its scope, or the handler's, kept for next time."""
    runtime: Runtime = request.app.state.runtime
    assert principal.tenant is not None, "cached operations are tenant-scoped"

    async def produce() -> str:
        fresh = answer(await invoke(procedure, request, principal, data))
        return bytes(fresh.body).decode()

    body = await runtime.cache.get_or_set(
        cached.scope(principal.tenant),
        f"{procedure.operation_id}:{data.model_dump_json()}",
        cached.seconds(runtime.settings),
        produce,
    )
    return Response(body.encode(), media_type="application/json")


class _ProcedureRoute(APIRoute):
    """A procedure's route. FastAPI documents it from its declared endpoint (parameters, body,
    security), but it is served by the procedure's own handler (`_server`): FastAPI's solving of
    dependencies and validating each parameter per request would only repeat what the input
    model validates, and cost a sixth of a small request."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        serve: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint.serve  # type: ignore[attr-defined]
        return serve


def _documented(
    name: str,
    signature: inspect.Signature,
    serve: Callable[[Request], Awaitable[Response]],
    *,
    events: EventStream | None = None,
) -> Callable[..., Awaitable[Any]]:
    """The endpoint FastAPI documents a route by; the route serves requests with `serve`. An
    operation that streams keeps its EventStream here for `stream_components`."""

    async def endpoint(**_: Any) -> Any:
        raise RuntimeError(f"{name} is served by its procedure's route")

    endpoint.__signature__ = signature  # type: ignore[attr-defined]
    endpoint.__name__ = name
    endpoint.serve = serve  # type: ignore[attr-defined]
    endpoint.events = events  # type: ignore[attr-defined]
    return endpoint


def _signature(reading: _Reading) -> inspect.Signature:
    """The declared endpoint's parameters, which the API document is made from: each parameter
    where it is read, the body model. (Its security is the route's `openapi_extra`: FastAPI
    would make each security dependency a requirement of its own, where a tenant-scoped
    operation needs the token and the organization together.)"""
    params = [
        _field_parameter(name, info, PARAMETER_SOURCES[place])
        for name, (place, info) in reading.parameters.items()
    ]
    if reading.body is not None:
        params.append(_body_parameter(reading.body))
    return inspect.Signature(params)


def _field_parameter(name: str, info: FieldInfo, source: Callable[..., Any]) -> inspect.Parameter:
    """An input field as a path, query or header parameter, with its bounds and default."""
    marker = source(alias=info.alias or name, description=info.description)
    marker.metadata = list(info.metadata)
    default = (
        inspect.Parameter.empty
        if info.is_required()
        else info.get_default(call_default_factory=True)
    )
    return _parameter(name, Annotated[info.annotation, marker], default)


def _body_model(procedure: Procedure[Any, Any], fields: dict[str, Any]) -> type[BaseModel]:
    """The input itself when every field is in the body, else a model of just those fields."""
    if len(fields) == len(procedure.input.model_fields):
        return procedure.input
    return create_model(f"{procedure.input.__name__}Body", __base__=Input, **fields)


def _body_parameter(model: type[BaseModel]) -> inspect.Parameter:
    """The JSON body; optional when none of its fields is required."""
    required = any(info.is_required() for info in model.model_fields.values())
    return _parameter(
        "_cp_body",
        Annotated[model if required else model | None, Body()],
        inspect.Parameter.empty if required else None,
    )


def _answerer(output: Any) -> Callable[[Any], Response]:
    """How an operation's result becomes its response: serialized once, straight into the body
    (kit.http.encoder). The route sends that Response as it is, so nothing validates the output
    again; `response_model` stays declared for the API document."""
    if output is None:
        return lambda result: result if isinstance(result, Response) else Response(status_code=200)
    encode = encoder(output)

    def answer(result: Any) -> Response:
        if isinstance(result, Response):  # an event stream (EventStream)
            return result
        return Response(encode(result), media_type="application/json")

    return answer


def _error_responses(procedure: Procedure[Any, Any]) -> dict[int | str, dict[str, Any]]:
    named: dict[int, list[type[PlatformError]]] = {}
    for error in procedure.errors:
        named.setdefault(error.status, []).append(error)
    statuses = {400, 429, 500, *named}
    if procedure.access is not Access.public:
        statuses |= {401, 403}
    if procedure.path_names:
        statuses.add(404)
    generic = {error.status: error for error in ALL_ERRORS}
    return {
        status: {
            "description": _describe(generic[status], named.get(status, [])),
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in sorted(statuses)
    }


def _describe(generic: type[PlatformError], named: list[type[PlatformError]]) -> str:
    """`Title (CODE)`, then each domain error of that status with its docstring."""
    lines = [f"- `{error.__name__}`: {_doc(error)}" for error in named if error is not generic]
    heading = f"{generic.title} ({generic.code})"
    return "\n\n".join([heading, "\n".join(lines)]) if lines else heading


def _doc(error: type[PlatformError]) -> str:
    return " ".join((error.__doc__ or "").split())
