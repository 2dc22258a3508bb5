"""The whole Python environment of a lock, resolved with uv into exact wheels (``pin lock
packages``).

:func:`plan_packages` decides what to resolve: the lock's frameworks as distributions (PyTorch
with its wheel variant, ``torch==2.13.0+rocm7.2``, from PyTorch's index of that variant), the
requirements recorded by an earlier run and given now, and the lock's ``[packages]``, for the
target Python version and platform (flags, else the lock's ``[python]``). :func:`run_uv` runs
``uv pip compile --format pylock.toml`` (PEP 751: every file with its URL and sha256) with
``--no-build``: pin builds images with the network off from wheels only, so a package that
publishes only an sdist for the version chosen fails the resolution, naming it.
:func:`pinning.resolve.pylock.choose_wheels` keeps, per package, the one wheel the target
installs (the most specific tag in :mod:`packaging.tags` order) and :func:`with_packages`
records ``[packages]``, ``[[wheels]]`` (file name, sha256, URL, size) and ``[python]`` in the
lock; :func:`lock_packages` does all three.

Isolation, as ``pin audit --requirement`` does (:mod:`pinning.audit.closure`): ``--no-config``
and ``UV_NO_CONFIG=1``; the ``UV_*`` variables that change what is resolved are dropped, the
transport ones (cache, certificates, timeouts, offline) kept. The indexes are exactly those
given, or PyPI plus the framework's variant index, so the same lock resolves the same way for
everyone on the same day.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pinning.errors import BuildError, UsageError
from pinning.lockfile.models import Lockfile, Wheel, is_loopback_host
from pinning.resolve.pylock import choose_wheels, redact, target_tags
from pinning.util.proc import find_uv, uv_environment
from pinning.util.text import printable

__all__ = ["DEFAULT_TIMEOUT_S", "PYPI_SIMPLE", "PYTORCH_WHEEL_INDEX", "PackagesPlan",
           "clip_message", "index_failure", "lock_packages", "plan_packages",
           "read_requirements_file", "run_uv", "sdist_only", "uv_environment",
           "uv_pylock_command", "with_packages"]

PYPI_SIMPLE = "https://pypi.org/simple"
"""uv's default index (``uv pip compile --help``, ``--default-index``: "by default:
<https://pypi.org/simple>", uv 0.13.9; date not recorded)."""

PYTORCH_WHEEL_INDEX = "https://download.pytorch.org/whl/{build}"
"""PyTorch's index of one wheel variant: its install commands read ``pip install
torch==2.0.1+rocm5.4.2 ... --index-url https://download.pytorch.org/whl/rocm5.4.2`` and
``torch==2.0.1+cu118 ... --index-url https://download.pytorch.org/whl/cu118``: the variant is
the version's local label and the index folder (https://pytorch.org/get-started/previous-
versions/, read at pytorch/pytorch.github.io@04862e376ea686ba351674864400db1d93113979:
_get_started/previous-versions.md, section v2.0.1; the page carries no date)."""

_PLATFORM = re.compile(r"(x86_64|aarch64)-manylinux(2014|_2_[0-9]{1,2})")
"""The lock model's ``PYTHON_PLATFORM_PATTERN``, spelt out (a test checks they agree)."""

_VARIANT = re.compile(r"(rocm[0-9]+(\.[0-9]+){0,3}|cu[0-9]{2,4})")
"""A variant pin derives an index for: ``rocm7.2``, ``rocm6.2.4``, ``cu130``."""

DEFAULT_TIMEOUT_S = 900.0
"""How long uv may take, in seconds (PyTorch's indexes are large pages)."""

MAX_TEXT = 1000
MAX_UV_LINES = 30
MAX_UV_CHARS = 4000
"""The longest requirement or index accepted; the bounds of uv's message as quoted."""


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


def _shown_url(url: str) -> str:
    """``url`` as a message quotes it: credentials as ``***@``, escaped, at most 200 chars."""
    return printable(redact(url, mask="***")[:200], newlines=False)


def _text(value: str, what: str, *, url: bool = False) -> str:
    value = value.strip()
    if not value:
        raise UsageError(f"{what}: empty value.")
    if len(value) > MAX_TEXT or not value.isprintable():
        shown = _shown_url(value)[:80] if url else printable(value[:80], newlines=False)
        raise UsageError(f"{what} '{shown}': longer than {MAX_TEXT} characters or holds a "
                         "control character.")
    return value


