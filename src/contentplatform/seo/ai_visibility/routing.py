"""Who answers each engine for a tenant, and what a run's extraction looks for.

An engine is answered by the first connected provider of engines.PREFERENCE that serves it:
`openai` (chatgpt), `perplexity`, `gemini`, `anthropic` (claude), then `dataforseo` (any
engine, google_ai_overview included), then, in the local environment only, a connected
`offline`. Keys are the connections' sealed credentials (seo.connect checks them before they
are saved), opened when the work starts, never a workflow input.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.config import Settings
from contentplatform.publishers.vault import vault
from contentplatform.seo import repository as seo_repository
from contentplatform.seo.ai_visibility import engines, extraction
from contentplatform.seo.connections import repository as connections

CONNECTED = ("connected", "error")


async def routes(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings
) -> dict[str, engines.Route]:
    """Each engine that has a provider, by engine."""
    found: dict[str, engines.Route] = {}
    cache: dict[str, engines.Route | None] = {}
    for engine, providers in engines.PREFERENCE.items():
        for provider in providers:
            if provider not in cache:
                cache[provider] = await _route(session, tenant_id, settings, provider)
            route = cache[provider]
            if route is not None:
                found[engine] = engines.Route(
                    engine=engine,
                    provider=route.provider,
                    credentials=route.credentials,
                    config=route.config,
                )
                break
    return found


async def _route(
    session: AsyncSession, tenant_id: uuid.UUID, settings: Settings, provider: str
) -> engines.Route | None:
    row = await connections.connection(session, tenant_id, provider)
    if row is None:
        return None
    if provider == engines.OFFLINE:
        if not settings.is_local or row.status != "connected":
            return None
        return engines.Route(engine="", provider=provider)
    if row.status not in CONNECTED or not row.credentials_sealed:
        return None
    credentials = dict(vault(settings).open(row.credentials_sealed))
    return engines.Route(
        engine="", provider=provider, credentials=credentials, config=dict(row.config or {})
    )


@dataclass(frozen=True)
class Lookout:
    """What extraction looks for in a tenant's answers, and what the offline engine mentions."""

    brands: list[extraction.Brand]
    owners: extraction.Owners
    brand_name: str | None
    own_domain: str | None
    competitors: tuple[tuple[str, str], ...]


async def lookout(session: AsyncSession, tenant_id: uuid.UUID) -> Lookout:
    stored = await seo_repository.stored_settings(session, tenant_id)
    brands: list[extraction.Brand] = []
    own_domain = (
        extraction.registrable_domain(stored.site_url) if stored and stored.site_url else None
    )
    brand_name = stored.brand_name if stored else None
    if stored is not None:
        terms = [stored.brand_name] if stored.brand_name else []
        terms.extend(stored.brand_terms or [])
        if own_domain:
            terms.append(own_domain)
        if terms:
            brands.append(
                extraction.Brand(
                    name=stored.brand_name or terms[0], terms=tuple(dict.fromkeys(terms))
                )
            )
    owned: dict[str, str] = {}
    named: list[tuple[str, str]] = []
    for row in await seo_repository.competitors(session, tenant_id):
        domain = extraction.registrable_domain(row.domain) or row.domain
        if row.track_ai:
            terms = [row.name, *(row.aliases or []), domain]
            brands.append(
                extraction.Brand(
                    name=row.name,
                    terms=tuple(dict.fromkeys(terms)),
                    competitor_id=str(row.id),
                    domain=domain,
                )
            )
            named.append((row.name, domain))
        owned[domain] = str(row.id)
    return Lookout(
        brands=brands,
        owners=extraction.Owners(own_domain=own_domain, competitors=owned),
        brand_name=brand_name,
        own_domain=own_domain,
        competitors=tuple(named),
    )
