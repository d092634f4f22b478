"""Throughput and latency of an authenticated, tenant-scoped request (system.whoami), with a
JWT and with an API key.

    .venv/bin/python bench/whoami.py [--requests 2000] [--concurrency 16] [--rounds 3]

Starts `contentplatform serve` on a free loopback port with a fresh data directory (SQLite), warms
it up, makes an API key, then runs rounds of whoami with the JWT (and `x-idp-org-id`) and with the
key alone, alternating, and prints each credential's best round (requests per second, latency
percentiles) and the key's throughput as a ratio of the JWT's, measured in the same run: the key
must not make requests slower than a JWT does. Prints figures; asserts nothing.
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
    parser.add_argument("--rounds", type=int, default=3)
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
            mint = ["dev-token", "--org", "bench", "--user", "u1", "--role", "admin"]
            token = subprocess.run(
                [BIN / "contentplatform", *mint],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            jwt = {"Authorization": f"Bearer {token}", "x-idp-org-id": "bench"}
            asyncio.run(run(url, jwt, 100, 4))  # warm-up, provisions the tenant
            made = httpx.post(f"{url}/v1/settings/api-keys", json={"name": "bench"}, headers=jwt)
            made.raise_for_status()
            key = {"Authorization": f"Bearer {made.json()['secret']}"}
            asyncio.run(run(url, key, 100, 4))
            rounds: dict[str, list[tuple[float, list[float]]]] = {"JWT": [], "API key": []}
            for _ in range(args.rounds):
                for name, headers in (("JWT", jwt), ("API key", key)):
                    started = time.perf_counter()
                    latencies = asyncio.run(run(url, headers, args.requests, args.concurrency))
                    rate = len(latencies) / (time.perf_counter() - started)
                    rounds[name].append((rate, latencies))
        finally:
            server.terminate()
            server.wait(30)
    print(
        f"system.whoami: {args.requests} requests a round, concurrency {args.concurrency}, "
        f"{args.rounds} rounds each, alternating; the best round of each:"
    )
    best = {name: max(found, key=lambda r: r[0]) for name, found in rounds.items()}
    for name, (rate, latencies) in best.items():
        quantiles = statistics.quantiles(latencies, n=100)
        print(
            f"  {name:8} {rate:7,.0f} requests/s   latency ms: p50 {quantiles[49] * 1000:.1f}  "
            f"p95 {quantiles[94] * 1000:.1f}  p99 {quantiles[98] * 1000:.1f}"
        )
    print(f"  API key / JWT throughput: {best['API key'][0] / best['JWT'][0]:.2f}")


if __name__ == "__main__":
    main()
