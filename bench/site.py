"""A generated website on loopback, to crawl by hand: N nested pages with robots.txt and a
sitemap (tests/support/sites.py GeneratedSite), served until Ctrl-C.

    .venv/bin/python bench/site.py 200 [--port 8765] [--crawl-delay 0.5] [--fanout 10]

Prints its URL (the start URL of a crawl config) on the first line. Between two crawls, change
five pages (new text, a newer lastmod in the sitemap) and remove one (404, gone from its
parent's links and the sitemap), so the second snapshot's diff has something to show:

    curl -X POST 'http://127.0.0.1:8765/__change?pages=5&remove=1'
    kill -USR1 <pid>        # the same, printed here

The service refuses http and loopback start URLs unless told it is local work:
CONTENTPLATFORM_OUTBOUND_ALLOW_HTTP=true and CONTENTPLATFORM_OUTBOUND_ALLOW_LOOPBACK=true.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.sites import GeneratedSite


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("pages", type=int, nargs="?", default=200, help="how many (default 200)")
    args.add_argument("--port", type=int, default=0, help="default: a free one")
    args.add_argument("--crawl-delay", type=float, default=None, help="robots.txt's, in seconds")
    args.add_argument("--fanout", type=int, default=10, help="children per page (default 10)")
    options = args.parse_args()
    site = GeneratedSite(
        options.pages,
        fanout=options.fanout,
        crawl_delay=options.crawl_delay,
        admin=True,
        port=options.port,
    )

    def change(signum: int, frame: FrameType | None) -> None:
        done = {"changed": site.change(5), "removed": site.remove(1)}
        print(json.dumps(done), flush=True)

    with site:
        print(site.url + "/", flush=True)
        print(
            f"{options.pages} pages; pid {os.getpid()}: POST {site.url}/__change?pages=5&remove=1 "
            "or SIGUSR1 changes five and removes one; Ctrl-C stops.",
            file=sys.stderr,
            flush=True,
        )
        signal.signal(signal.SIGUSR1, change)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                signal.pause()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
