"""Text (and JSON-shape) renderers of the ``pin`` commands: lock summary, resolve explanation,
probe, verify and doctor reports.

Pure functions over the core's models, returning strings or plain dicts; nothing here prints.
Core models are imported for type checking only, so ``pin --help`` stays fast.

Every value shown comes from a lock, snapshot, overlay or dump someone else may have written:
each rendered line goes through :func:`~pinning.util.text.printable` with line breaks
escaped, so a value can neither send the terminal a control sequence (erase lines, move the
cursor) nor start a line of its own that reads like pin's.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.doctor.report import DoctorReport
    from pinning.guards.view import Finding
    from pinning.lockfile.models import Lockfile, Model, Pinned
    from pinning.probe.models import HostFacts, Reading
    from pinning.resolve.result import Resolution
    from pinning.verify.report import VerifyReport

__all__ = [
    "Style",
    "considered_json",
    "doctor_text",
    "explain_text",
    "finding_line",
    "lock_notes",
    "lock_sections",
    "lock_summary",
    "pinned_text",
    "probe_text",
    "reading_text",
    "sections_text",
    "table_text",
    "terminal_style",
    "verify_text",
]

#: A section of ``pin lock show``: a title and its ``(name, value)`` rows.
Section = tuple[str, list[tuple[str, str]]]

LIST_LIMIT = 8
"""How many items of a list (packages, wheels, environment, notes) ``pin lock show`` prints
without ``--full``."""


# ------------------------------------------------------------------------------ terminal
#: The environment variable ``pin --color`` sets: ``auto``, ``always`` or ``never``.
COLOR_ENV = "PIN_COLOR"


@dataclass(frozen=True)
class Style:
    """How to draw output: ``rich`` tables (a terminal) or plain aligned text (a pipe or a
    file), ``color`` or not (``NO_COLOR`` set, https://no-color.org), ``width`` in columns.
    """

    rich: bool = False
    color: bool = False
    width: int = 100


def _model_text(model: Model) -> str:
    """``ORG/NAME@REV`` or the folder, and how many files the lock pins."""
    if model.files:
        return f"{model.label}  ({len(model.files)} files, {model.content_hash})"
    return f"{model.label}  (files not pinned: {model.files_unknown or 'run pin lock model'})"


def terminal_style(stream: TextIO | None = None) -> Style:
    """The :class:`Style` for ``stream`` (default standard output), by ``PIN_COLOR``
    (``pin --color``): ``auto`` (the default) draws rich tables only on a terminal whose
    ``TERM`` is not ``dumb``, in colour only there and when ``NO_COLOR`` is unset or empty;
    ``always`` draws them in colour anywhere (a flag wins over ``NO_COLOR``, as
    https://no-color.org asks); ``never`` draws no colour, tables still on a terminal.
    """
    import shutil

    out = stream if stream is not None else sys.stdout
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    tty = tty and os.environ.get("TERM") != "dumb"
    mode = os.environ.get(COLOR_ENV, "auto")
    width = shutil.get_terminal_size((100, 24)).columns
    if mode == "always":
        return Style(rich=True, color=True, width=width)
    return Style(rich=tty, color=mode != "never" and tty and not os.environ.get("NO_COLOR"),
                 width=width)


def _cell(text: str) -> str:
    return printable(text, newlines=False)


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
               title: str | None = None, style: Style | None = None) -> str:
    """A table: plain aligned columns under a header line (no trailing blanks), or, with
    ``style.rich``, a rich table with ANSI styling (colour unless ``style.color`` is false).
    Every cell and the title are escaped first (:func:`printable`), and never read as rich
    markup.
    """
    cells = [[_cell(c) for c in row] for row in rows]
    title = _cell(title) if title else title
    if style is not None and style.rich:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(title) if title else None, title_justify="left",
                      box=box.SIMPLE_HEAD, header_style="bold cyan", title_style="bold")
        for h in headers:
            table.add_column(h)
        for row in cells:
            table.add_row(*(Text(c) for c in row))
        return _rich_text(table, style)
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    out = [f"{title}:"] if title else []
    for row in [list(headers), *cells]:
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def _rich_text(renderable: Any, style: Style) -> str:
    """Render a rich object to a string of ANSI text ``style.width`` columns wide."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    console = Console(file=buf, force_terminal=True, no_color=not style.color,
                      width=style.width, highlight=False, emoji=False, markup=False,
                      color_system="standard" if style.color else None)
    console.print(renderable)
    return buf.getvalue().rstrip("\n")


def sections_text(sections: Sequence[Section], *, style: Style | None = None) -> str:
    """Titled sections of ``name  value`` rows: plain (``Title:`` then indented, aligned
    rows) or, with ``style.rich``, one rich table per section with the names styled.
    """
    if style is not None and style.rich:
        from rich import box
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        tables = []
        for title, rows in sections:
            table = Table(title=title, title_justify="left", box=box.SIMPLE, show_header=False,
                          title_style="bold")
            table.add_column(style="cyan", no_wrap=True)
            table.add_column()
            for k, v in rows:
                table.add_row(Text(_cell(k)), Text(_cell(v)))
            tables.append(table)
        return _rich_text(Group(*tables), style)
    out: list[str] = []
    for title, rows in sections:
        out.append(f"{title}:")
        width = max((len(_cell(k)) for k, _ in rows), default=0)
        out += [f"  {_cell(k).ljust(width)}  {_cell(v)}".rstrip() for k, v in rows]
    return "\n".join(out)



def _lines(lines: Iterable[str]) -> str:
    """``lines`` joined by line feeds, each escaped as one line (:func:`printable`)."""
    return "\n".join(printable(line, newlines=False) for line in lines)


# ------------------------------------------------------------------------ resolve, lock
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


def lock_summary(lock: Lockfile) -> str:
    """A lockfile's stack as aligned ``name  value`` lines, then its matrix sources and up to
    three notes (``pin resolve``, ``pin lock show``).
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
    out = [f"{k:<{width}}  {v}" for k, v in rows]
    out.append("Sources:")
    for r in lock.matrix.rows:
        when = f"published {r.published}" if r.published else f"checked {r.checked}"
        out.append(f"  {r.ref}: {r.source} ({when})")
    out += [f"Note: {n}" for n in lock.notes[:3]]
    return _lines(out)


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
          "warnings"}


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
    return _lines(out)


# ------------------------------------------------------------------------------- probe
def reading_text(r: Reading | None) -> str:
    """A probed fact for people: its value, ``not-probed (reason)``, or ``-`` when absent."""
    if r is None:
        return "-"
    if r.value is not None:
        return r.value
    return f"not-probed ({r.reason})"


def probe_text(facts: HostFacts) -> str:
    """Human summary of a probe: one line per fact, not-probed facts with their reason."""
    rows: list[tuple[str, str]] = [
        ("OS", f"{reading_text(facts.os.pretty_name)}"),
        ("Kernel", reading_text(facts.os.kernel)),
        ("glibc", reading_text(facts.os.glibc)),
        ("GPU vendor", facts.vendor),
    ]
    for g in facts.gpus:
        target = g.gfx_target or g.compute_capability
        label = f"GPU {g.index}"
        tid = f" ({g.target_id})" if g.target_id else ""
        desc = (f"{g.product or '?'} {g.pci_device_id or ''} at {g.pci_bus or '?'}: "
                f"{reading_text(g.name)}, target {reading_text(target)}{tid}, memory "
                + (f"{g.memory_mib.value} MiB" if g.memory_mib.known
                   else reading_text(g.memory_mib)))
        rows.append((label, desc))
        rows.append(("  VBIOS/IFWI", reading_text(g.vbios)))
        if g.pldm_bundle is not None:
            rows.append(("  PLDM bundle", reading_text(g.pldm_bundle)))
        if g.firmware:
            shown = ", ".join(f"{k}={v}" for k, v in list(g.firmware.items())[:6])
            more = f" (+{len(g.firmware) - 6} more)" if len(g.firmware) > 6 else ""
            rows.append(("  firmware", shown + more))
    if facts.amd:
        kind = f" ({facts.amd.driver_kind})" if facts.amd.driver_kind else ""
        rows += [("amdgpu driver", reading_text(facts.amd.driver) + kind),
                 ("ROCm user space", reading_text(facts.amd.rocm)),
                 ("amd-smi", reading_text(facts.amd.amd_smi))]
    if facts.nvidia:
        kind = f" ({facts.nvidia.module_kind} module)" if facts.nvidia.module_kind else ""
        rows += [("NVIDIA driver", reading_text(facts.nvidia.driver) + kind),
                 ("CUDA toolkit", reading_text(facts.nvidia.cuda_toolkit))]
    py = facts.python
    rows.append(("Python env", ", ".join(py.site_packages) or f"not-probed ({py.reason})"))
    if py.site_packages:
        rows.append(("  distributions", str(len(py.distributions))))
    if py.torch:
        t = py.torch
        extra = f"HIP {t.hip}" if t.hip else f"CUDA {t.cuda}" if t.cuda else ""
        rows.append(("  torch", f"{t.version} ({t.kind} build{', ' + extra if extra else ''})"))
    for tr in py.tritons:
        rows.append(("  triton", f"{tr.name}=={tr.version}"
                     + (" (provides `import triton`)" if tr.owns_import else "")))
    for k, v in facts.environment.items():
        rows.append((f"  env {k}", v))
    c = facts.container
    rows.append(("Container", f"{c.runtime} ({c.evidence}); image {reading_text(c.image_digest)}"
                 if c.inside else "no"))
    if facts.model:
        m = facts.model
        if m.source is not None and (m.files or m.problems):
            found = (f"{len(m.files)} file(s) read ({m.content_hash})"
                     + (f"; {len(m.problems)} problem(s)" if m.problems else ""))
        else:
            found = ", ".join(m.revisions) or f"not cached ({m.reason})"
        rows.append((f"Model {m.label}", found))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"Note: {n}" for n in facts.notes]
    return _lines(lines)


# ------------------------------------------------------------------------ verify, doctor
def finding_line(f: Finding) -> str:
    """One finding: a mark (✓ match, ✗ error, ! warning, · info), its status, fact, GPU and
    message, then an indented ``source:`` line for anything but a match.
    """
    mark = {"error": "✗", "warning": "!", "info": "·"}[f.severity]
    if f.status == "match":
        mark = "✓"
    gpu = f" [GPU {f.gpu}]" if f.gpu is not None and f"(GPU {f.gpu})" not in f.message else ""
    text = printable(f"{mark} {f.status:<17} {f.fact}{gpu}: {f.message}", newlines=False)
    if f.source and f.status not in ("match",):
        text += f"\n    source: {printable(f.source, newlines=False)}"
    return text


def verify_text(report: VerifyReport, *, verbose: bool) -> str:
    """The verify report for people: drift first, then warnings, notes, and a summary."""
    order = {"error": 0, "warning": 1, "info": 2}
    shown = [f for f in report.findings if verbose or f.status != "match"]
    shown.sort(key=lambda f: order[f.severity])
    head = (f"pin verify {report.lock} against {report.host}: "
            f"{'MATCH' if report.result == 'match' else 'DRIFT'}")
    counts = ", ".join(f"{n} {k}" for k, n in report.counts.items())
    sev = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning")}
    lines = [printable(head, newlines=False), *(finding_line(f) for f in shown),
             printable(f"Summary: {sev['error']} error(s), {sev['warning']} warning(s); "
                       f"{counts}.", newlines=False)]
    if not verbose and report.counts.get("match"):
        lines.append("(matches hidden; -v lists them)")
    return "\n".join(lines)


def _doctor_facts(report: DoctorReport) -> list[str]:
    """Short lines summarising the parsed facts (``--format json`` has them all)."""
    f = report.facts
    out: list[str] = []
    system = "; ".join(f"{k} {v}" for k, v in (
        ("OS", f.os), ("Python", f.python), ("libc", f.libc), ("CUDA runtime", f.cuda_runtime),
        ("cuDNN", f.cudnn), ("HIP runtime", f.hip_runtime), ("MIOpen", f.miopen)) if v)
    if system:
        out.append(f"System: {system}")
    if f.compilers:
        out.append("Compilers: " + "; ".join(f"{k} {v}" for k, v in f.compilers.items()))
    if f.gpus:
        tele = sum(1 for g in f.gpus if g.telemetry)
        names = sorted({g.name or g.device_id or "unnamed" for g in f.gpus})
        out.append(f"GPUs: {f.gpu_count} from {f.gpus[0].source} ({', '.join(names)})"
                   + (f"; telemetry for {tele}" if tele else ""))
    tools = [f"amd-smi {v}" for k, v in f.amd_smi.items() if k == "tool"]
    tools += [f"rocm-smi {v}" for k, v in f.rocm_smi.items() if k == "smi"]
    tools += [f"rocm-smi-lib {v}" for k, v in f.rocm_smi.items() if k == "lib"]
    if tools:
        out.append("Tools: " + "; ".join(tools))
    if f.firmware:
        blocks = sum(len(fw.firmware) for fw in f.firmware)
        out.append(f"Firmware: {blocks} entries for {len({fw.gpu for fw in f.firmware})} GPU(s) "
                   f"from {f.firmware[0].source}")
    if f.stated:
        out.append("Not collected: " + "; ".join(f"{k} ({v})" for k, v in f.stated.items()))
    if f.packages or f.conda:
        tagged = sum(1 for p in f.packages if p.build_tag)
        copies = sum(1 for p in f.conda if p.pip_copy)
        out.append(f"Packages: {len(f.packages)} ({tagged} with a build tag); conda entries: "
                   f"{len(f.conda)} ({copies} pip's own copy)")
    return [printable(line, newlines=False) for line in out]


def _nothing_to_judge(report: DoctorReport) -> str:
    """Why no rule ran: what was read, and what the rules need."""
    f = report.facts
    read = []
    if f.gpu_count:
        read.append(f"{f.gpu_count} GPU(s) without a model, target or device ID")
    if f.firmware:
        read.append(f"firmware of {len({fw.gpu for fw in f.firmware})} GPU(s)")
    seen = (f"these dumps show {', '.join(read)}, but no" if read
            else "these dumps show no GPU model or target,")
    return (f"Nothing to judge: {seen} torch build, package, driver, ROCm release or "
            "environment variable, so no rule had an input.")


def doctor_text(report: DoctorReport) -> str:
    """The doctor report for people: the dumps read, the environment they describe, then one
    line per finding with its code (or a line saying nothing is wrong).
    """
    read = ", ".join(f"{d.kind} ({d.file}:{d.first_line})" for d in report.dumps)
    lines = [printable(f"Read: {read}", newlines=False)]
    env = "; ".join(f"{k} {v if not isinstance(v, list) else ', '.join(map(str, v))}"
                    for k, v in report.environment.items())
    if env:
        lines.append(printable(f"Environment: {env}", newlines=False))
    lines += _doctor_facts(report)
    if not report.judged:
        lines.append(_nothing_to_judge(report))
    elif not report.findings:
        lines.append("No problems found: nothing in these dumps conflicts with the matrix or "
                     "the known install hazards.")
    for f in report.findings:
        lines.append(finding_line(f).replace(f"{f.status:<17} ", f"[{f.code}] ", 1))
    return "\n".join(lines)
