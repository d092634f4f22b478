"""Reading a site profile (business, products, audiences, tone) from a snapshot's pages.

Pure: it is given the pages (a bounded sample, `MAX_PAGES` of them, each text capped at
`MAX_PAGE_CHARS`) and a model, and returns the profile with the model tokens it used. With the
offline model (the default) the reading is extractive and deterministic:

- business name: the JSON-LD Organization's (or LocalBusiness', Store's, ...) name, else the
  WebSite's, else the part of the home page's title the other pages' titles share;
- summary: the home page's meta description, else the organization's JSON-LD description, else
  the home page's first sentences; industry: the organization's most specific JSON-LD type
  (`GardenStore` -> "Garden store"); locations: its addresses and areas served;
- products: JSON-LD Product and Service nodes, and pages whose path looks like
  `/products/<x>` or `/services/<x>` (their main heading or title, meta description, URL);
- audiences: the plural nouns the headings and descriptions say things are "for" ("for home
  gardeners"); topics: the headings several pages or the home page share, generic ones left out;
- tone: formality from sentence length, contractions, exclamations and how much the text
  speaks to the reader; person from pronoun counts (second when "you" leads, first when "we"
  does, else third); sample phrases: short sentences of the home page;
- languages: the pages' declared languages, most used first.

A real model gets one prompt holding the same pages and answers one JSON object, validated here;
an answer that is not valid JSON of that shape falls back to the extractive reading (its tokens
are still counted: they were spent). Either way every text field comes out plain text on one
line (markup stripped), bounded in length and in number.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from contentplatform.ai.base import ChatModel, CompletionRequest, Message
from contentplatform.ai.ranking import wordset
from contentplatform.ai.tokens import count_tokens
from contentplatform.kit.text import cleaned
from contentplatform.website_scan.import_schemas import (
    Business,
    Product,
    ProfileFields,
    Tone,
)

MAX_PAGES = 20
MAX_PAGE_CHARS = 1500
MAX_HEADINGS = 15
MAX_ANSWER_TOKENS = 1500

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

# How much less an extractive reading is trusted than what it measured.
EXTRACTIVE_TRUST = 0.8


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


@dataclass(frozen=True)
class Inference:
    profile: ProfileFields
    input_tokens: int
    output_tokens: int
    model: str
    extractive: bool  # read without a model (offline), or fallen back to after a bad answer


def capped(text: str | None, limit: int = MAX_PAGE_CHARS) -> str:
    """At most `limit` characters of `text`, cut at a word when one ends near the limit."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit * 0.8 else cut


async def infer(model: ChatModel, start_url: str, pages: Sequence[SitePage]) -> Inference:
    """The profile of the site whose pages these are (the home page is the one at `start_url`,
    else the shallowest). ProviderError when a real model cannot answer."""
    prompt = _prompt(pages)
    if model.provider == "offline":
        profile = extractive(start_url, pages)
        output = profile.model_dump_json()
        tokens = sum(count_tokens(message.content) for message in prompt)
        return Inference(profile, tokens, count_tokens(output), model.model, True)
    completion = await model.complete(
        CompletionRequest(
            task="site_profile",
            messages=prompt,
            brief={"purpose": "site_profile"},
            max_tokens=MAX_ANSWER_TOKENS,
            temperature=0.2,
            json=True,
        )
    )
    usage = completion.usage
    answered = from_answer(completion.text, pages)
    if answered is None:
        return Inference(
            extractive(start_url, pages),
            usage.input_tokens,
            usage.output_tokens,
            completion.model,
            True,
        )
    return Inference(answered, usage.input_tokens, usage.output_tokens, completion.model, False)


# --- the model's prompt and answer --------------------------------------------------------------

_SYSTEM = (
    "You read pages of one website and describe the business behind it for a content team. "
    "Answer with one JSON object and nothing else, of this shape: "
    '{"business": {"name": str, "summary": str, "industry": str, "locations": [str]}, '
    '"products": [{"name": str, "description": str, "url": str}], "audiences": [str], '
    '"tone": {"descriptors": [str], "formality": number from 0 (casual) to 1 (formal), '
    '"person": "first" | "second" | "third", "sample_phrases": [str]}, "topics": [str], '
    '"languages": [language tags such as "en"], "confidence": number from 0 to 1, '
    '"evidence_pages": [the numbers of the pages you drew on]}. '
    "Use only what the pages say; write plain text without markup; use null or an empty list "
    "for what they do not show. sample_phrases are short sentences quoted from the pages."
)


