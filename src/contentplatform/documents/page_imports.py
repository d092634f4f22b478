"""Web pages the website scan imports as documents: each page stored as markdown and ingested
like an upload, once per content (an unchanged page is not imported again). Never commits."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.core.runtime import Runtime
from contentplatform.documents import repository, schemas, service
from contentplatform.documents.errors import StoragePathTaken
from contentplatform.documents.models import Document
from contentplatform.kit.text import cleaned
from contentplatform.storage import paths

WEBSITE_SCAN = "website_scan"
# Imported pages' type: their text is the page's main content, as markdown (parsing.py).
WEB_PAGE = "url"
WEB_PAGE_NAME = "Web page"


@dataclass(frozen=True)
class WebPage:
    """A crawled page to keep as knowledge (websiteScan.importPages)."""

    url: str  # normalized by the crawler: one document per URL
    title: str | None
    text: str  # the page's main content, markdown
    content_hash: str  # the crawler's hash of that text
    snapshot_id: uuid.UUID
    page_id: uuid.UUID
    language: str | None  # the page's own, the default of the knowledge metadata's
    # The knowledge metadata given (description, tags, language), only the fields given.
    knowledge: dict[str, Any]
    import_key: str | None  # the idempotency key of the import, when it had one
    imported_at: datetime


@dataclass(frozen=True)
class PageImport:
    document_id: uuid.UUID
    document_version: int
    unchanged: bool


@dataclass(frozen=True)
class KeyedImport:
    """A document an import under an idempotency key made or versioned, as it recorded it."""

    page_id: str
    document_id: uuid.UUID
    document_version: int


def web_page_storage_path(org_id: str, snapshot_id: uuid.UUID, page_id: uuid.UUID) -> str:
    path = f"{org_id}/website-scan/{snapshot_id}/{page_id}.md"
    return paths.validate_storage_path(path, org_id)


def web_page_filename(title: str | None, url: str) -> str:
    """A document's name for a web page: its title, else its URL without the scheme (its path
    segments apart by a right-pointing angle quote), as plain text on one line, slashes made
    dashes, at most 255 characters; guarded like every filename."""
    name = cleaned(title or "", 255)
    if not name:
        address = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", url).strip("/")
        name = " \u203a ".join(part for part in address.split("/") if part)
        name = cleaned(name, 255)
    name = re.sub(r"\s*[/\\]+\s*", " - ", name).strip(" -")[:255].rstrip()
    return service.guarded_filename(name or WEB_PAGE_NAME, WEB_PAGE)


async def import_web_page(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, page: WebPage
) -> PageImport:
    """Keep a crawled page as a knowledge document, ingested like an upload: a new document, or
    the next version of the live one imported from the same URL when the text service.changed (its
    filename, which people may have changed, stays); `unchanged` when the text is the same.

    The file is `<org>/website-scan/<snapshot>/<page>.md`. PlanLimitReached (documents or
    storage) and InsufficientCredits (the ingestion's hold) are raised before anything is
    written, so a caller may go on with its other pages."""
    existing = await repository.imported_from(session, tenant.tenant_id, WEBSITE_SCAN, page.url)
    if existing is not None and existing.content_hash == page.content_hash:
        return PageImport(existing.id, existing.document_version, unchanged=True)
    data = page.text.encode("utf-8")
    storage_path = web_page_storage_path(tenant.org_id, page.snapshot_id, page.page_id)
    taken = await repository.by_storage_path(session, tenant.tenant_id, storage_path)
    if taken is not None and (existing is None or taken.id != existing.id):
        raise StoragePathTaken(f"Document {taken.id} already uses the storagePath {storage_path}.")
    stored_before = (existing.size_bytes or 0) if existing is not None else 0
    await service.room_for(
        session,
        tenant.tenant_id,
        documents=1 if existing is None else 0,
        size_bytes=len(data) - stored_before,
    )
    document_id = existing.id if existing is not None else uuid.uuid4()
    version = existing.document_version + 1 if existing is not None else 1
    reservation_id = await service.hold_ingestion(
        session, runtime, tenant, document_id, page.content_hash, version, 0, len(data)
    )
    # Held: from here the page is imported. The file first, so the ingestion finds it.
    await runtime.store.put(storage_path, data, content_type=service.CONTENT_TYPES["md"])
    if existing is None:
        document = Document(
            id=document_id,
            tenant_id=tenant.tenant_id,
            filename=web_page_filename(page.title, page.url),
            source=WEBSITE_SCAN,
            source_metadata={},
            is_primary=False,
        )
        session.add(document)
        knowledge = schemas.Knowledge(language=page.language)
    else:
        document = existing
        knowledge = schemas.Knowledge.model_validate(document.knowledge)
    knowledge = knowledge.model_copy(update=page.knowledge)
    knowledge.tags = list(dict.fromkeys(tag.strip() for tag in knowledge.tags if tag.strip()))
    document.file_type = WEB_PAGE
    document.storage_path = storage_path
    document.document_version = version
    document.ingest_attempt = 0
    document.content_hash = page.content_hash
    document.size_bytes = len(data)
    document.chunk_count = 0
    document.text_path = None
    metadata = {
        **document.source_metadata,
        "url": page.url,
        "snapshot_id": str(page.snapshot_id),
        "page_id": str(page.page_id),
        "knowledge": knowledge.model_dump(by_alias=True),
        "imported_at": page.imported_at.isoformat(),
    }
    metadata.pop("import_key", None)
    if page.import_key is not None:
        metadata["import_key"] = page.import_key
    document.source_metadata = metadata
    service.begin_ingestion(session, runtime, tenant, document, reservation_id)
    await service.flush_or_conflict(
        session, StoragePathTaken("Another import of this page is being written.")
    )
    return PageImport(document.id, document.document_version, unchanged=False)


async def imported_hashes(session: AsyncSession, tenant_id: uuid.UUID) -> dict[str, str | None]:
    """The content hash of every live document imported from a web page, by its URL."""
    return await repository.imported_hashes(session, tenant_id, WEBSITE_SCAN)


async def imported_unchanged(
    session: AsyncSession, tenant_id: uuid.UUID, url: str, content_hash: str | None
) -> uuid.UUID | None:
    """The live document imported from the page at `url`, when it holds this content."""
    document = await repository.imported_from(session, tenant_id, WEBSITE_SCAN, url)
    if document is None or content_hash is None or document.content_hash != content_hash:
        return None
    return document.id


async def imports_under_key(
    session: AsyncSession, tenant_id: uuid.UUID, key: str, since: datetime
) -> list[KeyedImport]:
    """The live documents the website scan's import under `key` made or versioned since
    `since` (each document remembers the key of its latest import only)."""
    found = []
    for document in await repository.imported_under_key(session, tenant_id, WEBSITE_SCAN, key):
        metadata = document.source_metadata
        try:
            imported_at = datetime.fromisoformat(str(metadata.get("imported_at")))
        except ValueError:
            continue
        if imported_at >= since:
            page_id = str(metadata.get("page_id"))
            found.append(KeyedImport(page_id, document.id, document.document_version))
    return found
