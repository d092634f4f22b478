"""A real Ghost site on loopback, for the Ghost publisher's tests against the real thing.

Ghost's release, as tests/support/ghost/package.json pins it, is installed into
tests/support/ghost/release by tests/support/ghost/install (CI does, beside its set-up). Without
it `ghost_site` skips the tests that use it, unless CONTENTPLATFORM_TEST_REQUIRE_GHOST=1 (CI):
then they fail.

`running_ghost(directory)` starts `node index.js` from the release, in production mode, on a
free loopback port, with SQLite and everything it writes (database, images, log) under
`directory`; it waits for the Admin API, makes the owner (`POST /authentication/setup/`, as
Ghost's own set-up screen does), signs in (`POST /session/`) and makes a custom integration
(`POST /integrations/`), whose Admin API key the tests publish with. Nothing reaches beyond
loopback: mail goes to Ghost's stub transport, `privacy.useTinfoil` turns off the update check,
Gravatar and pings (and the update check's URL is loopback's discard port besides), and the
site is private, which is what keeps Ghost from sending webmentions to the links in a post.

`GhostSite.call` is the Admin API with a fresh token of the integration's key, for a test to
read what Ghost made or to change it as someone in Ghost would.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.support.processes import free_port

GHOST = Path(__file__).parent / "ghost"
RELEASE = GHOST / "release"
REQUIRE = "CONTENTPLATFORM_TEST_REQUIRE_GHOST"
BOOT_TIMEOUT = 120.0  # seconds; it boots in about 5 on an idle machine
OWNER_EMAIL = "owner@example.test"


def pinned_version() -> str:
    version: str = json.loads((GHOST / "package.json").read_text())["config"]["ghost"]
    return version


def installed() -> Path | None:
    """The release's folder when the pinned Ghost is installed there."""
    marker = RELEASE / ".installed"
    if marker.is_file() and marker.read_text().strip() == pinned_version():
        return RELEASE
    return None


def release_or_skip() -> Path:
    release = installed()
    if release is None:
        reason = f"Ghost {pinned_version()} is not installed (tests/support/ghost/install)"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason}, and {REQUIRE}=1")
        pytest.skip(reason)
    return release


@dataclass
class GhostSite:
    url: str
    admin_api_key: str
    title: str
    content: Path  # Ghost's content folder: data, images, logs
    log: Path
    client: httpx.Client

    def call(self, method: str, path: str, **options: Any) -> httpx.Response:
        """`path` of the Admin API, as the integration."""
        key_id, secret = self.admin_api_key.split(":")
        now = int(time.time())
        token = jwt.encode(
            {"iat": now, "exp": now + 300, "aud": "/admin/"},
            bytes.fromhex(secret),
            algorithm="HS256",
            headers={"kid": key_id},
        )
        headers = {"authorization": f"Ghost {token}", "accept-version": "v5.0"}
        return self.client.request(
            method,
            f"{self.url}/ghost/api/admin{path}",
            headers=headers | options.pop("headers", {}),
            **options,
        )

    def post(self, post_id: str) -> dict[str, Any]:
        """The post as Ghost has it, with its HTML."""
        response = self.call("GET", f"/posts/{post_id}/", params={"formats": "html"})
        assert response.status_code == 200, response.text
        post: dict[str, Any] = response.json()["posts"][0]
        return post

    def posts(self, **params: Any) -> list[dict[str, Any]]:
        response = self.call("GET", "/posts/", params={"limit": 100, **params})
        assert response.status_code == 200, response.text
        posts: list[dict[str, Any]] = response.json()["posts"]
        return posts

    def create_post(self, **fields: Any) -> dict[str, Any]:
        """A post someone wrote in Ghost."""
        response = self.call("POST", "/posts/", params={"source": "html"}, json={"posts": [fields]})
        assert response.status_code == 201, response.text
        post: dict[str, Any] = response.json()["posts"][0]
        return post

    def edit_post(self, post_id: str, **fields: Any) -> dict[str, Any]:
        """A save in Ghost by someone else, over the post's current version."""
        current = self.post(post_id)["updated_at"]
        response = self.call(
            "PUT",
            f"/posts/{post_id}/",
            params={"source": "html"},
            json={"posts": [fields | {"updated_at": current}]},
        )
        assert response.status_code == 200, response.text
        post: dict[str, Any] = response.json()["posts"][0]
        return post

    def image_files(self) -> list[Path]:
        """The uploaded images as Ghost keeps them (with the `_o` originals it adds)."""
        return sorted(path for path in (self.content / "images").rglob("*") if path.is_file())

    def image(self, url: str) -> bytes:
        """An uploaded image, as Ghost serves it."""
        response = self.client.get(url)
        assert response.status_code == 200, url
        return response.content


