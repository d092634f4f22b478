"""The stock providers this service knows, by name, and what their terms allow.

Other domains ask through media's service (`media.service.allows_automated_selection`,
`AUTOMATED_SELECTION_PROVIDERS`): an AI workflow's images step may pick a stock photo by itself
only from these providers (none yet: Unsplash requires a person to choose).
"""

from __future__ import annotations

from contentplatform.media.stock import StockProvider
from contentplatform.media.unsplash import Unsplash

PROVIDERS: dict[str, type[StockProvider]] = {Unsplash.name: Unsplash}

AUTOMATED_SELECTION_PROVIDERS: frozenset[str] = frozenset(
    name for name, provider in PROVIDERS.items() if provider.allows_automated_selection
)
HOTLINK_PROVIDERS: frozenset[str] = frozenset(
    name for name, provider in PROVIDERS.items() if provider.hotlink_required
)
