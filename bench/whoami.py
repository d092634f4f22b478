"""Throughput and latency of an authenticated, tenant-scoped request (system.whoami).

    .venv/bin/python bench/whoami.py [--requests 2000] [--concurrency 16]

Starts `contentplatform serve` on a free loopback port with a fresh data directory (SQLite), warms
it up, then prints requests per second and latency percentiles. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from serving import free_port

BIN = Path(sys.executable).parent


async def run(url: str, headers: dict[str, str], total: int, concurrency: int) -> list[float]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(total):
        queue.put_nowait(n)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            queue.get_nowait()
            started = time.perf_counter()
            response = await client.get("/v1/system/whoami", headers=headers)
            response.raise_for_status()
            latencies.append(time.perf_counter() - started)

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "CONTENTPLATFORM_DATA_DIR": data_dir,
            "CONTENTPLATFORM_LOG_LEVEL": "WARNING",
            "CONTENTPLATFORM_RATE_LIMIT": "1000000/minute",
        }
        server = subprocess.Popen(
            [BIN / "contentplatform", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            token = subprocess.run(
                [BIN / "contentplatform", "dev-token", "--org", "bench", "--user", "u1"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            headers = {"Authorization": f"Bearer {token}", "x-idp-org-id": "bench"}
            asyncio.run(run(url, headers, 100, 4))  # warm-up, provisions the tenant
            started = time.perf_counter()
            latencies = asyncio.run(run(url, headers, args.requests, args.concurrency))
            elapsed = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(30)
    quantiles = statistics.quantiles(latencies, n=100)
    print(f"system.whoami: {len(latencies)} requests, concurrency {args.concurrency}")
    print(f"  throughput: {len(latencies) / elapsed:,.0f} requests/s")
    print(
        f"  latency ms: p50 {quantiles[49] * 1000:.1f}  p95 {quantiles[94] * 1000:.1f}  "
        f"p99 {quantiles[98] * 1000:.1f}"
    )


if __name__ == "__main__":
    main()
