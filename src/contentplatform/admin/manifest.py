"""Admin: what the platform's operators do across tenants (superadmins only)."""

from __future__ import annotations

from contentplatform.admin import models, procedures
from contentplatform.admin.impersonations import procedures as impersonation_procedures
from contentplatform.core.manifest import Domain

domain = Domain(
    name="admin", routers=(procedures.router, impersonation_procedures.router), models=models
)
