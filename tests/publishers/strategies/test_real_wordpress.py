"""The WordPress strategy against a real WordPress: Debian's `wordpress` package (6.1), served by
Apache with mod_php, on MariaDB, on loopback (tests/support/real_wordpress.py: one per test
worker, with a database of its own, dropped after).

These check what our stand-in (tests/support/targets/wordpress.py) can only claim: how the real
thing answers a refused password, a plain-permalinks site, a file name with a space, a slug
already taken, a certificate of a private CA. Skipped where WordPress is not installed (or not
as root), unless CONTENTPLATFORM_TEST_REQUIRE_WORDPRESS=1 (CI, which installs it): then they
fail. Every test publishes drafts of its own (a new draft id and slug), as the site is shared
by the worker's tests.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import PIL.Image
import pytest

from contentplatform.kit.outbound import Policy
from contentplatform.publishers.strategies.base import (
    Article,
    AuthFailed,
    Picture,
    Refused,
    Remote,
    RemoteNotFound,
    Transient,
    marker,
)
from contentplatform.publishers.strategies.wordpress import WordPress
from tests.publishers.strategies.support import PRICING_THAT_SCALES, run_strategy
from tests.support import real_wordpress
from tests.support.real_wordpress import RealWordPress

REQUIRED = os.environ.get("CONTENTPLATFORM_TEST_REQUIRE_WORDPRESS") == "1"
# WordPress answers in tens of milliseconds; on a machine loaded by other suites, in seconds.
REAL = Policy(allow_http=True, allow_loopback=True, connect_timeout=5.0, timeout=60.0)


@pytest.fixture(scope="session")
def site() -> Iterator[RealWordPress]:
    reason = real_wordpress.missing()
    if reason is not None:
        if REQUIRED:
            pytest.fail(f"{reason}, and CONTENTPLATFORM_TEST_REQUIRE_WORDPRESS=1")
        pytest.skip(reason)
    with RealWordPress() as running:
        yield running


@pytest.fixture(autouse=True)
def serving(site: RealWordPress) -> None:
    """Should something have stopped the worker's Apache, it serves again (with a warning)."""
    site.ensure_serving()


def run(
    site: RealWordPress,
    work: Any,
    *,
    on: str = "local",
    login: str = "eda",
    config: dict[str, Any] | None = None,
    credentials: dict[str, str] | None = None,
    policy: Policy = REAL,
) -> Any:
    """`work` done by a strategy of its own on the site `on`, signed in as `login`."""
    return run_strategy(
        WordPress,
        {"siteUrl": site.url(on)} | (config or {}),
        credentials or site.credentials(login, on),
        work,
        policy=policy,
    )


def draft(**changes: Any) -> Article:
    """An article of a draft of its own (its own id and slug)."""
    key = uuid.uuid4()
    return replace(
        PRICING_THAT_SCALES, draft_id=key, slug=f"pricing-that-scales-{key.hex[:8]}", **changes
    )


def picture(filename: str = "harbour.png", **changes: Any) -> Picture:
    """A PNG of its own (random pixels, so a content hash no other test has)."""
    out = io.BytesIO()
    image = PIL.Image.new("RGB", (8, 6))
    image.putdata([tuple(random.randrange(256) for _ in range(3)) for _ in range(48)])
    image.save(out, "PNG")
    data = out.getvalue()
    return Picture(
        url="https://files.example/signed/" + filename,
        alt="Boats in the harbour at dawn",
        filename=filename,
        mime_type="image/png",
        content_hash=hashlib.sha256(data).hexdigest(),
        data=data,
        caption="The harbour <at> dawn",
        **changes,
    )


def publish(article: Article, mode: str = "publish") -> Any:
    return lambda strategy: strategy.publish(article, mode)


def ours(site: RealWordPress, article: Article) -> list[dict[str, Any]]:
    """The posts on the site that carry `article`'s draft marker, in every status."""
    return site.marked(marker(article).removeprefix("<!-- ").removesuffix(" -->"))


# --- create, update, draft, unpublish --------------------------------------------------------