def _prompt(pages: Sequence[SitePage]) -> list[Message]:
    shown = [
        {
            "page": number,
            "url": page.url,
            "title": page.title,
            "description": page.meta_description,
            "language": page.language,
            "headings": [text for _, text in page.headings[:MAX_HEADINGS]],
            "structured_data": _structured_names(page.json_ld),
            "text": page.text,
        }
        for number, page in enumerate(pages, start=1)
    ]
    user = "The pages, as JSON:\n" + json.dumps(shown, ensure_ascii=False)
    return [Message("system", _SYSTEM), Message("user", user)]


def _structured_names(json_ld: list[Any]) -> list[dict[str, Any]]:
    """What the page's JSON-LD says of its things in short: type, name, description."""
    found = []
    for node in _nodes(json_ld):
        name = node.get("name")
        if isinstance(name, str):
            found.append(
                {
                    "type": _types(node)[:3],
                    "name": name[:NAME_CHARS],
                    "description": _string(node.get("description"))[:PRODUCT_DESCRIPTION_CHARS],
                }
            )
    return found[:10]


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _AnswerBusiness(_Loose):
    name: str | None = None
    summary: str | None = None
    industry: str | None = None
    locations: list[str] | None = None


class _AnswerProduct(_Loose):
    name: str | None = None
    description: str | None = None
    url: str | None = None


class _AnswerTone(_Loose):
    descriptors: list[str] | None = None
    formality: float | None = None
    person: str | None = None
    sample_phrases: list[str] | None = None


class _Answer(_Loose):
    """The model's answer: every field may be missing; wrong types make it invalid."""

    business: _AnswerBusiness | None = None
    products: list[_AnswerProduct] | None = None
    audiences: list[str] | None = None
    tone: _AnswerTone | None = None
    topics: list[str] | None = None
    languages: list[str] | None = None
    confidence: float | None = None
    evidence_pages: list[int] | None = None


def from_answer(text: str, pages: Sequence[SitePage]) -> ProfileFields | None:
    """The profile a model answered, bounded and made plain; None when the answer is not one
    JSON object of the profile's shape."""
    try:
        answer = _Answer.model_validate_json(_json_object(text))
    except (ValidationError, ValueError):
        return None
    business = answer.business or _AnswerBusiness()
    tone = answer.tone or _AnswerTone()
    person = (tone.person or "").strip().lower()
    evidence = [
        pages[number - 1].id for number in answer.evidence_pages or () if 1 <= number <= len(pages)
    ]
    products = [
        Product(
            name=name,
            description=_text(product.description, PRODUCT_DESCRIPTION_CHARS),
            url=_url(product.url),
        )
        for product in answer.products or ()
        if (name := _text(product.name, NAME_CHARS))
    ]
    declared = _languages(page.language for page in pages)
    return ProfileFields(
        business=Business(
            name=_text(business.name, NAME_CHARS),
            summary=_text(business.summary, SUMMARY_CHARS),
            industry=_text(business.industry, INDUSTRY_CHARS),
            locations=_texts(business.locations or (), *LOCATIONS),
        ),
        products=_unique_products(products),
        audiences=_texts(answer.audiences or (), *AUDIENCES),
        tone=Tone(
            descriptors=_texts(tone.descriptors or (), *DESCRIPTORS),
            formality=_fraction(tone.formality),
            person=person if person in ("first", "second", "third") else None,
            sample_phrases=_texts(tone.sample_phrases or (), *SAMPLE_PHRASES),
        ),
        topics=_texts(answer.topics or (), *TOPICS),
        languages=_languages(answer.languages or ()) or declared,
        confidence=_fraction(answer.confidence) or 0.0,
        evidence_page_ids=list(dict.fromkeys(evidence)) or [page.id for page in pages],
    )


