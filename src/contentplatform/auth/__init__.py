"""Identity: JWT verification against the identity provider's JWKS, the local development key, roles."""
