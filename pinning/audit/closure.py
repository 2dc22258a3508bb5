"""The dependency closure of ``pin audit --requirement SPEC``, resolved with uv from index
metadata alone.

:func:`resolve_closure` runs ``uv pip compile`` (the ``uv`` PyPI package, a dependency of
pin) on the requirements and turns its ``requirements.txt`` output into one
:class:`~pinning.audit.model.DeclaredPackage` per distribution of the closure
(``origin="closure"``), which the package knowledge then judges one by one.

Metadata only. uv reads each candidate's core metadata from the index: the PEP 658 / PEP 714
``.whl.metadata`` file when the index serves one (PyPI does), otherwise a ranged read of the
wheel's central directory; no wheel is installed and none is downloaded whole when the index
serves metadata files. ``--no-build`` means no source distribution is ever built (a build runs
the package's own code): when a version publishes only an sdist, uv treats it as having no
usable wheel, so the resolution fails with uv's reason ("has no usable wheels ... building
from source is disabled") unless another version with a wheel satisfies the requirements;
pin reports that reason as a :class:`~pinning.errors.UsageError`.

Isolation. ``--no-config`` (and ``UV_NO_CONFIG=1``): no ``uv.toml`` or ``[tool.uv]`` of the
user or the working directory is read; ``UV_*`` variables that change *what* is resolved
(indexes, constraints, overrides, torch backend, pre-release or resolution strategy, exclude-
newer, config file, Python) are dropped, while the transport ones (cache dir, certificates,
offline mode, timeouts, insecure hosts, concurrency) and the proxy variables are kept. The
indexes are exactly ``index_urls`` (PyPI when empty), so the same call resolves the same way
for everyone.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Sequence

from pinning.audit.model import DeclaredPackage, Skipped
from pinning.errors import UsageError
from pinning.util.proc import find_uv, uv_environment
from pinning.util.text import printable

__all__ = ["DEFAULT_PLATFORM", "DEFAULT_TIMEOUT_S", "parse_compile_output", "parse_via",
           "resolve_closure", "run_uv", "uv_compile_command", "uv_environment"]

DEFAULT_PLATFORM = "x86_64-manylinux_2_28"
"""The platform a closure is resolved for when none is given: an x86-64 Linux GPU host with
glibc 2.28, the oldest glibc among the Linux distributions ROCm supports (RHEL 8.10 and
Oracle Linux 8 ship 2.28; Ubuntu 22.04.5 ships 2.35, RHEL 9 2.34), so every wheel chosen
installs on each of them. Source: the "OS kernel and glibc" table of
``ROCm/ROCm:docs/compatibility/compatibility-matrix.rst`` (ROCm 7.1.0 page, read in the copy
``hanzoai/ROCm@0057200``). uv calls the same target ``x86_64-unknown-linux-gnu``."""

DEFAULT_TIMEOUT_S = 300.0
"""How long uv may take, in seconds, before the resolution is abandoned."""

MAX_REQUIREMENT_CHARS = 1000
"""The longest requirement accepted (a PEP 508 line is far shorter)."""

MAX_UV_MESSAGE_CHARS = 4000
MAX_UV_MESSAGE_LINES = 30
"""The bounds of uv's error message as quoted in a :class:`UsageError`."""


_FROM = "# from "


def _check_text(text: str, what: str) -> None:
    if not text.strip():
        raise UsageError(f"{what}: empty value.")
    if len(text) > MAX_REQUIREMENT_CHARS:
        raise UsageError(f"{what} {printable(text[:80], newlines=False)}...: longer than "
                         f"{MAX_REQUIREMENT_CHARS} characters.")
    if not text.isprintable():
        raise UsageError(f"{what} '{printable(text, newlines=False)}': contains a control "
                         "character or line break.")


