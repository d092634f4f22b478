"""The `local` provider for real: the Lighthouse CLI pinned in tools/lighthouse, run with
Debian's Chromium against a page served on loopback. Skipped, saying why, where either is not
installed (`npm ci --prefix tools/lighthouse`; `apt-get install chromium`), unless
CONTENTPLATFORM_TEST_REQUIRE_LIGHTHOUSE=1 (CI, which installs both): then it fails. It uses no
database: the PostgreSQL suite leaves it to the SQLite one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from cryptography.fernet import Fernet

from contentplatform.config import Settings
from contentplatform.seo.pagespeed import local
from contentplatform.seo.pagespeed.provider import MeasureFailed
from tests.support.servers import LoopbackServer, send

PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>A page measured here</title><meta name="description" content="A small page.">
</head><body><h1>Hello</h1><img src="/missing.png"><p>Some text to paint.</p></body></html>"""


REQUIRE = "CONTENTPLATFORM_TEST_REQUIRE_LIGHTHOUSE"


class Site(LoopbackServer):
    def serve(self, request: BaseHTTPRequestHandler) -> None:
        if request.path == "/":
            send(request, 200, {}, PAGE, content_type="text/html; charset=utf-8")
        else:
            send(request, 404, {}, b"not found", content_type="text/plain")


@pytest.fixture(scope="module")
def local_settings(settings: Settings) -> Settings:
    if settings.resolved_database_url.startswith("postgresql"):
        pytest.skip("no database in it: the SQLite suite runs it")
    found = settings.model_copy(update={"pagespeed_provider": "local"})
    missing = [
        f"no {name} at {path}"
        for name, path in (
            ("Lighthouse CLI", found.pagespeed_lighthouse_path),
            ("Chromium", found.pagespeed_chromium_path),
        )
        if not path.is_file()
    ]
    if missing and os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{'; '.join(missing)}, and {REQUIRE}=1")
    if missing:
        pytest.skip("; ".join(missing))
    return found


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site() as running:
        yield running


def test_lighthouse_measures_a_page_here(local_settings: Settings, site: Site) -> None:
    measured = asyncio.run(
        local.lighthouse(local_settings, f"{site.url}/", "mobile", ["performance", "seo"])
    )
    assert measured.lighthouse_version == "12.8.2"
    assert measured.scores["performance"] is not None and measured.scores["seo"] is not None
    assert measured.scores["accessibility"] is None
    assert measured.lab["lcp_ms"] is not None and measured.lab["lcp_ms"] > 0
    assert measured.lab["cls"] is not None
    assert measured.field["scope"] == "none"
    # The image without alt text is no SEO/performance audit; the missing image is a console
    # error, which best-practices was not asked for: what failed is Lighthouse's own verdict.
    assert all(audit["score"] < 0.9 for audit in measured.failed_audits)


def test_a_page_lighthouse_cannot_load_is_its_error(local_settings: Settings) -> None:
    with Site() as closed:
        url = f"{closed.url}/"
    with pytest.raises(MeasureFailed) as failed:
        asyncio.run(local.lighthouse(local_settings, url, "desktop", ["performance"]))
    assert failed.value.code in ("FAILED_DOCUMENT_REQUEST", "CHROME_INTERSTITIAL_ERROR")


def test_the_local_provider_is_refused_outside_local(settings: Settings) -> None:
    values = {
        **settings.model_dump(),
        "env": "production",
        "publisher_credentials_keys": Fernet.generate_key().decode(),
        "pagespeed_provider": "local",
    }
    with pytest.raises(ValueError, match="local environment only"):
        Settings(_env_file=None, **values)  # type: ignore[call-arg]
