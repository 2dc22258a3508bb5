"""Host commands of the CLI: ``pin probe``, ``pin freeze``, ``pin verify``, ``pin doctor``.

Registered on the main group by :func:`register`; heavy imports stay inside the commands.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pinning.errors import DriftError, UsageError

if TYPE_CHECKING:
    from pinning.guards.checks import Finding
    from pinning.matrix.load import Matrix
    from pinning.probe.models import HostFacts, Reading
    from pinning.verify.compare import VerifyReport

FORMAT = click.Choice(["text", "json"])


def _host_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options that say which host to read: a snapshot, a recorded root, or live."""
    for option in reversed([
        click.option("--host", "host_file", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Read a snapshot written by `pin probe -o FILE` instead of probing."),
        click.option("--root", metavar="DIR", type=click.Path(file_okay=False),
                     help="Probe a recorded host tree read exactly as / (default: this machine)."),
        click.option("--replay", metavar="FILE", type=click.Path(dir_okay=False),
                     help="Answer tool commands (amd-smi, rocminfo, nvidia-smi, ldd) from this "
                          "recording (commands.toml) instead of running them; also gives the "
                          "host's environment. Without it a --root probe runs no tools."),
        click.option("--site-packages", "site_packages", multiple=True, metavar="DIR",
                     help="Python site-packages to read (default: VIRTUAL_ENV/CONDA_PREFIX, "
                          "else this interpreter's, or the usual places under --root)."),
        click.option("--matrix", "overlays", multiple=True, metavar="FILE",
                     help="Add a site overlay to the matrix (also PIN_MATRIX)."),
    ]):
        func = option(func)
    return func


def _probe(root: str | None, replay: str | None, site_packages: tuple[str, ...],
           matrix: Matrix, model_id: str | None) -> HostFacts:
    from pinning.probe.host import probe_host
    from pinning.util.proc import NoRunner, ReplayRunner, Runner, SystemRunner

    runner: Runner
    environ = None
    if replay and not root:
        raise UsageError("--replay answers tool commands for a recorded host; give its tree "
                         "with --root DIR too (without --root pin probes this machine live).")
    if replay:
        rec = ReplayRunner(Path(replay))
        runner, environ = rec, rec.environment
    elif root:
        runner = NoRunner()
    else:
        runner = SystemRunner()

    def identify(device: str) -> str | None:
        hit = matrix.gpu_by_pci(device)
        return hit.id if hit else None

    return probe_host(
        Path(root) if root else Path("/"), runner, environ=environ,
        site_packages=list(site_packages), model_id=model_id,
        replay=replay, identify=identify,
    )


def _host_facts(host_file: str | None, root: str | None, replay: str | None,
                site_packages: tuple[str, ...], matrix: Matrix,
                model_id: str | None) -> tuple[HostFacts, str]:
    """The facts and a label: from ``--host FILE`` or by probing (live or ``--root``)."""
    if host_file:
        if root or replay or site_packages:
            raise UsageError("--host reads a snapshot; it excludes --root, --replay and "
                             "--site-packages (those probe a host).")
        from pinning.probe.snapshot import read_snapshot

        return read_snapshot(Path(host_file)), host_file
    label = f"root {root}" if root else "this host (live)"
    return _probe(root, replay, site_packages, matrix, model_id), label


def _shown(r: Reading | None) -> str:
    if r is None:
        return "-"
    if r.value is not None:
        return r.value
    return f"not-probed ({r.reason})"


def probe_text(facts: HostFacts) -> str:
    """Human summary of a probe: one line per fact, not-probed facts with their reason."""
    rows: list[tuple[str, str]] = [
        ("OS", f"{_shown(facts.os.pretty_name)}"),
        ("Kernel", _shown(facts.os.kernel)),
        ("glibc", _shown(facts.os.glibc)),
        ("GPU vendor", facts.vendor),
    ]
    for g in facts.gpus:
        target = g.gfx_target or g.compute_capability
        label = f"GPU {g.index}"
        tid = f" ({g.target_id})" if g.target_id else ""
        desc = (f"{g.product or '?'} {g.pci_device_id or ''} at {g.pci_bus or '?'}: "
                f"{_shown(g.name)}, target {_shown(target)}{tid}, memory "
                + (f"{g.memory_mib.value} MiB" if g.memory_mib.known else _shown(g.memory_mib)))
        rows.append((label, desc))
        rows.append(("  VBIOS/IFWI", _shown(g.vbios)))
        if g.pldm_bundle is not None:
            rows.append(("  PLDM bundle", _shown(g.pldm_bundle)))
        if g.firmware:
            shown = ", ".join(f"{k}={v}" for k, v in list(g.firmware.items())[:6])
            more = f" (+{len(g.firmware) - 6} more)" if len(g.firmware) > 6 else ""
            rows.append(("  firmware", shown + more))
    if facts.amd:
        kind = f" ({facts.amd.driver_kind})" if facts.amd.driver_kind else ""
        rows += [("amdgpu driver", _shown(facts.amd.driver) + kind),
                 ("ROCm user space", _shown(facts.amd.rocm)),
                 ("amd-smi", _shown(facts.amd.amd_smi))]
    if facts.nvidia:
        kind = f" ({facts.nvidia.module_kind} module)" if facts.nvidia.module_kind else ""
        rows += [("NVIDIA driver", _shown(facts.nvidia.driver) + kind),
                 ("CUDA toolkit", _shown(facts.nvidia.cuda_toolkit))]
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
    rows.append(("Container", f"{c.runtime} ({c.evidence}); image {_shown(c.image_digest)}"
                 if c.inside else "no"))
    if facts.model:
        m = facts.model
        rows.append((f"Model {m.id}", ", ".join(m.revisions) or f"not cached ({m.reason})"))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"Note: {n}" for n in facts.notes]
    return "\n".join(lines)


