"""The answer engines, behind one interface: `ask(route, question) -> Answer | Failed`.

Each speaks its provider's real protocol against a configurable base URL, through the guarded
outbound client (kit/outbound.py: the `openai` SDK would open connections of its own, outside
the guard's address and size checks, so it is not used here), with the tenant's sealed key:

- `openai` (engine chatgpt): the Responses API, `POST {openai_api_base}/responses` with the
  `web_search` tool; the answer is the `message` output's `output_text`, its citations the
  `url_citation` annotations, the search fan-out the `web_search_call` actions' queries.
- `perplexity`: chat completions, `POST {perplexity_api_base}/chat/completions` (model `sonar`
  by default); citations from `search_results` ({title, url}), else the bare `citations` URLs.
- `gemini`: `POST {ai_gemini_api_base}/models/{model}:generateContent` with the `google_search`
  tool; citations from `groundingMetadata.groundingChunks[].web` ({uri, title}: Google gives a
  redirect URI and the site's domain as the title, so the title names the domain), the fan-out
  `groundingMetadata.webSearchQueries`.
- `anthropic` (engine claude): the Messages API, `POST {anthropic_api_base}/v1/messages` with
  the `web_search_20250305` server tool; the answer is the `text` blocks joined, its citations
  their `web_search_result_location` citations, the fan-out the `server_tool_use` queries.
- `dataforseo` (chatgpt, perplexity, gemini, claude): AI Optimization's LLM responses,
  `POST {dataforseo_api_base}/v3/ai_optimization/{chat_gpt|perplexity|gemini|claude}/
  llm_responses/live` with `web_search`; the text from the result's `message` items' `text`
  sections, citations from their `annotations` ({title, url}), the fan-out `fan_out_queries`.
  google_ai_overview through DataForSEO's SERP API (live/advanced, as rank checks read it): the
  `ai_overview` item's text and `references`.
- `offline` (the local environment only): a made-up answer, deterministic for the prompt,
  engine and sample, labelled as such (model `offline (made-up answers)`); no network.

A failure (HTTP error, a provider's error status, unreachable, an answer of another shape) is
`Failed(code, message)`: that sample fails alone; the message is the provider's words or ours,
never the key.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.seo.rank import provider as serp

OFFLINE = "offline"
OFFLINE_MODEL = "offline (made-up answers)"
MAX_TEXT = 100_000
MAX_CITATIONS = 100
MAX_QUERIES = 20
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
# The engines each provider can answer for.
SERVES: dict[str, frozenset[str]] = {
    "openai": frozenset({"chatgpt"}),
    "perplexity": frozenset({"perplexity"}),
    "gemini": frozenset({"gemini"}),
    "anthropic": frozenset({"claude"}),
    "dataforseo": frozenset({"chatgpt", "perplexity", "gemini", "claude", "google_ai_overview"}),
    OFFLINE: frozenset({"chatgpt", "perplexity", "gemini", "claude", "google_ai_overview"}),
}
# Which connected provider answers an engine, first found first.
PREFERENCE: dict[str, tuple[str, ...]] = {
    "chatgpt": ("openai", "dataforseo", OFFLINE),
    "perplexity": ("perplexity", "dataforseo", OFFLINE),
    "gemini": ("gemini", "dataforseo", OFFLINE),
    "claude": ("anthropic", "dataforseo", OFFLINE),
    "google_ai_overview": ("dataforseo", OFFLINE),
}
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini",
    "perplexity": "sonar",
    "gemini": "gemini-2.0-flash",
    "anthropic": "claude-3-5-haiku-latest",
}
ANTHROPIC_VERSION = "2023-06-01"
# Web searches Claude may make for one answer (each billed by Anthropic).
ANTHROPIC_MAX_SEARCHES = 5
ANTHROPIC_MAX_TOKENS = 2048
# DataForSEO's path segment and default model per engine.
DATAFORSEO_ENGINES: dict[str, tuple[str, str]] = {
    "chatgpt": ("chat_gpt", "gpt-4o-mini"),
    "perplexity": ("perplexity", "sonar"),
    "gemini": ("gemini", "gemini-2.0-flash"),
    "claude": ("claude", "claude-3-5-haiku-latest"),
}
# A DataForSEO location for a country: google_ai_overview's SERP (US when none is known).
LOCATIONS: dict[str, int] = {
    "US": 2840,
    "GB": 2826,
    "DE": 2276,
    "FR": 2250,
    "ES": 2724,
    "IT": 2380,
    "CA": 2124,
    "AU": 2036,
    "NL": 2528,
    "IN": 2356,
}


@dataclass(frozen=True)
class Route:
    """Who answers an engine for a tenant: the provider, its credentials (read when the work
    starts; never a workflow input) and the connection's config (`model`)."""

    engine: str
    provider: str
    credentials: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    prompt: str
    country: str | None
    language: str | None
    sample: int
    # For the offline engine's made-up answers: the names it may mention and domains it cites.
    brand: str | None = None
    own_domain: str | None = None
    competitors: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Citation:
    url: str
    title: str | None = None
    # The domain the provider names when its URL is a redirect (Gemini's grounding chunks).
    domain_hint: str | None = None


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[Citation]
    search_queries: list[str]
    model: str | None


