"""Every domain of the service, in one list: adding a domain is one line here (and its own
manifest.py). The app, Alembic, the tests and every worker process read this list.

The order is the order of the API document: an operation group keeps the place of the domain
that first declares it, and a flow's operations of that group follow the domain's own.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import MetaData

from contentplatform.admin.manifest import domain as admin
from contentplatform.analytics.manifest import domain as analytics
from contentplatform.billing.manifest import domain as billing
from contentplatform.chat.manifest import domain as chat
from contentplatform.core.manifest import Domain
from contentplatform.core.procedures import ProcedureRouter
from contentplatform.credits.manifest import domain as credits
from contentplatform.dashboard.manifest import domain as dashboard
from contentplatform.documents.manifest import domain as documents
from contentplatform.drafts.manifest import domain as drafts
from contentplatform.events.manifest import domain as events
from contentplatform.features.manifest import domain as features
from contentplatform.flows.manifest import domain as flows
from contentplatform.generation.manifest import domain as generation
from contentplatform.job_instances.manifest import domain as job_instances
from contentplatform.jobs.manifest import domain as jobs
from contentplatform.kit.db import Base
from contentplatform.mail.manifest import domain as mail
from contentplatform.media.manifest import domain as media
from contentplatform.notifications.manifest import domain as notifications
from contentplatform.public.manifest import domain as public
from contentplatform.publishers.manifest import domain as publishers
from contentplatform.seo.manifest import domain as seo
from contentplatform.settings.manifest import domain as settings
from contentplatform.support.manifest import domain as support
from contentplatform.system.manifest import domain as system
from contentplatform.team.manifest import domain as team
from contentplatform.tenants.manifest import domain as tenants
from contentplatform.webhooks.manifest import domain as webhooks
from contentplatform.website_scan.manifest import domain as website_scan
from contentplatform.workflows.manifest import domain as workflows

DOMAINS: tuple[Domain, ...] = (
    system,
    tenants,
    credits,
    billing,
    documents,
    jobs,
    job_instances,
    drafts,
    publishers,
    generation,
    chat,
    team,
    settings,
    features,
    events,
    notifications,
    webhooks,
    website_scan,
    workflows,
    media,
    public,
    mail,
    support,
    analytics,
    seo,
    dashboard,
    admin,
    flows,
)


def routers() -> list[ProcedureRouter]:
    """Every router, grouped by operation group in the order the groups first appear."""
    groups: dict[str, list[ProcedureRouter]] = {}
    for domain in DOMAINS:
        for router in domain.routers:
            groups.setdefault(router.name, []).append(router)
    return [router for group in groups.values() for router in group]


def metadata() -> MetaData:
    """Every domain's tables: the manifests imported above imported their models."""
    return Base.metadata


def include_name(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic's include_name hook: every domain's objects but those its models do not describe."""
    return all(
        domain.unmodelled(name, type_, parent_names) for domain in DOMAINS if domain.unmodelled
    )
