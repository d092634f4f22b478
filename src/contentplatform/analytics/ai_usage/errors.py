"""AI usage analytics' errors."""

from __future__ import annotations

from contentplatform.kit.errors import Forbidden


class CostForAdmins(Forbidden):
    """Sorting by cost_usd, asked by a member or an editor: what the models cost is shown to
    admins only."""