@dataclass(frozen=True)
class Failed:
    code: str
    message: str


class _RequestFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message[:500]


def _model(route: Route) -> str:
    configured = route.config.get("model") if route.config else None
    return str(configured or DEFAULT_MODELS.get(route.provider, ""))


def _key(route: Route) -> str:
    return str((route.credentials or {}).get("api_key") or "")


def _error_message(body: Any, status: int) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("detail"):
            return str(body["detail"])[:300]
    return f"HTTP {status}"


async def _post(
    settings: Settings, url: str, headers: dict[str, str], body: Any, who: str
) -> dict[str, Any]:
    policy = outbound.policy_of(
        settings,
        timeout=settings.ai_visibility_request_timeout_seconds,
        max_response_bytes=MAX_RESPONSE_BYTES,
    )
    try:
        async with outbound.GuardedClient(policy) as client:
            response = await client.request(
                "POST",
                url,
                headers={**headers, "accept": "application/json"},
                json=body,
            )
    except outbound.OutboundError as error:
        raise _RequestFailed("unreachable", f"{who}: {error}") from None
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status >= 400:
        raise _RequestFailed(
            f"http_{response.status}", f"{who}: {_error_message(answer, response.status)}"
        )
    if not isinstance(answer, dict):
        raise _RequestFailed("invalid_response", f"{who} answered something other than JSON.")
    return answer


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _citations(items: list[Citation]) -> list[Citation]:
    """The first citation of each URL, in order, at most MAX_CITATIONS."""
    seen: set[str] = set()
    kept: list[Citation] = []
    for item in items:
        if item.url and item.url not in seen and len(kept) < MAX_CITATIONS:
            seen.add(item.url)
            kept.append(item)
    return kept


def _answer(text: str, citations: list[Citation], queries: list[str], model: Any) -> Answer:
    return Answer(
        text=text[:MAX_TEXT],
        citations=_citations(citations),
        search_queries=[q[:500] for q in dict.fromkeys(queries) if q][:MAX_QUERIES],
        model=str(model)[:100] if model else None,
    )


# --- OpenAI: the Responses API with web search ------------------------------------------------


async def _openai(settings: Settings, route: Route, question: Question) -> Answer:
    tool: dict[str, Any] = {"type": "web_search"}
    if question.country:
        tool["user_location"] = {"type": "approximate", "country": question.country}
    body = {"model": _model(route), "input": question.prompt, "tools": [tool]}
    answer = await _post(
        settings,
        f"{settings.openai_api_base.rstrip('/')}/responses",
        {"authorization": f"Bearer {_key(route)}"},
        body,
        "OpenAI",
    )
    texts: list[str] = []
    citations: list[Citation] = []
    queries: list[str] = []
    for item in answer.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "web_search_call":
            action = item.get("action")
            if isinstance(action, dict) and isinstance(action.get("query"), str):
                queries.append(action["query"])
        if item.get("type") != "message":
            continue
        for part in item.get("content") or []:
            if not isinstance(part, dict) or part.get("type") != "output_text":
                continue
            texts.append(_text(part.get("text")))
            for note in part.get("annotations") or []:
                if isinstance(note, dict) and note.get("type") == "url_citation":
                    citations.append(
                        Citation(url=_text(note.get("url")), title=note.get("title") or None)
                    )
    if not texts:
        raise _RequestFailed("invalid_response", "OpenAI answered no message.")
    return _answer("\n\n".join(texts), citations, queries, answer.get("model"))


# --- Perplexity: chat completions ------------------------------------------------------------


async def _perplexity(settings: Settings, route: Route, question: Question) -> Answer:
    body: dict[str, Any] = {
        "model": _model(route),
        "messages": [{"role": "user", "content": question.prompt}],
    }
    if question.country:
        body["web_search_options"] = {"user_location": {"country": question.country}}
    answer = await _post(
        settings,
        f"{settings.perplexity_api_base.rstrip('/')}/chat/completions",
        {"authorization": f"Bearer {_key(route)}"},
        body,
        "Perplexity",
    )
    choices = answer.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), str):
        raise _RequestFailed("invalid_response", "Perplexity answered no message.")
    citations = [
        Citation(url=_text(found.get("url")), title=found.get("title") or None)
        for found in answer.get("search_results") or []
        if isinstance(found, dict)
    ]
    if not citations:
        citations = [Citation(url=url) for url in answer.get("citations") or [] if _text(url)]
    return _answer(message["content"], citations, [], answer.get("model"))


