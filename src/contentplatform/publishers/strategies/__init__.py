"""One strategy per publishing target, by connection type."""

from __future__ import annotations

from typing import Any

from contentplatform.publishers.strategies import ghost, shopify, webflow, webhook, wordpress
from contentplatform.publishers.strategies.base import Strategy

STRATEGIES: dict[str, type[Strategy[Any, Any]]] = {
    strategy.type: strategy
    for strategy in (
        wordpress.WordPress,
        ghost.Ghost,
        shopify.Shopify,
        webflow.Webflow,
        webhook.WebhookTarget,
    )
}


def of(type: str) -> type[Strategy[Any, Any]]:
    return STRATEGIES[type]