def _requirement(text: str, what: str = "--requirement") -> tuple[str, str]:
    """``(text stripped, canonical name)`` of one PEP 508 requirement on an index; raises
    :class:`UsageError` (exit 2) for anything else (a direct URL included).
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    text = _text(text, what)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(f"{what} '{printable(text, newlines=False)}' is not a PEP 508 "
                         f"requirement: {printable(str(exc), newlines=False)[:200]}",
                         hint="Write NAME[==VERSION], e.g. 'transformers==4.57.1'.") from None
    if req.url is not None:
        raise UsageError(f"{what} '{printable(text, newlines=False)}' names a direct URL; pin "
                         "locks packages from an index, with their wheel URLs and hashes.",
                         hint="Name the package and version, with --index for its index.")
    return text, canonicalize_name(req.name)


def read_requirements_file(path: Path) -> list[str]:
    """The requirements of a pip-style file: one PEP 508 requirement a line; blank lines and
    ``#`` comments (a line's start, or after whitespace) skipped. Raises :class:`UsageError`
    (exit 2) naming ``path:line`` for an option line (``-i``, ``--hash``, ``-e``: pin takes
    indexes as ``--index``), a bad requirement, or a file that cannot be read.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the requirements file ({exc}).") from None
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if not line:
            continue
        where = f"{path}:{number}"
        if line.startswith("-"):
            raise UsageError(f"{where}: options ({printable(line.split()[0], newlines=False)}) "
                             "are not read; pass indexes with --index URL and list only "
                             "requirements in the file.")
        out.append(_requirement(line, where)[0])
    return out


def _index(url: str) -> str:
    """``url`` stripped when it is an ``https://`` index (``http://`` only on a loopback
    host, as wheel URLs in a lock must be); raises :class:`UsageError` otherwise, quoting
    the URL with its credentials as ``***@``.
    """
    url = _text(url, "--index", url=True).rstrip("/")
    try:
        parts = urllib.parse.urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
    except ValueError:
        scheme, host = "", ""
    if not host or not (scheme == "https" or (scheme == "http" and is_loopback_host(host))):
        raise UsageError(f"--index '{_shown_url(url)}': not an https URL "
                         "(plain http is accepted from a loopback host only).",
                         hint="Pass the simple-API URL, e.g. https://pypi.org/simple or "
                              "https://download.pytorch.org/whl/rocm7.2.")
    return url


def _target(lock: Lockfile, version: str | None, platform: str | None) -> tuple[str, str]:
    """The target Python version and platform: the flags, else the lock's ``[python]``."""
    recorded = lock.python
    version = version or (recorded.version if recorded else None)
    platform = platform or (recorded.platform if recorded else None)
    missing = [flag for flag, v in (("--python-version X.Y", version),
                                    ("--python-platform PLATFORM", platform)) if v is None]
    if missing:
        raise UsageError(
            f"The lock records no target Python for its packages; pass {' and '.join(missing)}.",
            hint="Use the Python of the image the lock builds, e.g. --python-version 3.12 "
                 "--python-platform x86_64-manylinux_2_28 (a later run reuses them).")
    assert version is not None and platform is not None
    if not re.fullmatch(r"3\.[0-9]{1,2}", version.strip()):
        raise UsageError(f"--python-version '{printable(version, newlines=False)}': expected "
                         "3.MINOR, e.g. 3.12.")
    if not _PLATFORM.fullmatch(platform.strip()):
        raise UsageError(f"--python-platform '{printable(platform, newlines=False)}': expected "
                         "a Linux target as uv names it, ARCH-manylinux_2_N or "
                         "ARCH-manylinux2014 (ARCH x86_64 or aarch64), e.g. "
                         "x86_64-manylinux_2_28.")
    return version.strip(), platform.strip()


def _frameworks(lock: Lockfile, given: set[str], packages: Mapping[str, str],
                explicit_index: bool) -> Iterator[tuple[str | None, str | None, str]]:
    """Per framework: ``(requirement or None, variant index or None, note)``."""
    from packaging.utils import canonicalize_name

    from pinning.matrix.names import FRAMEWORK_DISTRIBUTIONS

    for fw in lock.frameworks:
        dist = FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name)
        key = canonicalize_name(dist)
        version = fw.version.value
        if key in given:
            yield None, None, f"{fw.name}: the --requirement for {dist} is used"
            continue
        if version is None:
            if key in packages:
                yield None, None, f"{fw.name}: version unknown; [packages] pins {dist}"
                continue
            raise UsageError(
                f"The lock does not know the version of {fw.name} ({fw.version.reason}).",
                hint=f"Pass --requirement '{dist}==VERSION' (or freeze the lock from the "
                     "trial host first).")
        public, _, label = version.partition("+")
        tag = fw.build.value or label or packages.get(key, "").partition("+")[2] or None
        why = "" if fw.build.value or label else " ([packages] pins it)" if tag else ""
        if tag is None and fw.build.allowed and len(fw.build.allowed) == 1:
            tag = fw.build.allowed[0]
            why = f" (the lock's only published build of {fw.name} {version})"
        variant = fw.name == "pytorch" and tag is not None and _VARIANT.fullmatch(tag)
        if fw.name == "pytorch" and not variant and not explicit_index:
            raise UsageError(
                f"The lock names no wheel variant of PyTorch {version} pin knows an index for "
                f"(build {printable(str(tag), newlines=False)}; published: "
                f"{', '.join(fw.build.allowed or []) or 'not recorded'}).",
                hint="Pass --index with the index of the build you want (e.g. https://"
                     "download.pytorch.org/whl/rocm7.2) and --requirement "
                     f"'torch=={public}+BUILD' (e.g. +rocm7.2).")
        exact = len(public.split(".")) >= 3 or label
        if not exact:  # a series the matrix validates (``2.6``): any release of it
            spec = f"{dist}=={public}.*"
        else:
            spec = f"{dist}=={public}" + (f"+{tag}" if variant else "")
        index = PYTORCH_WHEEL_INDEX.format(build=tag) if variant else None
        where = " from the --index given" if explicit_index else f" from {index}" if index else ""
        yield spec, index, f"{fw.name} {version}: {spec}{where}{why if variant else ''}"