# --- Gemini: generateContent grounded with Google Search -------------------------------------


async def _gemini(settings: Settings, route: Route, question: Question) -> Answer:
    model = _model(route)
    body = {
        "contents": [{"role": "user", "parts": [{"text": question.prompt}]}],
        "tools": [{"google_search": {}}],
    }
    answer = await _post(
        settings,
        f"{settings.ai_gemini_api_base.rstrip('/')}/models/{quote(model, safe='.-_')}"
        ":generateContent",
        {"x-goog-api-key": _key(route)},
        body,
        "Gemini",
    )
    candidates = answer.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    if not isinstance(first, dict):
        raise _RequestFailed("invalid_response", "Gemini answered no candidate.")
    found = first.get("content")
    content: dict[str, Any] = found if isinstance(found, dict) else {}
    text = "".join(
        _text(part.get("text")) for part in content.get("parts") or [] if isinstance(part, dict)
    )
    grounding = first.get("groundingMetadata")
    grounding = grounding if isinstance(grounding, dict) else {}
    citations = []
    for chunk in grounding.get("groundingChunks") or []:
        web = chunk.get("web") if isinstance(chunk, dict) else None
        if isinstance(web, dict) and _text(web.get("uri")):
            title = web.get("title") or None
            citations.append(Citation(url=web["uri"], title=title, domain_hint=title))
    queries = [q for q in grounding.get("webSearchQueries") or [] if isinstance(q, str)]
    return _answer(text, citations, queries, answer.get("modelVersion") or model)


# --- Anthropic: the Messages API with the web search tool ------------------------------------


async def _anthropic(settings: Settings, route: Route, question: Question) -> Answer:
    tool: dict[str, Any] = {
        "type": "web_search_20250305",
        "name": "web_search",
        "max_uses": ANTHROPIC_MAX_SEARCHES,
    }
    if question.country:
        tool["user_location"] = {"type": "approximate", "country": question.country}
    body = {
        "model": _model(route),
        "max_tokens": ANTHROPIC_MAX_TOKENS,
        "messages": [{"role": "user", "content": question.prompt}],
        "tools": [tool],
    }
    answer = await _post(
        settings,
        f"{settings.anthropic_api_base.rstrip('/')}/v1/messages",
        {"x-api-key": _key(route), "anthropic-version": ANTHROPIC_VERSION},
        body,
        "Anthropic",
    )
    texts: list[str] = []
    citations: list[Citation] = []
    queries: list[str] = []
    for block in answer.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "server_tool_use" and block.get("name") == "web_search":
            found = block.get("input")
            if isinstance(found, dict) and isinstance(found.get("query"), str):
                queries.append(found["query"])
        if block.get("type") != "text":
            continue
        texts.append(_text(block.get("text")))
        for note in block.get("citations") or []:
            if isinstance(note, dict) and note.get("type") == "web_search_result_location":
                citations.append(
                    Citation(url=_text(note.get("url")), title=note.get("title") or None)
                )
    if not texts:
        raise _RequestFailed("invalid_response", "Anthropic answered no text.")
    # Claude's text blocks split where citations attach: joined as written.
    return _answer("".join(texts), citations, queries, answer.get("model"))


# --- DataForSEO: AI Optimization's LLM responses, and the SERP's AI Overview ------------------


def _dataforseo_auth(route: Route) -> dict[str, str]:
    found = route.credentials or {}
    pair = f"{found.get('login', '')}:{found.get('password', '')}"
    return {"authorization": f"Basic {base64.b64encode(pair.encode()).decode()}"}


