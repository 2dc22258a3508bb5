"""Renderers of locks and resolutions: the summary ``pin resolve`` prints, the sections of
``pin lock show``, ``--explain``, and the JSON of the candidates considered.

Pure functions over the core's models (imported for type checking only), returning strings
or plain dicts; nothing here prints. Every value shown is escaped
(:func:`~pinning.util.text.printable`): a lock may come from someone else.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pinning.cli.render import LIST_LIMIT, Section, Style, lines_text, paint
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.lockfile.models import Lockfile, Model, Pinned
    from pinning.resolve.result import Resolution

__all__ = ["considered_json", "explain_text", "lock_notes", "lock_sections", "lock_summary",
           "pinned_text", "shared_section"]


def _cell(text: str) -> str:
    return printable(text, newlines=False)


def _model_text(model: Model) -> str:
    """``ORG/NAME@REV`` or the folder, and how many files the lock pins."""
    if model.files:
        return f"{model.label}  ({len(model.files)} files, {model.content_hash})"
    return f"{model.label}  (files not pinned: {model.files_unknown or 'run pin lock model'})"


def considered_json(res: Resolution) -> list[dict[str, Any]]:
    """The candidates a resolution considered, as JSON-ready dicts (newest first).

    Each dict has ``ref``, ``runtime``, ``version``, ``source``, ``date`` (ISO, or ``None``
    when the row has no date), ``valid``, ``verdict``, ``reasons`` and ``frameworks``
    (name -> version).
    """
    return [
        {"ref": c.ref, "runtime": c.runtime, "version": c.version, "source": c.source,
         "date": c.date.isoformat() if c.date != dt.date.min else None, "valid": c.valid,
         "verdict": c.verdict, "reasons": c.reasons,
         "frameworks": {f.name: f.version for f in c.frameworks}}
        for c in res.considered
    ]


def pinned_text(p: Pinned | None) -> str:
    """One pinned lock value for people: the value, a constraint or allowed set still to be
    frozen from a host, ``unknown: reason``, or ``-`` when absent.
    """
    if p is None:
        return "-"
    if p.value is not None:
        return p.value
    if p.constraint:
        return f"{p.constraint} (freeze from host)"
    if p.allowed:
        shown = ", ".join(p.allowed[:4]) + (", ..." if len(p.allowed) > 4 else "")
        return f"one of {shown} (freeze from host)"
    return f"unknown: {p.reason}"


def lock_summary(lock: Lockfile, *, style: Style | None = None) -> str:
    """A lockfile's stack as aligned ``name  value`` lines, then its matrix sources and up to
    three notes (``pin resolve``, ``pin lock show``); with colour on (``style``), a value
    still ``unknown`` has that word in yellow.
    """
    t = lock.target
    tgt = t.gfx_target or t.compute_capability
    rows = [
        ("GPU", f"{pinned_text(t.gpu)} ({pinned_text(tgt)})"),
        ("Runtime", f"{'ROCm' if lock.runtime.name == 'rocm' else 'CUDA'} "
                    f"{pinned_text(lock.runtime.version)}"),
    ]
    rows += [(f"Framework {f.name}", f"{pinned_text(f.version)}  build {pinned_text(f.build)}")
             for f in lock.frameworks]
    rows += [
        (f"Firmware ({lock.firmware.kind})", pinned_text(lock.firmware.version)),
        (f"Kernel driver ({lock.kernel_driver.name})", pinned_text(lock.kernel_driver.version)),
        ("OS", pinned_text(lock.os)),
    ]
    if lock.model:
        rows.append(("Model", _model_text(lock.model)))
    if lock.packages is not None:
        from pinning.matrix.names import TRITON_DISTRIBUTIONS

        tritons = [f"{n}=={v}" for n, v in lock.packages.items() if n in TRITON_DISTRIBUTIONS]
        rows.append(("Python packages", f"{len(lock.packages)} frozen"
                     + (f" (Triton: {', '.join(tritons)})" if tritons else "")))
    if lock.frozen is not None:
        fz = lock.frozen
        forced = f"; forced, {len(fz.deviations)} deviation(s)" if fz.forced else ""
        rows.append(("Frozen from", f"{lock.frozen.host} ({lock.frozen.snapshot}{forced})"))
    width = max(len(k) for k, _ in rows)
    stack = [_cell(f"{k:<{width}}  ") + _unknown(_cell(v), style) for k, v in rows]
    out = ["Sources:"]
    for r in lock.matrix.rows:
        when = f"published {r.published}" if r.published else f"checked {r.checked}"
        out.append(f"  {r.ref}: {r.source} ({when})")
    out += [f"Note: {n}" for n in lock.notes[:3]]
    return "\n".join([*stack, lines_text(out)])


def _unknown(value: str, style: Style | None) -> str:
    """``value`` (escaped) with a leading ``unknown`` painted yellow when colour is on."""
    if value.startswith("unknown"):
        return paint("unknown", "yellow", style) + value[len("unknown"):]
    return value


def _listed(items: Sequence[tuple[str, str]], full: bool, what: str
            ) -> list[tuple[str, str]]:
    """``items``, cut to :data:`LIST_LIMIT` with a row saying how many more ``--full``
    shows, unless ``full``.
    """
    if full or len(items) <= LIST_LIMIT:
        return list(items)
    more = len(items) - LIST_LIMIT
    return [*items[:LIST_LIMIT], ("...", f"{more} more {what} (--full lists them)")]


def _stack_rows(lock: Lockfile) -> list[tuple[str, str]]:
    """The stack section: target, runtime and its parts, frameworks, firmware, driver, OS,
    kernel, model.
    """
    t, rt = lock.target, lock.runtime
    tgt = t.gfx_target or t.compute_capability
    rows = [("GPU", f"{pinned_text(t.gpu)} ({pinned_text(tgt)})")]
    if t.pci_device_ids:
        rows.append(("PCI device IDs", ", ".join(t.pci_device_ids)))
    if t.count is not None:
        rows.append(("GPU count", pinned_text(t.count)))
    rows.append(("Runtime", f"{'ROCm' if rt.name == 'rocm' else 'CUDA'} "
                            f"{pinned_text(rt.version)}"))
    rows += [(f"  {k}", pinned_text(v)) for k, v in (
        ("HIP", rt.hip), ("toolkit driver", rt.toolkit_driver), ("toolkit", rt.toolkit))
        if v is not None]
    rows += [(f"  {k}", pinned_text(v)) for k, v in rt.components.items()]
    for f in lock.frameworks:
        rows.append((f"Framework {f.name}", f"{pinned_text(f.version)}  build "
                     f"{pinned_text(f.build)}  [{f.status}]"))
    fw = lock.firmware
    rows.append((f"Firmware ({fw.kind})", pinned_text(fw.version)))
    if fw.vbios is not None:
        rows.append(("  VBIOS/IFWI", pinned_text(fw.vbios)))
    if fw.blocks:
        rows.append(("  blocks", f"{len(fw.blocks)} microcode versions frozen"))
    kd = lock.kernel_driver
    rows.append((f"Kernel driver ({kd.name})", pinned_text(kd.version)
                 + (f"  ({pinned_text(kd.flavor)})" if kd.flavor is not None else "")))
    rows += [("OS", pinned_text(lock.os)), ("Kernel", pinned_text(lock.kernel))]
    if lock.model:
        rows.append(("Model", _model_text(lock.model)))
    if lock.frozen is not None:
        fz = lock.frozen
        forced = f"; forced, {len(fz.deviations)} deviation(s)" if fz.forced else ""
        rows.append(("Frozen from", f"{fz.host} ({fz.snapshot}{forced})"))
    return rows


def _image_rows(lock: Lockfile) -> list[tuple[str, str]]:
    """The image section: reference, digest, base and its digest, epoch."""
    im = lock.image
    rows = [("ref", pinned_text(im.ref)), ("digest", pinned_text(im.digest)),
            ("base", pinned_text(im.base)), ("base digest", pinned_text(im.base_digest))]
    epoch = "-" if im.epoch is None else (
        f"{im.epoch} ({dt.datetime.fromtimestamp(im.epoch, dt.UTC):%Y-%m-%d %H:%M:%S} UTC)"
        if im.epoch <= 253402300799 else str(im.epoch))
    return [*rows, ("epoch", epoch)]


def _flat(prefix: str, value: Any) -> list[tuple[str, str]]:
    """A JSON value as ``(dotted.key, text)`` rows; a pinned value as :func:`pinned_text`
    would show it.
    """
    if isinstance(value, dict):
        if "origin" in value and set(value) <= {"value", "origin", "ref", "allowed",
                                                "constraint", "reason"}:
            shown = value.get("value") or value.get("constraint") or (
                f"unknown: {value.get('reason')}" if value.get("reason") else None)
            return [(prefix, str(shown if shown is not None else value))]
        return [row for k, v in value.items()
                for row in _flat(f"{prefix}.{k}" if prefix else str(k), v)]
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return [(prefix, ", ".join(str(v) for v in value))]
        if all(isinstance(v, dict) and "name" in v for v in value):  # one row per item
            return [(str(v["name"]), "  ".join(
                f"{k} {', '.join(map(str, x)) if isinstance(x, list) else x}"
                for k, x in v.items() if k != "name")) for v in value]
        return [row for i, v in enumerate(value, start=1)
                for row in _flat(f"{prefix}[{i}]" if prefix else f"[{i}]", v)]
    return [(prefix, str(value))]


_SHOWN = {"lock_version", "content_hash", "generator", "request", "matrix", "target",
          "firmware", "kernel_driver", "os", "kernel", "runtime", "frameworks", "model",
          "image", "environment", "packages", "frozen", "wheels", "build_steps", "notes",
          "warnings", "status"}


def lock_sections(lock: Lockfile, *, full: bool = False) -> list[Section]:
    """Every section of a lock for ``pin lock show``: request, stack, image, environment,
    packages, wheels, build steps, any other section the lock holds (serving, extensions,
    ...), matrix sources, notes and warnings. Lists longer than :data:`LIST_LIMIT` are cut
    unless ``full``; an empty optional section says so in one row.
    """
    req = lock.request.model_dump(by_alias=True, exclude_none=True)
    out: list[Section] = [
        ("Request", [(k, ", ".join(v) if isinstance(v, list) else str(v))
                     for k, v in req.items()]),
        ("Stack", _stack_rows(lock)),
        ("Image", _image_rows(lock)),
        ("Environment", _listed(sorted(lock.environment.items()), full, "variables")
         or [("-", "no variables set")]),
    ]
    if lock.packages is None:
        out.append(("Packages", [("-", "not frozen (pin freeze records them from a host)")]))
    else:
        out.append((f"Packages ({len(lock.packages)})",
                    _listed(sorted(lock.packages.items()), full, "packages")))
    if lock.wheels is None:
        out.append(("Wheels", [("-", "none recorded (the first pin build records them)")]))
    else:
        out.append((f"Wheels ({len(lock.wheels)})", _listed(
            [(w.filename, f"sha256:{w.sha256 if full else w.sha256[:16] + '...'}")
             for w in lock.wheels], full, "wheels")))
    if lock.build_steps:
        out.append(("Build steps", [(str(i), step) for i, step in
                                    enumerate(lock.build_steps, start=1)]))
    data = lock.model_dump(mode="json", by_alias=True, exclude_none=True)
    for name in type(lock).model_fields:
        if name in _SHOWN or getattr(lock, name, None) in (None, [], {}):
            continue
        key = type(lock).model_fields[name].alias or name
        out.append((key.replace("-", " ").capitalize(), _listed(
            _flat("", data.get(key)), full, "values")))
    out.append(("Sources", [(r.ref, f"{r.source} ("
                             + (f"published {r.published}" if r.published
                                else f"checked {r.checked}") + ")")
                            for r in lock.matrix.rows]))
    return out


def shared_section(shared: dict[str, Any], *, full: bool = False) -> Section:
    """``pin lock show``'s section for a multi-target lock's ``[shared]`` table (JSON data,
    kebab-case keys): one ``key.path  value`` row a value, cut as :func:`lock_sections`
    cuts lists unless ``full``; one row saying so when nothing is shared.
    """
    rows = _listed(_flat("", shared), full, "values")
    return ("Shared by every target", rows or [("-", "nothing: each target has its own "
                                                      "values")])


def lock_notes(lock: Lockfile, *, full: bool = False) -> list[str]:
    """The lock's notes and warnings as ``Note: ...`` / ``Warning: ...`` lines (all of them
    with ``full``, else the first :data:`LIST_LIMIT` notes and every warning), escaped.
    """
    notes = lock.notes if full else lock.notes[:LIST_LIMIT]
    lines = [f"Note: {n}" for n in notes]
    if len(notes) < len(lock.notes):
        lines.append(f"({len(lock.notes) - len(notes)} more notes; --full lists them)")
    return [_cell(line) for line in [*lines, *(f"Warning: {w}" for w in lock.warnings)]]


def explain_text(res: Resolution) -> str:
    """``pin resolve --explain``: every candidate, newest first, with its verdict, the
    frameworks it validates and the reasons it lost. Starts with a blank line.
    """
    out = ["", "Candidates (newest first):"]
    for c in res.considered:
        fws = ", ".join(f"{f.name} {f.version or '?'}" for f in c.frameworks)
        head = f"  {'ROCm' if c.runtime == 'rocm' else 'CUDA'} {c.version:<8} "
        head += f"[{c.verdict}] {c.ref}"
        if c.date != dt.date.min:
            head += f" ({c.date})"
        out.append(head)
        if fws and c.valid:
            out.append(f"      validates {fws}")
        for r in c.reasons:
            out.append(f"      - {r}")
    return lines_text(out)
