"""The WordPress strategy against a stand-in WordPress site (loopback only)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
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
from tests.support.tls import PrivateCA, TLSStubServer

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
    home, me, *api = wp.requests
    # Where the API is, from the home page, asked as any visitor asks it.
    assert (home.method, home.path, "authorization" in home.headers) == ("HEAD", "/", False)
    basic = base64.b64encode(b"eda:abcd EFGH 1234 ijkl MNOP 5678").decode()
    assert {r.headers["authorization"] for r in [me, *api]} == {f"Basic {basic}"}
    assert (me.method, me.path, me.query) == ("GET", wp.ME, {"context": "edit"})
    by_marker, by_slug, create = api
    assert (by_marker.method, by_marker.path) == ("GET", wp.POSTS)
    assert by_marker.query["search"] == f"contentplatform:draft={ARTICLE.draft_id}"
    assert (by_slug.path, by_slug.query["slug"]) == (wp.POSTS, ARTICLE.slug)
    for lookup in (by_marker, by_slug):
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
    "credentials",
    [
        {"username": "eda", "applicationPassword": "wxyz WXYZ 9876 wxyz WXYZ 9876"},
        {"username": "nobody", "applicationPassword": "abcd EFGH 1234 ijkl MNOP 5678"},
    ],
    ids=["wrong password", "wrong user"],
)
def test_refused_credentials_are_auth_failed_before_anything_is_written(
    wp: WordPressServer, credentials: dict[str, str]
) -> None:
    """WordPress answers them as a visitor (no 401 of its own): `users/me` tells."""
    made = run(wp, publish())

    for work in (
        publish(replace(ARTICLE, draft_id=uuid.uuid4(), slug="another")),
        lambda s: s.update(Remote(made.external_id), ARTICLE, "publish"),
        lambda s: s.unpublish(Remote(made.external_id)),
        lambda s: s.targets(),
        lambda s: s.test_connection(),
    ):
        wp.requests.clear()
        with pytest.raises(AuthFailed) as raised:
            run(wp, work, credentials=credentials)

        said = raised.value.message
        assert said.startswith("WordPress did not accept the username and Application Password")
        assert "Users → Profile → Application Passwords" in said
        assert credentials["applicationPassword"] not in said
        assert [(r.method, r.path) for r in wp.requests][:2] == [("HEAD", "/"), ("GET", wp.ME)]
        assert not wp.seen("POST")
    assert list(wp.posts) == [int(made.external_id)]


def test_a_site_over_http_without_the_local_environment_says_so() -> None:
    """WordPress turns Application Passwords off there, and its REST index lists none."""
    with WordPressServer(application_passwords=False) as wp:
        with pytest.raises(AuthFailed) as raised:
            run(wp, publish())
        with pytest.raises(AuthFailed) as tested:
            run(wp, lambda strategy: strategy.test_connection())

    for said in (raised.value.message, tested.value.message):
        assert said.startswith("WordPress ignored the Application Password")
        assert "https" in said and "WP_ENVIRONMENT_TYPE" in said
    assert wp.posts == {}


def test_a_user_who_may_not_publish_is_auth_failed_naming_its_role() -> None:
    with WordPressServer(role="contributor") as wp, pytest.raises(AuthFailed) as raised:
        run(wp, publish())

    said = raised.value.message
    assert said.startswith("WordPress answered 403: Sorry, you are not allowed to publish")
    assert "The user Eda Editor has the role contributor: an Author may publish" in said
    assert wp.posts == {}


def test_a_user_who_may_not_write_posts_is_refused_before_anything_is_sent() -> None:
    with WordPressServer(role="subscriber") as wp, pytest.raises(AuthFailed) as raised:
        run(wp, publish())

    said = raised.value.message
    assert "cannot create posts" in said and "subscriber" in said and "Author" in said
    assert [r.method for r in wp.requests] == ["HEAD", "GET"]


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


# Only the timeout case shortens the client's patience, and not below what a loaded CI host
# needs for the slug lookup before the create (0.5 s was once too short for it).
@pytest.mark.parametrize(
    ("lost", "timeout"),
    [
        (Failure(500, after=True), LOOPBACK.timeout),
        (Failure(after=True, drop=True), LOOPBACK.timeout),
        (Failure(after=True, delay=4.0), 1.5),  # answers after the client has given up
    ],
    ids=["500", "dropped", "timeout"],
)
def test_a_retry_after_an_ambiguous_create_updates_the_post_it_made(
    wp: WordPressServer, lost: Failure, timeout: float
) -> None:
    wp.fail(lost, method="POST", path=wp.POSTS)
    with pytest.raises(Ambiguous):
        run(wp, publish(), policy=replace(LOOPBACK, timeout=timeout))
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
    home, me = wp.requests
    assert (home.method, home.path) == ("HEAD", "/")
    assert (me.path, me.query) == (wp.ME, {"context": "edit"})


def test_connection_with_a_wrong_password_is_auth_failed(wp: WordPressServer) -> None:
    wrong = {"username": "eda", "applicationPassword": "nope nope nope nope nope nope"}

    with pytest.raises(AuthFailed):
        run(wp, lambda strategy: strategy.test_connection(), credentials=wrong)


def test_a_site_that_is_not_wordpress_is_invalid() -> None:
    """It announces no REST API: it is asked at `?rest_route=`, and answers a page."""
    page = b"<!doctype html><title>Just a page</title>"
    with StubServer() as site:
        site.route("GET", "/", lambda *_: (200, {"content-type": "text/html"}, page))

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
    assert media["filename"] == "harbour.png"
    assert media["slug"] == f"cp-{'ab12' * 16}"
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


def test_an_image_named_with_spaces_and_accents_is_uploaded_once(wp: WordPressServer) -> None:
    """WordPress takes the name as sent (a `%` dropped, never decoded): it goes in ASCII, and the
    upload is found again by the slug it was given, not by its name."""
    picture = replace(our_picture(), filename="Hafen am Morgen \u2013 Ünïcode 100%.png")
    with_image = replace(ARTICLE, featured_image=picture)

    first = run(wp, publish(article=with_image))
    for _ in range(2):
        run(wp, lambda s: s.update(Remote(first.external_id), with_image, "publish"))

    [media] = wp.media.values()
    assert media["filename"] == "Hafen-am-Morgen-Unicode-100.png"
    [upload] = wp.seen("POST", wp.MEDIA)
    assert upload.headers["content-disposition"] == (
        'attachment; filename="Hafen-am-Morgen-Unicode-100.png"'
    )
    assert wp.posts[int(first.external_id)]["featured_media"] == media["id"]


# --- where the API is --------------------------------------------------------------------------


def test_a_site_with_plain_permalinks_is_reached_at_rest_route() -> None:
    """Its home page announces `/index.php?rest_route=/`; `/wp-json/` is a 404 there."""
    with WordPressServer(permalinks="plain") as wp:
        first = run(wp, publish(article=replace(ARTICLE, featured_image=our_picture())))
        run(wp, lambda s: s.update(Remote(first.external_id), ARTICLE, "publish"))
        run(wp, lambda s: s.unpublish(Remote(first.external_id)))
        tested = run(wp, lambda s: s.test_connection())

    assert tested.ok
    [post] = wp.posts.values()
    assert post["status"] == "draft"
    asked = [r for r in wp.requests if r.method != "HEAD"]
    assert {r.path for r in asked} == {"/index.php"}
    assert {r.query["rest_route"] for r in asked} >= {
        "/wp/v2/users/me",
        "/wp/v2/posts",
        f"/wp/v2/posts/{post['id']}",
        "/wp/v2/media",
    }


def test_a_site_that_announces_no_api_is_asked_at_rest_route(wp: WordPressServer) -> None:
    """A plugin may strip the Link header, or the home page be closed to visitors."""
    wp.fail(Failure(404), method="HEAD")

    result = run(wp, publish())

    assert result.status == "published"
    assert {r.query.get("rest_route") for r in wp.requests if r.method != "HEAD"} == {
        "/wp/v2/users/me",
        "/wp/v2/posts",
    }


def test_a_site_whose_home_page_is_down_is_transient(wp: WordPressServer) -> None:
    wp.fail(Failure(503), method="HEAD")

    with pytest.raises(Transient):
        run(wp, publish())

    assert len(wp.requests) == 1


def test_an_api_announced_on_another_host_is_refused_naming_the_address() -> None:
    class Redirected(WordPressServer):
        def api_root(self, home: str) -> str:
            return "https://www.blog.example/wp-json/"

    with Redirected() as wp, pytest.raises(Invalid) as raised:
        run(wp, publish())

    assert raised.value.message == (
        "WordPress says its REST API is at https://www.blog.example/wp-json/, on another host "
        "than siteUrl: set siteUrl to https://www.blog.example (the Application Password is "
        "sent to siteUrl's host only)."
    )
    assert [r.method for r in wp.requests] == ["HEAD"]


# --- a retried create, the trash ---------------------------------------------------------------


def test_a_retried_create_beside_a_post_holding_the_slug_updates_its_own(
    wp: WordPressServer,
) -> None:
    """Ours got `-2`: found again by its marker, not by the slug it asked for."""
    theirs = wp.add_post(title="Pricing, by hand", slug=ARTICLE.slug)
    wp.fail(Failure(500, after=True), method="POST", path=wp.POSTS)
    with pytest.raises(Ambiguous):
        run(wp, publish())

    retried = run(wp, publish())

    assert sorted(wp.posts) == [theirs, int(retried.external_id)]
    assert wp.posts[int(retried.external_id)]["slug"] == f"{ARTICLE.slug}-2"
    assert len(wp.seen("POST", wp.POSTS)) == 1


def test_unpublishing_a_post_moved_to_the_trash_leaves_it_there(wp: WordPressServer) -> None:
    first = run(wp, publish())
    wp.trash(int(first.external_id))

    result = run(wp, lambda s: s.unpublish(Remote(first.external_id)))

    assert result.status == "unpublished"
    assert wp.posts[int(first.external_id)]["status"] == "trash"
    assert not wp.seen("POST", f"{wp.POSTS}/{first.external_id}")


def test_updating_a_post_moved_to_the_trash_brings_it_back(wp: WordPressServer) -> None:
    first = run(wp, publish())
    wp.trash(int(first.external_id))

    again = run(wp, lambda s: s.update(Remote(first.external_id), ARTICLE, "publish"))

    post = wp.posts[int(first.external_id)]
    assert (again.external_id, post["status"], post["slug"]) == (
        first.external_id,
        "publish",
        ARTICLE.slug,
    )


def test_an_https_site_that_announces_an_http_root_is_still_asked_over_https(
    tmp_path: Path,
) -> None:
    """A site behind a TLS proxy may believe itself on http: the password never goes over it."""
    ca = PrivateCA(tmp_path)
    me = {"id": 1, "name": "Eda", "capabilities": {"edit_posts": True}, "roles": ["author"]}
    with TLSStubServer(ca.issue("127.0.0.1")) as site:
        handler: Any = site.httpd.RequestHandlerClass
        handler.do_HEAD = handler.do_GET
        plain = site.url.replace("https://", "http://")
        link = {"link": f'<{plain}/wp-json/>; rel="https://api.w.org/"'}
        site.route("HEAD", "/", lambda *_: (200, link, b""))
        site.route("GET", "/wp-json/wp/v2/users/me", lambda *_: (200, {}, me))

        result = run(
            site,
            lambda strategy: strategy.test_connection(),
            policy=Policy(allow_loopback=True, ca_file=ca.ca_file, timeout=5.0),
        )

    assert result.ok  # over https: the guard, allowing no http, would have refused it
    assert [r["path"] for r in site.requests] == ["/", "/wp-json/wp/v2/users/me?context=edit"]