def test_publish_creates_a_live_post_a_visitor_can_read(site: RealWordPress) -> None:
    article = draft(title="Tom & Jerry <3")

    result = run(site, publish(article))

    post = site.post(result.external_id)
    assert post["status"] == "publish" and result.status == "published"
    assert post["slug"] == article.slug
    assert post["author"] == site.user_id("eda")
    # An author's content goes through kses: the marker comment survives it.
    assert marker(article) in post["content"]["raw"]
    assert article.html in post["content"]["raw"]
    assert post["title"]["rendered"] == "Tom &amp; Jerry &lt;3"
    assert result.external_url == post["link"] == f"{site.url()}/{article.slug}/"
    # The site has no theme (Debian's package recommends one): a visitor reads it over REST.
    assert site.visit(result.external_url).status_code == 200
    seen = site.visit(f"{site.url()}/wp-json/wp/v2/posts/{post['id']}").json()
    assert "Because usage grows." in seen["content"]["rendered"]
    assert result.remote_version == post["modified_gmt"]
    assert result.published_at is not None


def test_draft_mode_then_publish_is_one_post(site: RealWordPress) -> None:
    article = draft()

    first = run(site, publish(article, "draft"))
    assert site.post(first.external_id)["status"] == "draft"
    assert first.status == "draft" and first.published_at is None

    second = run(site, publish(replace(article, version=2, title="Second try")))

    assert second.external_id == first.external_id
    [post] = ours(site, article)
    assert (post["status"], post["title"]["raw"]) == ("publish", "Second try")


def test_update_rewrites_the_same_post(site: RealWordPress) -> None:
    article = draft()
    first = run(site, publish(article))
    edited = replace(article, version=2, title="Revised", html="<p>New words.</p>")

    second = run(site, lambda s: s.update(Remote(first.external_id), edited, "publish"))

    assert second.external_id == first.external_id
    post = site.post(first.external_id)
    assert post["title"]["raw"] == "Revised"
    assert "<p>New words.</p>" in post["content"]["raw"]
    assert "Because usage grows." not in post["content"]["raw"]
    assert second.remote_version == post["modified_gmt"]


def test_unpublish_makes_the_post_a_draft(site: RealWordPress) -> None:
    article = draft()
    first = run(site, publish(article))

    result = run(site, lambda s: s.unpublish(Remote(first.external_id)))

    assert (result.status, result.published_at) == ("unpublished", None)
    assert site.post(first.external_id)["status"] == "draft"
    assert site.visit(first.external_url).status_code == 404


def test_unpublishing_a_post_trashed_in_wordpress_leaves_it_in_the_trash(
    site: RealWordPress,
) -> None:
    article = draft()
    first = run(site, publish(article))
    site.admin.delete(f"/posts/{first.external_id}").raise_for_status()  # Move to Trash

    result = run(site, lambda s: s.unpublish(Remote(first.external_id)))

    assert result.status == "unpublished"
    assert site.post(first.external_id)["status"] == "trash"


def test_updating_a_post_trashed_in_wordpress_brings_it_back(site: RealWordPress) -> None:
    article = draft()
    first = run(site, publish(article))
    site.admin.delete(f"/posts/{first.external_id}").raise_for_status()

    again = run(site, lambda s: s.update(Remote(first.external_id), article, "publish"))

    assert again.external_id == first.external_id
    post = site.post(first.external_id)
    assert (post["status"], post["slug"]) == ("publish", article.slug)


def test_a_post_deleted_in_wordpress_is_not_found(site: RealWordPress) -> None:
    article = draft()
    first = run(site, publish(article))
    site.admin.delete(f"/posts/{first.external_id}", params={"force": "true"}).raise_for_status()

    with pytest.raises(RemoteNotFound):
        run(site, lambda s: s.update(Remote(first.external_id), article, "publish"))


# --- categories, tags, authors ---------------------------------------------------------------


def test_categories_tags_and_authors_are_listed_and_set(site: RealWordPress) -> None:
    key = uuid.uuid4().hex[:6]
    category = site.admin.post("/categories", json={"name": f"Garden & Home {key}"}).json()
    tag = site.admin.post("/tags", json={"name": f"roses-{key}"}).json()

    options = run(site, lambda s: s.targets())

    assert (category["id"], f"Garden & Home {key}") in {(c.id, c.name) for c in options.categories}
    assert (tag["id"], f"roses-{key}") in {(t.id, t.name) for t in options.tags}
    authors = {a.id for a in options.authors}
    assert {site.user_id("admin"), site.user_id("eda")} <= authors
    assert site.user_id("sam") not in authors  # a subscriber cannot write posts

    config = {"categories": [category["id"]], "tags": [tag["id"]], "authorId": site.user_id("eda")}
    result = run(site, publish(draft()), config=config)

    post = site.post(result.external_id)
    assert (post["categories"], post["tags"]) == ([category["id"]], [tag["id"]])


