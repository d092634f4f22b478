"""Credits: a per-tenant append-only ledger and idempotent reservations (holds)."""
