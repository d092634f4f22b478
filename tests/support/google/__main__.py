"""Serve the Google stand-in by hand, beside `contentplatform serve`, with fixture data:

    python -m tests.support.google --port 8090 [--days 90] [--site https://example.com/]

It prints the settings that point the service at it. Its consent page consents at once: the
browser is sent straight back to the redirect URI with `code` and `state`.

The data is made up (labelled "stand-in fixture" in every page URL's path): a URL-prefix
property and its domain property, both siteOwner; `--days` days of rows ending yesterday, the
last 3 days fresh (dataState=all only), as Search Console's are.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import date, timedelta
from urllib.parse import urlsplit

from tests.support.google import GoogleStandIn, SearchRow

QUERIES = ("compost tea", "worm bins", "soil ph test", "mulch depth", "no dig garden")
COUNTRIES = ("usa", "gbr", "deu")
DEVICES = ("DESKTOP", "MOBILE")


def seed(stand_in: GoogleStandIn, site: str, days: int, *, today: date | None = None) -> None:
    """Deterministic fixture rows (seeded random): a few pages, queries, countries and
    devices a day, one anonymized query per page."""
    host = urlsplit(site).hostname or "example.com"
    stand_in.sites = [
        {"siteUrl": site, "permissionLevel": "siteOwner"},
        {"siteUrl": f"sc-domain:{host.removeprefix('www.')}", "permissionLevel": "siteOwner"},
    ]
    chance = random.Random(39)
    pages = [f"{site.rstrip('/')}/stand-in-fixture/{slug}" for slug in ("a", "b", "c", "d")]
    last = (today or date.today()) - timedelta(days=1)
    for offset in range(days):
        day = last - timedelta(days=offset)
        rows = []
        for page in pages:
            for query in (*chance.sample(QUERIES, 2), None):
                impressions = chance.randint(5, 400)
                rows.append(
                    SearchRow(
                        query=query,
                        page=page,
                        country=chance.choice(COUNTRIES),
                        device=chance.choice(DEVICES),
                        clicks=chance.randint(0, impressions // 5),
                        impressions=impressions,
                        position=round(chance.uniform(1, 30), 1),
                    )
                )
        stand_in.set_day(site, "web", day, rows, final=offset >= 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--site", default="https://example.com/")
    args = parser.parse_args()
    with GoogleStandIn(port=args.port) as stand_in:
        seed(stand_in, args.site, args.days)
        print(f"Google stand-in on {stand_in.url} ({args.days} days of fixture data)")
        print("Point the service at it (e.g. in .env):")
        for name, value in stand_in.settings().items():
            print(f"CONTENTPLATFORM_{name.upper()}={value}")
        print("CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true")
        print("CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true")
        print('CONTENTPLATFORM_SEO_OAUTH_REDIRECT_URIS=["http://localhost:3000/seo/callback"]')
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
