"""Bearer tokens end to end: the identity provider's JWKS, the claim shapes, every refusal.

The session server trusts the stand-in identity provider (tests.support.idp) exactly as a
deployed service trusts its real one, and, being `local`, also the development key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import jwt
import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from pydantic import ValidationError

from contentplatform.auth import devkeys
from contentplatform.auth.context import Role
from contentplatform.config import Settings
from tests.support.idp import ISSUER, SigningKey
from tests.support.problems import problem
from tests.support.servers import second_service


def user() -> str:
    return f"user_{uuid4().hex[:10]}"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(value: dict[str, Any]) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def refused(response: httpx.Response, reason: str) -> dict[str, Any]:
    """A 401 problem+json naming `reason`, with the bearer challenge and no internals."""
    body = problem(response, 401, "UNAUTHORIZED")
    assert reason in body["detail"], body
    assert response.headers["www-authenticate"].startswith("Bearer"), response.headers
    assert "Traceback" not in response.text
    assert 'File "' not in response.text
    return body


def whoami(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()


# Accepted tokens


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "EdDSA"])
def test_identity_provider_tokens_are_accepted_for_every_algorithm(call, idp, org, algorithm):
    subject = user()
    jwt_ = idp.token(subject, org, "org:editor", algorithm=algorithm, email=f"{subject}@idp.test")
    body = whoami(call("system.whoami", token=jwt_, org=org))
    assert body["user"]["idp_user_id"] == subject
    assert body["user"]["email"] == f"{subject}@idp.test"
    assert body["organization"]["idp_org_id"] == org
    assert body["role"] == "editor"
    assert body["auth"] == "jwt"


@pytest.mark.parametrize(
    ("claim", "role"),
    [("org:admin", "admin"), ("org:editor", "editor"), ("org:member", "member")],
)
def test_org_role_claim_decides_the_role(call, idp, org, claim, role):
    assert (
        whoami(call("system.whoami", token=idp.token(user(), org, claim), org=org))["role"] == role
    )


def test_clerk_v2_compact_organization_claim(call, idp, org):
    slug = f"acme-{uuid4().hex[:6]}"
    jwt_ = idp.token(user(), None, o={"id": org, "rol": "admin", "slg": slug})
    body = whoami(call("system.whoami", token=jwt_, org=org))
    assert body["organization"] == {"idp_org_id": org, "name": slug}
    assert body["role"] == "admin"


def test_clerk_v2_compact_claim_with_editor_role(call, idp, org):
    jwt_ = idp.token(user(), None, o={"id": org, "rol": "editor"})
    assert whoami(call("system.whoami", token=jwt_, org=org))["role"] == "editor"


def test_organizations_map_claim(call, idp, org):
    other = f"org_{uuid4().hex[:12]}"
    subject = user()
    jwt_ = idp.token(subject, None, orgs={org: "org:admin", other: "org:editor"})
    mine = whoami(call("system.whoami", token=jwt_, org=org))
    theirs = whoami(call("system.whoami", token=jwt_, org=other))
    assert (mine["role"], theirs["role"]) == ("admin", "editor")
    assert mine["tenant_id"] != theirs["tenant_id"]
    assert mine["user"]["id"] == theirs["user"]["id"]


@pytest.mark.parametrize("shape", ["org_role", "compact", "orgs-map"])
def test_unknown_custom_role_counts_as_member(call, idp, org, shape):
    claims: dict[str, Any] = {
        "org_role": {"org_id": org, "org_role": "org:billing_manager"},
        "compact": {"o": {"id": org, "rol": "billing_manager"}},
        "orgs-map": {"orgs": {org: "org:billing_manager"}},
    }[shape]
    jwt_ = idp.token(user(), None, **claims)
    assert whoami(call("system.whoami", token=jwt_, org=org))["role"] == "member"


def test_dev_key_token_works_on_the_local_session_server(call, token, org):
    body = whoami(call("system.whoami", token=token(org, "dev-user", "admin"), org=org))
    assert body["user"]["idp_user_id"] == "dev-user"
    assert body["role"] == "admin"
    assert body["auth"] == "jwt"


# Forged and tampered tokens


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_unsigned_alg_none_token_is_refused(call, idp, org, alg):
    header = {"alg": alg, "typ": "JWT", "kid": idp.key("RS256").kid}
    payload = idp.claims(user(), org, "org:admin")
    forged = f"{segment(header)}.{segment(payload)}."
    refused(call("system.whoami", token=forged, org=org), "not accepted")


def test_hs256_signed_with_the_rsa_public_key_is_refused(call, idp, org):
    """Algorithm confusion: the RSA public key (public, in the JWKS) used as an HMAC secret."""
    rsa = idp.key("RS256")
    secret = rsa.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": rsa.kid}
    signing_input = f"{segment(header)}.{segment(idp.claims(user(), org, 'org:admin'))}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{b64url(signature)}"
    refused(call("system.whoami", token=forged, org=org), "not accepted")


def test_algorithm_that_does_not_match_the_keys_is_refused(call, idp, org):
    """An allowed algorithm, but not the one the named key is for (ES256 token, RSA kid)."""
    ec = idp.key("ES256")
    mislabelled = SigningKey("ES256", kid=idp.key("RS256").kid)
    mislabelled.private = ec.private
    forged = idp.token(user(), org, "org:admin", key=mislabelled)
    refused(call("system.whoami", token=forged, org=org), "does not match")


def test_tampered_payload_is_refused(call, idp, org):
    subject = user()
    genuine = idp.token(subject, org, "org:member")
    header, _, signature = genuine.split(".")
    elevated = segment(idp.claims(subject, org, "org:admin"))
    refused(call("system.whoami", token=f"{header}.{elevated}.{signature}", org=org), "verified")


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "EdDSA"])
def test_signed_by_an_unpublished_key_under_a_known_kid_is_refused(call, idp, org, algorithm):
    impostor = SigningKey(algorithm, kid=idp.key(algorithm).kid)
    forged = idp.token(user(), org, "org:admin", key=impostor)
    refused(call("system.whoami", token=forged, org=org), "verified")


# Claims


def test_expired_token_is_refused(call, idp, org):
    now = int(time.time())
    jwt_ = idp.token(user(), org, iat=now - 900, nbf=now - 900, exp=now - 120)
    refused(call("system.whoami", token=jwt_, org=org), "expired")


def test_expiry_within_the_leeway_is_still_accepted(call, idp, org):
    now = int(time.time())
    jwt_ = idp.token(user(), org, iat=now - 600, nbf=now - 600, exp=now - 5)
    assert whoami(call("system.whoami", token=jwt_, org=org))["role"] == "member"


def test_token_not_yet_valid_is_refused(call, idp, org):
    now = int(time.time())
    jwt_ = idp.token(user(), org, nbf=now + 3600, exp=now + 7200)
    refused(call("system.whoami", token=jwt_, org=org), "not valid yet")


@pytest.mark.parametrize(
    ("claims", "said"),
    [
        pytest.param({"iss": "https://evil.example.test"}, "issuer", id="wrong issuer"),
        pytest.param({"iss": None}, "verified", id="missing issuer"),
        pytest.param({"aud": "some-other-api"}, "audience", id="wrong audience"),
        pytest.param({"exp": None}, "verified", id="missing expiry"),
        pytest.param({"sub": None}, "verified", id="missing subject"),
    ],
)
def test_a_wrong_or_missing_claim_is_refused(call, idp, org, claims, said):
    jwt_ = idp.token(user(), org, **claims)
    refused(call("system.whoami", token=jwt_, org=org), said)


def test_dev_issuer_claim_does_not_bypass_the_identity_provider(call, idp, org):
    """An IdP-signed token claiming the dev issuer is checked against the dev key, and fails."""
    jwt_ = idp.token(user(), org, "org:admin", algorithm="EdDSA", iss="contentplatform-local")
    refused(call("system.whoami", token=jwt_, org=org), "signed by a key this service does not")
    # Without a kid it is checked against the dev key all the same.
    _, payload, signature = jwt_.split(".")
    no_kid = segment({"alg": "EdDSA", "typ": "JWT"})
    refused(call("system.whoami", token=f"{no_kid}.{payload}.{signature}", org=org), "verified")


# Development tokens: which of the failures it is


def test_a_dev_token_minted_on_another_data_directory_says_so(call, org, settings, tmp_path):
    foreign = devkeys.mint_token(tmp_path / "elsewhere", org=org, user=user(), role=Role.admin)
    response = call("system.whoami", token=foreign, org=org)
    body = refused(response, "")
    assert body["detail"] == (
        "The token is signed by a key this service does not know: was it minted for another "
        "data directory?"
    )
    # Which key the service has is not said.
    ours = devkeys.public_jwk(devkeys.load_or_create_key(settings.data_dir))
    assert ours["kid"] not in response.text
    assert ours["x"] not in response.text


def test_a_dev_token_with_a_bad_signature_or_expired_says_that_instead(call, org, settings):
    genuine = devkeys.mint_token(settings.data_dir, org=org, user=user(), role=Role.member)
    header, _, signature = genuine.split(".")
    claims = jwt.decode(genuine, options={"verify_signature": False})
    elevated = segment({**claims, "org_role": "org:admin"})
    tampered = refused(call("system.whoami", token=f"{header}.{elevated}.{signature}", org=org), "")
    assert tampered["detail"] == "The token could not be verified."
    expired = devkeys.mint_token(settings.data_dir, org=org, user=user(), ttl_seconds=-120)
    assert refused(call("system.whoami", token=expired, org=org), "")["detail"] == (
        "The token has expired."
    )


# Key rotation


def test_key_added_after_caching_is_found_by_one_refetch(call, idp, org):
    # Make sure the service holds the JWKS already.
    assert whoami(call("system.whoami", token=idp.token(user(), org), org=org))
    before = idp.jwks_fetches
    rotated = idp.add_key("ES256")
    jwt_ = idp.token(user(), org, "org:editor", key=rotated)
    assert whoami(call("system.whoami", token=jwt_, org=org))["role"] == "editor"
    assert idp.jwks_fetches == before + 1
    # Now cached: no further fetch.
    assert whoami(call("system.whoami", token=jwt_, org=org))["role"] == "editor"
    assert idp.jwks_fetches == before + 1


def test_kid_that_is_never_published_is_refused(call, idp, org):
    assert whoami(call("system.whoami", token=idp.token(user(), org), org=org))
    before = idp.jwks_fetches
    stranger = SigningKey("RS256")
    refused(call("system.whoami", token=idp.token(user(), org, key=stranger), org=org), "not known")
    assert idp.jwks_fetches == before + 1, "an unknown kid is worth exactly one refetch"


def test_token_without_kid_is_refused(call, idp, org):
    key = idp.key("RS256")
    jwt_ = jwt.encode(idp.claims(user(), org), key.private, algorithm="RS256")
    refused(call("system.whoami", token=jwt_, org=org), "not known")


# Outside `local`: the development key is never trusted


@pytest.fixture(scope="module")
def staging(settings_with) -> Iterator[httpx.Client]:
    """A second service over the same (already migrated) database, in env `staging`."""
    keys = Fernet.generate_key().decode()
    settings = settings_with(env="staging", publisher_credentials_keys=keys)
    assert not settings.is_local
    with second_service(settings) as running, running.client() as client:
        yield client


def staging_whoami(client: httpx.Client, transport: str, jwt_: str, org: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {jwt_}", "x-idp-org-id": org}
    if transport == "rpc":
        return client.post("/api/rpc/system.whoami", json={}, headers=headers)
    return client.get("/v1/system/whoami", headers=headers)


@pytest.mark.parametrize("transport", ["rest", "rpc"])
def test_staging_refuses_dev_key_tokens(staging, token, org, transport):
    # The dev key file is right there in the shared data directory; staging still ignores it.
    refused(staging_whoami(staging, transport, token(org, user(), "admin"), org), "not known")


@pytest.mark.parametrize("transport", ["rest", "rpc"])
def test_staging_accepts_identity_provider_tokens(staging, idp, org, transport):
    response = staging_whoami(staging, transport, idp.token(user(), org, "org:admin"), org)
    body = whoami(response)
    assert body["organization"]["idp_org_id"] == org
    assert body["role"] == "admin"


def test_staging_publishes_no_development_key(staging):
    problem(staging.get("/.well-known/jwks.json"), 404, "NOT_FOUND")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CONTENTPLATFORM_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("env", ["staging", "production"])
def test_settings_outside_local_require_the_identity_provider(clean_env, env):
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_JWKS_URL"):
        Settings(env=env, _env_file=None)
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_JWT_ISSUER"):
        Settings(env=env, jwks_url="https://idp.example.test/jwks", _env_file=None)
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_JWT_ISSUER"):
        Settings(env=env, jwt_issuer=ISSUER, _env_file=None)
    identified = {"jwks_url": "https://idp.example.test/jwks", "jwt_issuer": ISSUER}
    with pytest.raises(ValidationError, match="CONTENTPLATFORM_PUBLISHER_CREDENTIALS_KEYS"):
        Settings(env=env, **identified, _env_file=None)
    with pytest.raises(ValidationError, match="key 2 is not a Fernet key"):
        keys = f"{Fernet.generate_key().decode()},not-a-key"
        Settings(env=env, **identified, publisher_credentials_keys=keys, _env_file=None)
    configured = Settings(
        env=env,
        **identified,
        publisher_credentials_keys=Fernet.generate_key().decode(),
        _env_file=None,
    )
    assert not configured.is_local
    assert Settings(env="local", _env_file=None).is_local


def test_serve_in_staging_without_identity_provider_exits_with_a_clear_message(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTENTPLATFORM_")}
    data = tmp_path / "data"
    env.update(CONTENTPLATFORM_ENV="staging", CONTENTPLATFORM_DATA_DIR=str(data))
    executable = Path(sys.executable).with_name("contentplatform")
    finished = subprocess.run(
        [str(executable), "serve", "--port", "0"],
        env=env,
        cwd=tmp_path,  # no stray .env file
        capture_output=True,
        text=True,
        timeout=120,  # a cold import of the package on a loaded CI host
    )
    assert finished.returncode != 0, finished.stdout
    assert "invalid configuration" in finished.stderr
    assert "CONTENTPLATFORM_JWKS_URL" in finished.stderr
    assert "CONTENTPLATFORM_ENV=staging" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert not data.exists(), "nothing may be set up before the configuration is valid"


@pytest.mark.parametrize("alg", [["RS256"], {"x": 1}, 7])
def test_non_string_alg_is_refused_not_a_server_error(call, idp, org, alg):
    header = {"alg": alg, "kid": idp.key("RS256").kid}
    forged = f"{segment(header)}.{segment(idp.claims(user(), org))}.AAAA"
    refused(call("system.whoami", token=forged, org=org), "not accepted")