def plan_packages(lock: Lockfile, *, indexes: Sequence[str] = (),
                  requirements: Sequence[str] = (), python_version: str | None = None,
                  python_platform: str | None = None, fresh: bool = False) -> PackagesPlan:
    """Decide what to resolve for ``lock`` (see :class:`PackagesPlan` and the module
    docstring). ``indexes``: the simple-API URLs (the first the default), else those the
    lock's ``[python]`` recorded (unless ``fresh``), else PyPI plus the framework's variant
    index (:data:`PYTORCH_WHEEL_INDEX`). ``requirements``: PEP 508
    lines added to those the lock's ``[python]`` recorded. ``fresh``: ignore the lock's
    ``[packages]`` and recorded requirements (after a framework upgrade). Raises
    :class:`UsageError` (exit 2) for a bad value, a missing target Python, or a framework
    whose version or variant is not known and not given.
    """
    from packaging.utils import canonicalize_name

    version, platform = _target(lock, python_version, python_platform)
    given_idx = [_index(u) for u in indexes]
    if not given_idx and not fresh and lock.python is not None:
        given_idx = [_index(u) for u in lock.python.indexes]  # as the last run read them
    recorded = [] if fresh or lock.python is None else list(lock.python.requirements)
    extra: list[str] = []
    for text in [*recorded, *requirements]:
        line = _requirement(text)[0]
        if line not in extra:
            extra.append(line)
    given = {_requirement(r)[1] for r in extra}
    pins: dict[str, str] = {} if fresh else {
        canonicalize_name(n): v for n, v in (lock.packages or {}).items()}
    reqs: list[str] = []
    derived: list[str] = []
    notes: list[str] = []
    for spec, index, note in _frameworks(lock, given, pins, bool(given_idx)):
        notes.append(note)
        if spec:
            reqs.append(spec)
        if index and index not in derived:
            derived.append(index)
    reqs += extra
    reqs += [f"{n}=={v}" for n, v in sorted(pins.items()) if n not in given]
    if not reqs:
        raise UsageError("Nothing to resolve: the lock has no framework or package, and no "
                         "--requirement was given.")
    return PackagesPlan(requirements=tuple(dict.fromkeys(reqs)),
                        indexes=tuple(given_idx or [PYPI_SIMPLE, *derived]),
                        python_version=version, python_platform=platform,
                        recorded=tuple(extra), notes=tuple(notes))


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


def with_packages(lock: Lockfile, plan: PackagesPlan, wheels: Sequence[Wheel]) -> Lockfile:
    """``lock`` with ``[packages]`` (name -> version of every wheel), ``[[wheels]]`` and
    ``[python]`` (the plan's target, indexes without credentials, recorded requirements)
    replaced, re-sealed.
    """
    from pinning.lockfile.io import amend
    from pinning.lockfile.models import PythonTarget

    return amend(lock, packages={w.name: w.version for w in wheels}, wheels=list(wheels),
                 python=PythonTarget(version=plan.python_version,
                                     platform=plan.python_platform,
                                     indexes=[redact(u) for u in plan.indexes],
                                     requirements=list(plan.recorded)))


def lock_packages(lock: Lockfile, plan: PackagesPlan, *, timeout: float = DEFAULT_TIMEOUT_S
                  ) -> tuple[Lockfile, tuple[Wheel, ...]]:
    """Resolve ``plan`` with uv (:func:`run_uv`), choose each package's wheel for the target
    (:func:`~pinning.resolve.pylock.choose_wheels`) and return ``(lock with them recorded,
    the wheels)``. Raises :class:`UsageError` (exit 2) or :class:`BuildError` (exit 8) as
    those do.
    """
    text = run_uv(plan, timeout=timeout)
    wheels = choose_wheels(text, target_tags(plan.python_version, plan.python_platform))
    return with_packages(lock, plan, wheels), wheels
