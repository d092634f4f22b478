"""The `local` provider (CONTENTPLATFORM_PAGESPEED_PROVIDER=local, the local environment only):
the Lighthouse CLI pinned in tools/lighthouse, run here with a local Chromium (Debian's
`chromium`), one process per run. Lab data only: the Chrome UX Report's field data is Google's,
so `field.scope` is `none`.

The page's own URL passes the outbound guard's checks (scheme, resolved addresses) before
Chromium is started; what the page then loads is Chromium's doing, outside the guard, which is
why this provider is refused outside the local environment (config.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from pathlib import Path

from contentplatform.config import Settings
from contentplatform.kit import outbound
from contentplatform.seo.pagespeed.provider import MeasureFailed, Measurement, from_lighthouse

# Headless, no sandbox (a container's root), and no calls home: a closed network refuses them.
CHROME_FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync"
)
MAX_OUTPUT_BYTES = 64 * 1024 * 1024


def command(
    settings: Settings, url: str, strategy: str, categories: list[str], output: Path
) -> list[str]:
    args = [
        str(settings.pagespeed_lighthouse_path),
        url,
        "--output=json",
        # A file, not stdout: Lighthouse writes the result of a page it could not load (its
        # runtimeError) there too, and stdout then holds nothing.
        f"--output-path={output}",
        "--quiet",
        f"--only-categories={','.join(categories)}",
        f"--chrome-flags={CHROME_FLAGS}",
        f"--max-wait-for-load={int(settings.pagespeed_timeout_seconds * 1000 // 2)}",
    ]
    if strategy == "desktop":
        args.append("--preset=desktop")
    return args


async def lighthouse(
    settings: Settings, url: str, strategy: str, categories: list[str]
) -> Measurement:
    """One Lighthouse run of `url`: its Measurement, or MeasureFailed."""
    policy = outbound.policy_of(settings)
    try:
        await outbound.checked_address(outbound.check_url(url, policy), policy)
    except outbound.OutboundError as error:
        raise MeasureFailed("unreachable", str(error)) from None
    if not settings.pagespeed_lighthouse_path.is_file():
        raise MeasureFailed(
            "not_configured",
            f"The Lighthouse CLI is not installed at {settings.pagespeed_lighthouse_path} "
            "(npm ci --prefix tools/lighthouse).",
        )
    env = {**os.environ, "CHROME_PATH": str(settings.pagespeed_chromium_path)}
    with tempfile.TemporaryDirectory(prefix="lighthouse-") as folder:
        output = Path(folder) / "result.json"
        process = await asyncio.create_subprocess_exec(
            *command(settings, url, strategy, categories, output),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            # Its own process group, so a timeout ends Chromium with it.
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(settings.pagespeed_timeout_seconds):
                _, err = await process.communicate()
        except TimeoutError:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise MeasureFailed(
                "timeout", "Lighthouse did not finish in time.", retryable=True
            ) from None
        try:
            result = json.loads(output.read_bytes()[:MAX_OUTPUT_BYTES])
        except (OSError, ValueError):
            result = None
    if result is None:
        tail = err.decode("utf-8", errors="replace").strip().splitlines()[-1:] or [""]
        raise MeasureFailed(
            "lighthouse_failed", f"Lighthouse exited {process.returncode}: {tail[0][:300]}"
        )
    # A page Lighthouse could not load comes back as a result with its runtimeError.
    return from_lighthouse(result)
