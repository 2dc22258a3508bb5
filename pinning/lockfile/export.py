"""A lock's Python environment for a node that installs without containers: a PEP 751
``pylock.toml`` (https://packaging.python.org/en/latest/specifications/pylock-toml/) or a
hash-pinned requirements file (``pip install --require-hashes -r``, ``uv pip sync``), both
from the lock's ``[[wheels]]`` (one sha256 each) and ``[python]``.

Only hashed wheels are written: a ``[packages]`` entry with no wheel of its version, or (for
``pylock.toml``, whose wheels need a location) a wheel with no URL, is refused, never written
unhashed. The text is deterministic (packages sorted by name, no time stamps), so an export
written twice from one lock is byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pinning.errors import UsageError
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile
    from pinning.lockfile.wheels import PythonTarget, Wheel

__all__ = ["EXPORT_FORMATS", "ExportFormat", "export_text", "exported_wheels",
           "pylock_text", "requirements_text"]

ExportFormat = Literal["pylock", "requirements"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("pylock", "requirements")
"""The formats :func:`export_text` writes: ``pylock`` (PEP 751) and ``requirements``."""

PYLOCK_VERSION = "1.0"
"""The ``lock-version`` written: the only one PEP 751 defines."""

_HINT = "Run `pin lock packages {label}` to resolve the Python environment and record every " \
        "wheel with its sha256 and URL, then export again."


def _shown(names: Sequence[str]) -> str:
    """``names`` joined for a message, the first 8 and how many more."""
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return printable(", ".join(names[:8]), newlines=False) + more


def _names(label: str, target: str | None) -> tuple[str, str]:
    """How messages name the lock (``pin.lock [targets.NAME]``) and the arguments that
    choose it on a command line (``pin.lock --target NAME``), escaped.
    """
    shown = printable(label, newlines=False)
    if target is None:
        return shown, shown
    name = printable(target, newlines=False)
    return f"{shown} [targets.{name}]", f"{shown} --target {name}"


def exported_wheels(lock: Lockfile, *, label: str, target: str | None = None
                    ) -> tuple[tuple[str, str, tuple[Wheel, ...]], ...]:
    """The packages an export installs, sorted by name: ``(name, version, wheels)`` with
    every wheel the lock records for that version (at least one, each with its sha256).
    ``label`` names the lock in messages (its path); ``target``, when set, the target of a
    multi-target lock it is (messages then name ``[targets.NAME]`` and ``--target NAME``).

    Raises :class:`UsageError` (exit 2) when the lock records no wheels, when a package has
    wheels of two versions, or when a ``[packages]`` entry has no wheel of its version,
    naming each package and saying to run ``pin lock packages``.
    """
    where, args = _names(label, target)
    hint = _HINT.format(label=args)
    if not lock.wheels:
        raise UsageError(f"{where} records no wheels ([[wheels]]): "
                         "there is no hashed Python environment to export.", hint=hint)
    by_name: dict[str, list[Wheel]] = {}
    for wheel in lock.wheels:
        by_name.setdefault(wheel.name, []).append(wheel)
    mixed = sorted(n for n, ws in by_name.items() if len({w.version for w in ws}) > 1)
    if mixed:
        raise UsageError(f"{where}: wheels of more than one version "
                         f"for {_shown(mixed)}; an export installs one version a package.",
                         hint=hint)
    unhashed = sorted(f"{n}=={v}" for n, v in (lock.packages or {}).items()
                      if n not in by_name or by_name[n][0].version != v)
    if unhashed:
        raise UsageError(f"{where}: no hashed wheel for "
                         f"{_shown(unhashed)} ([packages] names it, [[wheels]] does not); "
                         "pin never exports a package without its hash.", hint=hint)
    return tuple((n, ws[0].version, tuple(sorted(ws, key=lambda w: w.filename)))
                 for n, ws in sorted(by_name.items()))


def _environment(python: PythonTarget) -> tuple[str, str]:
    """``(requires-python, environment marker)`` of a ``[python]`` target: ``==3.12.*`` and
    ``sys_platform == 'linux' and platform_machine == 'x86_64'`` (the glibc floor of a
    manylinux target has no marker; the wheels' tags carry it).
    """
    arch = python.platform.partition("-")[0]
    return (f"=={python.version}.*",
            f"sys_platform == 'linux' and platform_machine == '{arch}'")


def pylock_text(lock: Lockfile, *, label: str, target: str | None = None) -> str:
    """``lock``'s Python environment as a PEP 751 ``pylock.toml``: ``lock-version = "1.0"``,
    ``environments`` and ``requires-python`` from ``[python]`` (absent without it),
    ``created-by = "pin"``, one ``[[packages]]`` a package (name, version, ``wheels`` with
    file name, URL, size when known and ``hashes.sha256``) and ``[tool.pin]`` with the lock's
    content hash. ``label`` names the lock in messages and the header comment, ``target``
    the target of a multi-target lock (as :func:`exported_wheels`).

    Raises :class:`UsageError` (exit 2) as :func:`exported_wheels` does, and naming every
    wheel with no URL (taken from a wheel house: PEP 751 needs where to fetch it from).
    """
    import tomlkit

    packages = exported_wheels(lock, label=label, target=target)
    where, args = _names(label, target)
    no_url = [w.filename for _, _, ws in packages for w in ws if w.url is None]
    if no_url:
        raise UsageError(f"{where}: no URL for {_shown(no_url)} "
                         "(taken from a wheel house); a pylock.toml names where each wheel "
                         "is fetched from.",
                         hint=_HINT.format(label=args)
                         + " Or export --format requirements, which installs from an index.")
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Generated by pin from {where} ({lock.content_hash}): "
                            f"pin lock export {args} --format pylock"))
    doc["lock-version"] = PYLOCK_VERSION
    if lock.python is not None:
        requires, marker = _environment(lock.python)
        doc["environments"] = [marker]
        doc["requires-python"] = requires
    doc["created-by"] = "pin"
    table = tomlkit.aot()
    for name, version, wheels in packages:
        entry = tomlkit.table()
        entry["name"] = name
        entry["version"] = version
        files = tomlkit.array()
        for wheel in wheels:
            item = tomlkit.inline_table()
            item.update({"name": wheel.filename, "url": wheel.url})
            if wheel.size is not None:
                item["size"] = wheel.size
            item["hashes"] = tomlkit.inline_table()
            item["hashes"]["sha256"] = wheel.sha256
            files.append(item)
        entry["wheels"] = files.multiline(True)
        table.append(entry)
    doc["packages"] = table
    doc["tool"] = {"pin": {"lock": lock.content_hash}}
    return tomlkit.dumps(doc)


def requirements_text(lock: Lockfile, *, label: str, target: str | None = None) -> str:
    """``lock``'s Python environment as a requirements file for ``pip install
    --require-hashes --no-deps -r`` and ``uv pip sync``: a header comment, ``--index-url``
    (the first of ``[python].indexes``) and ``--extra-index-url`` (the others), then one
    ``name==version --hash=sha256:...`` a package (a hash per wheel), sorted by name.
    ``label`` names the lock in messages and the header, ``target`` the target of a
    multi-target lock (as :func:`exported_wheels`).

    Raises :class:`UsageError` (exit 2) as :func:`exported_wheels` does.
    """
    packages = exported_wheels(lock, label=label, target=target)
    where, args = _names(label, target)
    lines = [f"# Generated by pin from {where} ({lock.content_hash}): "
             f"pin lock export {args} --format requirements"]
    if lock.python is not None:
        lines.append(f"# Python {lock.python.version} on {lock.python.platform}")
        first, *others = lock.python.indexes
        lines += [f"--index-url {first}", *(f"--extra-index-url {i}" for i in others)]
    for name, version, wheels in packages:
        hashes = [f"    --hash=sha256:{w.sha256}" for w in wheels]
        lines.append(" \\\n".join([f"{name}=={version}", *hashes]))
    return "\n".join(lines) + "\n"


def export_text(lock: Lockfile, fmt: ExportFormat, *, label: str,
                target: str | None = None) -> str:
    """``lock``'s Python environment in ``fmt`` (:data:`EXPORT_FORMATS`):
    :func:`pylock_text` or :func:`requirements_text`, with their :class:`UsageError`
    (exit 2) for a lock that lacks a hashed wheel; ``target`` as :func:`exported_wheels`.
    """
    if fmt == "pylock":
        return pylock_text(lock, label=label, target=target)
    return requirements_text(lock, label=label, target=target)
