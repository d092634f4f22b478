"""Public: what anyone may read without a token, such as a tenant's blog feed."""
