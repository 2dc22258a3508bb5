"""The wheels of a ``--requirement`` closure read in memory: which packages are pure Python.

uv names the wheel each package installs from (``uv pip compile --format pylock.toml``: URL,
size and sha256 as the index gave them, :func:`pylock_wheels`). A package whose wheels are all
tagged ``*-none-any`` is fetched (bounded: size, count, time; the sha256 checked against the
index's), read in memory with :mod:`pinning.audit.archive`, and judged by
:func:`judge_wheel`: no native member (``.so``, ``.pyd``, ``.dylib``, ``.dll``), ``WHEEL``
saying ``Root-Is-Purelib: true``, and no Python rule of :mod:`pinning.audit.python_rules`
firing on its modules means "ready (pure Python)". A package with a platform wheel is never
fetched: it has a native part, and pin's package data alone speaks for it.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pinning.audit.model import Citation, Context, Finding, Kind, Skip, Skipped, Verdict

__all__ = [
    "MAX_WHEELS",
    "MAX_WHEEL_BYTES",
    "PURE_RULE",
    "Wheel",
    "WheelVerdict",
    "judge_wheel",
    "pylock_wheels",
    "read_pure_wheels",
]

MAX_WHEEL_BYTES = 32 * 1024 * 1024
"""The largest wheel fetched (32 MiB, as the index declares it and as received)."""

MAX_TOTAL_BYTES = 512 * 1024 * 1024
"""The most wheel bytes fetched in one closure (512 MiB)."""

MAX_WHEELS = 400
"""The most wheels fetched in one closure."""

TIMEOUT_S = (10.0, 60.0)
"""``requests``' (connect, read) timeouts per wheel, in seconds."""

THREADS = 8
"""Wheels fetched at once."""

PURE_RULE = "package.pure-python"
"""Rule id of a package whose wheel is pure Python and imports no CUDA-only module."""

NATIVE = (".so", ".pyd", ".dylib", ".dll")
_WHEEL_SPEC = Citation(
    source="https://packaging.python.org/en/latest/specifications/binary-distribution-format/",
    published_unknown="the specification page carries no date of its own")


@dataclass(frozen=True)
class Wheel:
    """One wheel a pylock names: ``url``, ``size`` (bytes, ``None`` when not given) and
    ``sha256`` (hex) as the index gave them; ``filename`` the URL's last segment.
    """

    url: str
    size: int | None
    sha256: str

    @property
    def filename(self) -> str:
        """The wheel's file name (the URL's last path segment, unquoted)."""
        from urllib.parse import unquote, urlsplit

        return unquote(urlsplit(self.url).path.rsplit("/", 1)[-1])

    @property
    def pure(self) -> bool:
        """Whether the wheel's tag says it runs anywhere (``...-none-any.whl``)."""
        return self.filename.lower().endswith("-none-any.whl")


@dataclass
class WheelVerdict:
    """What reading one package's wheel gave: ``finding`` the package finding (ready, pure
    Python) or ``None``; ``findings`` the Python rules' findings inside it; ``skipped``
    why it was not judged.
    """

    finding: Finding | None = None
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def pylock_wheels(text: str) -> dict[str, list[Wheel]]:
    """The wheels of each package of a PEP 751 ``pylock.toml`` (normalised name -> wheels
    with a URL and a sha256); entries without them are left out. Never raises: text that is
    not TOML gives ``{}``.
    """
    from packaging.utils import canonicalize_name

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    out: dict[str, list[Wheel]] = {}
    for pkg in data.get("packages", []) if isinstance(data.get("packages"), list) else []:
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str):
            continue
        wheels = []
        for w in pkg.get("wheels", []) if isinstance(pkg.get("wheels"), list) else []:
            digest = w.get("hashes", {}).get("sha256") if isinstance(w, dict) else None
            if isinstance(w.get("url"), str) and isinstance(digest, str):
                size = w.get("size")
                wheels.append(Wheel(w["url"], size if isinstance(size, int) else None, digest))
        out[canonicalize_name(pkg["name"])] = wheels
    return out


def _fetch(wheel: Wheel) -> bytes:
    """The bytes of ``wheel``, at most :data:`MAX_WHEEL_BYTES`, sha256 checked; raises
    :class:`Skip` with the reason otherwise.
    """
    import requests

    if wheel.size is not None and wheel.size > MAX_WHEEL_BYTES:
        raise Skip(f"the wheel is {wheel.size} bytes, over {MAX_WHEEL_BYTES}; not fetched")
    buf = bytearray()
    try:
        with requests.get(wheel.url, stream=True, timeout=TIMEOUT_S) as resp:
            resp.raise_for_status()
            for chunk in resp.iter_content(1024 * 1024):
                buf += chunk
                if len(buf) > MAX_WHEEL_BYTES:
                    raise Skip(f"the wheel is over {MAX_WHEEL_BYTES} bytes; not read")
    except requests.RequestException as exc:
        raise Skip(f"the wheel could not be fetched ({type(exc).__name__})") from None
    if hashlib.sha256(buf).hexdigest() != wheel.sha256.lower():
        raise Skip("the wheel's sha256 differs from the index's; not read")
    return bytes(buf)


