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

The extractive reading is extractive.py; the pages, JSON-LD and the bounds both readings share,
site_pages.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from contentplatform.ai.base import ChatModel, CompletionRequest, Message
from contentplatform.ai.tokens import count_tokens
from contentplatform.website_scan.profiles import extractive, site_pages
from contentplatform.website_scan.profiles.schemas import Business, Product, ProfileFields, Tone

MAX_ANSWER_TOKENS = 1500


@dataclass(frozen=True)
class Inference:
    profile: ProfileFields
    input_tokens: int
    output_tokens: int
    model: str
    extractive: bool  # read without a model (offline), or fallen back to after a bad answer


async def infer(
    model: ChatModel, start_url: str, pages: Sequence[site_pages.SitePage]
) -> Inference:
    """The profile of the site whose pages these are (the home page is the one at `start_url`,
    else the shallowest). ProviderError when a real model cannot answer."""
    prompt = _prompt(pages)
    if model.provider == "offline":
        profile = extractive.read(start_url, pages)
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
            extractive.read(start_url, pages),
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


def _prompt(pages: Sequence[site_pages.SitePage]) -> list[Message]:
    shown = [
        {
            "page": number,
            "url": page.url,
            "title": page.title,
            "description": page.meta_description,
            "language": page.language,
            "headings": [text for _, text in page.headings[: site_pages.MAX_HEADINGS]],
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
    for node in site_pages.json_ld_nodes(json_ld):
        name = node.get("name")
        if isinstance(name, str):
            found.append(
                {
                    "type": site_pages.json_ld_types(node)[:3],
                    "name": name[: site_pages.NAME_CHARS],
                    "description": site_pages.json_ld_string(node.get("description"))[
                        : site_pages.PRODUCT_DESCRIPTION_CHARS
                    ],
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


def from_answer(text: str, pages: Sequence[site_pages.SitePage]) -> ProfileFields | None:
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
            description=site_pages.bounded_text(
                product.description, site_pages.PRODUCT_DESCRIPTION_CHARS
            ),
            url=site_pages.bounded_url(product.url),
        )
        for product in answer.products or ()
        if (name := site_pages.bounded_text(product.name, site_pages.NAME_CHARS))
    ]
    declared = site_pages.bounded_languages(page.language for page in pages)
    return ProfileFields(
        business=Business(
            name=site_pages.bounded_text(business.name, site_pages.NAME_CHARS),
            summary=site_pages.bounded_text(business.summary, site_pages.SUMMARY_CHARS),
            industry=site_pages.bounded_text(business.industry, site_pages.INDUSTRY_CHARS),
            locations=site_pages.bounded_texts(business.locations or (), *site_pages.LOCATIONS),
        ),
        products=site_pages.unique_products(products),
        audiences=site_pages.bounded_texts(answer.audiences or (), *site_pages.AUDIENCES),
        tone=Tone(
            descriptors=site_pages.bounded_texts(tone.descriptors or (), *site_pages.DESCRIPTORS),
            formality=site_pages.bounded_fraction(tone.formality),
            person=person if person in ("first", "second", "third") else None,
            sample_phrases=site_pages.bounded_texts(
                tone.sample_phrases or (), *site_pages.SAMPLE_PHRASES
            ),
        ),
        topics=site_pages.bounded_texts(answer.topics or (), *site_pages.TOPICS),
        languages=site_pages.bounded_languages(answer.languages or ()) or declared,
        confidence=site_pages.bounded_fraction(answer.confidence) or 0.0,
        evidence_page_ids=list(dict.fromkeys(evidence)) or [page.id for page in pages],
    )


def _json_object(text: str) -> str:
    """The answer's JSON object, without a markdown code fence around it."""
    text = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    return fenced.group(1) if fenced else text


# --- the extractive reading ---------------------------------------------------------------------
