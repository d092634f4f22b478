"""The key providers: what each can do, and the one cheap call that checks its credentials
before they are saved (dataforseo: GET /v3/appendix/user_data with Basic auth; openai and
gemini: GET /models with the key; anthropic: GET /v1/models with x-api-key and
anthropic-version; perplexity: a 1-token chat completion, as it lists no models;
pagespeed_insights: runPagespeed with the key and no URL, see _pagespeed).
Every call goes through the guarded client; a refusal's message is the provider's own words,
never the credential."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from contentplatform.config import Settings
from contentplatform.kit import outbound

CAPABILITIES: dict[str, list[str]] = {
    "google_search_console": ["search_console"],
    "dataforseo": ["serp", "keyword_data", "ai_answers"],
    "pagespeed_insights": ["pagespeed"],
    "openai": ["ai_answers"],
    "perplexity": ["ai_answers"],
    "gemini": ["ai_answers"],
    "anthropic": ["ai_answers"],
    "offline": ["search_console", "serp", "keyword_data", "ai_answers", "pagespeed"],
}
KEY_PROVIDERS = frozenset(
    {"dataforseo", "pagespeed_insights", "openai", "perplexity", "gemini", "anthropic"}
)
# Labelled as such wherever it shows (account_label, config.label): its data is made up.
# The Messages API version every Anthropic request names (its `anthropic-version` header).
ANTHROPIC_VERSION = "2023-06-01"
OFFLINE_LABEL = "Offline fixtures (made-up data)"
DEFAULT_MODELS = {
    "openai": "gpt-4o-mini",
    "perplexity": "sonar",
    "gemini": "gemini-2.0-flash",
    "anthropic": "claude-3-5-haiku-latest",
}


class Refused(Exception):
    """The provider refused the credentials: the message is its words."""


class Unavailable(Exception):
    """The provider could not be reached or failed: nothing can be said of the credentials."""


@dataclass(frozen=True)
class Verified:
    account_label: str | None
    credential_hint: str


def hint(secret: str) -> str:
    """The last four characters, when the secret is long enough for them to give nothing away."""
    return f"••••{secret[-4:]}" if len(secret) >= 12 else "••••"


def _message(response: outbound.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status}"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("status_message"):
            return str(body["status_message"])[:300]
        if body.get("detail"):
            return str(body["detail"])[:300]
    return f"HTTP {response.status}"


async def _send(settings: Settings, method: str, url: str, **kwargs: Any) -> outbound.Response:
    try:
        async with outbound.GuardedClient(outbound.policy_of(settings)) as client:
            return await client.request(method, url, **kwargs)
    except outbound.OutboundError as error:
        raise Unavailable(str(error)) from None


async def verify(
    settings: Settings, provider: str, credentials: dict[str, str], config: dict[str, Any]
) -> Verified:
    """One cheap call with `credentials`: Verified, or Refused / Unavailable."""
    if provider == "dataforseo":
        return await _dataforseo(settings, credentials["login"], credentials["password"])
    if provider == "pagespeed_insights":
        return await _pagespeed(settings, credentials["api_key"])
    if provider == "anthropic":
        return await _anthropic(settings, credentials["api_key"])
    return await _openai_compatible(settings, provider, credentials["api_key"], config)


async def _dataforseo(settings: Settings, login: str, password: str) -> Verified:
    basic = base64.b64encode(f"{login}:{password}".encode()).decode()
    response = await _send(
        settings,
        "GET",
        f"{settings.dataforseo_api_base.rstrip('/')}/v3/appendix/user_data",
        headers={"authorization": f"Basic {basic}", "accept": "application/json"},
    )
    if response.status in (401, 403):
        raise Refused(_message(response))
    if response.status >= 400:
        raise Unavailable(f"DataForSEO answered HTTP {response.status}: {_message(response)}")
    try:
        body = response.json()
    except ValueError:
        raise Unavailable("DataForSEO answered with something other than JSON.") from None
    # DataForSEO answers 200 with its own status codes: 20000 is ok, 40xxx the caller's fault.
    code = body.get("status_code") if isinstance(body, dict) else None
    if code != 20000:
        if isinstance(code, int) and 40000 <= code < 50000:
            raise Refused(_message(response))
        raise Unavailable(f"DataForSEO answered {code}: {_message(response)}")
    return Verified(account_label=login[:255], credential_hint=hint(password))


def _google_reasons(response: outbound.Response) -> set[str]:
    """The reasons of a Google API error answer (errors[].reason, details[].reason)."""
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        return set()
    found = [*(error.get("errors") or []), *(error.get("details") or [])]
    return {str(item.get("reason")) for item in found if isinstance(item, dict)}


async def _pagespeed(settings: Settings, api_key: str) -> Verified:
    """runPagespeed with the key and no `url`: Google checks the key before the request, so a
    bad key is refused (400 API_KEY_INVALID, or 403 when the key may not call the API) and a
    good one gets the 400 of the missing url, with no Lighthouse run paid for."""
    response = await _send(
        settings,
        "GET",
        f"{settings.pagespeed_api_base.rstrip('/')}/pagespeedonline/v5/runPagespeed",
        params={"key": api_key},
        headers={"accept": "application/json"},
    )
    reasons = _google_reasons(response)
    if response.status == 403 or (
        response.status == 400 and ("API_KEY_INVALID" in reasons or "keyInvalid" in reasons)
    ):
        raise Refused(_message(response))
    if response.status not in (200, 400):
        raise Unavailable(
            f"PageSpeed Insights answered HTTP {response.status}: {_message(response)}"
        )
    return Verified(account_label=None, credential_hint=hint(api_key))


async def _anthropic(settings: Settings, api_key: str) -> Verified:
    response = await _send(
        settings,
        "GET",
        f"{settings.anthropic_api_base.rstrip('/')}/v1/models",
        headers={
            "x-api-key": api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "accept": "application/json",
        },
    )
    if response.status in (400, 401, 403):
        raise Refused(_message(response))
    if response.status >= 400:
        raise Unavailable(f"anthropic answered HTTP {response.status}: {_message(response)}")
    return Verified(account_label=None, credential_hint=hint(api_key))


async def _openai_compatible(
    settings: Settings, provider: str, api_key: str, config: dict[str, Any]
) -> Verified:
    base = {
        "openai": settings.openai_api_base,
        "perplexity": settings.perplexity_api_base,
        "gemini": settings.gemini_api_base,
    }[provider].rstrip("/")
    headers = {"authorization": f"Bearer {api_key}", "accept": "application/json"}
    if provider == "perplexity":
        model = str(config.get("model") or DEFAULT_MODELS[provider])
        response = await _send(
            settings,
            "POST",
            f"{base}/chat/completions",
            headers=headers,
            json={"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "ok"}]},
        )
    else:
        response = await _send(settings, "GET", f"{base}/models", headers=headers)
    if response.status in (400, 401, 403):
        raise Refused(_message(response))
    if response.status >= 400:
        raise Unavailable(f"{provider} answered HTTP {response.status}: {_message(response)}")
    return Verified(account_label=None, credential_hint=hint(api_key))