def _validate_requirement(text: str) -> str:
    """``text`` stripped, after checking it is one PEP 508 requirement naming an index
    package; raises :class:`UsageError` (exit 2) naming it otherwise.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    _check_text(text, "--requirement")
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        first = printable(str(exc).splitlines()[0] if str(exc) else "", newlines=False)
        raise UsageError(
            f"--requirement '{printable(text, newlines=False)}' is not a valid requirement: "
            f"{first}",
            hint="Write a PEP 508 requirement such as 'vllm==0.6.3' or 'flash-attn>=2.6'.",
        ) from None
    if req.url is not None:
        raise UsageError(
            f"--requirement '{printable(text, newlines=False)}' names a direct URL; a closure "
            "is resolved from index metadata only.",
            hint="Name the package and version on an index ('NAME==VERSION', with --index-url "
                 "when it is not on PyPI), or audit a local source tree with `pin audit PATH`.")
    return text.strip()


def _validate_index(url: str) -> str:
    _check_text(url, "--index-url")
    try:
        scheme = urllib.parse.urlsplit(url.strip()).scheme
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https", "file"):
        raise UsageError(f"--index-url '{printable(url, newlines=False)}': not an http(s) or "
                         "file URL.", hint="Pass the index's simple API URL, such as "
                                           "https://download.pytorch.org/whl/rocm6.2.")
    return url.strip()


def _redact(url: str) -> str:
    """``url`` without a user name or password (they never reach a report)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an index URL uv printed that is not a URL)"
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def uv_compile_command(uv: str, index_urls: Sequence[str], python_version: str,
                       python_platform: str, *, output: str = "plain") -> list[str]:
    """The argv of ``uv pip compile`` reading requirements on stdin: no header, no "via"
    annotations, the index each package came from (``# from URL``), ``--no-build``,
    ``--no-config``, no colour, the target Python version and platform, and the running
    interpreter for discovery (so uv never looks for or downloads another one).

    ``index_urls[0]`` is ``--index-url`` and the rest ``--extra-index-url``; uv searches the
    extra indexes first and takes a package from the first index that has it (its
    ``first-index`` strategy, a guard against dependency confusion).

    ``output``: ``plain`` as above; ``via`` adds uv's ``# via PARENT`` annotations (who
    pulls each package in, read by :func:`parse_via`); ``pylock`` prints a PEP 751
    ``pylock.toml`` instead (each package's wheels with URL, size and sha256).
    """
    shape = {"plain": ["--no-annotate", "--emit-index-annotation"],
             "via": ["--emit-index-annotation"], "pylock": ["--format", "pylock.toml"]}[output]
    cmd = [uv, "--no-config", "pip", "compile", "-", "--no-header", *shape,
           "--quiet", "--no-build", "--color=never",
           "--no-python-downloads", f"--python={sys.executable}",
           f"--python-version={python_version}", f"--python-platform={python_platform}"]
    for k, url in enumerate(index_urls):
        cmd.append(f"--index-url={url}" if k == 0 else f"--extra-index-url={url}")
    return cmd



def _uv_message(stderr: str) -> str:
    """The error text of uv, bounded (lines and characters), every control character
    escaped.
    """
    lines = [ln.rstrip() for ln in stderr.strip().splitlines() if ln.strip()]
    if len(lines) > MAX_UV_MESSAGE_LINES:
        lines = [*lines[:MAX_UV_MESSAGE_LINES], f"... ({len(lines) - MAX_UV_MESSAGE_LINES} "
                                                "more lines)"]
    text = "\n".join(lines)
    if len(text) > MAX_UV_MESSAGE_CHARS:
        text = text[:MAX_UV_MESSAGE_CHARS] + " ..."
    return printable(text) or "(uv printed no message)"


def _hint(stderr: str) -> str:
    """What to do, by the kind of failure uv reports."""
    if "no usable wheels" in stderr:
        return ("A package of the closure publishes only an sdist there, and pin never builds "
                "one (a build runs the package's code): pin an older version that has wheels, "
                "or audit that package's source tree with `pin audit PATH`.")
    if "Failed to fetch" in stderr or "error sending request" in stderr:
        return ("The index could not be read: check the URL (--index-url), the network and "
                "the proxy settings (HTTPS_PROXY, NO_PROXY), then run again.")
    return ("Check the name and version on the index, and pass --index-url for a package "
            "that is not on PyPI (a CUDA or ROCm wheel index, for instance).")


def _no_uv(detail: str) -> UsageError:
    return UsageError(
        "pin audit --requirement resolves the closure with uv, and no uv executable was "
        f"found ({printable(detail, newlines=False)[:200]}).",
        hint="Install uv into pin's environment (`pip install uv`), then run again.")


def parse_compile_output(text: str, label: str,
                         index_urls: Sequence[str]) -> tuple[list[DeclaredPackage],
                                                              list[Skipped]]:
    """The packages of ``uv pip compile`` output in ``requirements.txt`` form with index
    annotations: ``NAME==VERSION`` lines, each optionally followed by ``# from URL``.

    Returns ``(packages, skipped)``: one :class:`DeclaredPackage` per ``NAME==VERSION`` line
    (name normalised, ``version`` the public version, ``local`` the label after ``+``,
    ``index_urls`` the annotated index, else ``index_urls`` as given; credentials removed),
    and one :class:`Skipped` (``path`` = ``label``) per other non-comment line. Never raises.
    """
    from packaging.utils import InvalidName, canonicalize_name
    from packaging.version import InvalidVersion, Version

    fallback = tuple(_redact(u) for u in index_urls)
    packages: list[DeclaredPackage] = []
    skipped: list[Skipped] = []
    annotated = True  # whether the last package already has its "# from" line
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line:
            continue
        if line.startswith("#"):
            url = line[len(_FROM):].strip() if line.startswith(_FROM) else ""
            if url and url.isprintable() and not annotated:
                packages[-1] = dataclasses.replace(packages[-1], index_urls=(_redact(url),))
                annotated = True
            continue
        name, sep, version = line.partition("==")
        name, version = name.strip(), version.strip()
        project: str = ""
        try:
            project = canonicalize_name(name, validate=True)
            Version(version)
        except (InvalidName, InvalidVersion):
            project = ""
        if not sep or not project or " " in version or ";" in version:
            skipped.append(Skipped(path=label, reason=(
                f"uv output line {number} is not NAME==VERSION: "
                f"{printable(line[:200], newlines=False)}")))
            continue
        public, _, local = version.partition("+")
        packages.append(DeclaredPackage(
            name=project, raw=f"{name}=={version}", origin="closure", version=public,
            local=local or None, index_urls=fallback))
        annotated = False
    return packages, skipped