def _members(data: bytes, shown: str) -> tuple[dict[str, bytes], list[str], list[Skipped]]:
    """``(Python and WHEEL members, native members, skipped)`` of the wheel bytes ``data``,
    read in memory with the limits of :mod:`pinning.audit.archive`.
    """
    from pinning.audit import archive

    native: list[str] = []

    def wanted(name: str) -> bool:
        low = name.lower()
        if low.endswith(NATIVE) or ".so." in low:
            native.append(name)
            return False
        return low.endswith(".py") or name == "WHEEL"

    # The wheel is already in memory: the zip reader is used on a memfd, since
    # read_archive picks its format by the file name and this one has none.
    reader = archive._Reader(shown, wanted, archive.LIMITS)
    with archive.memory_file(data) as path, open(path, "rb") as raw:
        try:
            archive._read_zip(raw, reader)
        except Exception as exc:  # zipfile raises many types on a bad archive
            raise Skip(f"not a readable wheel ({type(exc).__name__})") from None
    return reader.out.members, native, reader.out.skipped


def judge_wheel(name: str, version: str, filename: str, data: bytes,
                ctx: Context) -> WheelVerdict:
    """Judge the pure-Python wheel ``data`` of ``name==version``: ready (rule
    :data:`PURE_RULE`) when it has no native member, its ``WHEEL`` says
    ``Root-Is-Purelib: true`` and no rule of :mod:`pinning.audit.python_rules` finds anything
    at port or above in its modules; otherwise no package finding, the rules' findings (shown
    ``filename!member``) and a skipped entry saying why. Raises nothing.
    """
    from pinning.audit.python_rules import scan_python_text

    out = WheelVerdict()
    try:
        members, native, skipped = _members(data, filename)
    except Skip as exc:
        out.skipped.append(Skipped(path=filename, reason=exc.reason))
        return out
    out.skipped += skipped
    wheel_file = next((d for r, d in members.items() if r.endswith(".dist-info/WHEEL")), b"")
    purelib = b"root-is-purelib: true" in wheel_file.lower()
    modules = sorted(r for r in members if r.endswith(".py"))
    for rel in modules:
        try:
            text = members[rel].decode("utf-8")
            scan = scan_python_text(text, f"{filename}!{rel}", ctx)
        except (Skip, UnicodeDecodeError, RecursionError, MemoryError):
            continue
        out.findings += [f.model_copy(update={"package": name}) for f in scan.findings]
    costly = [f for f in out.findings if f.verdict.rank >= Verdict.PORT.rank]
    if native or not purelib or costly:
        why = (f"native members ({', '.join(native[:3])})" if native else
               "its WHEEL file does not say Root-Is-Purelib: true" if not purelib else
               f"{len(costly)} finding(s) of pin's Python rules in its modules")
        out.skipped.append(Skipped(path=filename, reason=f"not judged pure Python: {why}"))
        return out
    out.finding = Finding(
        kind=Kind.PACKAGE, rule=PURE_RULE, verdict=Verdict.READY, subject=f"{name}=={version}",
        package=name, why=f"pure Python: its wheel {filename} holds {len(modules)} Python "
        "module(s) and no native code, and none imports a CUDA-only module pin knows of "
        "(NVML, PyCUDA, numba.cuda, CuPy kernels).",
        todo="Nothing to port; it installs as it is on ROCm.", citation=_WHEEL_SPEC)
    return out


def read_pure_wheels(targets: Iterable[tuple[str, str, list[Wheel]]], ctx: Context,
                     say: Callable[[str], None]) -> dict[str, WheelVerdict]:
    """Fetch and judge the pure-Python wheel of each ``(name, version, wheels)`` whose
    wheels are all ``*-none-any`` (name -> verdict), in :data:`THREADS` threads, at most
    :data:`MAX_WHEELS` wheels and :data:`MAX_TOTAL_BYTES` declared bytes; a package over
    the bounds or whose wheel cannot be fetched gets a skipped entry. Raises nothing.
    """
    chosen: list[tuple[str, str, Wheel]] = []
    total = 0
    out: dict[str, WheelVerdict] = {}
    for name, version, wheels in targets:
        if not wheels or not all(w.pure for w in wheels):
            continue
        wheel = wheels[0]
        total += wheel.size or 0
        if len(chosen) >= MAX_WHEELS or total > MAX_TOTAL_BYTES:
            out[name] = WheelVerdict(skipped=[Skipped(path=wheel.filename, reason=(
                "over the bounds of wheels read per closure; not fetched"))])
            continue
        chosen.append((name, version, wheel))

    def one(item: tuple[str, str, Wheel]) -> tuple[str, WheelVerdict]:
        name, version, wheel = item
        try:
            data = _fetch(wheel)
        except Skip as exc:
            return name, WheelVerdict(skipped=[Skipped(path=wheel.filename,
                                                       reason=exc.reason)])
        return name, judge_wheel(name, version, wheel.filename, data, ctx)

    import pinning.audit.python_rules  # noqa: F401  (imported once, before the threads)

    say(f"reading {len(chosen)} pure-Python wheels")
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for done, (name, verdict) in enumerate(pool.map(one, chosen), 1):
            out[name] = verdict
            if done % 25 == 0:
                say(f"{done} of {len(chosen)} wheels read")
    return out

