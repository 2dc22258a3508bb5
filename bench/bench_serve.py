"""Benchmarks for issue 18 (printed, not asserted): pin serve ingesting host reports.

For SQLite (the default file: WAL, synchronous=NORMAL) and a real PostgreSQL (Debian's
server, started here on a private port with its durable defaults: fsync and synchronous
commit on): `pin serve` runs as its own process; one lock is pushed and assigned to the
group ``bench``; 10,000 host snapshots generated from the recorded MI300X host
(tests/support/fleetgen.py: 70 % unchanged, 30 % with one or two drifts) are posted by 50
concurrent keep-alive clients (bench/serveload.py, another process), each report verified by
the service against the lock and committed before it is answered. Three rounds (the first
creates the 10,000 hosts, the next two add history); medians of:

- reports ingested and verified per second (target >= 1,000)
- p50 and p99 latency of a report, ms (target p99 <= 100)
- the dashboard's fleet page over the 10,000 stored hosts, loaded in headless chromium
  (Debian's, driven by Playwright) until its load event and laid out: the default page (its
  first 500 rows, counts of all 10,000, links to the rest), median of 3 (target <= 1 s),
  when chromium is installed
- all 10,000 rows on one page (?limit=10000): one GET, whole body, median of 5 (target
  <= 1 s); and in chromium, median of 3 (printed; no target: see DEFAULT_LIMIT in
  pinning/serve/dashboard/fleet.py)
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from common import report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fleetgen import base_snapshot, generate  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

PIN = str(Path(sys.executable).with_name("pin"))
HOST = ROOT / "tests/data/hosts/mi300x-rocm7.1"
HOSTS = int(os.environ.get("PIN_BENCH_HOSTS", "10000"))
CLIENTS = 50
ROUNDS = 3
LISTENING = re.compile(r"listening on (http://\S+)")


def pin(*args: str) -> str:
    """Run pin; its standard output."""
    return subprocess.run([PIN, *args], check=True, capture_output=True, text=True).stdout


def request(url: str, token: str, data: bytes | None = None, method: str = "GET",
            content_type: str = "application/json") -> bytes:
    """One HTTP request with the bearer token; the response body."""
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": content_type})
    with urllib.request.urlopen(req, timeout=60) as resp:
        body: bytes = resp.read()
        return body


def serve(db: str, workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """Start `pin serve --port 0 --db DB`; the process and its URL."""
    proc = subprocess.Popen([PIN, "serve", "--db", db, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=open(workdir / "serve.log", "a"), text=True)  # noqa: SIM115
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = LISTENING.search(line)
        if match:
            return proc, match.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit(f"pin serve did not start: {(workdir / 'serve.log').read_text()[-800:]}")


def bench_db(name: str, db: str, lock: Path, hosts: Path, workdir: Path) -> dict[str, float]:
    """The figures of one database."""
    admin = pin("serve", "token", "create", "--scope", "admin", "--db", db).strip()
    reporter = pin("serve", "token", "create", "--scope", "report", "--db", db).strip()
    proc, url = serve(db, workdir)
    try:
        pushed = json.loads(request(f"{url}/api/v1/locks", admin, lock.read_bytes(), "POST",
                                    "application/toml"))
        request(f"{url}/api/v1/assignments/groups/bench", admin,
                json.dumps({"lock": pushed["content_hash"]}).encode(), "PUT")
        rounds = []
        for _ in range(ROUNDS):
            out = subprocess.run([sys.executable, str(ROOT / "bench/serveload.py"), url,
                                  reporter, str(hosts), str(CLIENTS)], check=True,
                                 capture_output=True, text=True).stdout
            rounds.append(json.loads(out))
            if rounds[-1]["errors"]:
                raise SystemExit(f"{name}: reports refused: {rounds[-1]}")
        print(f"{name} rounds: " + "; ".join(
            f"{r['per_s']:.0f}/s p50 {r['p50_ms']} ms p99 {r['p99_ms']} ms" for r in rounds))

        def page() -> float:
            t = time.perf_counter()
            body = request(f"{url}/?limit={HOSTS}", admin)
            took = time.perf_counter() - t
            if body.count(b"<tr") < HOSTS:
                raise SystemExit(f"{name}: the fleet page lists fewer than {HOSTS} hosts")
            return took

        page()  # warm
        listing = statistics.median(page() for _ in range(5))
        first = in_chromium(f"{url}/", admin, 500)
        every = in_chromium(f"{url}/?limit={HOSTS}", admin, HOSTS)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {
        "per_s": statistics.median(r["per_s"] for r in rounds),
        "p50": statistics.median(r["p50_ms"] for r in rounds),
        "p99": statistics.median(r["p99_ms"] for r in rounds),
        "page": listing,
        **({"browser": first} if first is not None else {}),
        **({"browser_all": every} if every is not None else {}),
    }


def in_chromium(url: str, token: str, rows_wanted: int) -> float | None:
    """Median seconds of 3 loads of ``url`` in headless chromium until the load event and
    a layout, ``rows_wanted`` table rows checked; ``None`` without chromium or playwright.
    """
    from tests.support.browser import ARGS, CHROMIUM

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(CHROMIUM).is_file():
        return None
    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(extra_http_headers={"Authorization": f"Bearer {token}"})
            page.goto(url, wait_until="load", timeout=60_000)  # warm
            for _ in range(3):
                t = time.perf_counter()
                page.goto(url, wait_until="load", timeout=60_000)
                page.evaluate("document.body.offsetHeight")  # laid out
                times.append(time.perf_counter() - t)
            rows = page.locator("#fleet tbody tr").count()
            if rows != rows_wanted:
                raise SystemExit(f"chromium shows {rows} host rows, not {rows_wanted}")
        finally:
            browser.close()
    return statistics.median(times)


def inputs(tmp: Path, count: int) -> tuple[Path, Path]:
    """In ``tmp``: the lock frozen from the recorded MI300X host and ``count`` generated
    snapshots as ``name<TAB>snapshot`` lines (bench/serveload.py's input).
    """
    lock = tmp / "pin.lock"
    pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
        "-o", str(lock))
    pin("freeze", str(lock), "--root", str(HOST / "root"), "--replay",
        str(HOST / "commands.toml"))
    hosts = tmp / "hosts.tsv"
    with hosts.open("w") as f:
        for name, text in generate(base_snapshot(), count, envelopes=0.0):
            f.write(f"{name}\t{text}\n")
    return lock, hosts


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lock, hosts = inputs(tmp, HOSTS)
        figures = {"SQLite": bench_db("SQLite", f"sqlite:///{tmp / 'pin.db'}", lock, hosts,
                                      tmp)}
        server = start_postgres(durable=True)  # fsync and synchronous commit on
        try:
            figures["PostgreSQL"] = bench_db("PostgreSQL", server.new_database(), lock,
                                             hosts, tmp)
        finally:
            server.stop()
    results: dict[str, tuple[float, float]] = {}
    for name, fig in figures.items():
        # report() marks a figure over its target; reports/s is better when higher, so it
        # is printed as seconds per 1,000 reports (target 1 s).
        results[f"pin serve {name}: s per 1,000 reports ({CLIENTS} clients)"] = (
            1000 / fig["per_s"], 1.0)
        results[f"pin serve {name}: report p50 ms"] = (fig["p50"], 100.0)
        results[f"pin serve {name}: report p99 ms"] = (fig["p99"], 100.0)
        if "browser" in fig:
            results[f"pin serve {name}: fleet page (500 of 10k) in chromium s"] = (
                fig["browser"], 1.0)
        results[f"pin serve {name}: all 10k rows, GET s"] = (fig["page"], 1.0)
        if "browser_all" in fig:
            results[f"pin serve {name}: all 10k rows in chromium s"] = (
                fig["browser_all"], float("inf"))
    for name, fig in figures.items():
        print(f"{name}: {fig['per_s']:.0f} reports/s (target >= 1,000)")
    report(results)


if __name__ == "__main__":
    main()
