"""The pages a site profile is read from and the bounds of what comes out: a page as the
readers see it, capped; JSON-LD's nodes; every field bounded in length and in number, as plain
text on one line. Shared by the model's answer (inference.py) and the extractive reading
(extractive.py)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from contentplatform.kit.text import cleaned
from contentplatform.website_scan.profiles.schemas import Product

MAX_PAGES = 20
MAX_PAGE_CHARS = 1500
MAX_HEADINGS = 15

# Bounds of the profile's fields: (characters of one, how many).
NAME_CHARS = 200
SUMMARY_CHARS = 500
INDUSTRY_CHARS = 100
LOCATIONS = (200, 10)
PRODUCTS = 20
PRODUCT_DESCRIPTION_CHARS = 300
URL_CHARS = 2048
AUDIENCES = (100, 10)
TOPICS = (100, 12)
DESCRIPTORS = (40, 6)
SAMPLE_PHRASES = (200, 5)
LANGUAGES = (35, 10)


@dataclass(frozen=True)
class SitePage:
    """One crawled page, as the profile reads it."""

    id: str
    url: str
    depth: int
    title: str | None
    meta_description: str | None
    headings: list[tuple[str, str]]
    json_ld: list[Any]
    language: str | None
    text: str  # the main content (markdown), capped at MAX_PAGE_CHARS


def capped(text: str | None, limit: int = MAX_PAGE_CHARS) -> str:
    """At most `limit` characters of `text`, cut at a word when one ends near the limit."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit * 0.8 else cut


def json_ld_nodes(json_ld: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Every JSON-LD node with a type, within lists and `@graph`s (bounded depth)."""

    def walk(item: Any, depth: int) -> Iterator[dict[str, Any]]:
        if depth > 6:
            return
        if isinstance(item, list):
            for part in item[:100]:
                yield from walk(part, depth + 1)
        elif isinstance(item, dict):
            if "@type" in item:
                yield item
            if "@graph" in item:
                yield from walk(item["@graph"], depth + 1)

    for item in json_ld:
        yield from walk(item, 0)


def json_ld_types(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return [k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)]


def json_ld_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return str(value["name"])
    return ""


def unique_products(products: Iterable[Product]) -> list[Product]:
    seen: set[str] = set()
    unique = []
    for product in products:
        key = product.name.casefold()
        if key not in seen:
            seen.add(key)
            unique.append(product)
    return unique[:PRODUCTS]


def bounded_text(value: Any, limit: int) -> str | None:
    """Plain text on one line, at most `limit` characters (cut at a word, with an ellipsis)."""
    if not isinstance(value, str):
        return None
    text = cleaned(value, 10 * limit)
    if len(text) > limit:
        text = capped(text, limit - 1).rstrip(" ,;:-") + "…"
    return text or None


def bounded_texts(values: Iterable[Any], limit: int, count: int) -> list[str]:
    """Up to `count` distinct texts (ignoring case), each bounded as `bounded_text`."""
    found: dict[str, str] = {}
    for value in values:
        text = bounded_text(value, limit)
        if text and text.casefold() not in found:
            found[text.casefold()] = text
            if len(found) == count:
                break
    return list(found.values())


def bounded_url(value: Any) -> str | None:
    text = bounded_text(value, URL_CHARS)
    if text is None or " " in text or not text.lower().startswith(("https://", "http://")):
        return None
    return text


def bounded_fraction(value: float | None) -> float | None:
    if value is None or value != value:  # NaN
        return None
    return round(min(1.0, max(0.0, float(value))), 2)


_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


def bounded_languages(values: Iterable[str | None]) -> list[str]:
    """Language tags as BCP 47 spells them (`en`, `en-US`), most used first."""
    counts: Counter[str] = Counter()
    for value in values:
        tag = (value or "").strip()
        if not _LANGUAGE.fullmatch(tag):
            continue
        primary, *rest = re.split(r"[-_]", tag)
        parts = [primary.lower()] + [p.upper() if len(p) == 2 else p.lower() for p in rest]
        counts["-".join(parts)] += 1
    limit, count = LANGUAGES
    return [tag for tag, _ in counts.most_common(count) if len(tag) <= limit]
