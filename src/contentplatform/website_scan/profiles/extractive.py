"""The extractive reading of a site profile: what the offline model gives, and what a real
model's unusable answer falls back to; deterministic (inference.py says field by field how each
is read)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from contentplatform.ai.ranking import wordset
from contentplatform.website_scan.profiles import site_pages
from contentplatform.website_scan.profiles.schemas import Business, Product, ProfileFields, Tone

# How much less an extractive reading is trusted than what it measured.
EXTRACTIVE_TRUST = 0.8


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


def read(start_url: str, pages: Sequence[site_pages.SitePage]) -> ProfileFields:
    """The profile read from the pages without a model (see the module docstring)."""
    if not pages:
        return ProfileFields()
    home = _home(start_url, pages)
    evidence: list[str] = []
    nodes = [(page, node) for page in pages for node in site_pages.json_ld_nodes(page.json_ld)]
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
        languages=site_pages.bounded_languages(page.language for page in pages),
        confidence=confidence,
        evidence_page_ids=list(dict.fromkeys(evidence)) or [home.id],
    )


def _home(start_url: str, pages: Sequence[site_pages.SitePage]) -> site_pages.SitePage:
    start = start_url.rstrip("/")
    for page in pages:
        if page.url.rstrip("/") == start:
            return page
    return min(pages, key=lambda page: page.depth)


def _is_organization(node: dict[str, Any]) -> bool:
    return any(
        kind in _ORGANIZATION_TYPES or kind.endswith(_ORGANIZATION_SUFFIXES)
        for kind in site_pages.json_ld_types(node)
    )


def _business_name(
    home: site_pages.SitePage,
    pages: Sequence[site_pages.SitePage],
    organizations: list[tuple[site_pages.SitePage, dict[str, Any]]],
    nodes: list[tuple[site_pages.SitePage, dict[str, Any]]],
) -> tuple[str | None, site_pages.SitePage | None]:
    """The name, and the page it was read on."""
    for page, node in organizations:
        if name := site_pages.bounded_text(
            site_pages.json_ld_string(node.get("name")), site_pages.NAME_CHARS
        ):
            return name, page
    for page, node in nodes:
        if "WebSite" in site_pages.json_ld_types(node) and (
            name := site_pages.bounded_text(
                site_pages.json_ld_string(node.get("name")), site_pages.NAME_CHARS
            )
        ):
            return name, page
    title = site_pages.bounded_text(home.title, 1000)
    if not title:
        return None, None
    parts = [part for part in _TITLE_SEPARATORS.split(title) if part.strip()]
    if len(parts) > 1:
        others = [(page.title or "").lower() for page in pages if page is not home]

        def shared(part: str) -> tuple[int, int]:
            return sum(part.lower() in other for other in others), -len(part)

        title = max(parts, key=shared)
    return site_pages.bounded_text(title, site_pages.NAME_CHARS), home


def _summary(
    home: site_pages.SitePage, organizations: list[tuple[site_pages.SitePage, dict[str, Any]]]
) -> tuple[str | None, float]:
    """The summary, and how much it says (1: a description written as one)."""
    if summary := site_pages.bounded_text(home.meta_description, site_pages.SUMMARY_CHARS):
        return summary, 1.0
    for _, node in organizations:
        if summary := site_pages.bounded_text(
            site_pages.json_ld_string(node.get("description")), site_pages.SUMMARY_CHARS
        ):
            return summary, 1.0
    sentences = _sentences(home.text)
    if sentences:
        return site_pages.bounded_text(" ".join(sentences[:2]), site_pages.SUMMARY_CHARS), 0.5
    return None, 0.0


def _industry(organizations: list[tuple[site_pages.SitePage, dict[str, Any]]]) -> str | None:
    for _, node in organizations:
        for kind in site_pages.json_ld_types(node):
            if kind not in _GENERIC_TYPES:
                words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", kind).split()
                return site_pages.bounded_text(
                    " ".join([words[0], *(w.lower() for w in words[1:])]), 100
                )
    return None


def _locations(organizations: list[tuple[site_pages.SitePage, dict[str, Any]]]) -> list[str]:
    found: list[str] = []
    for _, node in organizations:
        addresses = node.get("address")
        for address in addresses if isinstance(addresses, list) else [addresses]:
            if isinstance(address, str):
                found.append(address)
            elif isinstance(address, dict):
                parts = [
                    site_pages.json_ld_string(address.get(key))
                    for key in ("addressLocality", "addressRegion", "addressCountry")
                ]
                found.append(", ".join(part for part in parts if part))
        served = node.get("areaServed")
        for area in served if isinstance(served, list) else [served]:
            found.append(site_pages.json_ld_string(area))
    return site_pages.bounded_texts(found, *site_pages.LOCATIONS)


def _products(
    pages: Sequence[site_pages.SitePage],
    nodes: list[tuple[site_pages.SitePage, dict[str, Any]]],
    business: str | None,
    evidence: list[str],
) -> list[Product]:
    found: list[Product] = []
    for page, node in nodes:
        if not any(kind in _PRODUCT_TYPES for kind in site_pages.json_ld_types(node)):
            continue
        if name := site_pages.bounded_text(
            site_pages.json_ld_string(node.get("name")), site_pages.NAME_CHARS
        ):
            url = site_pages.bounded_url(site_pages.json_ld_string(node.get("url")) or page.url)
            description = site_pages.bounded_text(
                site_pages.json_ld_string(node.get("description")),
                site_pages.PRODUCT_DESCRIPTION_CHARS,
            )
            found.append(Product(name=name, description=description, url=url))
            evidence.append(page.id)
    for page in pages:
        if not _PRODUCT_PATH.search(urlsplit(page.url).path):
            continue
        heading = next((text for tag, text in page.headings if tag == "h1"), None)
        name = site_pages.bounded_text(heading, site_pages.NAME_CHARS) or _title_without(
            page.title, business
        )
        if name:
            sentences = _sentences(page.text)
            description = page.meta_description or (sentences[0] if sentences else None)
            found.append(
                Product(
                    name=name,
                    description=site_pages.bounded_text(
                        description, site_pages.PRODUCT_DESCRIPTION_CHARS
                    ),
                    url=site_pages.bounded_url(page.url),
                )
            )
            evidence.append(page.id)
    return site_pages.unique_products(found)


def _title_without(title: str | None, business: str | None) -> str | None:
    """A page title without the site's name it repeats ("Trowel | Acme" -> "Trowel")."""
    parts = [
        part
        for part in _TITLE_SEPARATORS.split(site_pages.bounded_text(title, 1000) or "")
        if part.strip()
    ]
    if business and len(parts) > 1:
        parts = [part for part in parts if part.strip().lower() != business.lower()] or parts
    return site_pages.bounded_text(parts[0], site_pages.NAME_CHARS) if parts else None


def _audiences(pages: Sequence[site_pages.SitePage], evidence: list[str]) -> list[str]:
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
    return site_pages.bounded_texts(ranked, *site_pages.AUDIENCES)


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


def _topics(
    home: site_pages.SitePage, pages: Sequence[site_pages.SitePage], business: str | None
) -> list[str]:
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
    return site_pages.bounded_texts((shown[key] for key in chosen), *site_pages.TOPICS)


def _heading_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s'-]", " ", text.casefold()).split())


def _tone(home: site_pages.SitePage, pages: Sequence[site_pages.SitePage]) -> tuple[Tone, int]:
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
        descriptors=site_pages.bounded_texts(descriptors, *site_pages.DESCRIPTORS),
        formality=formality,
        person=person,
        sample_phrases=site_pages.bounded_texts(phrases, *site_pages.SAMPLE_PHRASES),
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
