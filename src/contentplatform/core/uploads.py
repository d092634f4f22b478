"""`PUT /v1/uploads/{path}`: where clients send the bytes of a local-storage upload URL; and
`GET /v1/downloads/{path}`: where a signed download URL of a local object reads it (media's).

With S3 clients upload to the bucket's presigned URL instead, and this route answers 404.
The URL's signature is the only credential (no bearer token), as with a presigned S3 URL.

Answers: 200 `{storage_path, size}`; 403 FORBIDDEN when the signature is missing, wrong (other
path, size or Content-Type) or expired (as S3 does; 401 would ask for a bearer token); 413
"Payload too large" (code BAD_REQUEST) naming the limit when the body is larger than the URL
allows or than `max_upload_bytes`;
400 for a malformed Content-Length or a body that ends early.

A download answers the object's bytes with a type from its extension (images and MP4 by name,
anything else `application/octet-stream`), `X-Content-Type-Options: nosniff` and a sandboxing
Content-Security-Policy, so a stored file never runs as a page of this service's origin; 403
when the signature is missing, wrong or expired; 410 (code NOT_FOUND) when its object was
removed since it was signed (deleted, or an analytics export's file expired).
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse
from starlette.requests import ClientDisconnect

from contentplatform.core.runtime import Runtime
from contentplatform.kit.errors import BadRequest, Gone, NotFound, PayloadTooLarge
from contentplatform.storage import paths

router = APIRouter()
# Where uploads arrive: their body is limited by the signed URL, not by the request limit.
UPLOADS_PREFIX = "/v1/uploads/"


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The upload is larger than the {limit} bytes this URL accepts.")


@router.put(UPLOADS_PREFIX + "{path:path}", include_in_schema=False)
async def receive_upload(request: Request, path: str) -> dict[str, object]:
    current: Runtime = request.app.state.runtime
    store = current.store
    if not store.is_local:
        raise NotFound(f"There is nothing at {request.url.path}.")
    allowed = store.signer.verify(
        path, request.query_params, request.headers.get("content-type", ""), now=time.time()
    )
    # Only signed paths get here; checking again costs nothing and guards the file system.
    paths.validate_storage_path(path, paths.organization_of(path))
    limit = min(allowed, current.settings.max_upload_bytes)

    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit() or len(declared) > 15:
            raise BadRequest("Content-Length must be a number of bytes.")
        if int(declared) > limit:
            raise _too_large(limit)

    # Count what arrives rather than trust the header: a chunked body declares nothing.
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise _too_large(limit)
    except ClientDisconnect:
        raise BadRequest("The upload was interrupted before its end.") from None
    if declared is not None and len(body) != int(declared):
        raise BadRequest(f"The body has {len(body)} bytes, not the {declared} it declared.")

    await store.put(path, bytes(body), content_type=request.headers.get("content-type"))
    return {"storage_path": path, "size": len(body)}


# What a download is served as, by extension; every other object is plain bytes.
DOWNLOAD_TYPES = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
    "avif": "image/avif",
    "mp4": "video/mp4",
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
}
ATTACHMENTS = frozenset({"csv", "jsonl"})


@router.get("/v1/downloads/{path:path}", include_in_schema=False)
async def serve_download(request: Request, path: str) -> Response:
    current: Runtime = request.app.state.runtime
    store = current.store
    if not store.is_local:
        raise NotFound(f"There is nothing at {request.url.path}.")
    store.signer.verify_download(path, request.query_params, now=time.time())
    paths.validate_storage_path(path, paths.organization_of(path))
    assert store.root is not None
    local = store.root / path
    if not local.is_file():
        # The URL was signed for an object that was there: it was removed since (deleted, or
        # expired by retention, as an analytics export's file is after 7 days).
        raise Gone("The object of this download URL was removed; it is gone for good.")
    name = path.rsplit("/", 1)[-1]
    extension = name.rpartition(".")[2].lower()
    # Read from disk in chunks: an export's file may be hundreds of megabytes.
    return FileResponse(
        local,
        media_type=DOWNLOAD_TYPES.get(extension, "application/octet-stream"),
        headers={
            "Cache-Control": "private, max-age=3600",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            # A report is saved, an image shown.
            "Content-Disposition": f'attachment; filename="{name}"'
            if extension in ATTACHMENTS
            else "inline",
        },
    )
