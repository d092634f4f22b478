"""What a declaration is held to, on a small app of its own: a literal path segment wins over a
parameter in the same place whichever router declared its route first, the document keeps the
declaration order, a domain error named in a declaration is listed under its status, and a
declaration without a summary is refused when it is made."""

from __future__ import annotations

import uuid

import pytest
from pydantic import BaseModel

from contentplatform.auth.context import Access
from contentplatform.core.procedures import Context, ProcedureRouter
from contentplatform.kit.errors import Conflict
from contentplatform.kit.schemas import Empty, Input
from tests.support.servers import second_service

first = ProcedureRouter("widgets", tag="Widgets")
later = ProcedureRouter("widgetBatches", tag="Widgets")


class WidgetRef(Input):
    id: uuid.UUID


class Done(BaseModel):
    what: str


class WidgetLocked(Conflict):
    """The widget is locked by someone else."""


@first.post("archive", "/v1/widgets/{id}/archive", access=Access.member, errors=[WidgetLocked])
async def archive(ctx: Context, data: WidgetRef) -> Done:
    """Archive a widget.

    Locked widgets stay
    as they are."""
    return Done(what=f"widget {data.id}")


@later.post("archiveAll", "/v1/widgets/all/archive", access=Access.member)
async def archive_all(ctx: Context, _: Empty) -> Done:
    """Archive every widget."""
    return Done(what="all")


@pytest.fixture(scope="module")
def widgets(settings_with):
    with second_service(settings_with(), [first, later]) as running, running.client() as http:
        yield http


def test_a_literal_segment_wins_over_a_parameter_declared_before_it(widgets, token, org):
    headers = {"Authorization": f"Bearer {token(org, 'w1', 'member')}", "x-idp-org-id": org}
    response = widgets.post("/v1/widgets/all/archive", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"what": "all"}
    one = uuid.uuid4()
    response = widgets.post(f"/v1/widgets/{one}/archive", headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"what": f"widget {one}"}


def test_the_document_keeps_the_declarations_order_and_texts(widgets):
    document = widgets.get("/openapi.json").json()
    assert list(document["paths"]) == ["/v1/widgets/{id}/archive", "/v1/widgets/all/archive"]
    operation = document["paths"]["/v1/widgets/{id}/archive"]["post"]
    assert operation["summary"] == "Archive a widget."
    assert operation["description"] == "Locked widgets stay as they are."
    # Its input and output are the handler's annotations.
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/Done"}
    assert operation["responses"]["409"]["description"] == (
        "Conflict (CONFLICT)\n\n- `WidgetLocked`: The widget is locked by someone else."
    )
    assert "409" not in document["paths"]["/v1/widgets/all/archive"]["post"]["responses"]


def test_a_declaration_without_a_summary_is_refused():
    router = ProcedureRouter("nameless", tag="Nameless")
    with pytest.raises(TypeError, match="docstring"):

        @router.get("list", "/v1/nameless", access=Access.member)
        async def nameless(ctx: Context, _: Empty) -> Done:
            return Done(what="nothing")
