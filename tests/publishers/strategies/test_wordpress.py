"""The WordPress strategy against a stand-in WordPress site (loopback only)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from bs4 import BeautifulSoup
from pydantic import ValidationError

from contentplatform.kit.outbound import Policy
from contentplatform.publishers.strategies.base import (
    Ambiguous,
    AuthFailed,
    Invalid,
    PublishError,
    RateLimited,
    Refused,
    Remote,
    RemoteNotFound,
    Result,
    Transient,
)
from contentplatform.publishers.strategies.wordpress import (
    WordPress,
    WordPressConfig,
    WordPressCredentials,
)
from tests.publishers.strategies.support import (
    LOOPBACK,
    PNG_BYTES,
    our_picture,
    publish,
    run_strategy,
    stock_picture,
)
from tests.publishers.strategies.support import PRICING_THAT_SCALES as ARTICLE
from tests.support.servers import StubServer
from tests.support.targets.scripted import Failure
from tests.support.targets.wordpress import WordPressServer

T = TypeVar("T")
# The stand-in's own user, by default.
CREDENTIALS = {"username": "eda", "applicationPassword": "abcd EFGH 1234 ijkl MNOP 5678"}


def run(
    site: WordPressServer | StubServer,
    work: Callable[[WordPress], Awaitable[T]],
    *,
    config: dict[str, Any] | None = None,
    credentials: dict[str, Any] = CREDENTIALS,
    policy: Policy = LOOPBACK,
) -> T:
    """`work` done by a strategy of its own (as each attempt gets one) on `site`."""
    config = {"siteUrl": site.url} | (config or {})
    return run_strategy(WordPress, config, credentials, work, policy=policy)


def test_publish_creates_a_live_post_with_the_application_password(wp: WordPressServer) -> None:
    result = run(wp, publish(), config={"categories": [3, 4], "tags": [9], "authorId": 1})

    [post] = wp.posts.values()
    assert post["status"] == "publish"
    assert (post["title"], post["slug"]) == ("Pricing that scales", "pricing-that-scales")
    assert post["excerpt"] == "Why our pricing grows with you."
    assert ARTICLE.html in post["content"]
    assert (post["categories"], post["tags"], post["author"]) == ([3, 4], [9], 1)
    assert result == Result(
        external_id=str(post["id"]),
        external_url=f"{wp.url}/pricing-that-scales/",
        remote_version=post["modified_gmt"],
        status="published",
        published_at=datetime.fromisoformat(post["date_gmt"]).replace(tzinfo=UTC),
    )
    basic = base64.b64encode(b"eda:abcd EFGH 1234 ijkl MNOP 5678").decode()
    assert {r.headers["authorization"] for r in wp.requests} == {f"Basic {basic}"}
    lookup, create = wp.requests
    assert (lookup.method, lookup.path, lookup.query["slug"]) == ("GET", wp.POSTS, ARTICLE.slug)
    assert (lookup.query["status"], lookup.query["context"]) == ("any", "edit")
    assert (create.method, create.path) == ("POST", wp.POSTS)


def test_draft_mode_leaves_the_post_unpublished(wp: WordPressServer) -> None:
    result = run(wp, publish("draft"))

    [post] = wp.posts.values()
    assert post["status"] == "draft"
    assert result.status == "draft"
    assert result.published_at is None
    assert result.external_url == f"{wp.url}/?p={post['id']}"


def test_update_rewrites_the_same_post(wp: WordPressServer) -> None:
    first = run(wp, publish())
    edited = replace(ARTICLE, version=2, title="Pricing that scales, revised", html="<p>New.</p>")

    remote = Remote(first.external_id, first.remote_version, first.external_url)
    second = run(wp, lambda strategy: strategy.update(remote, edited, "publish"))

    [post] = wp.posts.values()
    assert second.external_id == first.external_id
    assert post["title"] == "Pricing that scales, revised"
    assert "<p>New.</p>" in post["content"] and ARTICLE.html not in post["content"]
    assert second.status == "published"


def test_publishing_again_updates_the_post_found_by_its_slug(wp: WordPressServer) -> None:
    first = run(wp, publish("draft"))
    second = run(wp, publish(article=replace(ARTICLE, version=2, title="Second try")))

    [post] = wp.posts.values()
    assert second.external_id == first.external_id
    assert (post["title"], post["status"]) == ("Second try", "publish")
    assert second.status == "published"


def test_unpublish_makes_the_post_a_draft_again(wp: WordPressServer) -> None:
    first = run(wp, publish())

    result = run(wp, lambda strategy: strategy.unpublish(Remote(first.external_id)))

    [post] = wp.posts.values()
    assert post["status"] == "draft"
    assert (result.external_id, result.status, result.published_at) == (
        first.external_id,
        "unpublished",
        None,
    )


@pytest.mark.parametrize(
    ("credentials", "said"),
    [
        (
            {"username": "eda", "applicationPassword": "wxyz WXYZ 9876 wxyz WXYZ 9876"},
            "The provided password is an invalid application password.",
        ),
        (
            {"username": "nobody", "applicationPassword": "abcd EFGH 1234 ijkl MNOP 5678"},
            "Unknown username.",
        ),
    ],
)
def test_refused_credentials_are_auth_failed(
    wp: WordPressServer, credentials: dict[str, str], said: str
) -> None:
    with pytest.raises(AuthFailed) as raised:
        run(wp, publish(), credentials=credentials)

    assert said in raised.value.message
    assert credentials["applicationPassword"] not in raised.value.message
    assert wp.posts == {}


def test_a_user_who_may_not_publish_is_auth_failed() -> None:
    with WordPressServer(role="contributor") as wp, pytest.raises(AuthFailed) as raised:
        run(wp, publish())

    assert "not allowed to publish" in raised.value.message
    assert wp.posts == {}


def test_a_refused_parameter_is_invalid_with_wordpress_words(wp: WordPressServer) -> None:
    with pytest.raises(Invalid) as raised:
        run(wp, publish(), config={"authorId": 99})

    assert raised.value.message == "WordPress answered 400: Invalid author ID."
    assert not raised.value.retryable
    assert wp.posts == {}


@pytest.mark.parametrize(
    ("status", "expected"), [(500, Ambiguous), (502, Ambiguous), (503, Transient)]
)
def test_a_failed_create_is_ambiguous_unless_the_target_says_unavailable(
    wp: WordPressServer, status: int, expected: type[PublishError]
) -> None:
    wp.fail(Failure(status), method="POST", path=wp.POSTS)

    with pytest.raises(expected) as raised:
        run(wp, publish())

    assert raised.value.retryable


def test_a_failed_update_is_transient(wp: WordPressServer) -> None:
    first = run(wp, publish())
    wp.fail(Failure(500), method="POST", path=f"{wp.POSTS}/{first.external_id}")

    with pytest.raises(Transient):
        run(wp, lambda strategy: strategy.update(Remote(first.external_id), ARTICLE, "publish"))


def test_429_is_rate_limited_with_its_retry_after(wp: WordPressServer) -> None:
    wp.fail(Failure(429, headers={"retry-after": "7"}))

    with pytest.raises(RateLimited) as raised:
        run(wp, publish())

    assert raised.value.retry_after == 7.0


@pytest.mark.parametrize(
    "lost",
    [
        Failure(500, after=True),
        Failure(after=True, drop=True),
        Failure(after=True, delay=1.5),  # answers after the client's 0.5 s timeout
    ],
    ids=["500", "dropped", "timeout"],
)
def test_a_retry_after_an_ambiguous_create_updates_the_post_it_made(
    wp: WordPressServer, lost: Failure
) -> None:
    wp.fail(lost, method="POST", path=wp.POSTS)
    quick = Policy(allow_http=True, allow_loopback=True, timeout=0.5)
    with pytest.raises(Ambiguous):
        run(wp, publish(), policy=quick)
    [made] = wp.posts

    retried = run(wp, publish())

    assert list(wp.posts) == [made]
    assert retried.external_id == str(made)
    assert len(wp.seen("POST", wp.POSTS)) == 1
    assert len(wp.seen("POST", f"{wp.POSTS}/{made}")) == 1


def test_a_post_written_in_wordpress_with_the_same_slug_is_left_alone(
    wp: WordPressServer,
) -> None:
    theirs = wp.add_post(title="Pricing, by hand", slug=ARTICLE.slug, content="<p>Mine.</p>")

    result = run(wp, publish())

    assert wp.posts[theirs]["content"] == "<p>Mine.</p>"
    assert wp.posts[theirs]["title"] == "Pricing, by hand"
    assert result.external_id != str(theirs)
    assert result.external_url == f"{wp.url}/pricing-that-scales-2/"


def test_updating_a_post_deleted_there_is_remote_not_found(wp: WordPressServer) -> None:
    with pytest.raises(RemoteNotFound):
        run(wp, lambda strategy: strategy.update(Remote("999"), ARTICLE, "publish"))


@pytest.mark.parametrize(
    ("role", "ok", "capabilities", "warning"),
    [
        (
            "editor",
            True,
            ["edit_posts", "publish_posts", "edit_published_posts", "edit_others_posts"],
            None,
        ),
        ("author", True, ["edit_posts", "publish_posts", "edit_published_posts"], None),
        ("contributor", True, ["edit_posts"], "lacks publish_posts"),
        ("subscriber", False, [], "cannot create posts"),
    ],
)
def test_connection_names_the_user_and_what_it_may_do(
    role: str, ok: bool, capabilities: list[str], warning: str | None
) -> None:
    with WordPressServer(role=role) as wp:
        result = run(wp, lambda strategy: strategy.test_connection())

    assert (result.ok, result.account_label, result.capabilities) == (
        ok,
        "Eda Editor",
        capabilities,
    )
    if warning is None:
        assert result.warnings == []
    else:
        [said] = result.warnings
        assert warning in said
    [request] = wp.requests
    assert (request.path, request.query) == (wp.ME, {"context": "edit"})


def test_connection_with_a_wrong_password_is_auth_failed(wp: WordPressServer) -> None:
    wrong = {"username": "eda", "applicationPassword": "nope nope nope nope nope nope"}

    with pytest.raises(AuthFailed):
        run(wp, lambda strategy: strategy.test_connection(), credentials=wrong)


def test_a_site_that_is_not_wordpress_is_invalid() -> None:
    page = b"<!doctype html><title>Just a page</title>"
    with StubServer() as site:
        site.route(
            "GET", "/wp-json/wp/v2/users/me", lambda *_: (200, {"content-type": "text/html"}, page)
        )

        with pytest.raises(Invalid) as raised:
            run(site, lambda strategy: strategy.test_connection())

    assert "is siteUrl the address of a WordPress site?" in raised.value.message


def test_http_is_refused_unless_the_policy_allows_it(wp: WordPressServer) -> None:
    with pytest.raises(Refused):
        run(wp, publish(), policy=Policy(allow_loopback=True))

    assert wp.requests == []


def test_the_credentials_hint_masks_the_password() -> None:
    credentials = WordPressCredentials.model_validate(
        {"username": "eda", "applicationPassword": "abcd EFGH 1234 ijkl MNOP 5678"}
    )

    hint = WordPress.credentials_hint(credentials)

    assert hint == "eda ••••5678"
    assert "abcd EFGH" not in repr(credentials)


def test_a_valid_config_and_its_urls() -> None:
    config = WordPressConfig.model_validate(
        {"siteUrl": "https://blog.example.com", "categories": [3], "authorId": 2}
    )

    assert WordPress.urls(config) == ["https://blog.example.com/"]


@pytest.mark.parametrize(
    "config",
    [
        {"siteUrl": "not a url"},
        {"siteUrl": "ftp://blog.example.com"},
        {"siteUrl": "https://blog.example.com/?page=2"},
        {"siteUrl": "https://blog.example.com", "colour": "blue"},
        {"siteUrl": "https://blog.example.com", "categories": [0]},
        {"siteUrl": "https://blog.example.com", "authorId": "someone"},
        {},
    ],
)
def test_a_bad_config_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WordPressConfig.model_validate(config)


@pytest.mark.parametrize(
    "credentials",
    [
        {"username": "eda"},
        {"username": "", "applicationPassword": "abcd"},
        {"username": "eda", "applicationPassword": "abcd", "token": "x"},
    ],
)
def test_bad_credentials_are_refused(credentials: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        WordPressCredentials.model_validate(credentials)


# --- the featured image ------------------------------------------------------------------------


def test_the_featured_image_is_uploaded_described_and_set_once(wp: WordPressServer) -> None:
    with_image = replace(ARTICLE, featured_image=our_picture())

    first = run(wp, publish(article=with_image))
    run(wp, lambda s: s.update(Remote(first.external_id), with_image, "publish"))

    [media] = wp.media.values()  # the update found the upload instead of sending it again
    assert media["data"] == PNG_BYTES
    assert media["mime_type"] == "image/png"
    assert media["filename"] == f"cp-{'ab12' * 4}-harbour.png"
    assert media["alt_text"] == "Boats in the harbour at dawn"
    assert media["caption"] == "The harbour &lt;at&gt; dawn"
    assert wp.posts[int(first.external_id)]["featured_media"] == media["id"]


def test_a_hotlinked_stock_image_opens_the_post_and_is_never_uploaded(wp: WordPressServer) -> None:
    run(wp, publish(article=replace(ARTICLE, featured_image=stock_picture())))

    [post] = wp.posts.values()
    assert wp.media == {}
    assert post["featured_media"] == 0
    figure = post["content"].split("\n")[1]
    assert figure.startswith(
        '<figure><img src="https://images.unsplash.com/photo-1?ixid=abc&amp;w=1080"'
    )
    assert (
        'Photo by <a href="https://unsplash.com/@analens?utm_source=content_platform&amp;'
        'utm_medium=referral" rel="noopener">Ana Lens</a> on <a href="https://unsplash.com/'
    ) in figure


def test_an_image_taken_off_the_draft_is_taken_off_the_post(wp: WordPressServer) -> None:
    first = run(wp, publish(article=replace(ARTICLE, featured_image=our_picture())))

    run(wp, lambda s: s.update(Remote(first.external_id), ARTICLE, "publish"))

    assert wp.posts[int(first.external_id)]["featured_media"] == 0


def test_inline_images_are_uploaded_once_and_shown_from_the_library(wp: WordPressServer) -> None:
    with_images = replace(ARTICLE, inline_images=[our_picture(), stock_picture()])

    first = run(wp, publish(article=with_images))
    run(wp, lambda s: s.update(Remote(first.external_id), with_images, "publish"))

    [media] = wp.media.values()  # ours, once (the update found it); the stock one never
    assert media["data"] == PNG_BYTES
    content = wp.posts[int(first.external_id)]["content"]
    page = BeautifulSoup(content, "html.parser")
    sources = [img["src"] for img in page.find_all("img")]
    assert sources == [media["source_url"], "https://images.unsplash.com/photo-1?ixid=abc&w=1080"]
    # The first after the first section's paragraph; the second, with no section left, last.
    assert page.find("h2").find_next_sibling("p").find_next_sibling().name == "figure"
    assert "Photo by" in str(page.find_all("figure")[1].figcaption)
