"""media.createUploadUrl and media.confirmUpload over REST and RPC: the signed upload URL under
the organization, size bounds per type, the filename guard, the type checked by the file's
bytes, the location stripped from images (read back from storage), renditions and a thumbnail,
de-duplication, the decompression-bomb guard, videos, the signed download URLs, roles and a
second organization."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from contentplatform.config import Settings
from tests.media.support import (
    GPS,
    ORIENTATION,
    Media,
    exif_of,
    exists,
    gif,
    jpeg,
    mp4,
    png,
    png_header_only,
    size_of,
    stored,
    webp,
)
from tests.support.orgs import org_fixture
from tests.support.problems import problem

# The module's tests share its organizations (tests/conftest.py `org`).
pytestmark = pytest.mark.shared_org

media = org_fixture(Media)
other = org_fixture(Media, second=True)

ASSET_FIELDS = {
    "id",
    "tenant_id",
    "kind",
    "filename",
    "mime_type",
    "storage",
    "url",
    "thumbnail_url",
    "renditions",
    "width",
    "height",
    "bytes",
    "content_hash",
    "title",
    "alt_text",
    "caption",
    "tags",
    "source",
    "provider",
    "provider_asset_id",
    "license",
    "license_status",
    "usage_count",
    "created_at",
    "updated_at",
}


# --- the upload URL ---------------------------------------------------------------------------


def test_the_upload_url_is_a_signed_url_under_the_organizations_media(media: Media) -> None:
    before = datetime.now(UTC)
    response = media.upload_url("Watering can.JPG", "image/jpeg", 1000)
    assert response.status_code == 200, response.text
    target = response.json()
    assert set(target) == {"upload_url", "storage_path", "method", "headers", "expires_at"}
    assert re.fullmatch(
        rf"{media.org}/media/[0-9a-f-]{{36}}/Watering-can\.JPG", target["storage_path"]
    ), target
    assert target["method"] == "PUT"
    assert target["headers"] == {"Content-Type": "image/jpeg"}
    assert "/v1/uploads/" in target["upload_url"] and "signature=" in target["upload_url"]
    expires = datetime.fromisoformat(target["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=14) < expires - before <= timedelta(minutes=15, seconds=2)


def test_the_upload_url_takes_the_bytes_it_was_made_for_and_no_more(media: Media) -> None:
    target = media.upload_url("a.png", "image/png", 10).json()
    put = media.client.put(target["upload_url"], content=b"x" * 11, headers=target["headers"])
    problem(put, 413, "BAD_REQUEST")


@pytest.mark.parametrize(
    ("mime_type", "size", "allowed"),
    [
        ("image/jpeg", 20 * 1024 * 1024, True),
        ("image/jpeg", 20 * 1024 * 1024 + 1, False),
        ("image/avif", 20 * 1024 * 1024 + 1, False),
        ("image/gif", 1, True),
        # Videos may have 100 MiB; the suite's service takes 50 MB at most (MAX_UPLOAD_BYTES).
        ("video/mp4", 50 * 1024 * 1024, True),
        ("video/mp4", 50 * 1024 * 1024 + 1, False),
    ],
)
def test_bytes_are_bounded_per_type_and_by_the_services_limit(
    media: Media, mime_type: str, size: int, allowed: bool
) -> None:
    extension = {"image/jpeg": "jpg", "image/avif": "avif", "image/gif": "gif"}.get(
        mime_type, "mp4"
    )
    response = media.upload_url(f"f.{extension}", mime_type, size)
    if allowed:
        assert response.status_code == 200, response.text
    else:
        body = problem(response, 400, "BAD_REQUEST")
        assert [error["path"] for error in body["errors"]] == ["bytes"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bytes": 0}, "bytes"),
        ({"bytes": 104857601}, "bytes"),
        ({"mimeType": "image/svg+xml"}, "mimeType"),
        ({"mimeType": "video/quicktime"}, "mimeType"),
        ({"filename": ""}, "filename"),
        ({"filename": "a" * 256}, "filename"),
        ({"filename": "photo\u202egpj.exe"}, "filename"),
        ({"filename": "a/b.jpg"}, "filename"),
        ({"filename": "a\x00.jpg"}, "filename"),
        ({"filename": "photo.png"}, "filename"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_the_upload_url_refuses_what_is_out_of_bounds(
    media: Media, change: dict[str, object], field: str
) -> None:
    data = {"filename": "photo.jpg", "mimeType": "image/jpeg", "bytes": 10, **change}
    body = problem(media.request("media.createUploadUrl", data), 400, "BAD_REQUEST")
    assert field in {error["path"] for error in body["errors"]}, body


def test_a_filename_without_an_extension_gets_its_types(media: Media) -> None:
    target = media.upload_url("garden", "image/webp", 10).json()
    assert target["storage_path"].endswith("/garden.webp")


def test_a_member_may_not_upload_and_a_token_is_needed(media: Media, call, org: str) -> None:
    problem(media.upload_url("a.jpg", "image/jpeg", 10, role="member"), 403, "FORBIDDEN")
    data = {"filename": "a.jpg", "mimeType": "image/jpeg", "bytes": 10}
    problem(call("media.createUploadUrl", data, org=org), 401, "UNAUTHORIZED")


# --- confirming an upload ---------------------------------------------------------------------


def test_a_jpeg_is_confirmed_with_renditions_and_a_thumbnail(media: Media, client) -> None:
    data = jpeg(2400, 1600)
    path = media.upload("garden.jpg", "image/jpeg", data)
    response = media.confirm(
        path,
        "garden.jpg",
        "image/jpeg",
        altText="A <b>green</b> garden",
        caption="Early morning,\nafter the rain",
        tags=["Garden", "garden ", "Morning"],
    )
    assert response.status_code == 200, response.text
    asset = response.json()
    assert set(asset) == ASSET_FIELDS | {"unchanged"}
    assert asset["unchanged"] is False
    assert asset["tenant_id"] == str(media.tenant_id)
    assert (asset["kind"], asset["filename"], asset["mime_type"]) == (
        "image",
        "garden.jpg",
        "image/jpeg",
    )
    assert (asset["storage"], asset["source"], asset["provider"]) == ("internal", "upload", None)
    assert (asset["width"], asset["height"]) == (2400, 1600)
    assert asset["alt_text"] == "A green garden"  # plain text
    assert asset["caption"] == "Early morning,\nafter the rain"
    assert asset["tags"] == ["Garden", "Morning"]
    assert asset["license"]["type"] is None and asset["license_status"] == "unverified"
    assert asset["usage_count"] == 0
    # Nothing to strip: the stored file is the upload, and its hash is the stored bytes'.
    assert asset["content_hash"] == hashlib.sha256(data).hexdigest()
    assert asset["bytes"] == len(data)

    assert set(asset["renditions"]) == {"w1600", "w800"}
    for name, width in (("w1600", 1600), ("w800", 800)):
        rendition = asset["renditions"][name]
        assert (rendition["width"], rendition["height"]) == (width, round(width * 2 / 3))
        fetched = client.get(rendition["url"])
        assert fetched.status_code == 200, fetched.text
        assert fetched.headers["content-type"] == "image/jpeg"
        assert size_of(fetched.content) == (width, round(width * 2 / 3))
        assert len(fetched.content) == rendition["bytes"]
    thumbnail = client.get(asset["thumbnail_url"])
    assert thumbnail.status_code == 200
    assert size_of(thumbnail.content) == (320, 213)
    original = client.get(asset["url"])
    assert original.status_code == 200 and original.content == data
    assert original.headers["x-content-type-options"] == "nosniff"


def test_renditions_are_never_larger_than_the_original(media: Media) -> None:
    small = media.add(jpeg(1000, 700))
    assert set(small["renditions"]) == {"w800"}
    tiny = media.add(png(200, 100), "tiny.png", "image/png")
    assert tiny["renditions"] == {}
    assert (tiny["width"], tiny["height"]) == (200, 100)


def test_gps_exif_is_gone_from_the_stored_file_and_the_orientation_stays(
    media: Media, settings: Settings, client
) -> None:
    data = jpeg(1600, 1000, gps=True, orientation=6)
    assert GPS in exif_of(data)
    path = media.upload("holiday.jpg", "image/jpeg", data)
    asset = media.confirm(path, "holiday.jpg", "image/jpeg").json()

    kept = stored(settings, path)
    exif = exif_of(kept)
    assert GPS not in exif and exif.get_ifd(GPS) == {}
    assert exif[ORIENTATION] == 6
    assert exif[271] == "Stand-in Camera"  # the other tags stay
    assert b"GPS" not in kept
    assert asset["content_hash"] == hashlib.sha256(kept).hexdigest()
    assert asset["bytes"] == len(kept)
    # The pixels were not encoded again: the image data after the headers is the same.
    assert kept[-2000:] == data[-2000:]
    # Shown turned a quarter (orientation 6): the sides swap, the renditions come upright.
    assert (asset["width"], asset["height"]) == (1000, 1600)
    assert set(asset["renditions"]) == {"w800"}
    rendition = client.get(asset["renditions"]["w800"]["url"]).content
    assert size_of(rendition) == (800, 1280)
    assert len(exif_of(rendition)) == 0
    # What the signed URL serves is the stored file.
    assert client.get(asset["url"]).content == kept


def test_gps_in_xmp_is_gone_too(media: Media, settings: Settings) -> None:
    data = jpeg(640, 480, xmp_gps=True)
    assert b"GPSLatitude" in data
    path = media.upload("xmp.jpg", "image/jpeg", data)
    assert media.confirm(path, "xmp.jpg", "image/jpeg").status_code == 200
    assert b"GPSLatitude" not in stored(settings, path)


def test_gps_in_a_png_is_gone_from_the_stored_file(media: Media, settings: Settings) -> None:
    data = png(300, 200, gps=True)
    assert GPS in exif_of(data)
    path = media.upload("map.png", "image/png", data)
    asset = media.confirm(path, "map.png", "image/png").json()
    kept = stored(settings, path)
    assert GPS not in exif_of(kept)
    assert asset["content_hash"] == hashlib.sha256(kept).hexdigest()


@pytest.mark.parametrize(
    ("make", "filename", "mime_type", "rendition_type"),
    [
        (lambda: png(1000, 600, alpha=True), "logo.png", "image/png", "image/webp"),
        (lambda: webp(900, 600), "leaf.webp", "image/webp", "image/jpeg"),
        (lambda: gif(900, 300), "spin.gif", "image/gif", "image/jpeg"),
    ],
)
def test_other_image_types_get_renditions_too(
    media: Media, client, make, filename: str, mime_type: str, rendition_type: str
) -> None:
    asset = media.add(make(), filename, mime_type)
    assert asset["kind"] == "image" and asset["mime_type"] == mime_type
    fetched = client.get(asset["renditions"]["w800"]["url"])
    assert fetched.headers["content-type"] == rendition_type
    assert size_of(fetched.content)[0] == 800


@pytest.mark.own_org
def test_a_png_declared_as_jpeg_is_refused_naming_both_types(media: Media) -> None:
    path = media.upload("photo.jpg", "image/jpeg", png(100, 100))
    body = problem(media.confirm(path, "photo.jpg", "image/jpeg"), 400, "BAD_REQUEST")
    assert "image/png" in body["detail"] and "image/jpeg" in body["detail"]
    assert [error["path"] for error in body["errors"]] == ["mimeType"]
    assert media.listed()["total"] == 0


def test_bytes_that_are_no_image_are_refused(media: Media) -> None:
    path = media.upload("notes.jpg", "image/jpeg", b"<html><script>alert(1)</script></html>")
    body = problem(media.confirm(path, "notes.jpg", "image/jpeg"), 400, "BAD_REQUEST")
    assert "not an image or video" in body["detail"]


def test_a_damaged_jpeg_is_refused(media: Media) -> None:
    data = jpeg(300, 200)
    path = media.upload("broken.jpg", "image/jpeg", data[:200])
    problem(media.confirm(path, "broken.jpg", "image/jpeg"), 400, "BAD_REQUEST")


@pytest.mark.own_org
@pytest.mark.parametrize("size", [(8000, 8000), (30000, 30000)])
def test_a_decompression_bomb_is_refused_before_it_is_decoded(
    media: Media, size: tuple[int, int]
) -> None:
    data = png_header_only(*size)
    assert len(data) < 200
    path = media.upload("bomb.png", "image/png", data)
    body = problem(media.confirm(path, "bomb.png", "image/png"), 400, "BAD_REQUEST")
    assert "pixels" in body["detail"]
    assert media.listed()["total"] == 0


@pytest.mark.own_org
def test_the_same_content_again_is_the_same_asset(media: Media, settings: Settings) -> None:
    data = jpeg(900, 600, gps=True)
    first = media.add(data, "one.jpg")
    path = media.upload("two.jpg", "image/jpeg", data)
    again = media.confirm(path, "two.jpg", "image/jpeg")
    assert again.status_code == 200, again.text
    assert again.json()["unchanged"] is True
    assert again.json()["id"] == first["id"]
    assert again.json()["filename"] == "one.jpg"
    assert media.listed()["total"] == 1
    # The second upload is not kept.
    assert not exists(settings, path)


def test_a_deleted_assets_content_makes_a_new_asset(media: Media) -> None:
    data = jpeg(500, 400)
    first = media.add(data)
    media.ok("media.delete", {"id": first["id"]}, role="admin")
    second = media.add(data)
    assert second["unchanged"] is False and second["id"] != first["id"]


def test_another_organizations_same_content_is_its_own_asset(media: Media, other: Media) -> None:
    data = jpeg(500, 400)
    mine = media.add(data)
    theirs = other.add(data)
    assert theirs["unchanged"] is False and theirs["id"] != mine["id"]


def test_a_video_is_checked_by_its_bytes_and_gets_no_renditions(media: Media, client) -> None:
    data = mp4(b"clip")
    asset = media.add(data, "clip.mp4", "video/mp4")
    assert (asset["kind"], asset["mime_type"]) == ("video", "video/mp4")
    assert asset["renditions"] == {} and asset["thumbnail_url"] is None
    assert (asset["width"], asset["height"]) == (None, None)
    assert asset["content_hash"] == hashlib.sha256(data).hexdigest()
    fetched = client.get(asset["url"])
    assert fetched.headers["content-type"] == "video/mp4" and fetched.content == data
    path = media.upload("fake.mp4", "video/mp4", jpeg(100, 100))
    body = problem(media.confirm(path, "fake.mp4", "video/mp4"), 400, "BAD_REQUEST")
    assert "image/jpeg" in body["detail"] and "video/mp4" in body["detail"]


def test_nothing_uploaded_is_404(media: Media) -> None:
    path = f"{media.org}/media/{uuid.uuid4()}/never.jpg"
    body = problem(media.confirm(path, "never.jpg", "image/jpeg"), 404, "NOT_FOUND")
    assert body["errors"] == [{"path": "storagePath", "message": "nothing uploaded here"}]


@pytest.mark.parametrize(
    ("make_path", "reason"),
    [
        (lambda org: f"{org}/uploads/{uuid.uuid4()}/a.jpg", "under"),
        (lambda org: f"{org}/media/derived/{uuid.uuid4()}/w800.jpg", "under"),
        (lambda org: f"{org}/media/../../etc/passwd", "'..'"),
        (lambda org: f"org_someone_else/media/{uuid.uuid4()}/a.jpg", "organization"),
        (lambda org: f"{org}/media/%2e%2e/a.jpg", "%"),
    ],
)
def test_only_the_organizations_media_uploads_can_be_confirmed(
    media: Media, make_path, reason: str
) -> None:
    body = problem(media.confirm(make_path(media.org), "a.jpg", "image/jpeg"), 400, "BAD_REQUEST")
    assert reason in body["detail"]
    assert [error["path"] for error in body["errors"]] == ["storagePath"]


@pytest.mark.parametrize(
    ("data", "paths"),
    [
        ({}, {"storagePath", "filename", "mimeType"}),
        ({"storagePath": "x/media/a/b.jpg"}, {"filename", "mimeType"}),
        (
            {"storagePath": "x/media/a/b.jpg", "stock": {"provider": "unsplash", "assetId": "a"}},
            {"storagePath", "stock"},
        ),
        ({"tags": ["a"] * 31}, {"tags"}),
        ({"tags": ["a" * 51]}, {"tags.0"}),
        ({"tags": [" "]}, {"tags"}),
        ({"altText": "a" * 1001}, {"altText"}),
        ({"caption": "a" * 2001}, {"caption"}),
        ({"altText": "nul\x00"}, {"altText"}),
        ({"license": {"type": "stolen"}}, {"license.type"}),
        ({"license": {"sourceUrl": "javascript:alert(1)"}}, {"license.sourceUrl"}),
        ({"license": {"attribution": {"authorUrl": "ftp://x"}}}, {"license.attribution.authorUrl"}),
        ({"license": {"expiresAt": "0001-01-01T00:00:00Z"}}, {"license.expiresAt"}),
    ],
)
def test_confirm_refuses_what_is_missing_or_out_of_bounds(
    media: Media, data: dict[str, object], paths: set[str]
) -> None:
    body = problem(media.request("media.confirmUpload", data), 400, "BAD_REQUEST")
    assert paths <= {error["path"] for error in body["errors"]}, body


def test_confirm_keeps_a_licence_given_with_the_upload(media: Media) -> None:
    license = {
        "type": "cc_by",
        "sourceName": "Commons",
        "sourceUrl": "https://commons.example.org/watering-can",
        "attribution": {"required": True, "text": "Can by Ada, CC BY", "authorName": "Ada"},
        "usageRights": {"commercial": True, "modification": True},
    }
    asset = media.add(license=license)
    assert asset["license"] == {
        "type": "cc_by",
        "source_name": "Commons",
        "source_url": "https://commons.example.org/watering-can",
        "attribution": {
            "required": True,
            "text": "Can by Ada, CC BY",
            "author_name": "Ada",
            "author_url": None,
        },
        "usage_rights": {"commercial": True, "editorial_only": None, "modification": True},
        "expires_at": None,
        "notes": None,
    }
    assert asset["license_status"] == "valid"


def test_a_member_may_not_confirm(media: Media) -> None:
    path = media.upload("a.jpg", "image/jpeg", jpeg(100, 100))
    problem(media.confirm(path, "a.jpg", "image/jpeg", role="member"), 403, "FORBIDDEN")


def test_another_organization_cannot_confirm_or_read_this_ones_upload(
    media: Media, other: Media, client
) -> None:
    path = media.upload("a.jpg", "image/jpeg", jpeg(100, 100))
    body = problem(other.confirm(path, "a.jpg", "image/jpeg"), 400, "BAD_REQUEST")
    assert "organization" in body["detail"]
    asset = media.add()
    problem(other.request("media.getById", {"id": asset["id"]}), 404, "NOT_FOUND")


# --- the signed download URLs -----------------------------------------------------------------


def test_a_download_url_works_alone_and_only_as_signed(media: Media, client: httpx.Client) -> None:
    asset = media.add()
    url = httpx.URL(asset["url"])
    assert client.get(url).status_code == 200  # no token needed: the signature is the credential
    signature = url.params["signature"]
    forged = url.copy_set_param(
        "signature", signature[:-1] + ("0" if signature[-1] != "0" else "1")
    )
    problem(client.get(forged), 403, "FORBIDDEN")
    other_path = url.copy_with(path=url.path.replace("/media/", "/media/x", 1))
    problem(client.get(other_path), 403, "FORBIDDEN")
    later = url.copy_set_param("expires", str(int(url.params["expires"]) + 60))
    problem(client.get(later), 403, "FORBIDDEN")
    expired = url.copy_set_param("expires", "1000")
    problem(client.get(expired), 403, "FORBIDDEN")
    # A download URL does not write, and its signature does not serve as an upload's.
    problem(client.put(url, content=b"x"), 405, "BAD_REQUEST")
    as_upload = url.copy_with(path=url.path.replace("/v1/downloads/", "/v1/uploads/", 1))
    problem(client.put(as_upload.copy_set_param("length", "1"), content=b"x"), 403, "FORBIDDEN")


def test_a_download_url_lives_an_hour(media: Media) -> None:
    asset = media.add()
    expires = int(httpx.URL(asset["url"]).params["expires"])
    now = datetime.now(UTC).timestamp()
    assert 3600 <= expires - now <= 3660


@pytest.mark.own_org
def test_an_upload_url_used_again_with_other_content_is_409(
    media: Media, settings: Settings
) -> None:
    first, second = jpeg(400, 300), jpeg(400, 300)
    target = media.upload_url("twice.jpg", "image/jpeg", max(len(first), len(second))).json()

    def put(data: bytes) -> None:
        response = media.client.put(target["upload_url"], content=data, headers=target["headers"])
        assert response.status_code == 200, response.text

    put(first)
    asset = media.confirm(target["storage_path"], "twice.jpg", "image/jpeg").json()
    put(first)  # the same bytes again: the same asset
    again = media.confirm(target["storage_path"], "twice.jpg", "image/jpeg").json()
    assert (again["id"], again["unchanged"]) == (asset["id"], True)
    assert exists(settings, target["storage_path"])
    put(second)
    response = media.confirm(target["storage_path"], "twice.jpg", "image/jpeg")
    body = problem(response, 409, "CONFLICT")
    assert body["mediaId"] == asset["id"]
    assert media.listed()["total"] == 1
