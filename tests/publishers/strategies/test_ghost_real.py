"""The Ghost strategy against a real Ghost (5.130, SQLite) on loopback: tests/support/ghost_site.py
starts one per test session (per xdist worker) when tests/support/ghost/install has installed
it; without it these tests skip, unless CONTENTPLATFORM_TEST_REQUIRE_GHOST=1 (CI). The stand-in
(tests/support/targets/ghost.py) answers as this Ghost does; test_ghost.py holds the cases only
a stand-in can stage (failures, lost answers, rate limits).

Every test publishes a draft of its own (its id and slug), as they share one site."""

from __future__ import annotations

import io
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import PIL.Image
import pytest
from bs4 import BeautifulSoup

from contentplatform.publishers.strategies.base import (
    Article,
    AuthFailed,
    Invalid,
    Remote,
    Transient,
)
from contentplatform.publishers.strategies.ghost import Ghost
from tests.publishers.strategies.support import (
    PNG_BYTES,
    our_picture,
    run_strategy,
    stock_picture,
)
from tests.publishers.strategies.support import PRICING_THAT_SCALES as ARTICLE
from tests.support.ghost_site import GhostSite, release_or_skip, running_ghost
from tests.support.processes import free_port

T = TypeVar("T")
HASH = "ab12" * 4  # the start of our_picture()'s content hash, which its upload's name carries


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GhostSite]:
    release = release_or_skip()
    with running_ghost(tmp_path_factory.mktemp("ghost"), release) as running:
        yield running


def run(site: GhostSite, work: Callable[[Ghost], Awaitable[T]], *, key: str | None = None) -> T:
    """`work` done by a strategy of its own (as each attempt gets one) on `site`."""
    credentials = {"adminApiKey": key or site.admin_api_key}
    return run_strategy(Ghost, {"adminUrl": site.url}, credentials, work)


def draft(**changes: Any) -> Article:
    """ARTICLE as a draft of its own, with `changes`."""
    own = uuid.uuid4()
    return replace(ARTICLE, **({"draft_id": own, "slug": f"pricing-{own.hex[:8]}"} | changes))


def publish(article: Article, mode: str = "publish") -> Callable[[Ghost], Awaitable[Any]]:
    return lambda strategy: strategy.publish(article, mode)


def update(result: Any, article: Article) -> Callable[[Ghost], Awaitable[Any]]:
    remote = Remote(result.external_id, result.remote_version, result.external_url)
    return lambda strategy: strategy.update(remote, article, "publish")


def uploaded(site: GhostSite, url: str) -> Path:
    """The file Ghost keeps for an upload's URL."""
    assert url.startswith(f"{site.url}/content/images/"), url
    return site.content / "images" / url.removeprefix(f"{site.url}/content/images/")


def test_publish_creates_a_live_post_with_the_body_in_an_html_card(site: GhostSite) -> None:
    article = draft()

    result = run(site, publish(article))

    post = site.post(result.external_id)
    assert post["status"] == "published"
    assert (post["title"], post["slug"]) == ("Pricing that scales", article.slug)
    # The HTML card's content, as Ghost writes it out again.
    assert post["html"] == (
        "\n<!--kg-card-begin: html-->\n<h2>Why</h2>\n<p>Because usage grows.</p>\n"
        "<!--kg-card-end: html-->\n"
    )
    assert post["custom_excerpt"] == "Why our pricing grows with you."
    assert (post["meta_title"], post["meta_description"]) == (
        "Pricing that scales | Acme",
        "How Acme's pricing grows with your usage.",
    )
    assert post["canonical_url"] == "https://acme.example/pricing"
    assert [tag["name"] for tag in post["tags"]] == ["pricing", "growth"]
    assert post["codeinjection_foot"] == f"<!-- contentplatform:draft={article.draft_id} -->"
    assert result.external_url == post["url"] == f"{site.url}/{article.slug}/"
    assert result.remote_version == post["updated_at"]
    assert result.status == "published"
    assert result.published_at == datetime.fromisoformat(post["published_at"])


def test_draft_mode_leaves_the_post_unpublished(site: GhostSite) -> None:
    result = run(site, publish(draft(), "draft"))

    post = site.post(result.external_id)
    assert post["status"] == "draft"
    assert (result.status, result.published_at) == ("draft", None)
    assert result.external_url == f"{site.url}/p/{post['uuid']}/"


def test_update_rewrites_the_same_post(site: GhostSite) -> None:
    article = draft()
    first = run(site, publish(article))

    second = run(
        site, update(first, replace(article, version=2, title="Revised", html="<p>New.</p>"))
    )

    post = site.post(first.external_id)
    assert second.external_id == first.external_id
    assert post["title"] == "Revised"
    assert "<p>New.</p>" in post["html"] and "Because usage grows" not in post["html"]
    assert second.remote_version == post["updated_at"]


def test_update_without_a_known_version_reads_it_first(site: GhostSite) -> None:
    article = draft()
    first = run(site, publish(article))

    run(
        site,
        lambda s: s.update(Remote(first.external_id), replace(article, title="Again"), "publish"),
    )

    assert site.post(first.external_id)["title"] == "Again"


