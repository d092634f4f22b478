"""`PUT /v1/uploads/{path}`: where clients send the bytes of a local-storage upload URL.

With S3 clients upload to the bucket's presigned URL instead, and this route answers 404.
The URL's signature is the only credential (no bearer token), as with a presigned S3 URL.

Answers: 200 `{storagePath, size}`; 403 FORBIDDEN when the signature is missing, wrong (other
path, size or Content-Type) or expired (as S3 does; 401 would ask for a bearer token); 413
"Payload too large" (code BAD_REQUEST) naming the limit when the body is larger than the URL
allows or than `max_upload_bytes`;
400 for a malformed Content-Length or a body that ends early.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from starlette.requests import ClientDisconnect

from contentplatform.core.runtime import Runtime
from contentplatform.kit.errors import BadRequest, NotFound, PayloadTooLarge
from contentplatform.storage import paths

router = APIRouter()


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The upload is larger than the {limit} bytes this URL accepts.")


@router.put("/v1/uploads/{path:path}", include_in_schema=False)
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
    return {"storagePath": path, "size": len(body)}