def _json_object(text: str) -> str:
    """The answer's JSON object, without a markdown code fence around it."""
    text = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    return fenced.group(1) if fenced else text


# --- the extractive reading ---------------------------------------------------------------------

_ORGANIZATION_TYPES = frozenset(
    {
        "Organization", "Corporation", "LocalBusiness", "OnlineBusiness", "OnlineStore", "Store",
        "NGO", "EducationalOrganization", "MedicalOrganization", "ProfessionalService",
        "SportsOrganization", "NewsMediaOrganization", "Restaurant", "FoodEstablishment",
    }
)  # fmt: skip
_ORGANIZATION_SUFFIXES = ("Organization", "Business", "Store", "Service", "Establishment")
# Types too general to say what industry a business is in.
_GENERIC_TYPES = frozenset(
    {"Organization", "Corporation", "LocalBusiness", "OnlineBusiness", "Thing", "WebSite"}
)
_PRODUCT_TYPES = frozenset({"Product", "Service", "SoftwareApplication", "Course"})
_PRODUCT_PATH = re.compile(r"/(?:products?|services?)/[^/]+", re.IGNORECASE)
_TITLE_SEPARATORS = re.compile(r"\s+[|\-\u2013\u2014\u00b7:\u2022]\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_CONTRACTION = re.compile(r"[A-Za-z]+'(?:t|re|ve|ll|d|m)\b", re.IGNORECASE)
_FOR = re.compile(r"\bfor\s+([A-Za-z][\w' ,&-]{0,100})", re.IGNORECASE)
_LIST_PARTS = re.compile(r"\s*(?:,|&|\band\b|\bor\b)\s*", re.IGNORECASE)
_FIRST_PERSON = frozenset({"we", "our", "ours", "us", "i", "me", "my", "mine", "ourselves"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves"})
# Words "for ..." may start or end with that make it no audience.
_NOT_AUDIENCE = wordset(
    """you your yours us our me my them it this that these those more less free sale sales
    details information example instance years months days weeks hours over all everything
    nothing something anything delivery shipping orders order questions help support
    """
)
_LEADING = frozenset({"the", "a", "an", "all", "any", "busy", "every"})
# Headings that name page furniture, not a subject.
_GENERIC_HEADINGS = wordset(
    """about about-us contact contact-us menu navigation search cart basket checkout faq faqs
    newsletter subscribe follow-us share related-products related-posts recent-posts home
    welcome footer header sign-in log-in login account privacy-policy terms
    terms-and-conditions cookies categories tags archives comments leave-a-reply
    """
)
_MARKDOWN = (
    (re.compile(r"```.*?```", re.DOTALL), " "),
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"^\s{0,3}#{1,6}\s*", re.MULTILINE), ""),
    (re.compile(r"^\s*>\s?", re.MULTILINE), ""),
    (re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE), ""),
    (re.compile(r"(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"\|"), " "),
)


def extractive(start_url: str, pages: Sequence[SitePage]) -> ProfileFields:
    """The profile read from the pages without a model (see the module docstring)."""
    if not pages:
        return ProfileFields()
    home = _home(start_url, pages)
    evidence: list[str] = []
    nodes = [(page, node) for page in pages for node in _nodes(page.json_ld)]
    organizations = [(page, node) for page, node in nodes if _is_organization(node)]

    name, named_by = _business_name(home, pages, organizations, nodes)
    if named_by is not None:
        evidence.append(named_by.id)
    summary, summary_signal = _summary(home, organizations)
    if summary:
        evidence.append(home.id)
    products = _products(pages, nodes, name, evidence)
    audiences = _audiences(pages, evidence)
    topics = _topics(home, pages, name)
    tone, words = _tone(home, pages)
    if tone.sample_phrases:
        evidence.append(home.id)

    signals = [
        1.0 if named_by is not None and organizations else 0.6 if name else 0.0,
        summary_signal,
        1.0 if products else 0.3,
        1.0 if audiences else 0.3,
        1.0 if words >= 300 else 0.6 if words >= 50 else 0.2,
        min(1.0, len(pages) / 5),
    ]
    confidence = round(EXTRACTIVE_TRUST * sum(signals) / len(signals), 2)
    return ProfileFields(
        business=Business(
            name=name,
            summary=summary,
            industry=_industry(organizations),
            locations=_locations(organizations),
        ),
        products=products,
        audiences=audiences,
        tone=tone,
        topics=topics,
        languages=_languages(page.language for page in pages),
        confidence=confidence,
        evidence_page_ids=list(dict.fromkeys(evidence)) or [home.id],
    )


def _home(start_url: str, pages: Sequence[SitePage]) -> SitePage:
    start = start_url.rstrip("/")
    for page in pages:
        if page.url.rstrip("/") == start:
            return page
    return min(pages, key=lambda page: page.depth)


def _nodes(json_ld: Iterable[Any]) -> Iterator[dict[str, Any]]:
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


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return [k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)]


def _is_organization(node: dict[str, Any]) -> bool:
    return any(
        kind in _ORGANIZATION_TYPES or kind.endswith(_ORGANIZATION_SUFFIXES)
        for kind in _types(node)
    )


def _string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return str(value["name"])
    return ""


def _business_name(
    home: SitePage,
    pages: Sequence[SitePage],
    organizations: list[tuple[SitePage, dict[str, Any]]],
    nodes: list[tuple[SitePage, dict[str, Any]]],
) -> tuple[str | None, SitePage | None]:
    """The name, and the page it was read on."""
    for page, node in organizations:
        if name := _text(_string(node.get("name")), NAME_CHARS):
            return name, page
    for page, node in nodes:
        if "WebSite" in _types(node) and (name := _text(_string(node.get("name")), NAME_CHARS)):
            return name, page
    title = _text(home.title, 1000)
    if not title:
        return None, None
    parts = [part for part in _TITLE_SEPARATORS.split(title) if part.strip()]
    if len(parts) > 1:
        others = [(page.title or "").lower() for page in pages if page is not home]

        def shared(part: str) -> tuple[int, int]:
            return sum(part.lower() in other for other in others), -len(part)

        title = max(parts, key=shared)
    return _text(title, NAME_CHARS), home


def _summary(
    home: SitePage, organizations: list[tuple[SitePage, dict[str, Any]]]
) -> tuple[str | None, float]:
    """The summary, and how much it says (1: a description written as one)."""
    if summary := _text(home.meta_description, SUMMARY_CHARS):
        return summary, 1.0
    for _, node in organizations:
        if summary := _text(_string(node.get("description")), SUMMARY_CHARS):
            return summary, 1.0
    sentences = _sentences(home.text)
    if sentences:
        return _text(" ".join(sentences[:2]), SUMMARY_CHARS), 0.5
    return None, 0.0


def _industry(organizations: list[tuple[SitePage, dict[str, Any]]]) -> str | None:
    for _, node in organizations:
        for kind in _types(node):
            if kind not in _GENERIC_TYPES:
                words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", kind).split()
                return _text(" ".join([words[0], *(w.lower() for w in words[1:])]), 100)
    return None


def _locations(organizations: list[tuple[SitePage, dict[str, Any]]]) -> list[str]:
    found: list[str] = []
    for _, node in organizations:
        addresses = node.get("address")
        for address in addresses if isinstance(addresses, list) else [addresses]:
            if isinstance(address, str):
                found.append(address)
            elif isinstance(address, dict):
                parts = [
                    _string(address.get(key))
                    for key in ("addressLocality", "addressRegion", "addressCountry")
                ]
                found.append(", ".join(part for part in parts if part))
        served = node.get("areaServed")
        for area in served if isinstance(served, list) else [served]:
            found.append(_string(area))
    return _texts(found, *LOCATIONS)


def _products(
    pages: Sequence[SitePage],
    nodes: list[tuple[SitePage, dict[str, Any]]],
    business: str | None,
    evidence: list[str],
) -> list[Product]:
    found: list[Product] = []
    for page, node in nodes:
        if not any(kind in _PRODUCT_TYPES for kind in _types(node)):
            continue
        if name := _text(_string(node.get("name")), NAME_CHARS):
            url = _url(_string(node.get("url")) or page.url)
            description = _text(_string(node.get("description")), PRODUCT_DESCRIPTION_CHARS)
            found.append(Product(name=name, description=description, url=url))
            evidence.append(page.id)
    for page in pages:
        if not _PRODUCT_PATH.search(urlsplit(page.url).path):
            continue
        heading = next((text for tag, text in page.headings if tag == "h1"), None)
        name = _text(heading, NAME_CHARS) or _title_without(page.title, business)
        if name:
            sentences = _sentences(page.text)
            description = page.meta_description or (sentences[0] if sentences else None)
            found.append(
                Product(
                    name=name,
                    description=_text(description, PRODUCT_DESCRIPTION_CHARS),
                    url=_url(page.url),
                )
            )
            evidence.append(page.id)
    return _unique_products(found)


def _title_without(title: str | None, business: str | None) -> str | None:
    """A page title without the site's name it repeats ("Trowel | Acme" -> "Trowel")."""
    parts = [part for part in _TITLE_SEPARATORS.split(_text(title, 1000) or "") if part.strip()]
    if business and len(parts) > 1:
        parts = [part for part in parts if part.strip().lower() != business.lower()] or parts
    return _text(parts[0], NAME_CHARS) if parts else None


def _unique_products(products: Iterable[Product]) -> list[Product]:
    seen: set[str] = set()
    unique = []
    for product in products:
        key = product.name.casefold()
        if key not in seen:
            seen.add(key)
            unique.append(product)
    return unique[:PRODUCTS]


def _audiences(pages: Sequence[SitePage], evidence: list[str]) -> list[str]:
    """Plural nouns things are said to be "for", most said first."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for page in pages:
        texts = [text for _, text in page.headings]
        texts += [page.meta_description or "", page.title or ""]
        found = False
        for text in texts:
            for match in _FOR.finditer(text):
                for part in _LIST_PARTS.split(match.group(1)):
                    audience = _audience(part)
                    if audience:
                        counts[audience] += 1
                        first_seen.setdefault(audience, len(first_seen))
                        found = True
        if found:
            evidence.append(page.id)
    ranked = sorted(counts, key=lambda key: (-counts[key], first_seen[key]))
    return _texts(ranked, *AUDIENCES)


def _audience(phrase: str) -> str | None:
    """The noun phrase `phrase` starts with (up to 4 words), lower-cased, when it reads as a
    group of people: plural, and none of the words that make "for ..." no audience."""
    words = phrase.split()
    for index, word in enumerate(words):  # stop at the first word that ends the noun phrase
        if word.lower() in ("who", "with", "in", "to", "at", "on", "by", "from", "that"):
            words = words[:index]
            break
    words = words[:4]
    while words and words[0].lower() in _LEADING:
        words = words[1:]
    if not words:
        return None
    last = words[-1].lower().strip("'")
    if any(word.lower() in _NOT_AUDIENCE for word in words) or not last.endswith("s"):
        return None
    if last.endswith(("ss", "us", "is")) or len(last) < 4:
        return None
    return " ".join(words).lower()


_TOPIC_TAGS = ("h1", "h2", "h3")


def _topics(home: SitePage, pages: Sequence[SitePage], business: str | None) -> list[str]:
    """Headings (h1-h3) the home page has or several pages share, furniture left out."""
    counts: Counter[str] = Counter()
    shown: dict[str, str] = {}
    order: dict[str, int] = {}
    on_home: set[str] = set()
    skip = {(business or "").casefold()}
    for page in pages:
        headings = {_heading_key(text): text for tag, text in page.headings if tag in _TOPIC_TAGS}
        for key, text in headings.items():  # each once per page
            if not key or key.replace(" ", "-") in _GENERIC_HEADINGS or key in skip:
                continue
            counts[key] += 1
            shown.setdefault(key, text)
            order.setdefault(key, len(order))
            if page is home:
                on_home.add(key)
    chosen = [key for key in counts if counts[key] > 1 or key in on_home]
    chosen.sort(key=lambda key: (-counts[key], order[key]))
    return _texts((shown[key] for key in chosen), *TOPICS)


def _heading_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s'-]", " ", text.casefold()).split())


def _tone(home: SitePage, pages: Sequence[SitePage]) -> tuple[Tone, int]:
    """The tone, and how many words it was measured on."""
    text = " ".join(_plain(page.text) for page in pages).replace("\u2019", "'")
    words = _WORD.findall(text)
    if not words:
        return Tone(), 0
    sentences = [s for s in _SENTENCE_END.split(text) if len(s.split()) >= 3]
    average = sum(len(s.split()) for s in sentences) / len(sentences) if sentences else 0.0
    contraction_rate = len(_CONTRACTION.findall(text)) / len(words)
    exclaiming = sum(s.rstrip().endswith("!") for s in sentences) / (len(sentences) or 1)
    first = sum(1 for w in words if w.lower() in _FIRST_PERSON and w != "US")
    second = sum(1 for w in words if w.lower() in _SECOND_PERSON)
    second_rate = second / len(words)
    formality = (
        0.55
        + (average - 16) * 0.02
        - min(0.3, contraction_rate * 12)
        - min(0.2, exclaiming * 0.5)
        - min(0.15, second_rate * 3)
    )
    formality = round(min(1.0, max(0.0, formality)), 2)
    if (first + second) / len(words) < 0.005:
        person = "third"
    elif second >= first:
        person = "second"
    else:
        person = "first"
    descriptors = [
        "formal" if formality >= 0.7 else "professional" if formality >= 0.45 else "casual"
    ]
    if contraction_rate > 0.01:
        descriptors.append("friendly")
    if person == "second":
        descriptors.append("direct")
    if exclaiming >= 0.1:
        descriptors.append("enthusiastic")
    if sentences and average < 12:
        descriptors.append("concise")
    elif average > 22:
        descriptors.append("detailed")
    phrases = [s for s in _sentences(home.text) if 4 <= len(s.split()) <= 16 and "http" not in s]
    if not phrases:
        phrases = [
            s
            for page in pages
            for s in _sentences(page.text)
            if 4 <= len(s.split()) <= 16 and "http" not in s
        ]
    tone = Tone(
        descriptors=_texts(descriptors, *DESCRIPTORS),
        formality=formality,
        person=person,
        sample_phrases=_texts(phrases, *SAMPLE_PHRASES),
    )
    return tone, len(words)


def _plain(markdown: str) -> str:
    """Markdown's text without its marks (links keep their words)."""
    text = markdown
    for pattern, replacement in _MARKDOWN:
        text = pattern.sub(replacement, text)
    return text


def _sentences(markdown: str) -> list[str]:
    """The text's sentences: one line each, ending in a full stop, question or exclamation
    mark (headings and list fragments without one are left out)."""
    found = []
    for block in re.split(r"\n\s*\n", _plain(markdown)):
        for sentence in _SENTENCE_END.split(" ".join(block.split())):
            if sentence.endswith((".", "!", "?")) and len(sentence.split()) >= 3:
                found.append(sentence)
    return found


# --- bounding what comes out ----------------------------------------------------------------------


def _text(value: Any, limit: int) -> str | None:
    """Plain text on one line, at most `limit` characters (cut at a word, with an ellipsis)."""
    if not isinstance(value, str):
        return None
    text = cleaned(value, 10 * limit)
    if len(text) > limit:
        text = capped(text, limit - 1).rstrip(" ,;:-") + "…"
    return text or None


def _texts(values: Iterable[Any], limit: int, count: int) -> list[str]:
    """Up to `count` distinct texts (ignoring case), each bounded as `_text`."""
    found: dict[str, str] = {}
    for value in values:
        text = _text(value, limit)
        if text and text.casefold() not in found:
            found[text.casefold()] = text
            if len(found) == count:
                break
    return list(found.values())


def _url(value: Any) -> str | None:
    text = _text(value, URL_CHARS)
    if text is None or " " in text or not text.lower().startswith(("https://", "http://")):
        return None
    return text


def _fraction(value: float | None) -> float | None:
    if value is None or value != value:  # NaN
        return None
    return round(min(1.0, max(0.0, float(value))), 2)


_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


def _languages(values: Iterable[str | None]) -> list[str]:
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