def _dataforseo_task(answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("status_code") != serp.OK:
        raise _RequestFailed(
            str(answer.get("status_code") or "invalid_response"),
            f"DataForSEO: {answer.get('status_message') or 'the request failed'}",
        )
    tasks = answer.get("tasks")
    task = tasks[0] if isinstance(tasks, list) and tasks else None
    if not isinstance(task, dict):
        raise _RequestFailed("invalid_response", "DataForSEO answered no task.")
    if task.get("status_code") != serp.OK:
        raise _RequestFailed(
            str(task.get("status_code") or "invalid_response"),
            f"DataForSEO: {task.get('status_message') or 'the task failed'}",
        )
    results = task.get("result")
    result = results[0] if isinstance(results, list) and results else None
    if not isinstance(result, dict):
        raise _RequestFailed("invalid_response", "DataForSEO's task holds no result.")
    return result


async def _dataforseo(settings: Settings, route: Route, question: Question) -> Answer:
    if route.engine == "google_ai_overview":
        return await _ai_overview(settings, route, question)
    segment, default_model = DATAFORSEO_ENGINES[route.engine]
    task: dict[str, Any] = {
        "user_prompt": question.prompt,
        "model_name": str(route.config.get("model") or default_model),
        "web_search": True,
    }
    if question.country:
        task["web_search_country_iso_code"] = question.country
    answer = await _post(
        settings,
        f"{settings.dataforseo_api_base.rstrip('/')}/v3/ai_optimization/{segment}"
        "/llm_responses/live",
        _dataforseo_auth(route),
        [task],
        "DataForSEO",
    )
    result = _dataforseo_task(answer)
    texts: list[str] = []
    citations: list[Citation] = []
    for item in result.get("items") or []:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for section in item.get("sections") or []:
            if not isinstance(section, dict):
                continue
            texts.append(_text(section.get("text")))
            for note in section.get("annotations") or []:
                if isinstance(note, dict) and _text(note.get("url")):
                    citations.append(Citation(url=note["url"], title=note.get("title") or None))
    if not texts:
        raise _RequestFailed("invalid_response", "DataForSEO answered no message.")
    queries = [q for q in result.get("fan_out_queries") or [] if isinstance(q, str)]
    return _answer("\n\n".join(texts), citations, queries, result.get("model_name"))


async def _ai_overview(settings: Settings, route: Route, question: Question) -> Answer:
    task = serp.Task(
        tag="ai_visibility",
        keyword=question.prompt[:700],
        location_code=LOCATIONS.get(question.country or "US", 2840),
        language_code=(question.language or "en").split("-")[0],
        device="desktop",
        depth=10,
    )
    found = await serp.live(settings, route.credentials or {}, task)
    if isinstance(found, serp.Failed):
        raise _RequestFailed(found.code, found.message)
    overview = [item for item in found.items if item.get("type") == "ai_overview"]
    if not overview:
        return _answer("", [], [], "google_ai_overview")
    item = overview[0]
    text = _text(item.get("markdown")) or _text(item.get("text"))
    if not text:
        text = "\n".join(
            _text(part.get("text")) for part in item.get("items") or [] if isinstance(part, dict)
        )
    citations = [
        Citation(url=_text(ref.get("url")), title=ref.get("title") or None)
        for ref in item.get("references") or []
        if isinstance(ref, dict) and _text(ref.get("url"))
    ]
    return _answer(text, citations, [], "google_ai_overview")


# --- offline: made-up answers, labelled ---------------------------------------------------------


def offline_answer(engine: str, question: Question) -> Answer:
    """A made-up answer, the same for the same prompt, engine and sample: the brand and each
    competitor are mentioned or not by a hash of (prompt, engine, sample, name), in an order of
    the same hash; it cites the own domain when the brand is mentioned, and a third party."""
    names: list[tuple[str, str | None]] = []
    if question.brand:
        names.append((question.brand, question.own_domain))
    names.extend((name, domain) for name, domain in question.competitors)

    def roll(*parts: object) -> int:
        seed = "|".join(str(part) for part in (question.prompt, engine, question.sample, *parts))
        return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big")

    shown = sorted(
        (name for name in names if roll("shown", name[0]) % 3 != 0), key=lambda n: roll(n[0])
    )
    lines = [f"(Offline answer, made up for testing) About: {question.prompt}"]
    for place, (name, _) in enumerate(shown, 1):
        tone = ("a reliable choice", "a popular option", "expensive and slow")[roll(name) % 3]
        lines.append(f"{place}. {name} is {tone}.")
    if not shown:
        lines.append("No brand stands out.")
    citations = [
        Citation(url=f"https://{domain}/", title=name) for name, domain in shown if domain
    ] + [Citation(url="https://en.wikipedia.org/wiki/Offline", title="Wikipedia")]
    return _answer("\n".join(lines), citations, [f"{question.prompt} (offline)"], OFFLINE_MODEL)


_ASKERS = {
    "openai": _openai,
    "perplexity": _perplexity,
    "gemini": _gemini,
    "anthropic": _anthropic,
    "dataforseo": _dataforseo,
}


async def ask(settings: Settings, route: Route, question: Question) -> Answer | Failed:
    """One sample of `question` from `route`'s engine: its Answer, or Failed."""
    if route.provider == OFFLINE:
        return offline_answer(route.engine, question)
    asker = _ASKERS.get(route.provider)
    if asker is None or route.engine not in SERVES.get(route.provider, frozenset()):
        return Failed("unsupported", f"{route.provider} does not answer for {route.engine}.")
    try:
        return await asker(settings, route, question)
    except _RequestFailed as error:
        return Failed(error.code[:40], error.message)
