"""The whole Python environment of a lock, resolved with uv into exact wheels (``pin lock
packages``).

:func:`plan_packages` decides what to resolve: the lock's frameworks as distributions (PyTorch
with its wheel variant, ``torch==2.13.0+rocm7.2``, from PyTorch's index of that variant), the
requirements recorded by an earlier run and given now, and the lock's ``[packages]``, for the
target Python version and platform (flags, else the lock's ``[python]``).
:func:`~pinning.resolve.uvcompile.run_uv` has uv resolve that plan into a PEP 751
``pylock.toml``; :func:`pinning.resolve.pylock.choose_wheels` keeps, per package, the one wheel
the target installs (the most specific tag in :mod:`packaging.tags` order) and
:func:`with_packages` records ``[packages]``, ``[[wheels]]`` (file name, sha256, URL, size) and
``[python]`` in the lock; :func:`lock_packages` does all three.

The indexes are exactly those given, or PyPI plus the framework's variant index, so the same
lock resolves the same way for everyone on the same day.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pinning.errors import UsageError
from pinning.lockfile.models import Lockfile
from pinning.lockfile.wheels import Wheel
from pinning.resolve.pylock import choose_wheels, target_tags
from pinning.resolve.uvcompile import DEFAULT_TIMEOUT_S, PackagesPlan, run_uv
from pinning.util.net import is_loopback_host
from pinning.util.text import printable, redact

__all__ = ["PYPI_SIMPLE", "PYTORCH_WHEEL_INDEX", "index_url", "lock_packages", "plan_packages",
           "read_requirements_file", "with_packages"]

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

MAX_TEXT = 1000
"""The longest requirement or index accepted, in characters."""


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


def index_url(url: str) -> str:
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
    given_idx = [index_url(u) for u in indexes]
    if not given_idx and not fresh and lock.python is not None:
        given_idx = [index_url(u) for u in lock.python.indexes]  # as the last run read them
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


def with_packages(lock: Lockfile, plan: PackagesPlan, wheels: Sequence[Wheel]) -> Lockfile:
    """``lock`` with ``[packages]`` (name -> version of every wheel), ``[[wheels]]`` and
    ``[python]`` (the plan's target, indexes without credentials, recorded requirements)
    replaced, re-sealed.
    """
    from pinning.lockfile.io import amend
    from pinning.lockfile.wheels import PythonTarget

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