# --- images ----------------------------------------------------------------------------------


def test_the_featured_image_is_uploaded_once_described_and_set(site: RealWordPress) -> None:
    image = picture()
    article = draft(featured_image=image)

    first = run(site, publish(article))
    run(site, lambda s: s.update(Remote(first.external_id), article, "publish"))
    run(site, publish(article))  # a retry that finds the post and the image

    post = site.post(first.external_id)
    [media] = [m for m in site.media(parent=0) if m["id"] == post["featured_media"]]
    assert media["alt_text"] == "Boats in the harbour at dawn"
    assert media["caption"]["raw"] == "The harbour &lt;at&gt; dawn"
    assert media["mime_type"] == "image/png"
    uploaded = site.visit(media["source_url"])
    assert uploaded.content == image.data
    assert len(ours(site, article)) == 1


def test_an_image_named_with_a_space_and_accents_is_uploaded_once(site: RealWordPress) -> None:
    """Issue 34 point 3: WordPress drops the `%` of a percent-encoded name rather than decoding
    it, so a lookup by the name sent never matched: three publishes made three uploads."""
    image = picture("Hafen am Morgen \u2013 Ünïcode.png")
    article = draft(featured_image=image, inline_images=[picture("second shot.png")])
    before = {m["id"] for m in site.media()}

    first = run(site, publish(article))
    run(site, lambda s: s.update(Remote(first.external_id), article, "publish"))
    run(site, lambda s: s.update(Remote(first.external_id), article, "publish"))

    made = [m for m in site.media() if m["id"] not in before]
    assert len(made) == 2, [m["source_url"] for m in made]
    featured = site.post(first.external_id)["featured_media"]
    [shown] = [m for m in made if m["id"] == featured]
    assert site.visit(shown["source_url"]).content == image.data
    # The inline one is shown from the library, in the content.
    [inline] = [m for m in made if m["id"] != featured]
    assert inline["source_url"] in site.post(first.external_id)["content"]["raw"]


# --- a retried create (point 4) --------------------------------------------------------------


def test_a_retried_create_beside_a_post_holding_the_slug_updates_its_own(
    site: RealWordPress,
) -> None:
    article = draft()
    theirs = site.admin.post(
        "/posts",
        json={"title": "Written by hand", "slug": article.slug, "status": "publish"},
    ).json()

    # Its answer lost: the next try knows nothing of it. By slug it found only theirs, and made
    # a third post (`-3`) beside ours (`-2`).
    first = run(site, publish(article))
    retried = run(site, publish(article))

    assert retried.external_id == first.external_id
    [post] = ours(site, article)
    assert post["slug"] == f"{article.slug}-2"
    assert site.post(theirs["id"])["title"]["raw"] == "Written by hand"


# --- refused credentials (points 1 and 2) ----------------------------------------------------

WRONG_PASSWORD = "wxyz WXYZ 9876 wxyz WXYZ 9876"


@pytest.mark.parametrize(
    "credentials",
    [
        {"username": "eda", "applicationPassword": WRONG_PASSWORD},
        {"username": "nobody", "applicationPassword": WRONG_PASSWORD},
    ],
    ids=["wrong password", "wrong user"],
)
def test_refused_credentials_are_auth_failed_on_every_route(
    site: RealWordPress, credentials: dict[str, str]
) -> None:
    article = draft()
    made = run(site, publish(article))

    for work in (
        publish(draft()),
        lambda s: s.update(Remote(made.external_id), article, "publish"),
        lambda s: s.unpublish(Remote(made.external_id)),
        lambda s: s.targets(),
        lambda s: s.test_connection(),
    ):
        with pytest.raises(AuthFailed) as raised:
            run(site, work, credentials=credentials)
        said = raised.value.message
        assert "username and Application Password" in said, said
        assert "Users → Profile" in said
        assert WRONG_PASSWORD not in said
    assert site.post(made.external_id)["status"] == "publish"