def parse_via(text: str) -> dict[str, tuple[str, ...]]:
    """Who pulls each package in, from ``uv pip compile`` output with ``# via`` annotations
    (``output="via"``): normalised name -> the normalised names of the packages that require
    it, in uv's order; a package the user asked for itself has none (uv writes ``# via -r
    FILE`` or nothing for it; ``-r``/``-c`` entries are dropped). Never raises.
    """
    from packaging.utils import InvalidName, canonicalize_name

    via: dict[str, tuple[str, ...]] = {}
    current: str | None = None
    listing = False
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line.startswith("#"):
            name = line.partition("==")[0].strip()
            current = canonicalize_name(name) if "==" in line and name else None
            listing = False
            if current is not None:
                via[current] = ()
            continue
        body = line.lstrip("#").strip()
        if body == "via":
            listing = True
            continue
        if body.startswith("via "):
            body, listing = body[4:].strip(), False
        elif not listing or body.startswith("from "):
            listing = False
            continue
        if current is None or body.startswith(("-r ", "-c ")) or not body:
            continue
        try:
            via[current] = (*via[current], canonicalize_name(body, validate=True))
        except InvalidName:
            continue
    return via


def run_uv(cmd: list[str], reqs: list[str], timeout: float) -> str:
    """The stdout of ``cmd`` (a :func:`uv_compile_command`) fed ``reqs``; raises
    :class:`UsageError` (exit 2) quoting uv's reason when it fails, times out or is missing.
    """
    shown = printable(", ".join(reqs), newlines=False)
    try:
        proc = subprocess.run(cmd, input="\n".join(reqs) + "\n", capture_output=True,
                              text=True, encoding="utf-8", errors="replace",
                              env=uv_environment(os.environ), timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"uv could not resolve {shown} within {timeout:g} s.",
            hint="Check that the index is reachable (proxy settings, --index-url), or retry "
                 "with a warm uv cache.") from None
    except OSError as exc:
        raise _no_uv(f"{cmd[0]}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise UsageError(f"uv could not resolve {shown}:\n{_uv_message(proc.stderr)}",
                         hint=_hint(proc.stderr))
    return proc.stdout


def resolve_closure(requirements: list[str], *, index_urls: Sequence[str] = (),
                    python_version: str | None = None, python_platform: str | None = None,
                    timeout: float = DEFAULT_TIMEOUT_S) -> tuple[list[DeclaredPackage],
                                                                 list[Skipped]]:
    """The whole dependency closure of ``requirements`` (PEP 508 strings, e.g.
    ``["vllm==0.6.3"]``), resolved by ``uv pip compile`` from index metadata (no wheel
    downloaded, no sdist built; see the module docstring).

    ``index_urls``: the simple-API indexes, the first as uv's ``--index-url`` (PyPI when
    empty). ``python_version``: ``"3.11"`` form, default the running interpreter's
    major.minor. ``python_platform``: a uv target, default :data:`DEFAULT_PLATFORM`.
    ``timeout``: seconds uv may run.

    Returns ``(packages, skipped)`` in uv's order (sorted by name): each package with
    ``origin="closure"``, ``raw="name==version"``, the exact version, its local label split
    off, ``path=None``, and the index uv took it from; ``skipped`` names output lines not
    read. An empty ``requirements`` returns ``([], [])`` without running uv.

    Raises :class:`~pinning.errors.UsageError` (exit 2): for an invalid requirement, a direct
    URL or a bad index URL, before uv runs; for no uv executable; for a resolution uv cannot
    complete (no solution, only an sdist, an index unreachable, a timeout), quoting uv's
    reason (bounded, control characters escaped).
    """
    reqs = [_validate_requirement(r) for r in requirements]
    indexes = [_validate_index(u) for u in index_urls]
    if python_version is not None:
        _check_text(python_version, "--python-version")
    if python_platform is not None:
        _check_text(python_platform, "--python-platform")
    if not reqs:
        return [], []
    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    cmd = uv_compile_command(find_uv("pin audit --requirement"), indexes, version.strip(),
                             (python_platform or DEFAULT_PLATFORM).strip())
    label = "--requirement " + " ".join(reqs)
    return parse_compile_output(run_uv(cmd, reqs, timeout), label, indexes)