def test_an_edit_in_ghost_since_is_read_and_written_over_once(site: GhostSite) -> None:
    article = draft()
    first = run(site, publish(article))
    site.edit_post(first.external_id, title="Changed in Ghost")
    # Ghost keeps whole seconds: a version surely older than the edit's, for its 409.
    stale = Remote(first.external_id, "2020-01-01T00:00:00.000Z")

    result = run(
        site, lambda s: s.update(stale, replace(article, title="Ours, revised"), "publish")
    )

    post = site.post(first.external_id)
    assert post["title"] == "Ours, revised"
    assert result.remote_version == post["updated_at"]


def test_unpublish_makes_the_post_a_draft_again(site: GhostSite) -> None:
    first = run(site, publish(draft()))

    remote = Remote(first.external_id, first.remote_version)
    result = run(site, lambda strategy: strategy.unpublish(remote))

    post = site.post(first.external_id)
    assert post["status"] == "draft"
    assert (result.external_id, result.status, result.published_at) == (
        first.external_id,
        "unpublished",
        None,
    )
    assert result.external_url == f"{site.url}/p/{post['uuid']}/"


def test_publishing_again_updates_the_post_it_made(site: GhostSite) -> None:
    article = draft()
    first = run(site, publish(article, "draft"))

    second = run(site, publish(replace(article, version=2, title="Second try")))

    assert second.external_id == first.external_id
    post = site.post(first.external_id)
    assert (post["title"], post["status"]) == ("Second try", "published")
    assert [p["id"] for p in site.posts(filter=f"slug:~'{article.slug}'")] == [first.external_id]


def test_the_post_ghost_gave_another_slug_is_found_again_and_keeps_it(site: GhostSite) -> None:
    # Ghost keeps /rss/ for the site's feed: a post asking for it gets rss-post (and one sent
    # "rss" again gets a fresh slug, rss-post-2, then rss-post...).
    feed = draft(title="RSS", slug="rss")
    first = run(site, publish(feed))
    assert site.post(first.external_id)["slug"] == "rss-post"

    second = run(site, publish(replace(feed, version=2)))
    third = run(site, update(second, replace(feed, version=3, title="RSS, revised")))

    assert first.external_id == second.external_id == third.external_id
    assert first.external_url == second.external_url == third.external_url
    assert [post["slug"] for post in site.posts(filter="slug:~'rss'")] == ["rss-post"]


def test_a_post_written_in_ghost_with_the_same_slug_is_left_alone(site: GhostSite) -> None:
    article = draft()
    theirs = site.create_post(title="Pricing, by hand", slug=article.slug, status="draft")

    ours = run(site, publish(article))
    again = run(site, publish(replace(article, title="Second try")))
    updated = run(site, update(again, replace(article, title="Third try")))

    assert ours.external_id != theirs["id"]
    assert again.external_id == updated.external_id == ours.external_id
    post = site.post(ours.external_id)
    assert (post["slug"], post["title"]) == (f"{article.slug}-2", "Third try")
    assert site.post(theirs["id"])["title"] == "Pricing, by hand"


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("wrong secret", "Ghost answered 401: Invalid token: invalid signature"),
        ("unknown id", "Ghost answered 401: Unknown Admin API Key"),
    ],
)
def test_a_refused_key_is_auth_failed(site: GhostSite, key: str, said: str) -> None:
    key_id, secret = site.admin_api_key.split(":")
    other = f"{key_id}:{'ab' * 32}" if key == "wrong secret" else f"{'cd' * 12}:{secret}"
    article = draft()

    with pytest.raises(AuthFailed) as raised:
        run(site, publish(article), key=other)
    with pytest.raises(AuthFailed):
        run(site, lambda strategy: strategy.test_connection(), key=other)

    assert raised.value.message == said
    assert site.posts(filter=f"slug:'{article.slug}'") == []


def test_a_site_that_is_down_is_transient(site: GhostSite) -> None:
    down = {"adminUrl": f"http://127.0.0.1:{free_port()}"}  # nothing listens there
    credentials = {"adminApiKey": site.admin_api_key}

    with pytest.raises(Transient) as raised:
        run_strategy(Ghost, down, credentials, publish(draft()))
    with pytest.raises(Transient):
        run_strategy(Ghost, down, credentials, lambda strategy: strategy.test_connection())

    assert raised.value.message.startswith("Ghost: ")


def test_connection_names_the_site(site: GhostSite) -> None:
    result = run(site, lambda strategy: strategy.test_connection())

    assert (result.ok, result.account_label) == (True, site.title)


def test_a_refused_post_is_invalid_with_ghost_words(site: GhostSite) -> None:
    with pytest.raises(Invalid) as raised:
        run(site, publish(draft(title="Long " * 60)))

    assert raised.value.message == (
        "Ghost answered 422: Validation error, cannot save post. (Value in [posts.title] "
        "exceeds maximum length of 255 characters. posts.title)"
    )


