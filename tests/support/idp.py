"""A stand-in identity provider: key pairs made in the test, a JWKS served over HTTP, tokens."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tests.support.servers import StubServer

ISSUER = "https://idp.example.test"
AUDIENCE = "contentplatform-api"


class SigningKey:
    def __init__(self, algorithm: str, kid: str | None = None) -> None:
        self.algorithm = algorithm
        self.kid = kid or f"{algorithm.lower()}-{uuid.uuid4().hex[:8]}"
        if algorithm == "RS256":
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.jwk = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        elif algorithm == "ES256":
            self.private = ec.generate_private_key(ec.SECP256R1())
            self.jwk = json.loads(ECAlgorithm.to_jwk(self.private.public_key()))
        elif algorithm == "EdDSA":
            self.private = ed25519.Ed25519PrivateKey.generate()
            self.jwk = json.loads(OKPAlgorithm.to_jwk(self.private.public_key()))
        else:
            raise ValueError(algorithm)
        self.jwk.update(kid=self.kid, alg=algorithm, use="sig")


class IdentityProvider:
    """Serves /.well-known/jwks.json; keys can be added (rotation) while the service runs."""

    def __init__(self) -> None:
        self.server = StubServer()
        self.keys: dict[str, SigningKey] = {}
        self.server.route("GET", "/.well-known/jwks.json", self._jwks)
        for algorithm in ("RS256", "ES256", "EdDSA"):
            self.add_key(algorithm)

    @property
    def jwks_url(self) -> str:
        return f"{self.server.url}/.well-known/jwks.json"

    @property
    def jwks_fetches(self) -> int:
        return sum(
            1 for r in self.server.requests if r["path"].startswith("/.well-known/jwks.json")
        )

    def _jwks(self, *_: Any) -> tuple[int, dict[str, str], Any]:
        return 200, {}, {"keys": [key.jwk for key in self.keys.values()]}

    def add_key(self, algorithm: str) -> SigningKey:
        key = SigningKey(algorithm)
        self.keys[key.kid] = key
        return key

    def key(self, algorithm: str) -> SigningKey:
        return next(k for k in self.keys.values() if k.algorithm == algorithm)

    def claims(
        self, user: str, org: str | None = None, role: str = "org:member", **extra: Any
    ) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": user,
            "iat": now,
            "nbf": now,
            "exp": now + 600,
        }
        if org:
            claims.update(org_id=org, org_role=role)
        claims.update(extra)
        return {k: v for k, v in claims.items() if v is not None}

    def token(
        self,
        user: str,
        org: str | None = None,
        role: str = "org:member",
        *,
        algorithm: str = "RS256",
        key: SigningKey | None = None,
        **extra: Any,
    ) -> str:
        signing = key or self.key(algorithm)
        return jwt.encode(
            self.claims(user, org, role, **extra),
            signing.private,
            algorithm=signing.algorithm,
            headers={"kid": signing.kid},
        )

    def __enter__(self) -> IdentityProvider:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)
