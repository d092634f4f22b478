"""media.list, getById, update and delete over REST and RPC: filters, search, sorting and paging,
the licence merged and its status computed, soft delete guarded by published drafts, the roles,
and a second organization that sees and touches none of it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.drafts.support import put_status
from tests.media.support import Media, jpeg, mp4, png
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

media = org_fixture(Media)
other = org_fixture(Media, second=True)


def instant(days: float) -> str:
    """An instant `days` from now, as the API writes them."""
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


# --- getById ----------------------------------------------------------------------------------


def test_get_by_id_answers_the_asset_as_confirmed(media: Media) -> None:
    asset = media.add(tags=["sea"])
    found = media.get(asset["id"])
    asset.pop("unchanged")
    # Signed URLs are made per answer; the rest is the same.
    for record in (asset, found):
        record.pop("url"), record.pop("thumbnail_url"), record.pop("renditions")
    assert found == asset


@pytest.mark.parametrize("operation", ["media.getById", "media.update", "media.delete"])
def test_an_unknown_or_malformed_id_is_404_or_400(media: Media, operation: str) -> None:
    role = "admin" if operation == "media.delete" else "editor"
    problem(media.request(operation, {"id": str(uuid.uuid4())}, role=role), 404, "NOT_FOUND")
    body = problem(media.request(operation, {"id": "nope"}, role=role), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["id"]


# --- list -------------------------------------------------------------------------------------


@pytest.mark.own_org
def test_list_filters_searches_sorts_and_pages(media: Media) -> None:
    sea = media.add(jpeg(900, 600), "zebra.jpg", altText="Waves on the sea", tags=["Sea", "Blue"])
    leaf = media.add(png(300, 200), "Apple.png", "image/png", caption="A leaf in autumn")
    clip = media.add(mp4(b"walk"), "walk.mp4", "video/mp4", tags=["blue"])
    media.update(leaf["id"], title="Autumn colours")

    assert media.ids() == [clip["id"], leaf["id"], sea["id"]]  # newest first
    assert media.ids(sortOrder="asc") == [sea["id"], leaf["id"], clip["id"]]
    assert media.ids(sortBy="filename", sortOrder="asc") == [leaf["id"], clip["id"], sea["id"]]
    by_size = sorted((sea, leaf, clip), key=lambda asset: asset["bytes"])
    assert media.ids(sortBy="bytes", sortOrder="asc") == [asset["id"] for asset in by_size]

    assert media.ids(kind="video") == [clip["id"]]
    assert media.ids(kind="image") == [leaf["id"], sea["id"]]
    assert media.ids(source="upload") == [clip["id"], leaf["id"], sea["id"]]
    assert media.ids(source="stock") == []
    assert media.ids(tags="BLUE") == [clip["id"], sea["id"]]
    assert media.ids(tags="blue, sea") == [sea["id"]]
    assert media.ids(tags="blue,sea,nowhere") == []
    assert media.ids(search="WAVES") == [sea["id"]]  # alt text
    assert media.ids(search="autumn") == [leaf["id"]]  # caption and title
    assert media.ids(search="apple") == [leaf["id"]]  # filename
    assert media.ids(search="blu") == [clip["id"], sea["id"]]  # a tag
    assert media.ids(search="100%") == []  # a wildcard is a character

    first = media.listed(limit=2)
    assert (first["total"], first["page"], first["limit"]) == (3, 1, 2)
    assert [asset["id"] for asset in first["data"]] == [clip["id"], leaf["id"]]
    second = media.listed(limit=2, page=2)
    assert [asset["id"] for asset in second["data"]] == [sea["id"]]
    assert media.listed(page=5)["data"] == []


@pytest.mark.own_org
def test_list_filters_by_licence_status_and_use(media: Media) -> None:
    owned = media.add(license={"type": "owned"})
    unverified = media.add()
    attribution_missing = media.add(license={"type": "cc_by", "attribution": {"required": True}})
    expiring = media.add(license={"type": "royalty_free", "expiresAt": instant(10)})
    expired = media.add(license={"type": "royalty_free", "expiresAt": instant(-1)})
    later = media.add(license={"type": "royalty_free", "expiresAt": instant(90)})

    def statuses(status: str) -> set[str]:
        return set(media.ids(licenseStatus=status))

    assert statuses("valid") == {owned["id"], later["id"]}
    assert statuses("unverified") == {unverified["id"], attribution_missing["id"]}
    assert statuses("expiring") == {expiring["id"]}
    assert statuses("expired") == {expired["id"]}
    assert {a["id"]: a["license_status"] for a in media.listed()["data"]} == {
        owned["id"]: "valid",
        unverified["id"]: "unverified",
        attribution_missing["id"]: "unverified",
        expiring["id"]: "expiring",
        expired["id"]: "expired",
        later["id"]: "valid",
    }

    draft = media.draft()
    assert media.attach(owned["id"], draft).status_code == 200
    assert set(media.ids(unused="false")) == {owned["id"]}
    assert owned["id"] not in media.ids(unused="true")
    assert len(media.ids(unused="true")) == 5
    assert media.get(owned["id"])["usage_count"] == 1
    # A deleted draft uses nothing.
    media.ok("drafts.delete", {"id": draft}, role="admin")
    assert media.get(owned["id"])["usage_count"] == 0
    assert media.ids(unused="false") == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"kind": "audio"}, "kind"),
        ({"source": "web"}, "source"),
        ({"licenseStatus": "fine"}, "licenseStatus"),
        ({"sortBy": "title"}, "sortBy"),
        ({"sortOrder": "up"}, "sortOrder"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"page": 0}, "page"),
        ({"page": 100_001}, "page"),
        ({"search": "a" * 256}, "search"),
        ({"tags": ",".join(f"t{i}" for i in range(11))}, "tags"),
        ({"tags": "a" * 51}, "tags"),
        ({"search": "nul\x00"}, "search"),
        ({"unused": "maybe"}, "unused"),
    ],
)
def test_list_refuses_out_of_bounds_queries(
    media: Media, query: dict[str, Any], field: str
) -> None:
    body = problem(media.request("media.list", query, role="member"), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


# --- update -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_update_changes_what_is_given_and_clears_what_is_null(media: Media) -> None:
    asset = media.add(altText="Old alt", caption="Old caption", tags=["one"])
    response = media.update(
        asset["id"], title="<i>Watering</i> can", tags=["Two", "three"], caption=None
    )
    assert response.status_code == 200, response.text
    changed = response.json()
    assert changed["title"] == "Watering can"
    assert changed["alt_text"] == "Old alt"
    assert changed["caption"] is None
    assert changed["tags"] == ["Two", "three"]
    assert changed["updated_at"] > asset["updated_at"]
    assert media.ids(tags="three") == [asset["id"]]
    assert media.ids(tags="one") == []


def test_the_licence_is_merged_and_its_status_recomputed(media: Media) -> None:
    asset = media.add(license={"type": "cc_by", "attribution": {"required": True}})
    assert asset["license_status"] == "unverified"
    text = {"attribution": {"text": "Photo by Ada, CC BY"}}
    step = media.update(asset["id"], license=text).json()
    assert step["license"]["attribution"] == {
        "required": True,
        "text": "Photo by Ada, CC BY",
        "author_name": None,
        "author_url": None,
    }
    assert step["license"]["type"] == "cc_by"
    assert step["license_status"] == "valid"
    step = media.update(asset["id"], license={"expiresAt": instant(5)}).json()
    assert step["license_status"] == "expiring"
    assert step["license"]["attribution"]["text"] == "Photo by Ada, CC BY"
    step = media.update(asset["id"], license={"expiresAt": instant(-0.01)}).json()
    assert step["license_status"] == "expired"
    step = media.update(asset["id"], license={"expiresAt": None, "notes": "Renewed.\nAll good."})
    assert step.json()["license_status"] == "valid"
    assert step.json()["license"]["notes"] == "Renewed.\nAll good."
    step = media.update(asset["id"], license={"type": None}).json()
    assert step["license_status"] == "unverified"
    # A time without a zone is UTC.
    naive = (datetime.now(UTC) + timedelta(days=400)).replace(tzinfo=None).isoformat()
    step = media.update(asset["id"], license={"type": "owned", "expiresAt": naive}).json()
    assert step["license"]["expires_at"].endswith("Z")
    assert step["license_status"] == "valid"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"title": "t" * 256}, "title"),
        ({"altText": "a" * 1001}, "altText"),
        ({"caption": "c" * 2001}, "caption"),
        ({"tags": ["x"] * 31}, "tags"),
        ({"title": "line\nbreak"}, "title"),
        (
            {"license": {"usageRights": {"commercial": "sometimes"}}},
            "license.usageRights.commercial",
        ),
        ({"license": {"notes": "n" * 2001}}, "license.notes"),
        ({"license": {"attribution": {"text": "t" * 501}}}, "license.attribution.text"),
        ({"license": {"expiresAt": "10000-01-01T00:00:00Z"}}, "license.expiresAt"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_update_refuses_out_of_bounds_input(
    media: Media, change: dict[str, Any], field: str
) -> None:
    asset = media.add()
    body = problem(media.update(asset["id"], **change), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


def test_a_member_may_not_update(media: Media) -> None:
    asset = media.add()
    problem(media.update(asset["id"], role="member", title="x"), 403, "FORBIDDEN")


# --- delete -----------------------------------------------------------------------------------


@pytest.mark.own_org
def test_delete_is_for_admins_and_soft(media: Media) -> None:
    asset = media.add()
    for role in ("member", "editor"):
        response = media.request("media.delete", {"id": asset["id"]}, role=role)
        problem(response, 403, "FORBIDDEN")
    deleted = media.ok("media.delete", {"id": asset["id"]}, role="admin")
    assert deleted == {"success": True, "detached_drafts": 0}
    problem(media.request("media.getById", {"id": asset["id"]}, role="member"), 404, "NOT_FOUND")
    assert media.listed()["total"] == 0
    again = media.request("media.delete", {"id": asset["id"]}, role="admin")
    problem(again, 404, "NOT_FOUND")


def test_delete_detaches_from_unpublished_drafts(media: Media) -> None:
    asset = media.add()
    first, second = media.draft("One"), media.draft("Two")
    for draft in (first, second):
        assert media.attach(asset["id"], draft).status_code == 200
    assert media.attach(asset["id"], first, role="featured").status_code == 200
    deleted = media.ok("media.delete", {"id": asset["id"]}, role="admin")
    assert deleted == {"success": True, "detached_drafts": 2}


def test_delete_is_409_while_a_published_draft_uses_it_unless_forced(media: Media, run) -> None:
    asset = media.add()
    live, planned = media.draft("Live"), media.draft("Planned")
    for draft in (live, planned):
        assert media.attach(asset["id"], draft).status_code == 200
    put_status(run, live, "published")
    body = problem(
        media.request("media.delete", {"id": asset["id"]}, role="admin"), 409, "CONFLICT"
    )
    assert body["draftIds"] == [live]
    assert media.usage(asset["id"])["total"] == 2  # nothing changed
    forced = media.ok("media.delete", {"id": asset["id"], "force": True}, role="admin")
    assert forced == {"success": True, "detached_drafts": 2}


# --- another organization ---------------------------------------------------------------------


def test_a_second_organization_sees_and_touches_none_of_it(media: Media, other: Media) -> None:
    asset = media.add(tags=["private"])
    draft = media.draft()
    assert media.attach(asset["id"], draft).status_code == 200
    assert other.listed()["total"] == 0
    assert other.listed(search="private")["total"] == 0
    for operation, data, role in (
        ("media.getById", {"id": asset["id"]}, "member"),
        ("media.update", {"id": asset["id"], "title": "Mine now"}, "editor"),
        ("media.delete", {"id": asset["id"], "force": True}, "admin"),
        ("media.getUsage", {"id": asset["id"]}, "member"),
        ("media.attach", {"id": asset["id"], "draftId": other.draft()}, "editor"),
        ("media.detach", {"id": asset["id"], "draftId": draft}, "editor"),
    ):
        problem(other.request(operation, data, role=role), 404, "NOT_FOUND")
    unchanged = media.get(asset["id"])
    assert unchanged["title"] is None and unchanged["usage_count"] == 1
