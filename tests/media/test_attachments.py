"""media.attach, media.detach and media.getUsage over REST and RPC: one featured image per draft,
positions, the licence that blocks an attachment (expired, or no commercial use), the credit to
publish, drafts and assets of another organization, the roles, and where an asset is used."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.drafts.support import put_status
from tests.media.support import Media, mp4
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

media = org_fixture(Media)
other = org_fixture(Media, second=True)


def instant(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


def test_attach_answers_the_attachment_with_its_credit(media: Media) -> None:
    credited = {"type": "cc_by", "attribution": {"required": True, "text": "Photo by Ada"}}
    asset = media.add(license=credited)
    draft = media.draft()
    response = media.attach(asset["id"], draft)
    assert response.status_code == 200, response.text
    attached = response.json()
    assert set(attached) == {
        "media_id",
        "draft_id",
        "role",
        "position",
        "attached_at",
        "attribution_text",
    }
    assert (attached["media_id"], attached["draft_id"]) == (asset["id"], draft)
    assert (attached["role"], attached["position"]) == ("inline", 0)
    assert attached["attribution_text"] == "Photo by Ada"
    owned = media.add(license={"type": "owned"})
    assert media.attach(owned["id"], draft).json()["attribution_text"] is None


def test_positions_follow_the_last_unless_given(media: Media) -> None:
    draft = media.draft()
    first, second, third = media.add(), media.add(), media.add()
    assert media.attach(first["id"], draft, role="gallery").json()["position"] == 0
    assert media.attach(second["id"], draft, role="gallery").json()["position"] == 1
    assert media.attach(third["id"], draft, role="gallery", position=7).json()["position"] == 7
    assert media.attach(first["id"], draft).json()["position"] == 0  # inline: its own order
    # Again in the same role: it moves, it is not attached twice.
    again = media.attach(second["id"], draft, role="gallery", position=9).json()
    assert again["position"] == 9
    assert media.usage(second["id"])["total"] == 1


def test_one_featured_image_per_draft_the_new_one_replaces_it(media: Media) -> None:
    draft, elsewhere = media.draft(), media.draft()
    old, new = media.add(), media.add()
    assert media.attach(old["id"], draft, role="featured").status_code == 200
    assert media.attach(old["id"], elsewhere, role="featured").status_code == 200
    assert media.attach(old["id"], draft, role="inline").status_code == 200
    assert media.attach(new["id"], draft, role="featured").status_code == 200
    assert [(use["draft_id"], use["role"]) for use in media.usage(new["id"])["data"]] == [
        (draft, "featured")
    ]
    # The old one stays featured elsewhere and inline here.
    assert sorted((use["draft_id"], use["role"]) for use in media.usage(old["id"])["data"]) == (
        sorted([(elsewhere, "featured"), (draft, "inline")])
    )


def test_a_video_cannot_be_featured(media: Media) -> None:
    clip = media.add(mp4(uuid.uuid4().bytes), "clip.mp4", "video/mp4")
    draft = media.draft()
    body = problem(media.attach(clip["id"], draft, role="featured"), 400, "BAD_REQUEST")
    assert [error["path"] for error in body["errors"]] == ["role"]
    assert media.attach(clip["id"], draft).status_code == 200


def test_an_expired_licence_blocks_attaching(media: Media) -> None:
    asset = media.add(license={"type": "royalty_free", "expiresAt": instant(-1)})
    assert asset["license_status"] == "expired"
    draft = media.draft()
    body = problem(media.attach(asset["id"], draft), 409, "CONFLICT")
    assert body["reason"] == "license_expired"
    assert "expired" in body["detail"]
    assert media.usage(asset["id"])["total"] == 0
    # Renewed, it may be attached.
    media.update(asset["id"], license={"expiresAt": instant(365)})
    assert media.attach(asset["id"], draft).status_code == 200


def test_no_commercial_use_blocks_attaching(media: Media) -> None:
    asset = media.add(license={"type": "editorial", "usageRights": {"commercial": False}})
    body = problem(media.attach(asset["id"], media.draft()), 409, "CONFLICT")
    assert body["reason"] == "not_commercial"
    assert "commercial" in body["detail"]


def test_an_unverified_licence_does_not_block(media: Media) -> None:
    asset = media.add()
    assert asset["license_status"] == "unverified"
    assert media.attach(asset["id"], media.draft()).status_code == 200


def test_attach_needs_a_draft_and_an_asset_of_this_organization(media: Media, other: Media) -> None:
    asset, draft = media.add(), media.draft()
    theirs, their_draft = other.add(), other.draft()
    problem(media.attach(asset["id"], their_draft), 404, "NOT_FOUND")
    problem(media.attach(theirs["id"], draft), 404, "NOT_FOUND")
    problem(media.attach(asset["id"], str(uuid.uuid4())), 404, "NOT_FOUND")
    problem(media.attach(str(uuid.uuid4()), draft), 404, "NOT_FOUND")
    deleted = media.draft()
    media.ok("drafts.delete", {"id": deleted}, role="admin")
    problem(media.attach(asset["id"], deleted), 404, "NOT_FOUND")
    assert other.usage(theirs["id"])["total"] == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"role": "hero"}, "role"),
        ({"position": -1}, "position"),
        ({"position": 10_001}, "position"),
        ({"draftId": "nope"}, "draftId"),
    ],
)
def test_attach_refuses_out_of_bounds_input(media: Media, change: dict, field: str) -> None:
    asset = media.add()
    data = {"id": asset["id"], "draftId": str(uuid.uuid4()), **change}
    body = problem(media.request("media.attach", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


def test_a_member_may_not_attach_or_detach(media: Media) -> None:
    asset, draft = media.add(), media.draft()
    problem(media.attach(asset["id"], draft, as_role="member"), 403, "FORBIDDEN")
    data = {"id": asset["id"], "draftId": draft}
    problem(media.request("media.detach", data, role="member"), 403, "FORBIDDEN")


# --- detach -----------------------------------------------------------------------------------


def test_detach_removes_every_role_or_the_one_named(media: Media) -> None:
    asset, draft = media.add(), media.draft()
    for role in ("featured", "inline", "gallery"):
        assert media.attach(asset["id"], draft, role=role).status_code == 200
    data = {"id": asset["id"], "draftId": draft}
    assert media.ok("media.detach", {**data, "role": "gallery"}) == {
        "success": True,
        "removed": 1,
    }
    assert sorted(use["role"] for use in media.usage(asset["id"])["data"]) == [
        "featured",
        "inline",
    ]
    assert media.ok("media.detach", data) == {"success": True, "removed": 2}
    assert media.ok("media.detach", data) == {"success": True, "removed": 0}
    assert media.get(asset["id"])["usage_count"] == 0


def test_detach_needs_a_draft_and_an_asset_of_this_organization(media: Media, other: Media) -> None:
    asset, draft = media.add(), media.draft()
    assert media.attach(asset["id"], draft).status_code == 200
    their_draft = other.draft()
    problem(
        media.request("media.detach", {"id": asset["id"], "draftId": their_draft}),
        404,
        "NOT_FOUND",
    )
    problem(other.request("media.detach", {"id": asset["id"], "draftId": draft}), 404, "NOT_FOUND")
    body = problem(
        media.request("media.detach", {"id": asset["id"], "draftId": draft, "role": "hero"}),
        400,
        "BAD_REQUEST",
    )
    assert [error["path"] for error in body["errors"]] == ["role"]
    assert media.get(asset["id"])["usage_count"] == 1


# --- usage ------------------------------------------------------------------------------------


def test_usage_lists_the_drafts_with_their_status_and_publication(media: Media, run) -> None:
    asset = media.add()
    planned, live = media.draft("Planned post"), media.draft("Live post")
    assert media.attach(asset["id"], planned, role="gallery").status_code == 200
    assert media.attach(asset["id"], live, role="featured").status_code == 200
    published_at = datetime(2030, 1, 2, 9, 0, tzinfo=UTC)
    put_status(
        run,
        live,
        "published",
        published_url="https://blog.example.com/live-post",
        published_at=published_at,
    )
    usage = media.usage(asset["id"])
    assert (usage["total"], usage["page"], usage["limit"]) == (2, 1, 20)
    newest, oldest = usage["data"]
    assert set(newest) == {"draft_id", "title", "draft_status", "role", "attached_at", "published"}
    assert (newest["draft_id"], newest["title"], newest["draft_status"], newest["role"]) == (
        live,
        "Live post",
        "published",
        "featured",
    )
    assert newest["published"] == [
        {
            "publisher_connection_id": None,
            "url": "https://blog.example.com/live-post",
            "published_at": "2030-01-02T09:00:00Z",
        }
    ]
    assert (oldest["draft_id"], oldest["draft_status"], oldest["published"]) == (
        planned,
        "reviewing",
        [],
    )
    assert [use["draft_id"] for use in media.usage(asset["id"], limit=1, page=2)["data"]] == [
        planned
    ]
    assert asset["id"] in media.ids(unused="false")


@pytest.mark.parametrize(("query", "field"), [({"limit": 0}, "limit"), ({"page": 0}, "page")])
def test_usage_refuses_out_of_bounds_paging(media: Media, query: dict, field: str) -> None:
    asset = media.add()
    response = media.request("media.getUsage", {"id": asset["id"], **query}, role="member")
    body = problem(response, 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}
