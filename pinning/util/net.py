"""Which hosts count as this machine, where plain ``http`` is accepted (pin's traffic goes
to loopback or over https). One strict rule for every caller: the name ``localhost`` or an
address in ``127.0.0.0/8`` / ``::1``; other names under ``.localhost`` are not taken on trust
(a resolver may map them anywhere).
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` (any case) and a loopback address (``127.0.0.0/8``, ``::1``,
    bracketed or not); ``host`` is a host name without a port. Pure; raises nothing.
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
