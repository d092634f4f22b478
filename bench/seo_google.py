"""The Google stand-in (tests/support/google) serving a large Search Console property, in a
process of its own for bench/seo_backfill.py: every day of the window has `--rows` query rows
(and an anonymized one), made on demand from the day (nothing is held but the day last asked
for), and an access token is issued at start.

    .venv/bin/python bench/seo_google.py --rows 25000 --first 2025-01-01 --last 2025-01-31

Prints one JSON line {url, token, site}, then serves until its standard input closes.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.google import SCOPE, GoogleStandIn, SearchRow, _Grant

SITE = "https://bench.example.com/"
COUNTRIES = ("usa", "gbr", "deu", "fra", "esp")
DEVICES = ("DESKTOP", "MOBILE", "TABLET")


def day_rows(day: date, count: int) -> list[SearchRow]:
    """`count` query rows over 2,000 pages, five countries and three devices (6,000 page
    rows), figures varying with the day; and one anonymized query."""
    salt = day.toordinal()
    rows = [
        SearchRow(
            f"query {i} {salt % 97}",
            f"https://bench.example.com/p/{i % 2000}",
            COUNTRIES[i % 5],
            DEVICES[i % 3],
            (i * 7 + salt) % 5,
            10 + (i * 13 + salt) % 200,
            1.0 + (i % 50),
        )
        for i in range(count)
    ]
    rows.append(SearchRow(None, "https://bench.example.com/p/0", "usa", "MOBILE", 9, 400, 3.0))
    return rows


class Days:
    """The stand-in's seeded days, made when asked for (only `get` is used by it)."""

    def __init__(self, first: date, last: date, rows: int) -> None:
        self.first, self.last, self.rows = first, last, rows
        self.cached: tuple[date, list[SearchRow]] | None = None

    def get(self, key: tuple[str, str, date], default: Any = None) -> Any:
        site, search_type, day = key
        if site != SITE or search_type != "web" or not self.first <= day <= self.last:
            return default
        if self.cached is None or self.cached[0] != day:
            self.cached = (day, day_rows(day, self.rows))
        return self.cached[1], True


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--rows", type=int, default=25_000)
    args.add_argument("--first", type=date.fromisoformat, required=True)
    args.add_argument("--last", type=date.fromisoformat, required=True)
    options = args.parse_args()
    google = GoogleStandIn()
    google.sites.append({"siteUrl": SITE, "permissionLevel": "siteOwner"})
    google._days = Days(options.first, options.last, options.rows)  # type: ignore[assignment]
    google.expires_in = 24 * 3600
    with google:
        token = google._issue(_Grant(scope=SCOPE, refresh_token="bench"))["access_token"]
        print(json.dumps({"url": google.url, "token": token, "site": SITE}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
