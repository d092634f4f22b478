"""What PageSpeed refuses."""

from __future__ import annotations

from contentplatform.kit.errors import Conflict


class PageSpeedDisabled(Conflict):
    """Outbound PageSpeed measurements are turned off for this deployment
    (CONTENTPLATFORM_PAGESPEED_ENABLED=false): nothing is sent."""


class NothingToMeasure(Conflict):
    """No URL was given and there is none to default to: no Search Console clicks in the last
    28 days and no site URL in the SEO profile."""
