"""``pin audit``: walk the inputs, hand each file to its scanners, judge every declared or
installed package against pin's package knowledge, and assemble the bill.

Seams (pip-audit's shape): *sources* turn files into findings and declared packages
(:mod:`pinning.audit.scan` walks the files; :mod:`pinning.audit.sources`,
:mod:`pinning.audit.kernels`, :mod:`pinning.audit.python_rules`,
:mod:`pinning.audit.elf`, :mod:`pinning.audit.installed`, :mod:`pinning.audit.closure`); the
*knowledge* judges packages (:mod:`pinning.audit.packages`); the *bill* totals
(:mod:`pinning.audit.bill`); *formats* render (:mod:`pinning.audit.render`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pinning.audit.bill import AuditReport, Effort, build_report
from pinning.audit.follow import NameCollector, follow_names
from pinning.audit.header_defines import forget as forget_headers
from pinning.audit.model import Context, Finding, Kind, Skip, Verdict
from pinning.audit.scan import Collector, scan_paths


@dataclass
class AuditRequest:
    """What to audit. ``paths``: files or folders as the user typed them; ``requirements``:
    ``NAME==VER`` specs whose dependency closure uv resolves (``index_urls`` for it);
    ``site_packages`` / ``host``: an installed environment; ``gpu``: a GPU the move is for
    (its gfx target judges code objects and GPU-limited packages); ``include_vendored``: read
    the files of vendored CUTLASS / CUB / Thrust trees too; ``fail_on``: the verdict
    at or above which the audit fails; ``effort``: the team's hours per finding kind
    (:func:`pinning.audit.bill.read_effort`); ``progress``: called with a line now and then.
    """

    paths: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    index_urls: list[str] = field(default_factory=list)
    site_packages: str | None = None
    host: str | None = None
    gpu: str | None = None
    fail_on: Verdict = Verdict.BLOCKED
    effort: tuple[str, dict[Kind, dict[Verdict, float]]] | None = None
    hipify_perl: bool = True
    include_vendored: bool = False
    progress: Callable[[str], None] | None = None


def _gpu_targets(gpu: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The GPU's name and gfx targets from the matrix (``UsageError`` exit 2 when unknown;
    an NVIDIA GPU or one without a gfx target gives no targets).
    """
    if gpu is None:
        return None, ()
    from pinning.matrix.load import load_matrix

    found = load_matrix().find_gpu(gpu)
    gpus = found if isinstance(found, list) else [found]
    targets = tuple(dict.fromkeys(g.gfx_target for g in gpus if g.gfx_target))
    return ", ".join(g.name for g in gpus), targets


def _scan_environments(request: AuditRequest, ctx: Context, out: Collector,
                       say: Callable[[str], None]) -> None:
    """Add an installed environment and a ``--requirement`` closure to ``out``."""
    from pinning.errors import ProbeError, UsageError

    if request.site_packages:
        from pinning.audit.installed import scan_site_packages
        say(f"reading installed distributions in {request.site_packages}")
        try:
            scan = scan_site_packages(Path(request.site_packages), ctx)
        except Skip as exc:
            raise UsageError(f"--site-packages {request.site_packages}: {exc.reason}.",
                             hint="Name a site-packages folder (python -c 'import site; "
                                  "print(site.getsitepackages())').") from None
        out.add(request.site_packages, scan)
    if request.host:
        from pinning.audit.installed import scan_host_snapshot
        try:
            scan = scan_host_snapshot(Path(request.host), ctx)
        except Skip as exc:  # unreadable snapshot: exit 7, as verify and freeze say it
            raise ProbeError(f"--host {request.host}: {exc.reason.rstrip('.')}.",
                             hint="Write a snapshot with: pin probe -o host.json") from None
        out.add(request.host, scan)
    if request.requirements:
        from pinning.audit.closure_judge import closure_scan
        say("resolving the dependency closure with uv")
        out.add("closure", closure_scan(request.requirements, index_urls=request.index_urls,
                                        ctx=ctx, say=say))


def _roots(typed_paths: list[str]) -> tuple[Path, ...]:
    """The audited folders, resolved: each folder given, and the folder of each file given."""
    roots: list[Path] = []
    for typed in typed_paths:
        path = Path(typed)
        try:
            roots.append((path if path.is_dir() else path.parent).resolve())
        except (OSError, RuntimeError):
            continue
    return tuple(dict.fromkeys(roots))


SUBJECT_MAX = 200
"""The longest subject a report shows (characters); longer ones are cut, marked with ``...``."""


def _bounded(finding: Finding) -> Finding:
    if len(finding.subject) <= SUBJECT_MAX:
        return finding
    return finding.model_copy(update={"subject": finding.subject[:SUBJECT_MAX] + "..."})


def _refuse_nothing_scanned(request: AuditRequest, out: Collector) -> None:
    """Raise ``UsageError`` (exit 2) when the paths given held no file pin reads and no other
    input was given: an audit of nothing is not a pass.
    """
    if out.files or out.packages or request.requirements or request.site_packages \
            or request.host:
        return
    from pinning.errors import UsageError

    why = "; ".join(f"{s.path}: {s.reason}" for s in out.skipped[:5])
    raise UsageError(f"Nothing to audit in {', '.join(request.paths)}: no file of a kind pin "
                     f"reads was found" + (f" ({why})" if why else "") + ".",
                     hint="Name a project folder, an sdist or wheel (.tar.gz, .tgz, .zip, "
                          ".whl), or a requirements, pyproject, lock, Dockerfile, C/C++/CUDA, "
                          "Python or ELF file.")


def audit(request: AuditRequest) -> AuditReport:
    """Audit what ``request`` names and return the bill.

    Raises ``UsageError`` (exit 2) for an unknown ``--gpu``, a bad ``--requirement`` or one
    uv cannot resolve, paths that hold nothing pin reads (and no other input), or an archive
    that is a decompression bomb; ``ProbeError`` (exit 7) for a ``--host`` snapshot that cannot be
    read; ``MatrixError`` (exit 3) when pin's own data is invalid; everything wrong with a
    file inside the inputs is a skipped entry.
    """
    gpu_name, targets = _gpu_targets(request.gpu)
    forget_headers()
    ctx = Context(gfx_targets=targets, gpu_name=gpu_name, roots=_roots(request.paths))
    out = NameCollector()
    say = request.progress or (lambda _line: None)
    cuda_files = scan_paths(request.paths, ctx, out, say, request.include_vendored)
    out.findings += follow_names(out)
    _scan_environments(request, ctx, out, say)
    _refuse_nothing_scanned(request, out)
    if out.packages:
        from pinning.audit.packages import load_knowledge
        knowledge = load_knowledge()
        out.findings += [knowledge.classify(pkg, ctx) for pkg in out.packages.values()]
    hipify = None
    if request.hipify_perl and cuda_files:
        from pinning.audit.hipify_perl import run_hipify_perl
        stats = run_hipify_perl(cuda_files)
        hipify = stats.model_dump(mode="json", by_alias=True) if stats is not None else None
    effort: Effort | None = None
    if request.effort is not None:
        from pinning.audit.bill import estimate
        source, hours = request.effort
        effort = estimate(out.findings, hours, source)
    return build_report(
        inputs=list(request.paths), requirements=list(request.requirements),
        gpu=gpu_name, gfx_targets=list(targets),
        findings=[_bounded(f) for f in out.findings],
        skipped=list(dict.fromkeys(out.skipped)), files_scanned=out.files,
        kernel_lines=out.kernel_lines,
        fail_on=request.fail_on, effort=effort, hipify_perl=hipify)
