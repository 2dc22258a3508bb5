"""``/metrics``: pin serve's state in Prometheus's text exposition format (version 0.0.4,
https://prometheus.io/docs/instrumenting/exposition_formats/, read 2026-12-01).

A custom collector (prometheus_client's "custom collectors",
https://prometheus.github.io/client_python/collector/custom/, read 2026-12-01) reads the
store at every scrape, in its own registry (no global state):

- ``pin_hosts{status,lock}`` gauge: hosts whose latest report has ``status`` for the lock
  whose short digest (the first 12 hex digits) is ``lock``;
- ``pin_drift_reasons{fact}`` gauge: drifting hosts per drifting fact's name
  (``firmware.mec``, ``rocm.version``: never a value read from a host, and no GPU index,
  so a new firmware value makes no new series; at most :data:`MAX_FACT_SERIES` names, the
  rest counted under ``other``);
- ``pin_host_last_report_age_seconds{host}`` gauge: seconds since each host's latest report;
- ``pin_last_report_age_seconds`` gauge: the largest of those (0 with no host);
- ``pin_reports_total`` counter: reports this server acknowledged since it started.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from pinning.serve.storage.store import Store

__all__ = ["CONTENT_TYPE", "StoreCollector", "render"]

#: The most ``pin_drift_reasons`` series one scrape gives (the most common facts first).
MAX_FACT_SERIES = 64
#: The Content-Type of the text exposition format 0.0.4.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def short_digest(lock_hash: str) -> str:
    """The first 12 hex digits of ``sha256:<hex>`` (the Slurm ``pin_<d12>`` feature's)."""
    return lock_hash.removeprefix("sha256:")[:12]


class StoreCollector:
    """Collects the metrics of the module docstring from ``store``; ``reports`` gives the
    acknowledged report count, ``clock`` the current time (aware UTC).
    """

    def __init__(self, store: Store, reports: Callable[[], int],
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.store, self.reports, self.clock = store, reports, clock

    def collect(self) -> Iterator[Metric]:
        """One scrape's metric families. Raises ``UsageError`` when the store fails."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        hosts = GaugeMetricFamily("pin_hosts", "Hosts whose latest report has this status "
                                  "for this lock (short digest).", labels=["status", "lock"])
        for summary in self.store.fleet_summaries():
            for status, n in sorted(summary.hosts.items()):
                hosts.add_metric([status, short_digest(summary.lock_hash)], n)
        yield hosts
        reasons = GaugeMetricFamily("pin_drift_reasons", "Drifting hosts per fact of their "
                                    "latest report.", labels=["fact"])
        for fact, n in fact_counts(self.store.drift_by_fact()).items():
            reasons.add_metric([fact], n)
        yield reasons
        now = self.clock()
        ages = GaugeMetricFamily("pin_host_last_report_age_seconds",
                                 "Seconds since the host's latest report.", labels=["host"])
        oldest = 0.0
        for host, seen in self.store.last_seen_by_host().items():
            age = max(0.0, (now - seen).total_seconds())
            oldest = max(oldest, age)
            ages.add_metric([host], age)
        yield ages
        yield GaugeMetricFamily("pin_last_report_age_seconds",
                                "Seconds since the oldest of the hosts' latest reports.",
                                value=oldest)
        yield CounterMetricFamily("pin_reports", "Host reports acknowledged by this server "
                                  "since it started.", value=self.reports())


def fact_counts(by_fact: dict[str, int]) -> dict[str, int]:
    """``by_fact`` (drifting hosts per fact name, :meth:`Store.drift_by_fact`) cut to at
    most :data:`MAX_FACT_SERIES` names (most hosts first, then by name), the rest summed
    as ``other`` (a host there may count more than once).
    """
    ranked = sorted(by_fact.items(), key=lambda kv: (-kv[1], kv[0]))
    kept = dict(ranked[:MAX_FACT_SERIES])
    rest = sum(n for _, n in ranked[MAX_FACT_SERIES:])
    if rest:
        kept["other"] = kept.get("other", 0) + rest
    return dict(sorted(kept.items()))


def render(collector: StoreCollector) -> bytes:
    """The text exposition of ``collector``'s metrics (a private registry)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)