@click.command()
@_host_options
@click.option("--lock", "lock_path", metavar="LOCK", type=click.Path(dir_okay=False),
              help="Also look for the lock's model revision in the Hugging Face cache.")
@click.option("-o", "--output", metavar="FILE",
              help="Write the snapshot (JSON, schemas/host.schema.json) to FILE.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def probe(host_file: str | None, root: str | None, replay: str | None,
          site_packages: tuple[str, ...], overlays: tuple[str, ...], lock_path: str | None,
          output: str | None, fmt: str) -> None:
    """Read this host's stack: OS, kernel, glibc, GPUs (gfx target / compute capability,
    VBIOS, firmware, PLDM bundle), amdgpu or NVIDIA driver, ROCm / CUDA, the Python
    environment (torch build, every Triton), behaviour-changing variables, container, model.

    A fact that cannot be read is reported as not-probed with the reason; a missing tool
    never fails the probe. Exit 7 only when the host cannot be read at all.

    \b
    Examples:
      pin probe -o host.json
      pin probe --root tests/data/hosts/mi300x-rocm7.1/root \\
                --replay tests/data/hosts/mi300x-rocm7.1/commands.toml
    """
    from pinning.lockfile.io import read_lock
    from pinning.matrix.load import load_matrix
    from pinning.probe.snapshot import snapshot_text, write_snapshot

    matrix = load_matrix(overlays)
    model_id = None
    if lock_path:
        lk = read_lock(Path(lock_path))
        model_id = lk.model.id if lk.model else None
    facts, _label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    if output:
        write_snapshot(facts, Path(output))
    if fmt == "json":
        click.echo(snapshot_text(facts), nl=False)
        return
    click.echo(probe_text(facts))
    if output:
        from pinning.probe.models import snapshot_hash

        click.echo(f"Wrote {output} ({snapshot_hash(facts)})")