def test_long_excerpts_meta_and_tags_are_clipped_to_what_ghost_takes(site: GhostSite) -> None:
    wordy = "how pricing grows with usage " * 8  # 232 characters; a tag may have 191
    article = draft(excerpt="word " * 100, meta_description="more " * 150, tags=["pricing", wordy])

    result = run(site, publish(article))

    post = site.post(result.external_id)
    assert len(post["custom_excerpt"]) <= 300 and post["custom_excerpt"].endswith("…")
    assert len(post["meta_description"]) <= 500
    pricing, clipped = (tag["name"] for tag in post["tags"])
    assert pricing == "pricing"
    assert len(clipped) <= 191 and wordy.startswith(clipped.removesuffix("…"))


def test_targets_lists_the_sites_tags_and_staff(site: GhostSite) -> None:
    tag = f"Tag {uuid.uuid4().hex[:8]}"
    run(site, publish(draft(tags=[tag])))

    options = run(site, lambda strategy: strategy.targets())

    assert tag in [choice.name for choice in options.tags or []]
    assert [choice.name for choice in options.authors or []] == ["Test Owner"]


# --- images ------------------------------------------------------------------------------------


def test_the_featured_image_is_uploaded_once_and_set_with_its_alt_and_caption(
    site: GhostSite,
) -> None:
    article = draft(featured_image=our_picture())
    first = run(site, publish(article))
    files = site.image_files()

    run(site, update(first, replace(article, version=2, title="Revised")))

    assert site.image_files() == files  # the update kept the upload the post shows
    post = site.post(first.external_id)
    assert post["feature_image"].rsplit("/", 1)[1].startswith(f"cp-{HASH}-harbour")
    assert uploaded(site, post["feature_image"]).read_bytes() == PNG_BYTES
    assert post["feature_image_alt"] == "Boats in the harbour at dawn"
    assert post["feature_image_caption"] == "The harbour &lt;at&gt; dawn"


def test_a_hotlinked_stock_image_is_shown_from_the_providers_url_with_its_credit(
    site: GhostSite,
) -> None:
    files = site.image_files()

    result = run(site, publish(draft(featured_image=stock_picture())))

    post = site.post(result.external_id)
    assert site.image_files() == files
    assert post["feature_image"] == "https://images.unsplash.com/photo-1?ixid=abc&w=1080"
    assert post["feature_image_caption"] == (
        'Photo by <a href="https://unsplash.com/@analens?utm_source=content_platform&amp;'
        'utm_medium=referral" rel="noopener">Ana Lens</a> on <a href="https://unsplash.com/'
        '?utm_source=content_platform&amp;utm_medium=referral" rel="noopener">Unsplash</a>'
    )


def test_an_image_taken_off_the_draft_is_taken_off_the_post(site: GhostSite) -> None:
    article = draft(featured_image=stock_picture())
    first = run(site, publish(article))

    run(site, update(first, replace(article, featured_image=None)))

    post = site.post(first.external_id)
    assert (post["feature_image"], post["feature_image_caption"]) == (None, None)


def test_inline_images_are_uploaded_and_shown_in_the_html_card(site: GhostSite) -> None:
    result = run(site, publish(draft(inline_images=[our_picture(), stock_picture()])))

    page = BeautifulSoup(site.post(result.external_id)["html"], "html.parser")
    ours, stock = (img["src"] for img in page.find_all("img"))
    assert uploaded(site, ours).read_bytes() == PNG_BYTES
    assert stock == "https://images.unsplash.com/photo-1?ixid=abc&w=1080"
    assert [figure.img["alt"] for figure in page.find_all("figure")] == [
        "Boats in the harbour at dawn",
        "A lighthouse",
    ]


def test_an_avif_image_goes_as_webp_which_ghost_takes(site: GhostSite) -> None:
    avif = replace(
        our_picture(), filename="harbour.avif", mime_type="image/avif", data=_image("AVIF")
    )

    result = run(site, publish(draft(featured_image=avif, inline_images=[avif])))

    post = site.post(result.external_id)
    [inline] = BeautifulSoup(post["html"], "html.parser").find_all("img")
    for url in (post["feature_image"], inline["src"]):
        assert url.endswith(".webp"), url
        with PIL.Image.open(uploaded(site, url)) as kept:
            assert (kept.format, kept.size) == ("WEBP", (4, 3))


def test_an_image_with_a_long_or_unicode_name_is_uploaded(site: GhostSite) -> None:
    named = replace(our_picture(), filename="Crème brûlée, " + "très " * 45 + "bien.png")

    result = run(site, publish(draft(featured_image=named)))

    url = site.post(result.external_id)["feature_image"]
    assert url.rsplit("/", 1)[1].startswith(f"cp-{HASH}-Creme-brulee-tres-tres-")
    assert uploaded(site, url).read_bytes() == PNG_BYTES


def _image(kind: str) -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (4, 3), "navy").save(out, kind)
    return out.getvalue()
