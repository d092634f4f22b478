"""Identity: JWT verification (identity provider JWKS, local dev key), roles, the guard."""
