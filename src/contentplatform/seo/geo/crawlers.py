"""Whether the site's robots.txt lets each AI agent in, read with protego (RFC 9309) as the
crawler reads it. Search and user-fetch agents are what an answer engine quotes the site
through: blocking one removes the site from that engine's answers (an error). Training-only
tokens decide whether the site trains models: blocking one is a policy choice (a notice)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from protego import Protego

Purpose = Literal["search", "user", "training"]
Effect = Literal["allowed", "blocked_from_answers", "excluded_from_training", "unknown"]

# (user agent token, operator, purpose), as their operators document them.
AI_AGENTS: tuple[tuple[str, str, Purpose], ...] = (
    ("GPTBot", "OpenAI", "training"),
    ("OAI-SearchBot", "OpenAI", "search"),
    ("ChatGPT-User", "OpenAI", "user"),
    ("ClaudeBot", "Anthropic", "training"),
    ("Claude-SearchBot", "Anthropic", "search"),
    ("Claude-User", "Anthropic", "user"),
    ("PerplexityBot", "Perplexity", "search"),
    ("Perplexity-User", "Perplexity", "user"),
    ("Google-Extended", "Google", "training"),
    ("Applebot-Extended", "Apple", "training"),
    ("CCBot", "Common Crawl", "training"),
    ("Bingbot", "Microsoft", "search"),
)
_USER_AGENT = re.compile(r"^\s*user-agent\s*:\s*([^#\s]+)", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class CrawlerAccess:
    bot: str
    operator: str
    purpose: Purpose
    allowed: bool | None  # None: robots.txt could not be read
    matched_rule: str | None  # the User-agent group that applies (None: no robots.txt rules)
    effect: Effect


def _group_of(named: set[str], bot: str) -> str | None:
    """The User-agent group robots.txt applies to `bot`: its own token, else `*`."""
    if bot.lower() in named:
        return f"User-agent: {bot}"
    return "User-agent: *" if "*" in named else None


def crawler_access(robots_txt: dict[str, Any], root: str) -> list[CrawlerAccess]:
    """Each AI agent's access to the site's root page under the robots.txt a scan kept
    ({status, body, ...}): a missing robots.txt (4xx) allows all; one that could not be read
    (5xx, no answer) leaves access unknown, as crawlers then keep away."""
    status = robots_txt.get("status")
    body = robots_txt.get("body")
    if status is None or status >= 500:
        return [
            CrawlerAccess(bot, operator, purpose, None, None, "unknown")
            for bot, operator, purpose in AI_AGENTS
        ]
    parser = Protego.parse(body) if status < 400 and body else None
    named = {token.lower() for token in _USER_AGENT.findall(body or "")} if parser else set()
    found: list[CrawlerAccess] = []
    for bot, operator, purpose in AI_AGENTS:
        allowed = parser is None or bool(parser.can_fetch(root, bot))
        if allowed:
            effect: Effect = "allowed"
        elif purpose == "training":
            effect = "excluded_from_training"
        else:
            effect = "blocked_from_answers"
        found.append(CrawlerAccess(bot, operator, purpose, allowed, _group_of(named, bot), effect))
    return found
