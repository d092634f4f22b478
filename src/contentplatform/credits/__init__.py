"""Credits: a per-tenant append-only ledger and idempotent reservations (holds)."""

# Registers the credits upkeep with the reconciler wherever credits are used.
from contentplatform.credits import workflows as _workflows  # noqa: F401
