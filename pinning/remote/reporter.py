"""Posting a ``pin verify`` run's host facts to a pin service and wording its verdict
(:class:`VerifyReporter`); the CLI chooses the host and group names and the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.remote.client import ServiceClient

__all__ = ["VerifyReporter"]


class VerifyReporter:
    """Posts a ``pin verify`` run's host facts to a service and words its verdict.

    ``client``: the service; ``host`` / ``group``: where the report is filed.
    """

    def __init__(self, client: ServiceClient, host: str, group: str | None) -> None:
        self.client, self.host, self.group = client, host, group

    def send(self, snapshot: bytes, lock_hash: str, *, node_only: bool = False
             ) -> dict[str, Any]:
        """POST ``snapshot``, the bytes exactly as ``pin probe -o`` writes them
        (:func:`~pinning.probe.snapshot.snapshot_text`, UTF-8), with ``?lock=lock_hash`` (the
        lock the service falls back to when it assigns none); ``node_only``: judged as ``pin
        verify --node-only`` judges. Returns the service's JSON answer. Raises
        ``ServiceError`` (exit 13).
        """
        return self.client.post_report(self.host, snapshot, group=self.group, lock=lock_hash,
                                       node_only=node_only)

    def line(self, answer: dict[str, Any], lock_hash: str) -> str:
        """``reported to URL: drift (pin: ...)``; the service's lock named when it judged by
        another lock than ``lock_hash`` (its assignment for the host or group).
        """
        result = str(answer.get("result") or "unknown")
        reason = answer.get("reason")
        text = f"reported to {self.client.label}: {result}" + (f" ({reason})" if reason else "")
        theirs = answer.get("lock_hash")
        if isinstance(theirs, str) and theirs != lock_hash:
            text += f"; judged against {theirs}, the lock the service assigns to {self.host}"
        return printable(text, newlines=False)
