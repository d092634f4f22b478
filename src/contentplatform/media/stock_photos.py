"""Stock photos: a provider's search (cached a while), and a photo imported as an asset with its
licence, by reference when the provider requires hotlinking. Never commits."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import Role, TenantAccess
from contentplatform.config import Settings
from contentplatform.core.runtime import Runtime
from contentplatform.kit.errors import BadRequest, Conflict, FieldError
from contentplatform.kit.text import cleaned
from contentplatform.media import providers, repository, schemas, service
from contentplatform.media.errors import (
    MediaTypeMismatch,
    StockAssetNotFound,
    StockLicenseAdminOnly,
    StockProviderRefused,
    StockProviderUnavailable,
)
from contentplatform.media.models import MediaAsset
from contentplatform.media.stock import PhotoMissing, ProviderFailed, StockProvider, StockQuery
from contentplatform.tenants import service as tenants


def _provider(settings: Settings, name: str | None, field: str) -> type[StockProvider]:
    """The provider named (or the first configured one), when it is known and configured here."""
    if name is None:
        configured = [p for p in providers.PROVIDERS.values() if p.configured(settings)]
        if not configured:
            raise StockProviderRefused(
                "No stock provider is configured on this service (for Unsplash: "
                "CONTENTPLATFORM_STOCK_UNSPLASH_ACCESS_KEY).",
                errors=[FieldError(field, "no provider is configured")],
            )
        return configured[0]
    provider = providers.PROVIDERS.get(name.strip().lower())
    if provider is None:
        known = ", ".join(sorted(providers.PROVIDERS))
        raise StockProviderRefused(
            f"There is no stock provider {name!r}; known: {known}.",
            errors=[FieldError(field, f"must be one of: {known}")],
        )
    if not provider.configured(settings):
        raise StockProviderRefused(
            f"The stock provider {provider.name!r} is not configured on this service.",
            errors=[FieldError(field, "is not configured on this service")],
        )
    return provider


@contextlib.contextmanager
def _provider_errors(provider: type[StockProvider]) -> Iterator[None]:
    try:
        yield
    except ProviderFailed as error:
        raise StockProviderUnavailable(
            str(error), extensions={"retryable": error.retryable, "provider": provider.name}
        ) from None


async def search_stock(runtime: Runtime, data: schemas.SearchStockInput) -> schemas.StockResultPage:
    """A page of the provider's search, from the shared cache when the same was asked within
    STOCK_SEARCH_CACHE_SECONDS (by anyone: the answer depends on nothing of the tenant)."""
    settings = runtime.settings
    provider_class = _provider(settings, data.provider, "provider")
    query = StockQuery(
        query=data.query, page=data.page, per_page=data.limit, orientation=data.orientation
    )

    async def produce() -> str:
        with _provider_errors(provider_class):
            async with provider_class(settings) as provider:
                found = await provider.search(query)
                results = [
                    schemas.StockResult(
                        provider=photo.provider,
                        asset_id=photo.asset_id,
                        thumb_url=photo.thumb_url,
                        preview_url=photo.preview_url,
                        width=photo.width,
                        height=photo.height,
                        description=photo.description or photo.alt_description,
                        author_name=photo.author_name,
                        author_url=photo.author_url,
                        source_url=photo.source_url,
                        license_type=provider.license_type,
                        attribution_text=provider.attribution(photo),
                        hotlink_required=provider.hotlink_required,
                    )
                    for photo in found.photos
                ]
        page = schemas.StockResultPage(
            data=results, total=found.total, page=data.page, limit=data.limit
        )
        return page.model_dump_json()

    seconds = settings.stock_search_cache_seconds
    if seconds <= 0:
        return schemas.StockResultPage.model_validate_json(await produce())
    asked = [provider_class.name, query.query, query.orientation, query.page, query.per_page]
    key = hashlib.sha256(json.dumps(asked).encode()).hexdigest()
    text = await runtime.cache.get_or_set(
        f"media:stock:{provider_class.name}", key, seconds, produce
    )
    return schemas.StockResultPage.model_validate_json(text)


async def import_stock(
    session: AsyncSession,
    runtime: Runtime,
    tenant: TenantAccess,
    created_by: str,
    data: schemas.ConfirmMediaUploadInput,
    base_url: str,
) -> schemas.ConfirmedMediaAsset:
    """A stock photo as a hotlinked asset with its provider's licence, its download tracked."""
    assert data.stock is not None
    settings = runtime.settings
    provider_class = _provider(settings, data.stock.provider, "stock.provider")
    asset_id = data.stock.asset_id
    if not schemas.STOCK_ASSET_ID.fullmatch(asset_id):
        raise BadRequest(
            "The stock photo id has letters, digits, '_' and '-' only.",
            errors=[FieldError("stock.assetId", "letters, digits, '_' and '-' only")],
        )
    mime_type = data.mime_type or "image/jpeg"
    if mime_type not in schemas.IMAGE_TYPES:
        raise MediaTypeMismatch(
            f"A stock photo is an image, not {mime_type}.",
            errors=[FieldError("mimeType", "must be an image type")],
        )
    filename = service.guarded_filename(
        data.filename or f"{provider_class.name}-{asset_id}", mime_type
    )
    if data.license is not None and not tenant.role.includes(Role.admin):
        raise StockLicenseAdminOnly(
            "A stock photo's licence comes from its provider: only an admin may change it."
        )
    links = service.Links(runtime.store, base_url)
    existing = await repository.by_provider_asset(
        session, tenant.tenant_id, provider_class.name, asset_id
    )
    if existing is not None:
        return await service.confirmed(session, tenant.tenant_id, existing, links, unchanged=True)

    with _provider_errors(provider_class):
        async with provider_class(settings) as provider:
            try:
                photo = await provider.get(asset_id)
                # What the provider's terms require of an import, before anything is stored.
                await provider.track_download(photo)
            except PhotoMissing:
                raise StockAssetNotFound(
                    f"{provider.label} has no photo {asset_id}.",
                    errors=[FieldError("stock.assetId", "no such photo")],
                ) from None
            license = provider.license(photo).as_record()

    await tenants.lock_tenant(session, tenant.tenant_id)
    existing = await repository.by_provider_asset(
        session, tenant.tenant_id, provider_class.name, asset_id
    )
    if existing is not None:
        return await service.confirmed(session, tenant.tenant_id, existing, links, unchanged=True)
    asset = MediaAsset(
        tenant_id=tenant.tenant_id,
        kind="image",
        filename=filename,
        mime_type=mime_type,
        # Kept at the provider: every provider so far requires it (one that let photos be
        # copied would have them copied into storage here, as uploads are).
        storage="hotlink",
        hotlink_url=photo.url,
        hotlink_thumbnail_url=photo.thumb_url,
        renditions={},
        width=photo.width,
        height=photo.height,
        title=cleaned(photo.description or photo.alt_description or "", 255) or None,
        alt_text=data.alt_text if data.alt_text is not None else photo.alt_description,
        caption=data.caption,
        source="stock",
        provider=provider_class.name,
        provider_asset_id=asset_id,
        created_by=created_by,
    )
    service.set_tags(
        asset, data.tags if data.tags is not None else list(photo.tags)[: schemas.MAX_TAGS]
    )
    service.apply_license(
        asset, service.merged_license(license, service.license_given(data.license))
    )
    session.add(asset)
    await service.flush_or_conflict(
        session, Conflict("The same stock photo was just imported; import it again.")
    )
    return await service.confirmed(session, tenant.tenant_id, asset, links, unchanged=False)
