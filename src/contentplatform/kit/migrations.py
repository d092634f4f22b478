"""Running Alembic from code (`contentplatform migrate`, `serve` in local, tests)."""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config

from contentplatform.config import Settings

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", settings.resolved_database_url.replace("%", "%%"))
    return config


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Bring the database to `revision`. Safe to call from inside a running event loop."""
    if settings.is_sqlite:
        settings.ensure_data_dir()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            command.upgrade(alembic_config(settings), revision)
        except BaseException as error:
            errors.append(error)

    # Alembic's env runs its own event loop; a thread keeps it apart from any caller's loop.
    worker = threading.Thread(target=run, name="migrate")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