def _finding_line(f: Finding) -> str:
    mark = {"error": "✗", "warning": "!", "info": "·"}[f.severity]
    if f.status == "match":
        mark = "✓"
    gpu = f" [GPU {f.gpu}]" if f.gpu is not None and f"(GPU {f.gpu})" not in f.message else ""
    text = f"{mark} {f.status:<17} {f.fact}{gpu}: {f.message}"
    if f.source and f.status not in ("match",):
        text += f"\n    source: {f.source}"
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
    lines = [head, *(_finding_line(f) for f in shown),
             f"Summary: {sev['error']} error(s), {sev['warning']} warning(s); {counts}."]
    if not verbose and report.counts.get("match"):
        lines.append("(matches hidden; -v lists them)")
    return "\n".join(lines)


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path(dir_okay=False))
@_host_options
@click.option("--strict", is_flag=True,
              help="Warnings are drift too: a locked fact that could not be read, packages "
                   "beyond the lock, an amdgpu module an unfrozen lock cannot compare (freeze "
                   "the lock first), a driver above NVIDIA's listed range.")
@click.option("-v", "--verbose", is_flag=True, help="List matching facts too.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def verify(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], strict: bool,
           verbose: bool, fmt: str) -> None:
    """Check that a host still matches LOCK, below user space too.

    Each fact gets expected, actual, a status (match, mismatch, missing, not-probed,
    outside-validated, ...), a severity and the source that makes it wrong. Rules that need
    no frozen values also run: the CUDA driver minimum, the gfx target validated for the
    ROCm release, Triton and torch install hazards.

    Exit 0 when the host matches, 6 on drift, 7 when the host could not be probed at all,
    5 for a bad lockfile. JSON output: schemas/verify-report.schema.json.
    """
    from pinning.lockfile.io import read_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.compare import verify as do_verify

    lock = read_lock(Path(lock_path))
    matrix = load_matrix(overlays)
    model_id = lock.model.id if lock.model else None
    facts, label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    report = do_verify(lock, facts, matrix, lock_name=lock_path, host_name=label, strict=strict)
    if fmt == "json":
        click.echo(report.model_dump_json(by_alias=True, exclude_none=True, indent=2))
    else:
        click.echo(verify_text(report, verbose=verbose))
    if report.result == "drift":
        facts_named = sorted({f.fact + (f"[GPU {f.gpu}]" if f.gpu is not None else "")
                              for f in report.drift})
        raise DriftError(
            f"{label} has drifted from {lock_path}: {', '.join(facts_named)}.",
            hint="Bring the host back to the lock, or re-freeze the lock from a validated host "
                 "(pin freeze).",
        )


@click.command()
@click.argument("lock_path", metavar="LOCK", type=click.Path(dir_okay=False))
@_host_options
@click.option("--force", is_flag=True,
              help="Freeze even when the host is outside what the lock validated; the "
                   "deviations are recorded in the lock.")
@click.option("-o", "--output", metavar="FILE", help="Write here instead of replacing LOCK.")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def freeze(lock_path: str, host_file: str | None, root: str | None, replay: str | None,
           site_packages: tuple[str, ...], overlays: tuple[str, ...], force: bool,
           output: str | None, fmt: str) -> None:
    """Write the host's exact values into LOCK: firmware, driver, OS, kernel, ROCm,
    framework builds and every Python distribution, marked as frozen from that host with
    the snapshot's hash.

    Exit 6 (nothing written) when the host is outside what the lock's matrix validated,
    unless --force.
    """
    from pinning.lockfile.io import lock_json, read_lock, write_lock
    from pinning.matrix.load import load_matrix
    from pinning.verify.freeze import freeze as do_freeze

    lock = read_lock(Path(lock_path))
    matrix = load_matrix(overlays)
    model_id = lock.model.id if lock.model else None
    facts, label = _host_facts(host_file, root, replay, site_packages, matrix, model_id)
    frozen, found, unfrozen = do_freeze(lock, facts, matrix, host_label=label, force=force)
    dest = Path(output or lock_path)
    write_lock(frozen, dest)
    if fmt == "json":
        click.echo(json.dumps({"lockfile": str(dest), "lock": lock_json(frozen),
                               "deviations": [f.model_dump(mode="json") for f in found],
                               "not-frozen": unfrozen}, indent=2))
        return
    for f in found:
        click.echo(f"Recorded deviation (--force): {f.fact}: {f.message}")
    if found:
        click.echo("pin verify will keep reporting these facts as outside what the matrix "
                   "validated.")
    for item in unfrozen:
        click.echo(f"Not frozen: {item}")
    assert frozen.frozen is not None
    click.echo(f"Froze {label} into {dest} (snapshot {frozen.frozen.snapshot}).")


