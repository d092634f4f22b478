"""The lean floor of the request path: what the same stack costs with nothing of ours in the way.

    .venv/bin/python bench/floor.py --database-url URL --data-dir DIR --port PORT

FastAPI on uvicorn, PyJWT verifying the dev key on every request, one membership select, one
SQLAlchemy Core select of a page of drafts plus a count, orjson. It reads the service's own
database and trusts its dev key. bench/list.py starts it beside the service; it serves only
`GET /v1/drafts?limit=N` and `GET /v1/system/whoami`, and checks nothing else a product must.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import jwt
import orjson
import uvicorn
from fastapi import FastAPI, Header, HTTPException, Response
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from contentplatform.auth import devkeys
from contentplatform.config import Settings
from contentplatform.drafts.models import Draft
from contentplatform.tenants.models import Membership, Tenant, User

args = argparse.ArgumentParser()
args.add_argument("--database-url", required=True)
args.add_argument("--data-dir", required=True)
args.add_argument("--port", type=int, required=True)
options = args.parse_args()
url = Settings(_env_file=None, database_url=options.database_url).resolved_database_url  # type: ignore[call-arg]
engine = create_async_engine(url, pool_size=20, json_deserializer=orjson.loads)
key = devkeys.load_or_create_key(Path(options.data_dir)).public_key()
drafts = Draft.__table__
app = FastAPI()


async def caller(authorization: str, org: str) -> dict[str, Any]:
    try:
        claims = jwt.decode(
            authorization.removeprefix("Bearer "),
            key,
            algorithms=["EdDSA"],
            issuer=devkeys.DEV_ISSUER,
            audience=devkeys.DEV_AUDIENCE,
        )
    except jwt.PyJWTError:
        raise HTTPException(401) from None
    membership = (
        select(Tenant.id.label("tenant_id"), Tenant.name.label("org_name"), Membership.role)
        .add_columns(User.id.label("user_id"), User.idp_user_id, User.email, User.name)
        .join(Membership, Membership.tenant_id == Tenant.id)
        .join(User, User.id == Membership.user_id)
        .where(Tenant.idp_org_id == org, User.idp_user_id == claims["sub"])
    )
    async with engine.connect() as connection:
        row = (await connection.execute(membership)).mappings().first()
    if row is None:
        raise HTTPException(403)
    return dict(row)


@app.get("/v1/system/whoami")
async def whoami(authorization: str = Header(), x_idp_org_id: str = Header()) -> Response:
    return Response(orjson.dumps(await caller(authorization, x_idp_org_id), default=str))


@app.get("/v1/drafts")
async def list_drafts(
    limit: int = 20, authorization: str = Header(), x_idp_org_id: str = Header()
) -> Response:
    member = await caller(authorization, x_idp_org_id)
    live = (drafts.c.tenant_id == member["tenant_id"], drafts.c.deleted_at.is_(None))
    page = select(drafts).where(*live).order_by(drafts.c.created_at.desc(), drafts.c.id)
    async with engine.connect() as connection:
        total = await connection.scalar(select(func.count()).select_from(drafts).where(*live))
        rows = (await connection.execute(page.limit(limit))).mappings().all()
    page = {"data": [dict(row) for row in rows], "total": total}
    return Response(orjson.dumps(page, default=str))  # default: asyncpg's own UUID type


uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning", access_log=False)
