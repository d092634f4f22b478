"""Imports every domain's tables so Alembic and tests see the whole schema."""

from __future__ import annotations


def load_all() -> None:
    from contentplatform.credits import models as credits  # noqa: F401
    from contentplatform.documents import models as documents  # noqa: F401
    from contentplatform.drafts import models as drafts  # noqa: F401
    from contentplatform.generation import models as generation  # noqa: F401
    from contentplatform.jobs import models as jobs  # noqa: F401
    from contentplatform.publishers import models as publishers  # noqa: F401
    from contentplatform.search import models as search  # noqa: F401
    from contentplatform.tenants import models as tenants  # noqa: F401
