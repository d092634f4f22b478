"""contentplatform serve | worker | migrate | dev-token | openapi | maps"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import shlex
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from contentplatform.auth.context import Role
from contentplatform.config import Settings, default_data_dir


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as error:
        messages = "; ".join(
            str(e.get("msg", e)).removeprefix("Value error, ") for e in error.errors()
        )
        sys.exit(f"contentplatform: invalid configuration: {messages}")


@contextlib.contextmanager
def _starting() -> Iterator[None]:
    """The cycle collector paused while the process imports and migrates: start-up makes
    objects that live as long as the process, and collecting over them again and again cost
    about a second of CPU per start (the app freezes them once it has started)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def serve(args: argparse.Namespace) -> None:
    with _starting():
        import uvicorn

        from contentplatform.app import create_app
        from contentplatform.kit import logs, migrations
        from contentplatform.mail import local_server as local_mail_server

        settings = _settings()
        logs.configure(settings.log_level, settings.logs_as_json)
        if settings.is_local or args.migrate:
            migrations.upgrade(settings)
    host = args.host or settings.host
    port = args.port or settings.port
    # Where it listens, for what names its own address (without PUBLIC_URL: stored files'
    # links, the quick start on /docs).
    settings = settings.model_copy(update={"host": host, "port": port})
    try:
        app = create_app(settings)
    except ValueError as error:
        sys.exit(f"contentplatform: invalid configuration: {error}")
    if settings.is_local:
        print(banner(settings, host, port), flush=True)
    mail_server = local_mail_server.for_serve(settings)
    if mail_server is not None and mail_server.start():
        print(mail_server.describe(), flush=True)
    try:
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_config=None,
            timeout_graceful_shutdown=20,
            proxy_headers=False,
        )
    finally:
        if mail_server is not None:
            mail_server.stop()


def banner(settings: Settings, host: str, port: int) -> str:
    """What `serve` says in local: where it runs, and a token command and a curl that work as
    printed, from any directory."""
    shown = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    url = f"http://{f'[{shown}]' if ':' in shown else shown}:{port}"
    return (
        f"Content Platform API on {url} (docs: {url}/docs)\n"
        f"Data directory: {settings.data_dir.resolve()}\n"
        "Get a token (from any directory):\n"
        f"  TOKEN=$({dev_token_command(settings)})\n"
        "Call the API with it:\n"
        f'  curl -H "Authorization: Bearer $TOKEN" -H "x-idp-org-id: org_a" {url}/v1/system/whoami'
    )


def dev_token_command(settings: Settings) -> str:
    """`dev-token` for an admin of org_a, by this installation's absolute path, on this data
    directory (named only when it is not the one every command finds by default)."""
    script = Path(sys.executable).with_name("contentplatform")
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "contentplatform.cli"]
    words = [*program, "dev-token", "--org", "org_a", "--user", "u1", "--role", "admin"]
    data_dir = settings.data_dir.resolve()
    if data_dir == default_data_dir().resolve():
        return shlex.join(words)
    return f"CONTENTPLATFORM_DATA_DIR={shlex.quote(str(data_dir))} {shlex.join(words)}"


def worker(args: argparse.Namespace) -> None:
    with _starting():
        # The heavy import under the pause (run_worker imports it again for its other callers).
        import contentplatform.domains  # noqa: F401
        from contentplatform.kit import logs, migrations

        settings = _settings()
        logs.configure(settings.log_level, settings.logs_as_json)
        if settings.is_local:
            migrations.upgrade(settings)
    asyncio.run(run_worker(settings))


async def run_worker(settings: Settings) -> None:
    """Run durable workflows (and the reconciler) without HTTP until SIGTERM or SIGINT."""
    # Every domain's durable modules, which DBOS must know before it launches.
    import contentplatform.domains  # noqa: F401
    from contentplatform.core import runtime
    from contentplatform.kit import durable

    current = runtime.Runtime.create(settings)
    await current.verify()
    runtime.install(current)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    durable.launch(settings)
    await durable.configure(settings)
    reconciler = asyncio.create_task(durable.run_forever(current.db, settings))
    print("contentplatform worker running; SIGTERM stops it", flush=True)
    try:
        await stop.wait()
    finally:
        reconciler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reconciler
        # Off the loop: the workflows in flight run on it and may finish within the grace time.
        await asyncio.to_thread(durable.shutdown, settings.shutdown_grace_seconds)
        await current.close()
        runtime.install(None)


def migrate(args: argparse.Namespace) -> None:
    from contentplatform.kit import migrations

    settings = _settings()
    migrations.upgrade(settings, args.revision)
    print(f"database at {args.revision}")


def dev_token(args: argparse.Namespace) -> None:
    from contentplatform.auth import devkeys

    settings = _settings()
    if not settings.is_local:
        sys.exit("contentplatform: dev-token works only with CONTENTPLATFORM_ENV=local")
    print(
        devkeys.mint_token(
            settings.data_dir,
            org=args.org,
            user=args.user,
            role=Role(args.role),
            superadmin=args.superadmin,
            ttl_seconds=args.ttl,
            email=args.email,
            name=args.name,
        )
    )


def openapi(args: argparse.Namespace) -> None:
    from contentplatform.app import create_app

    json.dump(create_app(_settings()).openapi(), sys.stdout, indent=2)
    sys.stdout.write("\n")


def maps(args: argparse.Namespace) -> None:
    from contentplatform import maps

    directory = Path(args.directory)
    try:
        if args.check:
            if stale := maps.stale(directory):
                names = ", ".join(str(path) for path in stale)
                sys.exit(f"contentplatform: stale: {names}; run `contentplatform maps` to write")
            print(f"{directory}: the maps are fresh")
            return
        written = maps.write(directory)
    except FileNotFoundError as error:
        sys.exit(f"contentplatform: {error}")
    print(f"wrote {', '.join(map(str, written))}" if written else f"{directory}: already fresh")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contentplatform", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("serve", help="run the API (and, in-process, the durable workers)")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--migrate", action="store_true", help="migrate first (always done in local)")
    p.set_defaults(func=serve)

    p = commands.add_parser("worker", help="run durable workflows without HTTP")
    p.set_defaults(func=worker)

    p = commands.add_parser("migrate", help="apply database migrations")
    p.add_argument("--revision", default="head")
    p.set_defaults(func=migrate)

    p = commands.add_parser("dev-token", help="print a token this local service accepts")
    p.add_argument("--org", help="organization id (x-idp-org-id)")
    p.add_argument("--user", required=True, help="user id (the token's subject)")
    p.add_argument("--role", choices=[r.value for r in Role], default=Role.member.value)
    p.add_argument("--superadmin", action="store_true")
    p.add_argument("--ttl", type=int, default=8 * 3600, help="lifetime in seconds")
    p.add_argument("--email")
    p.add_argument("--name")
    p.set_defaults(func=dev_token)

    p = commands.add_parser("openapi", help="print the OpenAPI document")
    p.set_defaults(func=openapi)

    p = commands.add_parser(
        "maps", help="write the reference pages generated from the code (docs/reference/)"
    )
    p.add_argument("--check", action="store_true", help="only say which pages are stale (exit 1)")
    p.add_argument("directory", nargs="?", default="docs/reference", metavar="DIR")
    p.set_defaults(func=maps)

    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
