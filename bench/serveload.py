"""Load generator of ``bench/bench_serve.py``: host reports posted to ``pin serve`` by many
concurrent clients, each a keep-alive HTTP/1.1 connection on loopback.

Raw asyncio streams, not an HTTP library: a client costs a few microseconds a request, so the
figure measures the server. Each client takes the next host of the JSON Lines file
(``name<TAB>snapshot``), posts it to ``/api/v1/hosts/NAME/reports?group=GROUP`` and waits for
the answer before its next one (a closed loop, as nodes report). Prints one JSON line:
``{"reports", "errors", "seconds", "per_s", "p50_ms", "p99_ms", "statuses"}``.

Usage: ``python bench/serveload.py URL[,URL...] TOKEN HOSTS.tsv CLIENTS [GROUP]``: with
several URLs (``pin serve`` processes sharing one database) client ``i`` talks to URL ``i mod
n``, so the reports split evenly between them.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from urllib.parse import quote, urlsplit


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank method."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return ordered[rank - 1]


async def client(host: str, port: int, token: str, group: str,
                 queue: asyncio.Queue[tuple[str, bytes]], latencies: list[float],
                 statuses: Counter[int]) -> None:
    """Post reports from ``queue`` over one connection until it is empty."""
    reader, writer = await asyncio.open_connection(host, port)
    head = (f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\n").encode()
    try:
        while True:
            try:
                name, body = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            request = (f"POST /api/v1/hosts/{quote(name)}/reports?group={quote(group)} "
                       f"HTTP/1.1\r\n").encode() + head + \
                f"Content-Length: {len(body)}\r\n\r\n".encode() + body
            t = time.perf_counter()
            writer.write(request)
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - t)
            parts = status_line.split()
            statuses[int(parts[1]) if len(parts) > 1 else 0] += 1
    finally:
        writer.close()


async def main(url: str, token: str, hosts_file: str, clients: int, group: str) -> None:
    """Run ``clients`` clients over every host of ``hosts_file`` (against the
    comma-separated ``url`` list, client ``i`` on URL ``i mod n``); print the JSON line.
    """
    parts = [urlsplit(u) for u in url.split(",")]
    queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
    with open(hosts_file, "rb") as f:
        for line in f:
            name, _, body = line.rstrip(b"\n").partition(b"\t")
            queue.put_nowait((name.decode(), body))
    total = queue.qsize()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    t = time.perf_counter()
    await asyncio.gather(*(client(p.hostname or "127.0.0.1", p.port or 80, token, group,
                                  queue, latencies, statuses)
                           for p in (parts[i % len(parts)] for i in range(clients))))
    seconds = time.perf_counter() - t
    ok = statuses.get(201, 0)
    print(json.dumps({
        "reports": total, "errors": total - ok, "seconds": round(seconds, 4),
        "per_s": round(ok / seconds, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
    }))


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
                     sys.argv[5] if len(sys.argv) == 6 else "bench"))