@click.command()
@click.argument("paths", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--matrix", "overlays", multiple=True, metavar="FILE",
              help="Add a site overlay to the matrix (also PIN_MATRIX).")
@click.option("--format", "fmt", type=FORMAT, default="text", show_default=True)
def doctor(paths: tuple[str, ...], overlays: tuple[str, ...], fmt: str) -> None:
    """Diagnose pasted environment dumps against the matrix.

    Reads python -m torch.utils.collect_env (and vLLM's), python -m sglang.check_env,
    pip list / pip freeze, amd-smi version / static / firmware, rocm-smi, rocminfo,
    nvidia-smi (--query-gpu CSV with its header line, or the banner) and
    /proc/driver/nvidia/version: several files, or one file with several dumps. '-' reads
    stdin.

    Reports each problem with a code, an explanation and its source: unsupported gfx target,
    CUDA torch on an AMD host, several Triton distributions, a JAX plugin for another ROCm
    major, a driver too old for the CUDA build, HSA_OVERRIDE_GFX_VERSION, an inbox or old
    amdgpu, and more. Exit 0 when nothing is wrong, 6 when an error is found, 7 when a file
    holds no recognisable dump.
    """
    import stat
    import sys

    from pinning.doctor.report import doctor as do_doctor
    from pinning.matrix.load import load_matrix

    limit = 64 * 1024 * 1024
    if paths.count("-") > 1:
        raise UsageError("'-' (stdin) can be given once.")
    files: list[tuple[str, str]] = []
    for path in paths:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            try:
                if not stat.S_ISREG(Path(path).stat().st_mode):
                    raise UsageError(f"{path}: not a regular file.",
                                     hint="Pass files that hold pasted tool output.")
                with Path(path).open("rb") as fh:
                    data = fh.read(limit + 1)
            except OSError as exc:
                raise UsageError(f"{path}: cannot be read ({exc.strerror or exc}).",
                                 hint="Pass files that hold pasted tool output.") from exc
        if len(data) > limit:
            raise UsageError(f"{path}: larger than 64 MiB; not an environment dump.",
                             hint="Pass only the tool outputs.")
        files.append((path if path != "-" else "<stdin>", data.decode("utf-8", "replace")))
    report = do_doctor(files, load_matrix(overlays))
    if fmt == "json":
        click.echo(report.model_dump_json(by_alias=True, exclude_none=True, indent=2))
    else:
        read = ", ".join(f"{d.kind} ({d.file}:{d.first_line})" for d in report.dumps)
        click.echo(f"Read: {read}")
        env = "; ".join(f"{k} {v if not isinstance(v, list) else ', '.join(map(str, v))}"
                        for k, v in report.environment.items())
        if env:
            click.echo(f"Environment: {env}")
        if not report.findings:
            click.echo("No problems found: nothing in these dumps conflicts with the matrix or "
                       "the known install hazards.")
        for f in report.findings:
            click.echo(_finding_line(f).replace(f"{f.status:<17} ", f"[{f.code}] ", 1))
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        raise DriftError(
            f"{len(errors)} problem(s) found: {', '.join(sorted({f.code for f in errors}))}.",
            hint="Fix the environment as each finding says, then paste a fresh dump.",
        )


def register(group: click.Group) -> None:
    """Add the host commands to the ``pin`` group."""
    group.add_command(probe)
    group.add_command(verify)
    group.add_command(freeze)
    group.add_command(doctor)
