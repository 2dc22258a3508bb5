"""The Slurm prolog's and health check's report to a pin service (``[report] url``).

Best effort by design: the node's own verdict, its drain and its exit code are decided
before the report is sent and never depend on it. The report is bounded by ``[report]
timeout-s`` and by what the run's deadline (``[slurm] deadline-s``) has left, hard (in a
daemon thread, :func:`~pinning.fleet.slurm.bounded`), so a service that accepts the
connection and never answers cannot hold the prolog past its deadline.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pinning.errors import PinError
from pinning.fleet.slurm import MIN_CALL_S, Deadline, bounded

if TYPE_CHECKING:
    from pinning.fleet.config import ReportConfig

__all__ = ["report_node"]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def report_node(report: ReportConfig, node: str, snapshot: bytes | None,
                lock_hash: str | None, *, environ: Mapping[str, str], deadline: Deadline,
                notify: Callable[[str], None] | None = None) -> str:
    """Post ``snapshot`` (the probed facts as ``pin probe -o`` writes them; ``None``: not
    probed) to ``report.url`` as node ``node``'s report (``?lock=lock_hash``, the lock the
    node was judged by; ``?group=`` ``report.group``), with the token from ``$PIN_TOKEN``,
    ``$PIN_TOKEN_FILE`` or ``report.token_file``. Returns the line for the outcome:
    ``reported to URL: drift (pin: ...)``, or ``report to URL failed: <why>`` /
    ``not reported to URL: <why>``, which also goes to ``notify`` (default: one line on
    stderr). Never raises.
    """
    from pinning.remote.client import ServiceClient, service_label
    from pinning.remote.token import resolve_token

    say = notify or _stderr
    assert report.url is not None
    label = service_label(report.url)
    timeout = min(report.timeout_s, deadline.left() - MIN_CALL_S)
    if snapshot is None or lock_hash is None:
        line = f"not reported to {label}: the node was not probed"
        say(f"pin: note: {line}")
        return line
    if timeout < MIN_CALL_S:
        line = (f"not reported to {label}: no time left in the run's deadline "
                f"({deadline.seconds:g} s)")
        say(f"pin: note: {line}")
        return line
    body, lock = snapshot, lock_hash

    def send() -> dict[str, object]:
        token = resolve_token(None, environ, lambda: report.token_file, say)
        client = ServiceClient(report.url or "", token.secret if token else None, timeout,
                               warn=say, token_source=token.source if token else None)
        try:
            return client.post_report(node, body, group=report.group, lock=lock)
        finally:
            client.close()

    try:
        answer = bounded(send, timeout + MIN_CALL_S, f"the report to {label}")
    except PinError as err:
        why = " ".join(err.message.split())
    except Exception as exc:  # a bug must not fail the prolog: the report is best effort
        why = f"internal error ({type(exc).__name__}); please report it"
    else:
        result = answer.get("result") or "unknown"
        reason = answer.get("reason")
        line = f"reported to {label}: {result}" + (f" ({reason})" if reason else "")
        say(f"pin: {line}")
        return line
    line = f"report to {label} failed: {why}"
    say(f"pin: warning: {line}")
    return line
