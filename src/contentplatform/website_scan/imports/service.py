"""The rules of importing a snapshot's pages as knowledge documents. Never commits.

Each page becomes a document of the documents domain (`source` website_scan, `file_type` url,
its main content as markdown), ingested by the documents' own workflow with its own credit hold
(`documents.ingest`), so it is found, searched and grounded on like an upload. A page whose
(normalized) URL was imported before is a new version of that document when its content hash
differs, and `unchanged` when it is equal. A page that did not answer 2xx, has no main text, or
lost its content to retention is skipped saying so; so is a page the plan's documents or
storage limit or the credits left do not allow (`quota`), and the others go on: an import of
many pages should keep what it can rather than fail whole for its last page.

One import per organization at a time (the tenant is locked), so two imports of one URL agree
on one document. An idempotency key is remembered on the documents its import made or
versioned (documents.page_imports.import_web_page); the same key within 24 hours answers from them
and imports nothing: its pages are `imported` as recorded, `unchanged` or skipped for their
content as before, and any other page it would have imported was skipped for `quota`. The
same key with pages that leave out one its import made is another request: 409. A key whose
import made nothing left nothing to remember, so it simply runs again (it had no effect to
repeat).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from contentplatform.auth.context import TenantAccess
from contentplatform.billing.errors import PlanLimitReached
from contentplatform.core.runtime import Runtime
from contentplatform.credits.errors import InsufficientCredits
from contentplatform.documents import page_imports
from contentplatform.kit.db import utcnow
from contentplatform.tenants import service as tenants
from contentplatform.website_scan import repository
from contentplatform.website_scan.errors import ImportKeyReused, PageNotFound
from contentplatform.website_scan.imports import repository as queries
from contentplatform.website_scan.imports.schemas import (
    MAX_IMPORT_PAGES,
    ImportedPage,
    ImportPagesInput,
    ImportResult,
    SkippedPage,
    SkipReason,
    UnchangedPage,
)
from contentplatform.website_scan.models import CrawlPage, CrawlSnapshot
from contentplatform.website_scan.snapshots import service as snapshots

MAX_PAGES_PER_IMPORT = MAX_IMPORT_PAGES
# A page's language is kept as the document's language when it fits the metadata's field.
_MAX_LANGUAGE = 35


async def import_pages(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, data: ImportPagesInput
) -> ImportResult:
    """Import the pages named (each once, in the order given) as knowledge documents."""
    snapshot = await snapshots.require_snapshot(session, tenant.tenant_id, data.id)
    wanted = list(dict.fromkeys(data.page_ids))
    pages = await queries.pages_of(session, tenant.tenant_id, snapshot.id, wanted)
    missing = next((page_id for page_id in wanted if page_id not in pages), None)
    if missing is not None:
        raise PageNotFound(missing)
    await tenants.lock_tenant(session, tenant.tenant_id)
    chosen = [pages[page_id] for page_id in wanted]
    if data.idempotency_key is not None:
        since = utcnow() - repository.IDEMPOTENCY_WINDOW
        keyed = await page_imports.imports_under_key(
            session, tenant.tenant_id, data.idempotency_key, since
        )
        if keyed:
            return await _replayed(session, tenant, snapshot, chosen, keyed)
    result = ImportResult(imported=[], unchanged=[], skipped=[])
    knowledge = data.knowledge.model_dump(exclude_none=True) if data.knowledge is not None else {}
    now = utcnow()
    for page in chosen:
        reason = _unimportable(snapshot, page)
        if reason is not None:
            result.skipped.append(SkippedPage(page_id=page.id, reason=reason))
            continue
        try:
            outcome = await page_imports.import_web_page(
                session, runtime, tenant, _web_page(snapshot, page, knowledge, data, now)
            )
        except (PlanLimitReached, InsufficientCredits):
            result.skipped.append(SkippedPage(page_id=page.id, reason="quota"))
            continue
        page.document_id = outcome.document_id
        if outcome.unchanged:
            result.unchanged.append(UnchangedPage(page_id=page.id, document_id=outcome.document_id))
        else:
            result.imported.append(
                ImportedPage(
                    page_id=page.id,
                    document_id=outcome.document_id,
                    document_version=outcome.document_version,
                )
            )
    return result


async def reimport_changed(
    session: AsyncSession, runtime: Runtime, tenant: TenantAccess, snapshot_id: uuid.UUID
) -> ImportResult:
    """A schedule's `autoImportChanged`: import again the snapshot's pages whose URL was
    imported before and whose content changed since (new document versions)."""
    imported = await page_imports.imported_hashes(session, tenant.tenant_id)
    changed = [
        page_id
        for page_id, url, digest in await queries.page_hashes(
            session, tenant.tenant_id, snapshot_id
        )
        if url in imported and digest is not None and imported[url] != digest
    ]
    result = ImportResult(imported=[], unchanged=[], skipped=[])
    for start in range(0, len(changed), MAX_PAGES_PER_IMPORT):
        chunk = changed[start : start + MAX_PAGES_PER_IMPORT]
        done = await import_pages(
            session, runtime, tenant, ImportPagesInput(id=snapshot_id, page_ids=chunk)
        )
        result.imported += done.imported
        result.unchanged += done.unchanged
        result.skipped += done.skipped
    return result


def _unimportable(snapshot: CrawlSnapshot, page: CrawlPage) -> SkipReason | None:
    """Why the page cannot be imported, if it cannot: judged on the page alone."""
    status = page.status_code
    if page.error is not None or status is None or not 200 <= status < 300:
        return "not_2xx"
    if snapshot.content_purged:
        return "content_purged"
    if not (page.content or "").strip() or page.content_hash is None:
        return "empty"
    return None


def _web_page(
    snapshot: CrawlSnapshot,
    page: CrawlPage,
    knowledge: dict[str, Any],
    data: ImportPagesInput,
    now: datetime,
) -> page_imports.WebPage:
    language = (page.language or "").strip()
    assert page.content is not None and page.content_hash is not None  # _unimportable said so
    return page_imports.WebPage(
        url=page.url,
        title=page.title,
        text=page.content,
        content_hash=page.content_hash,
        snapshot_id=snapshot.id,
        page_id=page.id,
        language=language if 2 <= len(language) <= _MAX_LANGUAGE else None,
        knowledge=knowledge,
        import_key=data.idempotency_key,
        imported_at=now,
    )


async def _replayed(
    session: AsyncSession,
    tenant: TenantAccess,
    snapshot: CrawlSnapshot,
    pages: list[CrawlPage],
    keyed: list[page_imports.KeyedImport],
) -> ImportResult:
    """What the import under the key did with these pages, read back; nothing is written. A
    request that leaves out a page the import under the key made is another request (409)."""
    made = {record.page_id: record for record in keyed}
    others = set(made) - {str(page.id) for page in pages}
    if others:
        raise ImportKeyReused(
            f"This idempotencyKey was used within the last 24 hours for an import of other pages "
            f"({len(others)} of them are not in this request); use a new key for a new import."
        )
    result = ImportResult(imported=[], unchanged=[], skipped=[])
    for page in pages:
        record = made.get(str(page.id))
        if record is not None:
            result.imported.append(
                ImportedPage(
                    page_id=page.id,
                    document_id=record.document_id,
                    document_version=record.document_version,
                )
            )
            continue
        reason = _unimportable(snapshot, page)
        if reason is not None:
            result.skipped.append(SkippedPage(page_id=page.id, reason=reason))
            continue
        same = await page_imports.imported_unchanged(
            session, tenant.tenant_id, page.url, page.content_hash
        )
        if same is not None:
            result.unchanged.append(UnchangedPage(page_id=page.id, document_id=same))
        else:
            result.skipped.append(SkippedPage(page_id=page.id, reason="quota"))
    return result
