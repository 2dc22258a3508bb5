"""Run uv on a :class:`PackagesPlan` (``uv pip compile --format pylock.toml``) and turn its
failures into pin's errors.

:func:`run_uv` runs ``uv pip compile --format pylock.toml`` (PEP 751: every file with its URL
and sha256) with ``--no-build``: pin builds images with the network off from wheels only, so a
package that publishes only an sdist for the version chosen fails the resolution, naming it.
Isolation, as ``pin audit --requirement`` does (:mod:`pinning.audit.closure`): ``--no-config``
and ``UV_NO_CONFIG=1``; the ``UV_*`` variables that change what is resolved are dropped
(:func:`pinning.util.proc.uv_environment`), the transport ones (cache, certificates, timeouts,
offline) kept. uv's message is quoted clipped, with index credentials hidden.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pinning.errors import BuildError, UsageError
from pinning.util.proc import find_uv, uv_environment
from pinning.util.text import printable

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_UV_CHARS", "MAX_UV_LINES", "PackagesPlan", "clip_message",
           "index_failure", "run_uv", "sdist_only", "uv_pylock_command"]

DEFAULT_TIMEOUT_S = 900.0
"""How long uv may take, in seconds (PyTorch's indexes are large pages)."""

MAX_UV_LINES = 30
MAX_UV_CHARS = 4000
"""The bounds of uv's message as quoted: lines, characters."""

_FRESH = "run with --fresh to resolve from the frameworks and the requirements given alone"


@dataclass(frozen=True)
class PackagesPlan:
    """What :func:`run_uv` resolves: ``requirements`` (PEP 508 lines, in order: frameworks,
    requirements, ``[packages]`` pins), ``indexes`` (the first the default index),
    ``python_version`` (``3.12``), ``python_platform`` (``x86_64-manylinux_2_28``),
    ``recorded`` (the requirements ``[python]`` keeps for the next run) and ``notes`` (how
    each framework became a requirement, for the user).
    """

    requirements: tuple[str, ...]
    indexes: tuple[str, ...]
    python_version: str
    python_platform: str
    recorded: tuple[str, ...]
    notes: tuple[str, ...]


def uv_pylock_command(uv: str, plan: PackagesPlan) -> list[str]:
    """The argv of ``uv pip compile`` reading requirements on stdin and printing PEP 751
    ``pylock.toml`` (every file's URL and sha256; ``--generate-hashes`` too, which changed
    nothing in that output as observed with uv 0.13.9), with ``--no-build``, ``--no-config``,
    no colour or progress, the target Python and platform, and the running interpreter for
    discovery (uv never downloads one). ``indexes[0]`` is ``--index-url``, the rest
    ``--extra-index-url``: uv consults the extra ones first ("All indexes provided via this
    flag take priority over the index specified by ``--index-url``", ``uv help pip compile``,
    uv 0.13.9) and takes each package from the first index that has it (``--index-strategy``
    ``first-index``, the default: https://docs.astral.sh/uv/concepts/indexes/, "Searching
    across multiple indexes", date not recorded).
    """
    cmd = [uv, "--no-config", "pip", "compile", "-", "--format", "pylock.toml",
           "--generate-hashes", "--no-header", "--no-build", "--quiet", "--color=never",
           "--no-python-downloads", f"--python={sys.executable}",
           f"--python-version={plan.python_version}",
           f"--python-platform={plan.python_platform}"]
    for k, url in enumerate(plan.indexes):
        cmd.append(f"--index-url={url}" if k == 0 else f"--extra-index-url={url}")
    return cmd


def clip_message(stderr: str) -> str:
    """The message of uv bounded to :data:`MAX_UV_LINES` lines and :data:`MAX_UV_CHARS`
    characters, control characters escaped.
    """
    lines = [ln.rstrip() for ln in stderr.strip().splitlines() if ln.strip()]
    if len(lines) > MAX_UV_LINES:
        lines = [*lines[:MAX_UV_LINES], f"... ({len(lines) - MAX_UV_LINES} more lines)"]
    text = "\n".join(lines)
    if len(text) > MAX_UV_CHARS:
        text = text[:MAX_UV_CHARS] + " ..."
    return printable(text) or "(uv printed no message)"


def sdist_only(stderr: str) -> list[str]:
    """The ``NAME==VERSION`` uv's message says "has no usable wheels" of (only an sdist, or
    no wheel for the target, under ``--no-build``), in order, once each.
    """
    found: list[str] = []
    for line in stderr.splitlines():
        words = line.split()
        for i, word in enumerate(words[:-4]):
            if words[i + 1:i + 5] == ["has", "no", "usable", "wheels"]:
                name = word.strip("`'\",.")
                if name not in found:
                    found.append(name)
    return found


_INDEX_FAILURES = (
    "failed to fetch", "error sending request", "could not connect", "dns error",
    "invalid peer certificate", "tls handshake", "http status server error",
    "lack of valid authentication credentials", "returned a 403 forbidden",
    "returned a 401 unauthorized",
)
"""Phrases of uv's message (lower case, whitespace collapsed) that say an index could not be
read, not that the requirements have no solution. As uv 0.13.9 printed them against stub
indexes on 127.0.0.1 (date not recorded): a closed port, ``Failed to fetch: URL`` / ``error
sending request for url`` / ``tcp connect error``; an unknown host, ``dns error``; TLS
spoken to a plain-http port, ``error sending request``; HTTP 500, ``HTTP status server
error (500 Internal Server Error)``; HTTP 401, a hint "could not be queried due to a lack of
valid authentication credentials (401 Unauthorized)"; HTTP 403, "returned a 403 Forbidden
error". A 404 reads "was not found in the package registry", a resolution failure."""


def index_failure(stderr: str) -> bool:
    """True when uv's message ``stderr`` says an index could not be reached or read
    (connection, DNS, TLS, HTTP 5xx, 401 or 403: :data:`_INDEX_FAILURES`), false for a
    resolution failure of the requirements themselves.
    """
    text = " ".join(stderr.split()).lower()
    return any(phrase in text for phrase in _INDEX_FAILURES)


def _scrub(stderr: str, indexes: Sequence[str]) -> str:
    """``stderr`` with the ``USER:PASSWORD`` of ``indexes``, and the password alone (4
    characters or more), written as ``***``: uv hides them itself; this keeps them out of
    pin's message whatever uv prints.
    """
    for url in indexes:
        authority = url.partition("//")[2].split("/", 1)[0]
        if "@" in authority:
            userinfo = authority.rpartition("@")[0]
            password = userinfo.partition(":")[2]
            stderr = stderr.replace(userinfo, "***")
            if len(password) >= 4:
                stderr = stderr.replace(password, "***")
    return stderr


def _uv_hint(stderr: str) -> str:
    names = sdist_only(stderr)
    if names or "no usable wheels" in stderr:
        return (f"No wheel for the target: {', '.join(names) or 'see above'}. pin builds "
                "images with the network off from wheels only: pin a version of each that "
                "publishes a wheel for this Python and platform (--requirement "
                "'NAME==VERSION'), or choose another target.")
    if index_failure(stderr):
        return ("An index could not be read: check --index, the network and the proxy "
                "settings (HTTPS_PROXY, NO_PROXY).")
    return (f"Check the names and versions on the indexes ({_FRESH} when [packages] holds "
            "pins of an older stack; --index for a package that is not on PyPI).")


def run_uv(plan: PackagesPlan, *, timeout: float = DEFAULT_TIMEOUT_S, uv: str | None = None
           ) -> str:
    """Run :func:`uv_pylock_command` on ``plan`` and return uv's ``pylock.toml`` text.
    ``timeout`` in seconds. Raises :class:`BuildError` (exit 8) when uv cannot reach or read
    an index (:func:`index_failure`: connection, DNS, TLS, HTTP 5xx, 401, 403) or does not
    finish within ``timeout``; :class:`UsageError` (exit 2) when uv is missing or the
    requirements have no solution (no matching version, no wheel for the target). uv's
    reason is quoted, clipped, control characters escaped, index credentials as ``***``.
    """
    cmd = uv_pylock_command(uv or find_uv("pin lock packages"), plan)
    try:
        proc = subprocess.run(cmd, input="\n".join(plan.requirements) + "\n",
                              capture_output=True, text=True, encoding="utf-8",
                              errors="replace", env=uv_environment(os.environ),
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise BuildError(f"uv did not resolve the packages within {timeout:g} s.",
                         hint="Check that the indexes are reachable (proxy settings, "
                              "--index), or run again with a warm uv cache.") from None
    except OSError as exc:
        raise UsageError(f"uv could not be run ({cmd[0]}: {exc.strerror or exc}).") from None
    if proc.returncode != 0:
        stderr = _scrub(proc.stderr, plan.indexes)
        what = (f"({', '.join(plan.requirements[:4])}"
                f"{' ...' if len(plan.requirements) > 4 else ''})")
        if index_failure(stderr):
            raise BuildError(f"uv could not read an index while resolving {what}:\n"
                             f"{clip_message(stderr)}", hint=_uv_hint(stderr))
        raise UsageError(f"uv could not resolve the Python environment {what}:\n"
                         f"{clip_message(stderr)}", hint=_uv_hint(stderr))
    return proc.stdout