def test_http_without_the_local_environment_is_auth_failed_naming_the_fix(
    site: RealWordPress,
) -> None:
    for work in (publish(draft()), lambda s: s.test_connection()):
        with pytest.raises(AuthFailed) as raised:
            run(site, work, on="production")
        said = raised.value.message
        assert "https" in said and "WP_ENVIRONMENT_TYPE" in said, said


def test_the_connection_test_names_each_cause_and_what_to_do(site: RealWordPress) -> None:
    works = run(site, lambda s: s.test_connection())
    assert works.ok and works.account_label == "Eda"
    assert works.capabilities == ["edit_posts", "publish_posts", "edit_published_posts"]

    with pytest.raises(AuthFailed) as wrong:
        run(
            site,
            lambda s: s.test_connection(),
            credentials={"username": "eda", "applicationPassword": WRONG_PASSWORD},
        )
    with pytest.raises(AuthFailed) as plain_http:
        run(site, lambda s: s.test_connection(), on="production")
    subscriber = run(site, lambda s: s.test_connection(), login="sam")

    assert "username and Application Password" in wrong.value.message
    assert "WP_ENVIRONMENT_TYPE" in plain_http.value.message
    assert "username" not in plain_http.value.message
    assert (subscriber.ok, subscriber.account_label, subscriber.capabilities) == (False, "Sam", [])
    [said] = subscriber.warnings
    assert "cannot create posts" in said and "subscriber" in said and "Author" in said


def test_a_subscriber_is_refused_with_what_to_do(site: RealWordPress) -> None:
    with pytest.raises(AuthFailed) as raised:
        run(site, publish(draft()), login="sam")

    assert "Author" in raised.value.message


# --- the site down ---------------------------------------------------------------------------


def test_a_site_whose_database_is_down_is_transient(site: RealWordPress) -> None:
    with pytest.raises(Transient) as raised:
        run(site, publish(draft()), on="broken")

    assert raised.value.retryable


def test_a_site_that_does_not_answer_is_transient(site: RealWordPress) -> None:
    closed = real_wordpress.free_port()

    with pytest.raises(Transient) as raised:
        run_strategy(
            WordPress,
            {"siteUrl": f"http://127.0.0.1:{closed}"},
            site.credentials(),
            publish(draft()),
            policy=REAL,
        )

    assert "could not be reached" in raised.value.message


# --- plain permalinks (point 5) --------------------------------------------------------------


def test_a_site_with_plain_permalinks_is_reached_where_it_says(site: RealWordPress) -> None:
    article = draft(featured_image=picture())

    connected = run(site, lambda s: s.test_connection(), on="plain")
    first = run(site, publish(article), on="plain")
    second = run(
        site,
        lambda s: s.update(Remote(first.external_id), replace(article, title="Again"), "publish"),
        on="plain",
    )
    down = run(site, lambda s: s.unpublish(Remote(first.external_id)), on="plain")
    options = run(site, lambda s: s.targets(), on="plain")

    assert connected.ok
    assert first.external_url == f"{site.url('plain')}/?p={first.external_id}"
    assert second.external_id == first.external_id and second.status == "published"
    assert down.status == "unpublished"
    assert [c.name for c in options.categories] == ["Uncategorized"]


# --- TLS (point 6) ---------------------------------------------------------------------------


def test_a_certificate_of_an_untrusted_ca_is_refused_naming_it(site: RealWordPress) -> None:
    https = Policy(allow_loopback=True, connect_timeout=5.0, timeout=60.0)

    with pytest.raises(Refused) as raised:
        run(site, publish(draft()), on="tls", policy=https)

    assert not raised.value.retryable
    said = raised.value.message
    assert "certificate" in said and "CONTENTPLATFORM_OUTBOUND_CA_FILE" in said, said


def test_a_private_ca_the_operator_trusts_is_accepted(site: RealWordPress) -> None:
    trusting = Policy(allow_loopback=True, timeout=60.0, ca_file=str(site.ca_file))
    article = draft()

    # https without WP_ENVIRONMENT_TYPE: Application Passwords work, as on a live site.
    connected = run(site, lambda s: s.test_connection(), on="tls", policy=trusting)
    result = run(site, publish(article), on="tls", policy=trusting)

    assert connected.ok
    assert result.external_url == f"{site.url('tls')}/{article.slug}/"