@contextmanager
def running_ghost(directory: Path, release: Path) -> Iterator[GhostSite]:
    """A fresh Ghost site from `release`, everything it writes under `directory`."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    content = directory / "content"
    for folder in ("data", "images", "logs", "themes", "adapters", "public", "settings"):
        (content / folder).mkdir(parents=True, exist_ok=True)
    for theme in (release / "content" / "themes").iterdir():
        (content / "themes" / theme.name).symlink_to(theme, target_is_directory=True)
    log = directory / "ghost.log"
    # Ghost's configuration from the environment (nconf: `__` between a key's parts).
    settings = {
        "NODE_ENV": "production",
        "url": url,
        "server__host": "127.0.0.1",
        "server__port": str(port),
        "database__client": "sqlite3",
        "database__connection__filename": str(content / "data" / "ghost.db"),
        "database__useNullAsDefault": "true",
        "paths__contentPath": str(content),
        "mail__transport": "stub",
        "privacy__useTinfoil": "true",
        "updateCheck__url": "http://127.0.0.1:9/",
        "security__staffDeviceVerification": "false",
        "logging__transports": '["stdout"]',
        "logging__level": "warn",
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["node", "index.js"],
            cwd=release,
            env={**os.environ, **settings},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    client = httpx.Client(trust_env=False, timeout=30)
    try:
        _wait_until_up(client, url, process, log)
        title = "The Real Gazette"
        site = GhostSite(url, _set_up(client, url, title), title, content, log, client)
        yield site
    finally:
        client.close()
        _stop(process)


def _wait_until_up(
    client: httpx.Client, url: str, process: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + BOOT_TIMEOUT
    while True:
        if process.poll() is not None:
            raise AssertionError(f"Ghost exited ({process.returncode}):\n{_tail(log)}")
        try:
            answer = client.get(f"{url}/ghost/api/admin/site/", headers={"accept-version": "v5.0"})
            if answer.status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"Ghost did not start in {BOOT_TIMEOUT:.0f}s:\n{_tail(log)}")
        time.sleep(0.1)


def _set_up(client: httpx.Client, url: str, title: str) -> str:
    """The owner, a session, a private site and a custom integration; its Admin API key."""
    admin = f"{url}/ghost/api/admin"
    # Ghost takes requests signed in by a session only from its own origin.
    headers = {"accept-version": "v5.0", "origin": url}
    password = secrets.token_urlsafe(18)
    owner = {"name": "Test Owner", "email": OWNER_EMAIL, "password": password, "blogTitle": title}
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/authentication/setup/", {"setup": [owner]}),
        ("POST", "/session/", {"username": OWNER_EMAIL, "password": password}),
        (
            "PUT",
            "/settings/",
            {
                "settings": [
                    {"key": "is_private", "value": True},
                    {"key": "password", "value": secrets.token_urlsafe(12)},
                ]
            },
        ),
        ("POST", "/integrations/?include=api_keys", {"integrations": [{"name": "Publisher"}]}),
    ]
    answer = None
    for method, path, body in steps:
        answer = client.request(method, f"{admin}{path}", headers=headers, json=body)
        assert answer.status_code in (200, 201), f"{method} {path}: {answer.text}"
    assert answer is not None
    client.cookies.clear()  # from here on, only the key signs requests
    [integration] = answer.json()["integrations"]
    [key] = [key for key in integration["api_keys"] if key["type"] == "admin"]
    # Ghost shows an admin key's secret as the whole key, `id:secret`.
    secret: str = key["secret"]
    return secret if ":" in secret else f"{key['id']}:{secret}"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
