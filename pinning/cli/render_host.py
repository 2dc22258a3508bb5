"""Renderers of hosts and of the reports about them: ``pin probe``'s summary, ``pin verify``'s
findings and ``pin doctor``'s diagnosis, with status words in colour when the terminal
:class:`~pinning.cli.render.Style` has colour on (plain text byte-identical otherwise).

Pure functions over the core's models (imported for type checking only), returning strings;
nothing here prints. Every value is escaped (:func:`~pinning.util.text.printable`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinning.cli.render import Style, lines_text, paint, status_colour
from pinning.util.text import printable

if TYPE_CHECKING:
    from pinning.doctor.report import DoctorReport
    from pinning.guards.view import Finding
    from pinning.probe.models import HostFacts, Reading
    from pinning.verify.report import VerifyReport

__all__ = ["doctor_text", "finding_line", "probe_text", "reading_text", "verify_text"]


def reading_text(r: Reading | None) -> str:
    """A probed fact for people: its value, ``not-probed (reason)``, or ``-`` when absent."""
    if r is None:
        return "-"
    if r.value is not None:
        return r.value
    return f"not-probed ({r.reason})"


def _gpu_rows(facts: HostFacts) -> list[tuple[str, str]]:
    """The rows of :func:`probe_text` for each GPU: product, target, memory, VBIOS, PLDM
    bundle and the first firmware blocks.
    """
    rows: list[tuple[str, str]] = []
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
    return rows


def probe_text(facts: HostFacts) -> str:
    """Human summary of a probe: one line per fact, not-probed facts with their reason."""
    rows: list[tuple[str, str]] = [
        ("OS", f"{reading_text(facts.os.pretty_name)}"),
        ("Kernel", reading_text(facts.os.kernel)),
        ("glibc", reading_text(facts.os.glibc)),
        ("GPU vendor", facts.vendor),
    ]
    rows += _gpu_rows(facts)
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
    return lines_text(lines)


_SEVERITY_COLOUR = {"error": "red", "warning": "yellow"}


def finding_line(f: Finding, *, style: Style | None = None, code: bool = False) -> str:
    """One finding: a mark (✓ match, ✗ error, ! warning, · info), its status (with ``code``
    its ``[code]`` instead), fact, GPU and message, then an indented ``source:`` line for
    anything but a match. With colour on (``style``) the mark and status are red (wrong),
    green (match) or yellow (not known, a warning).
    """
    mark = {"error": "✗", "warning": "!", "info": "·"}[f.severity]
    if f.status == "match":
        mark = "✓"
    colour = status_colour(f.status) or _SEVERITY_COLOUR.get(f.severity)
    gpu = f" [GPU {f.gpu}]" if f.gpu is not None and f"(GPU {f.gpu})" not in f.message else ""
    word = printable(f"[{f.code}]" if code else f.status, newlines=False)
    pad = " " if code else " " * max(1, 18 - len(word))
    text = (f"{paint(mark, colour, style)} {paint(word, colour, style)}{pad}"
            + printable(f"{f.fact}{gpu}: {f.message}", newlines=False))
    if f.source and f.status not in ("match",):
        text += f"\n    source: {printable(f.source, newlines=False)}"
    return text


def verify_text(report: VerifyReport, *, verbose: bool, style: Style | None = None) -> str:
    """The verify report for people: the lock's status, drift first, then warnings, notes,
    and a summary; with colour on (``style``), MATCH green, DRIFT red and each finding's
    status coloured.
    """
    order = {"error": 0, "warning": 1, "info": 2}
    shown = [f for f in report.findings if verbose or f.status != "match"]
    shown.sort(key=lambda f: order[f.severity])
    verdict = "MATCH" if report.result == "match" else "DRIFT"
    unchecked = {k: n for k, n in report.counts.items()
                 if k in ("cannot-compare", "not-locked") and n}
    head = printable(f"pin verify {report.lock} against {report.host}: ", newlines=False)
    counts = ", ".join(f"{n} {k}" for k, n in report.counts.items())
    sev = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning")}
    tail = (" on what was compared; not compared: " + ", ".join(
        f"{n} {k}" for k, n in unchecked.items())) if unchecked and verdict == "MATCH" else ""
    lines = [head + paint(verdict, status_colour(report.result) or "red", style) + tail,
             *_status_line(report),
             *(finding_line(f, style=style) for f in shown),
             printable(f"Summary: {sev['error']} error(s), {sev['warning']} warning(s); "
                       f"{counts}.", newlines=False)]
    if not verbose and report.counts.get("match"):
        lines.append("(matches hidden; -v lists them)")
    return "\n".join(lines)


def _status_line(report: VerifyReport) -> list[str]:
    """``Lock status: ...`` when the report records it (an older report does not)."""
    if report.lock_status is None:
        return []
    more = {"validated": "", "not-recorded": " (written before pin recorded it)",
            "unconfirmed": " (no source confirms this stack; drift with --strict)"}
    return [f"Lock status: {report.lock_status.replace('-', ' ')}{more[report.lock_status]}"]


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


def doctor_text(report: DoctorReport, *, style: Style | None = None) -> str:
    """The doctor report for people: the dumps read, the environment they describe, then one
    line per finding with its code (or a line saying nothing is wrong); with colour on
    (``style``) each finding's mark and code are red (error) or yellow (warning), "No
    problems found" green.
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
        lines.append(paint("No problems found", "green", style) + ": nothing in these dumps "
                     "conflicts with the matrix or the known install hazards.")
    lines += [finding_line(f, style=style, code=True) for f in report.findings]
    return "\n".join(lines)
