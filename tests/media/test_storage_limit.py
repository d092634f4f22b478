"""The plan's `storage_bytes` counts what an organization stores in media and in documents
together: billing.getQuota shows both, media.confirmUpload is refused (403 naming the limit)
when the file would go past it and made once there is room, and a document is refused when the
media filled the room. Over REST and RPC; a second organization's bytes never count."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from contentplatform.billing import service as billing
from contentplatform.config import Settings
from tests.documents.support import Docs
from tests.media.support import Media, jpeg, png
from tests.support.orgs import org_fixture

media = org_fixture(Media)
other = org_fixture(Media, second=True)

NOTE = b"# Care\n\nWater the fern when the top of its soil is dry.\n"


def storage_used(org: Media) -> int:
    found = org.ok("billing.getQuota", role="member")
    (item,) = [item for item in found["items"] if item["key"] == "storage_bytes"]
    return int(item["used"])


def limit_storage(monkeypatch: pytest.MonkeyPatch, settings: Settings, limit: int) -> None:
    limited = settings.model_copy(
        update={
            "stripe_secret_key": SecretStr("sk_test_x"),
            "free_plan_limits": {"storage_bytes": limit},
        }
    )
    monkeypatch.setattr(billing, "_settings", lambda: limited)


def refused(response: Any, limit: int) -> None:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["code"] == "FORBIDDEN"
    assert (body["limit_key"], body["limit"]) == ("storage_bytes", limit)


def test_quota_counts_the_bytes_of_media_and_documents_of_the_organization_only(
    media: Media, other: Media
) -> None:
    before = storage_used(media)
    asset = media.add(jpeg(640, 480))
    assert storage_used(media) == before + asset["bytes"]
    document = Docs.of(media).submit("care.md", NOTE)
    assert storage_used(media) == before + asset["bytes"] + len(NOTE)
    assert document["id"]
    other_before = storage_used(other)
    other.add(jpeg(320, 240))
    assert storage_used(media) == before + asset["bytes"] + len(NOTE)
    assert storage_used(other) > other_before

    media.ok("media.delete", {"id": asset["id"]}, role="admin")
    assert storage_used(media) == before + len(NOTE)  # a deleted asset no longer counts


def test_an_upload_past_the_plans_storage_is_refused_and_made_once_there_is_room(
    media: Media, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = media.add(jpeg(640, 480))
    limit = storage_used(media) + 40  # less than the PNG or the note
    limit_storage(monkeypatch, settings, limit)
    content = png(300, 200)
    path = media.upload("chart.png", "image/png", content)

    refused(media.confirm(path, "chart.png", "image/png"), limit)
    assert first["id"] in media.ids() and len(media.ids()) == 1  # no asset was made
    # The media filled the room: a document is refused as well.
    docs = Docs.of(media)
    refused(docs.confirm("care.md", "md", docs.upload("care.md", "md", NOTE)), limit)

    media.ok("media.delete", {"id": first["id"]}, role="admin")
    made = media.confirm(path, "chart.png", "image/png")  # the same upload, confirmed again
    assert made.status_code == 200, made.text
    assert made.json()["filename"] == "chart.png"
