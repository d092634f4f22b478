"""The Ghost strategy against a stand-in Ghost site (loopback only)."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

import httpx
import jwt
import PIL.Image
import pytest
from bs4 import BeautifulSoup
from pydantic import ValidationError

from contentplatform.kit.outbound import Policy
from contentplatform.publishers.strategies.base import (
    Ambiguous,
    AuthFailed,
    Invalid,
    RateLimited,
    Remote,
    RemoteConflict,
    Result,
    Transient,
)
from contentplatform.publishers.strategies.ghost import Ghost, GhostConfig, GhostCredentials
from tests.publishers.strategies.support import (
    LOOPBACK,
    PNG_BYTES,
    our_picture,
    publish,
    run_strategy,
    stock_picture,
)
from tests.publishers.strategies.support import PRICING_THAT_SCALES as ARTICLE
from tests.support.targets.ghost import GhostServer
from tests.support.targets.scripted import Failure

T = TypeVar("T")
# How Ghost serves a post sent as an HTML card.
CARD = "\n<!--kg-card-begin: html-->\n{}\n<!--kg-card-end: html-->\n"


@pytest.fixture
def ghost() -> Iterator[GhostServer]:
    with GhostServer() as server:
        yield server


def run(
    site: GhostServer,
    work: Callable[[Ghost], Awaitable[T]],
    *,
    key: str | None = None,
    admin_url: str | None = None,
    policy: Policy = LOOPBACK,
) -> T:
    """`work` done by a strategy of its own (as each attempt gets one) on `site`."""
    config = {"adminUrl": admin_url or site.url}
    credentials = {"adminApiKey": key or site.admin_api_key}
    return run_strategy(Ghost, config, credentials, work, policy=policy)


def test_publish_creates_a_live_post_with_the_body_in_an_html_card(ghost: GhostServer) -> None:
    result = run(ghost, publish())

    [post] = ghost.posts.values()
    assert post["status"] == "published"
    assert post["html"] == CARD.format(ARTICLE.html)
    assert (post["title"], post["slug"]) == ("Pricing that scales", "pricing-that-scales")
    assert post["custom_excerpt"] == "Why our pricing grows with you."
    assert (post["meta_title"], post["meta_description"]) == (
        "Pricing that scales | Acme",
        "How Acme's pricing grows with your usage.",
    )
    assert post["canonical_url"] == "https://acme.example/pricing"
    assert [tag["name"] for tag in post["tags"]] == ["pricing", "growth"]
    assert result == Result(
        external_id=post["id"],
        external_url=f"{ghost.url}/pricing-that-scales/",
        remote_version=post["updated_at"],
        status="published",
        published_at=datetime.fromisoformat(post["published_at"]),
    )
    assert result.published_at is not None and result.published_at.tzinfo is not None
    [create] = ghost.seen("POST", ghost.POSTS)
    assert create.query == {"source": "html"}
    assert {request.headers["accept-version"] for request in ghost.requests} == {"v5.0"}


def test_every_request_carries_a_fresh_admin_jwt(ghost: GhostServer) -> None:
    before = int(time.time())
    run(ghost, publish())
    after = int(time.time())

    assert len(ghost.requests) == 2  # the look-up by slug, the create
    for request in ghost.requests:
        scheme, token = request.headers["authorization"].split(" ")
        assert scheme == "Ghost"
        assert jwt.get_unverified_header(token) == {
            "alg": "HS256",
            "typ": "JWT",
            "kid": ghost.key_id,
        }
        claims = jwt.decode(
            token, bytes.fromhex(ghost.secret), algorithms=["HS256"], audience="/admin/"
        )
        assert before <= claims["iat"] <= after
        assert 0 < claims["exp"] - claims["iat"] <= 300
    assert len(ghost.tokens) == 2  # both accepted by the stand-in's own check


def test_draft_mode_leaves_the_post_unpublished(ghost: GhostServer) -> None:
    result = run(ghost, publish("draft"))

    [post] = ghost.posts.values()
    assert post["status"] == "draft"
    assert (result.status, result.published_at) == ("draft", None)
    assert result.external_url == f"{ghost.url}/p/{post['uuid']}/"


def test_update_rewrites_the_same_post(ghost: GhostServer) -> None:
    first = run(ghost, publish())
    edited = replace(ARTICLE, version=2, title="Pricing, revised", html="<p>New.</p>")

    remote = Remote(first.external_id, first.remote_version, first.external_url)
    second = run(ghost, lambda strategy: strategy.update(remote, edited, "publish"))

    [post] = ghost.posts.values()
    assert second.external_id == first.external_id
    assert (post["title"], post["html"]) == ("Pricing, revised", CARD.format("<p>New.</p>"))
    assert second.remote_version == post["updated_at"] != first.remote_version
    assert [request.method for request in ghost.requests[-1:]] == ["PUT"]  # no read needed


def test_update_without_a_known_version_reads_it_first(ghost: GhostServer) -> None:
    first = run(ghost, publish())

    run(ghost, lambda strategy: strategy.update(Remote(first.external_id), ARTICLE, "publish"))

    assert [request.method for request in ghost.requests[-2:]] == ["GET", "PUT"]
    assert len(ghost.posts) == 1


def test_an_edit_in_ghost_since_is_read_and_written_over_once(ghost: GhostServer) -> None:
    first = run(ghost, publish())
    ghost.edit(first.external_id, title="Changed in Ghost")
    edited = replace(ARTICLE, version=2, title="Ours, revised")

    remote = Remote(first.external_id, first.remote_version)
    result = run(ghost, lambda strategy: strategy.update(remote, edited, "publish"))

    [post] = ghost.posts.values()
    assert post["title"] == "Ours, revised"
    assert result.remote_version == post["updated_at"]
    post_path = ghost.post_path(first.external_id)
    assert [(r.method, r.path) for r in ghost.requests[-3:]] == [
        ("PUT", post_path),  # 409: the updated_at we knew is stale
        ("GET", post_path),
        ("PUT", post_path),
    ]


def test_a_second_collision_is_a_conflict(ghost: GhostServer) -> None:
    first = run(ghost, publish())
    ghost.fail(Failure(409), times=5, method="PUT")

    remote = Remote(first.external_id, first.remote_version)
    with pytest.raises(RemoteConflict) as raised:
        run(ghost, lambda strategy: strategy.update(remote, ARTICLE, "publish"))

    # Ghost repeats its message as the context: said once.
    assert (
        raised.value.message
        == "Ghost answered 409: Saving failed! Someone else is editing this post."
    )
    assert len(ghost.seen("PUT")) == 2  # retried once, no more


def test_unpublish_makes_the_post_a_draft_again(ghost: GhostServer) -> None:
    first = run(ghost, publish())

    remote = Remote(first.external_id, first.remote_version)
    result = run(ghost, lambda strategy: strategy.unpublish(remote))

    [post] = ghost.posts.values()
    assert post["status"] == "draft"
    assert (result.external_id, result.status, result.published_at) == (
        first.external_id,
        "unpublished",
        None,
    )


def test_publishing_again_updates_the_post_found_by_its_slug(ghost: GhostServer) -> None:
    first = run(ghost, publish("draft"))

    second = run(ghost, publish(article=replace(ARTICLE, version=2, title="Second try")))

    [post] = ghost.posts.values()
    assert second.external_id == first.external_id
    assert (post["title"], post["status"]) == ("Second try", "published")


@pytest.mark.parametrize(
    ("lost", "timeout"),
    [(Failure(500, after=True), LOOPBACK.timeout), (Failure(after=True, delay=4.0), 1.5)],
    ids=["500", "timeout"],
)
def test_a_retry_after_an_ambiguous_create_updates_the_post_it_made(
    ghost: GhostServer, lost: Failure, timeout: float
) -> None:
    ghost.fail(lost, method="POST", path=ghost.POSTS)
    with pytest.raises(Ambiguous):
        run(ghost, publish(), policy=replace(LOOPBACK, timeout=timeout))
    [made] = ghost.posts

    retried = run(ghost, publish())

    assert list(ghost.posts) == [made]
    assert retried.external_id == made
    assert len(ghost.seen("POST", ghost.POSTS)) == 1


@pytest.mark.parametrize(
    ("slug", "given"),
    [("rss", "rss-post"), ("ghost", "ghost-post")],
)
def test_a_retry_finds_the_post_ghost_gave_another_slug(
    ghost: GhostServer, slug: str, given: str
) -> None:
    kept_for_ghost = replace(ARTICLE, title=slug.upper(), slug=slug)
    ghost.fail(Failure(500, after=True), method="POST", path=ghost.POSTS)
    with pytest.raises(Ambiguous):
        run(ghost, publish(article=kept_for_ghost))
    [made] = ghost.posts
    assert ghost.posts[made]["slug"] == given  # Ghost keeps /rss/ for the site's own feed

    retried = run(ghost, publish(article=kept_for_ghost))

    assert list(ghost.posts) == [made]
    assert retried.external_id == made


def test_a_retry_finds_ours_beside_a_post_that_holds_its_slug(ghost: GhostServer) -> None:
    theirs = ghost.add_post(title="Pricing, by hand", slug=ARTICLE.slug)
    ghost.fail(Failure(500, after=True), method="POST", path=ghost.POSTS)
    with pytest.raises(Ambiguous):
        run(ghost, publish())
    [made] = [post_id for post_id in ghost.posts if post_id != theirs]

    retried = run(ghost, publish(article=replace(ARTICLE, title="Second try")))

    assert retried.external_id == made
    assert set(ghost.posts) == {theirs, made}
    assert ghost.posts[made]["title"] == "Second try"
    assert ghost.posts[theirs]["title"] == "Pricing, by hand"


@pytest.mark.parametrize("holder", ["ghost itself", "another post"])
def test_updates_keep_the_slug_ghost_gave_the_post(ghost: GhostServer, holder: str) -> None:
    # Ghost keeps /rss/ for its feed (ours becomes rss-post); a post of someone else's may hold
    # ours (ours becomes -2). Sent the slug again, Ghost would give the post a fresh one.
    article = replace(ARTICLE, slug="rss") if holder == "ghost itself" else ARTICLE
    if holder == "another post":
        ghost.add_post(title="Pricing, by hand", slug=ARTICLE.slug)
    first = run(ghost, publish(article=article))
    given = ghost.posts[first.external_id]["slug"]
    assert given == {"ghost itself": "rss-post", "another post": f"{ARTICLE.slug}-2"}[holder]

    revised = replace(article, version=2, title="Revised")
    second = run(ghost, lambda s: s.update(Remote(first.external_id), revised, "publish"))
    third = run(ghost, publish(article=replace(revised, version=3)))

    assert ghost.posts[first.external_id]["slug"] == given
    assert first.external_url == second.external_url == third.external_url
    assert third.external_id == first.external_id


def test_a_post_written_in_ghost_with_the_same_slug_is_left_alone(ghost: GhostServer) -> None:
    theirs = ghost.add_post(title="Pricing, by hand", slug=ARTICLE.slug, html="<p>Mine.</p>")

    ours = run(ghost, publish())

    assert ours.external_id != theirs
    assert (ghost.posts[theirs]["title"], ghost.posts[theirs]["html"]) == (
        "Pricing, by hand",
        "<p>Mine.</p>",
    )
    assert ours.external_url == f"{ghost.url}/pricing-that-scales-2/"


def test_another_draft_with_the_same_slug_is_left_alone(ghost: GhostServer) -> None:
    other = run(ghost, publish(article=replace(ARTICLE, draft_id=uuid.uuid4(), title="Other")))

    ours = run(ghost, publish())

    assert ours.external_id != other.external_id
    assert ghost.posts[other.external_id]["title"] == "Other"


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("wrong secret", "Invalid token"),
        ("unknown id", "Unknown Admin API Key"),
    ],
)
def test_a_refused_key_is_auth_failed(ghost: GhostServer, key: str, said: str) -> None:
    other_secret = "ab" * 32
    admin_api_key = (
        f"{ghost.key_id}:{other_secret}" if key == "wrong secret" else f"{'cd' * 12}:{ghost.secret}"
    )

    with pytest.raises(AuthFailed) as raised:
        run(ghost, publish(), key=admin_api_key)

    assert said in raised.value.message
    assert ghost.secret not in raised.value.message and other_secret not in raised.value.message
    assert ghost.posts == {}


def test_a_refused_post_is_invalid_with_ghost_words(ghost: GhostServer) -> None:
    with pytest.raises(Invalid) as raised:
        run(ghost, publish(article=replace(ARTICLE, title="Long " * 60)))

    assert raised.value.message.startswith("Ghost answered 422: Validation error")
    assert "posts.title" in raised.value.message  # Ghost's context says which field
    assert ghost.posts == {}


def test_long_excerpts_and_meta_are_clipped_to_what_ghost_takes(ghost: GhostServer) -> None:
    wordy = replace(ARTICLE, excerpt="word " * 100, meta_description="more " * 150)

    run(ghost, publish(article=wordy))

    [post] = ghost.posts.values()
    assert len(post["custom_excerpt"]) <= 300 and post["custom_excerpt"].endswith("…")
    assert len(post["meta_description"]) <= 500


@pytest.mark.parametrize(("status", "expected"), [(500, Ambiguous), (503, Transient)])
def test_a_failed_create_is_ambiguous_unless_the_target_says_unavailable(
    ghost: GhostServer, status: int, expected: type[Exception]
) -> None:
    ghost.fail(Failure(status), method="POST")

    with pytest.raises(expected):
        run(ghost, publish())


def test_429_is_rate_limited_with_its_retry_after(ghost: GhostServer) -> None:
    ghost.fail(Failure(429, headers={"retry-after": "12"}))

    with pytest.raises(RateLimited) as raised:
        run(ghost, publish())

    assert raised.value.retry_after == 12.0


def test_connection_names_the_site(ghost: GhostServer) -> None:
    result = run(ghost, lambda strategy: strategy.test_connection())

    assert (result.ok, result.account_label) == (True, "The Stand-in Gazette")
    assert "publish_posts" in result.capabilities
    assert len(ghost.tokens) == 1  # the key was checked, not only the open /site/


def test_connection_with_a_wrong_key_is_auth_failed(ghost: GhostServer) -> None:
    with pytest.raises(AuthFailed):
        run(ghost, lambda strategy: strategy.test_connection(), key=f"{ghost.key_id}:{'00' * 32}")


def test_the_address_of_the_admin_screens_works_too(ghost: GhostServer) -> None:
    result = run(
        ghost, lambda strategy: strategy.test_connection(), admin_url=f"{ghost.url}/ghost/"
    )

    assert result.ok


V5 = {"accept-version": "v5.0"}


@pytest.mark.parametrize(
    ("claims", "headers", "status", "said"),
    [
        # Ghost checks how old a token is (maxAge 5 minutes), not how long it is valid for.
        ({"iat_ago": 301, "exp_after": 900}, V5, 401, "Invalid token: maxAge exceeded"),
        ({"aud": "/content/"}, V5, 401, "Invalid token: jwt audience invalid."),
        ({"exp_after": -1}, V5, 401, "Invalid token: jwt expired"),
        ({}, {}, 400, "Accept-Version header missing"),  # the stand-in insists; Ghost does not
    ],
    ids=["issued-too-long-ago", "wrong-audience", "expired", "no-version"],
)
def test_the_stand_in_refuses_what_ghost_would(
    ghost: GhostServer, claims: dict[str, Any], headers: dict[str, str], status: int, said: str
) -> None:
    answer = httpx.get(
        f"{ghost.url}/ghost/api/admin/posts/",
        headers={"authorization": f"Ghost {_token(ghost, **claims)}", **headers},
    )

    assert answer.status_code == status
    assert answer.json()["errors"][0]["message"].startswith(said)
    assert ghost.tokens == []


def test_the_stand_in_takes_a_token_valid_for_longer_as_ghost_does(ghost: GhostServer) -> None:
    answer = httpx.get(
        f"{ghost.url}/ghost/api/admin/posts/",
        headers={"authorization": f"Ghost {_token(ghost, exp_after=3600)}", **V5},
    )

    assert answer.status_code == 200
    assert len(ghost.tokens) == 1


def test_without_a_key_the_stand_in_answers_403_as_ghost_does(ghost: GhostServer) -> None:
    answer = httpx.get(f"{ghost.url}/ghost/api/admin/posts/", headers=V5)

    assert answer.status_code == 403
    assert answer.json()["errors"][0]["type"] == "NoPermissionError"


def _token(
    ghost: GhostServer, *, iat_ago: int = 0, exp_after: int = 300, aud: str = "/admin/"
) -> str:
    issued = int(time.time()) - iat_ago
    return jwt.encode(
        {"iat": issued, "exp": issued + exp_after, "aud": aud},
        bytes.fromhex(ghost.secret),
        algorithm="HS256",
        headers={"kid": ghost.key_id},
    )


def test_the_credentials_hint_masks_the_key() -> None:
    key = f"{'6f' * 12}:{'a1' * 31}beef"
    credentials = GhostCredentials.model_validate({"adminApiKey": key})

    assert Ghost.credentials_hint(credentials) == "••••beef"
    assert "a1a1" not in repr(credentials)


def test_a_valid_config_and_its_urls() -> None:
    config = GhostConfig.model_validate({"adminUrl": "https://acme.ghost.io"})

    assert Ghost.urls(config) == ["https://acme.ghost.io/"]


@pytest.mark.parametrize(
    "config",
    [
        {"adminUrl": "acme.ghost.io is my blog"},
        {"adminUrl": "https://acme.ghost.io/ghost/#/dashboard"},
        {"adminUrl": "https://acme.ghost.io", "contentKey": "x"},
        {},
    ],
)
def test_a_bad_config_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        GhostConfig.model_validate(config)


@pytest.mark.parametrize(
    "key", ["no-colon-here", "6f6f:not-hex-secret-value", "6f6f:abc", ":abcd", "6f6f:"]
)
def test_a_malformed_key_is_refused_without_echoing_it(key: str) -> None:
    with pytest.raises(ValidationError) as raised:
        GhostCredentials.model_validate({"adminApiKey": key})

    assert key not in str(raised.value)
    assert "id:secret" in str(raised.value)


# --- the featured image ------------------------------------------------------------------------


def test_the_featured_image_is_uploaded_once_and_set_with_its_alt_and_caption(
    ghost: GhostServer,
) -> None:
    with_image = replace(ARTICLE, featured_image=our_picture())

    first = run(ghost, publish(article=with_image))
    run(
        ghost,
        lambda s: s.update(Remote(first.external_id, first.remote_version), with_image, "publish"),
    )

    [(url, upload)] = ghost.images.items()  # the update kept the upload the post shows
    assert upload["data"] == PNG_BYTES
    assert upload["content_type"] == "image/png"
    assert upload["ref"] == upload["filename"] == f"cp-{'ab12' * 4}-harbour.png"
    post = ghost.posts[first.external_id]
    assert post["feature_image"] == url
    assert post["feature_image_alt"] == "Boats in the harbour at dawn"
    assert post["feature_image_caption"] == "The harbour &lt;at&gt; dawn"


def test_a_hotlinked_stock_image_is_shown_from_the_providers_url_with_its_credit(
    ghost: GhostServer,
) -> None:
    run(ghost, publish(article=replace(ARTICLE, featured_image=stock_picture())))

    [post] = ghost.posts.values()
    assert ghost.images == {}
    assert post["feature_image"] == "https://images.unsplash.com/photo-1?ixid=abc&w=1080"
    assert post["feature_image_caption"] == (
        'Photo by <a href="https://unsplash.com/@analens?utm_source=content_platform&amp;'
        'utm_medium=referral" rel="noopener">Ana Lens</a> on <a href="https://unsplash.com/'
        '?utm_source=content_platform&amp;utm_medium=referral" rel="noopener">Unsplash</a>'
    )


def test_an_image_taken_off_the_draft_is_taken_off_the_post(ghost: GhostServer) -> None:
    first = run(ghost, publish(article=replace(ARTICLE, featured_image=stock_picture())))

    run(
        ghost,
        lambda s: s.update(Remote(first.external_id, first.remote_version), ARTICLE, "publish"),
    )

    post = ghost.posts[first.external_id]
    assert post["feature_image"] is None
    assert post["feature_image_caption"] is None


def test_inline_images_are_uploaded_and_shown_in_the_html_card(ghost: GhostServer) -> None:
    run(ghost, publish(article=replace(ARTICLE, inline_images=[our_picture(), stock_picture()])))

    [(url, upload)] = ghost.images.items()  # ours uploaded; the stock one never
    assert upload["data"] == PNG_BYTES
    [post] = ghost.posts.values()
    page = BeautifulSoup(post["html"], "html.parser")
    assert [img["src"] for img in page.find_all("img")] == [
        url,
        "https://images.unsplash.com/photo-1?ixid=abc&w=1080",
    ]
    assert page.find("h2").find_next_sibling("p").find_next_sibling().name == "figure"


def test_an_image_with_a_long_or_unicode_name_goes_under_a_short_ascii_one(
    ghost: GhostServer,
) -> None:
    # Ghost writes the file under the name it is sent (as bytes, with `_o` for the original):
    # one too long for the file system is 400 ENAMETOOLONG.
    named = replace(our_picture(), filename="Crème brûlée, " + "très " * 45 + "bien.png")

    run(ghost, publish(article=replace(ARTICLE, featured_image=named, inline_images=[named])))

    assert len(ghost.images) == 2
    for url, upload in ghost.images.items():
        assert upload["filename"].startswith(f"cp-{'ab12' * 4}-Creme-brulee-tres-tres-")
        assert upload["filename"].endswith(".png") and len(upload["filename"]) <= 140
        assert upload["filename"].isascii() and url.rsplit("/", 1)[1].startswith("cp-")
    [post] = ghost.posts.values()
    assert post["feature_image"] in ghost.images


def test_an_avif_image_goes_as_webp_which_ghost_takes(ghost: GhostServer) -> None:
    avif = replace(
        our_picture(), filename="harbour.avif", mime_type="image/avif", data=_image("AVIF")
    )

    run(ghost, publish(article=replace(ARTICLE, featured_image=avif, inline_images=[avif])))

    assert len(ghost.images) == 2  # Ghost refuses an AVIF (415 "Please select a valid image.")
    for upload in ghost.images.values():
        assert upload["filename"].startswith(f"cp-{'ab12' * 4}-harbour")
        assert upload["filename"].endswith(".webp")
        assert upload["content_type"] == "image/webp"
        with PIL.Image.open(io.BytesIO(upload["data"])) as sent:
            assert (sent.format, sent.size) == ("WEBP", (4, 3))
    [post] = ghost.posts.values()
    assert post["feature_image"] in ghost.images
    assert post["feature_image_alt"] == "Boats in the harbour at dawn"


def test_an_avif_featured_image_already_on_the_post_is_not_sent_again(ghost: GhostServer) -> None:
    avif = replace(
        our_picture(), filename="harbour.avif", mime_type="image/avif", data=_image("AVIF")
    )
    with_image = replace(ARTICLE, featured_image=avif)
    first = run(ghost, publish(article=with_image))

    run(
        ghost,
        lambda s: s.update(Remote(first.external_id, first.remote_version), with_image, "publish"),
    )

    assert len(ghost.images) == 1


def test_a_tag_longer_than_ghost_takes_is_clipped(ghost: GhostServer) -> None:
    wordy = "how pricing grows with usage " * 8  # 232 characters; Ghost takes 191

    run(ghost, publish(article=replace(ARTICLE, tags=["pricing", wordy])))

    [post] = ghost.posts.values()
    pricing, clipped = (tag["name"] for tag in post["tags"])
    assert pricing == "pricing"
    assert len(clipped) <= 191 and clipped.endswith("…")
    assert wordy.startswith(clipped[:-1])


def _image(kind: str) -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (4, 3), "navy").save(out, kind)
    return out.getvalue()
