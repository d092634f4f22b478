"""Declared answer caching (`cached=Cached(...)`): a hit is the stored body, sent as it was.

The `tally` router exists only here: `tally.count` is a cached tenant read whose handler counts
its own runs, so a test sees whether an answer came from the cache; `tally.change` retires the
tenant's scope, as a domain's write does.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from pydantic import BaseModel, Field

from contentplatform.auth.context import Access, TenantAccess
from contentplatform.core.procedures import Cached, Context, ProcedureRouter
from contentplatform.kit.schemas import Empty, Input, Success
from tests.conftest import Caller
from tests.support.servers import second_service

router = ProcedureRouter("tally", tag="Tally")
runs: Counter[str] = Counter()


def scope(tenant: TenantAccess) -> str:
    return f"tally:{tenant.tenant_id}"


class CountInput(Input):
    label: str = Field("all", max_length=20)


class Count(BaseModel):
    label: str
    runs: int


@router.get(
    "count",
    "/v1/tally",
    access=Access.member,
    cached=Cached(scope=scope, seconds=lambda _: 60),
)
async def count(ctx: Context, data: CountInput) -> Count:
    """How often this handler ran for the organization and label."""
    runs[f"{ctx.tenant.org_id}:{data.label}"] += 1
    return Count(label=data.label, runs=runs[f"{ctx.tenant.org_id}:{data.label}"])


@router.post("change", "/v1/tally/change", access=Access.member)
async def change(ctx: Context, _: Empty) -> Success:
    """Something the cached answers depend on changed."""
    await ctx.runtime.cache.invalidate(scope(ctx.tenant))
    return Success(success=True)


@pytest.fixture(scope="module")
def tally_client(settings_with) -> Iterator[httpx.Client]:
    with second_service(settings_with(), [router]) as running, running.client() as http:
        yield http


@pytest.fixture(scope="module")
def document(tally_client: httpx.Client) -> dict:
    return tally_client.get("/openapi.json").json()


@pytest.fixture
def both(tally_client, document) -> dict[str, Caller]:
    return {t: Caller(tally_client, document, t) for t in ("rest", "rpc")}


def member(token, org: str) -> dict[str, str]:
    return {"token": token(org, f"m_{uuid.uuid4().hex[:6]}", "member"), "org": org}


def test_a_hit_is_the_stored_answer_on_both_transports(both, token, org):
    caller = member(token, org)
    first = both["rest"]("tally.count", {"label": "a"}, **caller)
    assert first.status_code == 200, first.text
    assert first.json() == {"label": "a", "runs": 1}
    assert first.headers["content-type"] == "application/json"
    for transport in ("rest", "rpc", "rest"):
        again = both[transport]("tally.count", {"label": "a"}, **caller)
        assert again.status_code == 200 and again.content == first.content  # not run again


def test_each_input_and_each_tenant_has_its_own_answer(both, token, org):
    caller, other = member(token, org), member(token, f"other_{uuid.uuid4().hex[:8]}")
    assert both["rest"]("tally.count", {"label": "a"}, **caller).json()["runs"] == 1
    assert both["rest"]("tally.count", {"label": "b"}, **caller).json() == {
        "label": "b",
        "runs": 1,
    }
    assert both["rpc"]("tally.count", {"label": "a"}, **other).json()["runs"] == 1


def test_a_change_retires_the_tenants_answers(both, token, org):
    caller = member(token, org)
    assert both["rest"]("tally.count", {}, **caller).json()["runs"] == 1
    assert both["rest"]("tally.change", {}, **caller).status_code == 200
    assert both["rpc"]("tally.count", {}, **caller).json()["runs"] == 2
    assert both["rest"]("tally.count", {}, **caller).json()["runs"] == 2


def test_a_refused_caller_never_sees_a_cached_answer(both, token, org):
    caller = member(token, org)
    assert both["rest"]("tally.count", {}, **caller).status_code == 200
    assert both["rest"]("tally.count", {}, org=org).status_code == 401
    stranger = token(f"else_{uuid.uuid4().hex[:8]}", "stranger", "member")
    assert both["rpc"]("tally.count", {}, token=stranger, org=org).status_code == 403


def test_only_tenant_scoped_reads_can_be_cached():
    other = ProcedureRouter("other", tag="Other")
    with pytest.raises(TypeError, match="tenant-scoped"):

        @other.get("open", "/v1/open", access=Access.public, cached=Cached(scope, lambda _: 1))
        async def open_read(ctx: Context, _: Empty) -> Count:
            """A public read."""
            return Count(label="x", runs=0)
