"""What GEO refuses."""

from __future__ import annotations

from contentplatform.kit.errors import BadRequest, Conflict


class NoCompleteScan(Conflict):
    """The site has no complete website scan yet: GEO reads one (websiteScan.startCrawl)."""


class NotAnIndexablePage(BadRequest):
    """An llms.txt lists only indexable pages of the scan (200, HTML, no noindex, its own
    canonical): an included URL is none of those."""
