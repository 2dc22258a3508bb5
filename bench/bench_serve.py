"""Benchmarks for issues 18 and 33 (printed, not asserted): pin serve ingesting host reports.

For SQLite (the default file: WAL, synchronous=NORMAL) and a real PostgreSQL (Debian's
server, started here on a private port with its durable defaults: fsync and synchronous
commit on): `pin serve` runs as its own process; one lock is pushed and assigned to the
group ``bench``; 10,000 host snapshots generated from the recorded MI300X host
(tests/support/fleetgen.py: 70 % unchanged, 30 % with one or two drifts) are posted by 50
concurrent keep-alive clients (bench/serveload.py, another process), each report verified by
the service against the lock and committed before it is answered. Beside it runs the bare
endpoint (bench/serve_bare.py: the same route and server settings, reads the body, answers
201, nothing else). Rounds alternate pin, bare, pin, bare, ... (the first pin round creates
the 10,000 hosts, the next ones add history); medians of:

- pin's reports/s over the bare endpoint's, each pair run back to back (issue 33: >= 0.5x),
  and each side's reports/s
- p50 and p99 latency of a report, ms (issue 33: p99 <= 60 at the machine's load, printed
  beside it: the 1-minute load average when each round ended)
- PostgreSQL only: two `pin serve` processes on the one database, the 50 clients split
  between them, over one process, rounds alternating (issue 33: >= 1.6x). On a 2-core
  machine that also runs PostgreSQL and the load generator, two processes cannot have two
  cores to themselves: the figure shows what a second process adds here, not on a host
  with a core per process.
- the dashboard's fleet page over the 10,000 stored hosts, loaded in headless chromium
  (Debian's, driven by Playwright) until its load event and laid out: the default page (its
  first 500 rows, counts of all 10,000, links to the rest), median of 3 (target <= 1 s),
  when chromium is installed (``PIN_BENCH_BROWSER=0`` skips it)
- all 10,000 rows on one page (?limit=10000): one GET, whole body, median of 5 (target
  <= 1 s); and in chromium, median of 3 (printed; no target: see DEFAULT_LIMIT in
  pinning/serve/dashboard/fleet.py)

``PIN_BENCH_HOSTS`` (default 10000) and ``PIN_BENCH_ROUNDS`` (default 3) shorten a run.
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
from typing import Any

from common import report
from servecpu import Meter, cores, pin_postgres

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fleetgen import base_snapshot, generate  # noqa: E402
from tests.support.postgres import start_postgres  # noqa: E402

PIN = str(Path(sys.executable).with_name("pin"))
HOST = ROOT / "tests/data/hosts/mi300x-rocm7.1"
HOSTS = int(os.environ.get("PIN_BENCH_HOSTS", "10000"))
ROUNDS = int(os.environ.get("PIN_BENCH_ROUNDS", "3"))
BROWSER = os.environ.get("PIN_BENCH_BROWSER", "1") != "0"
CLIENTS = 50
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


def taskset(core: int | None) -> list[str]:
    """The ``taskset`` prefix pinning a command to ``core`` (``[]``: none)."""
    return [] if core is None else ["taskset", "-c", str(core)]


def start(argv: list[str], workdir: Path,
          core: int | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start a server printing pin serve's listening line (on ``core`` when given); the
    process and its URL.
    """
    proc = subprocess.Popen([*taskset(core), *argv], stdout=subprocess.PIPE,
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
    raise SystemExit(f"{argv[:3]} did not start: {(workdir / 'serve.log').read_text()[-800:]}")


def serve(db: str, workdir: Path, core: int | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start `pin serve --port 0 --db DB` (on ``core`` when given); the process and its URL."""
    return start([PIN, "serve", "--db", db, "--port", "0"], workdir, core)


def bare(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    """Start the bare endpoint (bench/serve_bare.py); the process and its URL."""
    return start([sys.executable, str(ROOT / "bench/serve_bare.py")], workdir)


def stop(*procs: subprocess.Popen[str]) -> None:
    """Stop servers gracefully (SIGTERM), waiting for each."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=60)


def load(urls: list[str], token: str, hosts: Path, name: str, meter: Meter,
         core: int | None = None) -> dict[str, Any]:
    """One round of bench/serveload.py (on ``core`` when given) against ``urls`` (split
    between them); its figures, the 1-minute load average when it ended (``load``) and
    ``meter``'s CPU microseconds per report of each process (``cpu``).
    """
    argv = [sys.executable, str(ROOT / "bench/serveload.py"), ",".join(urls), token,
            str(hosts), str(CLIENTS)]
    out = subprocess.run([*taskset(core), *argv], check=True, capture_output=True,
                         text=True).stdout
    figures: dict[str, Any] = json.loads(out)
    if figures["errors"]:
        raise SystemExit(f"{name}: reports refused: {figures}")
    figures["load"] = round(os.getloadavg()[0], 2)
    figures["cpu"] = meter.per_report(figures["reports"])
    return figures


def prepare(db: str, url: str, lock: Path) -> tuple[str, str]:
    """Tokens of ``db`` (admin, report) after pushing ``lock`` through ``url`` and
    assigning it to the group ``bench``.
    """
    admin = pin("serve", "token", "create", "--scope", "admin", "--db", db).strip()
    reporter = pin("serve", "token", "create", "--scope", "report", "--db", db).strip()
    pushed = json.loads(request(f"{url}/api/v1/locks", admin, lock.read_bytes(), "POST",
                                "application/toml"))
    request(f"{url}/api/v1/assignments/groups/bench", admin,
            json.dumps({"lock": pushed["content_hash"]}).encode(), "PUT")
    return admin, reporter


def rounds_line(label: str, rounds: list[dict[str, Any]]) -> str:
    """One printed line of ``rounds``' figures, CPU us per report of each process too."""
    return f"{label} rounds: " + "; ".join(
        f"{r['per_s']:.0f}/s p50 {r['p50_ms']} ms p99 {r['p99_ms']} ms load {r['load']} "
        "(CPU us/report: " + ", ".join(f"{k} {v:.0f}" for k, v in r["cpu"].items()) + ")"
        for r in rounds)


def cpu_median(rounds: list[dict[str, Any]], *names: str) -> float:
    """Median over ``rounds`` of the summed CPU us per report of the processes ``names``."""
    return float(statistics.median(sum(r["cpu"][n] for n in names) for r in rounds))


def bench_db(name: str, db: str, lock: Path, hosts: Path, workdir: Path,
             data: Path | None = None) -> dict[str, float]:
    """The figures of one database (PostgreSQL's data folder ``data``, for its CPU): pin
    against the bare endpoint, rounds alternating, then the fleet page's.
    """
    proc, url = serve(db, workdir)
    floor, floor_url = bare(workdir)
    try:
        admin, reporter = prepare(db, url, lock)
        pins, bares = [], []
        for _ in range(ROUNDS):
            pins.append(load([url], reporter, hosts, name, Meter({"pin": proc.pid}, data)))
            bares.append(load([floor_url], reporter, hosts, "bare",
                              Meter({"bare": floor.pid}, None)))
        print(rounds_line(f"{name} pin", pins))
        print(rounds_line(f"{name} bare", bares))
        pages = fleet_pages(name, url, admin)
    finally:
        stop(proc, floor)
    return {
        "per_s": statistics.median(r["per_s"] for r in pins),
        "bare_per_s": statistics.median(r["per_s"] for r in bares),
        "ratio": statistics.median(p["per_s"] / b["per_s"]
                                for p, b in zip(pins, bares, strict=True)),
        "p50": statistics.median(r["p50_ms"] for r in pins),
        "p99": statistics.median(r["p99_ms"] for r in pins),
        "load": statistics.median(r["load"] for r in pins),
        "pin_us": cpu_median(pins, *pins[0]["cpu"]),
        "bare_us": cpu_median(bares, *bares[0]["cpu"]),
        **pages,
    }


def fleet_pages(name: str, url: str, admin: str) -> dict[str, float]:
    """The fleet page's figures: one GET of every row, and chromium's when it is there."""
    def page() -> float:
        t = time.perf_counter()
        body = request(f"{url}/?limit={HOSTS}", admin)
        took = time.perf_counter() - t
        if body.count(b"<tr") < HOSTS:
            raise SystemExit(f"{name}: the fleet page lists fewer than {HOSTS} hosts")
        return took

    page()  # warm
    figures = {"page": statistics.median(page() for _ in range(5))}
    first = in_chromium(f"{url}/", admin, min(500, HOSTS)) if BROWSER else None
    every = in_chromium(f"{url}/?limit={HOSTS}", admin, HOSTS) if BROWSER else None
    if first is not None:
        figures["browser"] = first
    if every is not None:
        figures["browser_all"] = every
    return figures


def bench_scale(db: str, hosts: Path, workdir: Path, data: Path) -> dict[str, Any]:
    """Two `pin serve` processes on the PostgreSQL database ``db`` (already prepared by
    :func:`bench_db`; its data folder ``data``), the clients split between them, against
    one; rounds alternating. Each pin process, PostgreSQL and the load generator are pinned
    to cores (:func:`layout`), and the CPU each spends per report is measured.
    """
    place = layout()
    pin_postgres(data, {place["PostgreSQL"]})
    reporter = pin("serve", "token", "create", "--scope", "report", "--db", db).strip()
    first, url1 = serve(db, workdir, place["pin 1"])
    second, url2 = serve(db, workdir, place["pin 2"])
    gen = place["load generator"]
    try:
        ones, twos = [], []
        for _ in range(ROUNDS):
            ones.append(load([url1], reporter, hosts, "one process",
                             Meter({"pin 1": first.pid}, data), gen))
            twos.append(load([url1, url2], reporter, hosts, "two processes",
                             Meter({"pin 1": first.pid, "pin 2": second.pid}, data), gen))
        print(rounds_line("PostgreSQL one process", ones))
        print(rounds_line("PostgreSQL two processes", twos))
    finally:
        stop(first, second)
        pin_postgres(data, set(cores()))
    return {"one": statistics.median(r["per_s"] for r in ones),
            "two": statistics.median(r["per_s"] for r in twos),
            "ratio": statistics.median(t["per_s"] / o["per_s"]
                                     for o, t in zip(ones, twos, strict=True)),
            "p99": statistics.median(r["p99_ms"] for r in twos),
            "pin_one": cpu_median(ones, "pin 1"), "pin_two": cpu_median(twos, "pin 1", "pin 2"),
            "pg_one": cpu_median(ones, "PostgreSQL"), "pg_two": cpu_median(twos, "PostgreSQL"),
            "layout": place}


def layout() -> dict[str, int]:
    """The core of each process of :func:`bench_scale`: the pin processes on the first two
    cores, PostgreSQL and the load generator on the next ones, wrapping around on a machine
    with fewer than four (on two cores: PostgreSQL shares the first pin process's core, the
    load generator the second's).
    """
    have = cores()
    return {name: have[n % len(have)] for n, name in enumerate(
        ("pin 1", "pin 2", "PostgreSQL", "load generator"))}


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
            db = server.new_database()
            data = server.root / "data"
            figures["PostgreSQL"] = bench_db("PostgreSQL", db, lock, hosts, tmp, data)
            scale = bench_scale(db, hosts, tmp, data)
        finally:
            server.stop()
    results: dict[str, tuple[float, float]] = {}
    for name, fig in figures.items():
        # report() marks a figure over its target, so "higher is better" figures are
        # printed inverted: bare's reports/s over pin's (issue 33: <= 2, i.e. pin >= 0.5x).
        results[f"pin serve {name}: bare/pin reports per s"] = (1 / fig["ratio"], 2.0)
        results[f"pin serve {name}: s per 1,000 reports ({CLIENTS} clients)"] = (
            1000 / fig["per_s"], 1.0)
        results[f"pin serve {name}: report p50 ms"] = (fig["p50"], 100.0)
        results[f"pin serve {name}: report p99 ms"] = (fig["p99"], 60.0)
        if "browser" in fig:
            results[f"pin serve {name}: fleet page (500 of 10k) in chromium s"] = (
                fig["browser"], 1.0)
        results[f"pin serve {name}: all 10k rows, GET s"] = (fig["page"], 1.0)
        if "browser_all" in fig:
            results[f"pin serve {name}: all 10k rows in chromium s"] = (
                fig["browser_all"], float("inf"))
    results["pin serve PostgreSQL: 1 process / 2 processes"] = (1 / scale["ratio"], 1 / 1.6)
    # The scale-out as work per report: both processes' CPU per report over one's (no
    # added cost from sharing the database: <= 2 / 1.6, i.e. >= 1.6x with a core each).
    results["pin serve PostgreSQL: pin CPU/report, 2 proc / 1"] = (
        scale["pin_two"] / scale["pin_one"], 2 / 1.6)
    summary(figures, scale)
    report(results)


def summary(figures: dict[str, dict[str, float]], scale: dict[str, Any]) -> None:
    """Print the closing lines: each database's ratio, and the scale-out both as measured
    throughput and as work per report (what it means on a machine of few cores).
    """
    for name, fig in figures.items():
        print(f"{name}: pin {fig['per_s']:.0f} reports/s, bare {fig['bare_per_s']:.0f}/s: "
              f"{fig['ratio']:.2f}x (goal >= 0.5x); p99 {fig['p99']} ms (goal <= 60) at "
              f"load {fig['load']}; CPU per report: pin's side {fig['pin_us']:.0f} us, "
              f"bare's {fig['bare_us']:.0f} us (load generator included)")
    print(f"PostgreSQL: two processes {scale['two']:.0f} reports/s, one {scale['one']:.0f}/s: "
          f"{scale['ratio']:.2f}x (goal >= 1.6x; {os.cpu_count()} cores, pinned "
          f"{scale['layout']}); p99 {scale['p99']} ms")
    implied = 2 * scale["pin_one"] / scale["pin_two"]
    print(f"PostgreSQL: CPU per report, one process: pin {scale['pin_one']:.0f} us, PostgreSQL "
          f"{scale['pg_one']:.0f} us; two processes: pin (both) {scale['pin_two']:.0f} us, "
          f"PostgreSQL {scale['pg_two']:.0f} us. With a core per pin process (and the "
          f"database and clients elsewhere) two would answer {implied:.2f}x one (goal >= "
          "1.6x): the measured throughput ratio above cannot show that when the pin "
          "processes, PostgreSQL and the load generator share the cores")


if __name__ == "__main__":
    main()
