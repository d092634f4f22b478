"""Tenants (one per identity-provider organization), users and memberships."""
