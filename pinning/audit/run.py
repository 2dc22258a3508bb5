"""``pin audit``: walk the inputs, hand each file to its scanners, judge every declared or
installed package against pin's package knowledge, and assemble the bill.

Seams (pip-audit's shape): *sources* turn files into findings and declared packages
(:mod:`pinning.audit.sources`, :mod:`pinning.audit.kernels`, :mod:`pinning.audit.python_rules`,
:mod:`pinning.audit.elf`, :mod:`pinning.audit.installed`, :mod:`pinning.audit.closure`); the
*knowledge* judges packages (:mod:`pinning.audit.packages`); the *bill* totals
(:mod:`pinning.audit.bill`); *formats* render (:mod:`pinning.audit.render`).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import import_module
from pathlib import Path

from pinning.audit.archive import is_archive
from pinning.audit.bill import AuditReport, Effort, build_report
from pinning.audit.files import walk
from pinning.audit.model import (
    Context,
    DeclaredPackage,
    FileScan,
    Finding,
    Kind,
    Skip,
    Skipped,
    Verdict,
)
from pinning.audit.vendored import head_under, inside, set_apart

MAX_FILES = 1_000_000
"""At most this many files are scanned per run; the rest are reported as skipped."""

_CUDA_SUFFIXES = (".cu", ".cuh")
_CPP_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inl",
                 ".ipp", ".tpp")

# (glob on the lower-cased file name, "module:function") in match order; a file takes every
# scanner whose glob matches (setup.py: declared packages and Python rules).
_SCANNERS: tuple[tuple[str, str], ...] = (
    ("*.cu", "kernels:scan_source"), ("*.cuh", "kernels:scan_source"),
    *((f"*{s}", "kernels:scan_source") for s in _CPP_SUFFIXES),
    ("cmakelists.txt", "cmake:scan_cmake"), ("*.cmake", "cmake:scan_cmake"),
    ("*.py", "python_rules:scan_python"),
    ("setup.py", "sources.setup:scan_setup_py"), ("setup.cfg", "sources.setup:scan_setup_cfg"),
    ("pyproject.toml", "sources.pyproject:scan_pyproject"),
    ("*requirements*.txt", "sources.requirements:scan_requirements"),
    ("requirements*.in", "sources.requirements:scan_requirements"),
    ("constraints*.txt", "sources.requirements:scan_requirements"),
    ("uv.lock", "sources.locks:scan_uv_lock"),
    ("pylock.toml", "sources.locks:scan_pylock"), ("pylock.*.toml", "sources.locks:scan_pylock"),
    ("poetry.lock", "sources.locks:scan_poetry_lock"),
    ("environment*.yml", "sources.conda:scan_environment_yml"),
    ("environment*.yaml", "sources.conda:scan_environment_yml"),
    ("dockerfile", "sources.dockerfile:scan_dockerfile"),
    ("dockerfile.*", "sources.dockerfile:scan_dockerfile"),
    ("*.dockerfile", "sources.dockerfile:scan_dockerfile"),
    ("containerfile", "sources.dockerfile:scan_dockerfile"),
    ("*.so", "elf:scan_elf"), ("*.so.*", "elf:scan_elf"),
)

_EXACT: dict[str, list[str]] = {}
_BY_SUFFIX: dict[str, list[str]] = {}
_GLOBS: list[tuple[str, str]] = []
for _pattern, _target in _SCANNERS:
    if not any(ch in _pattern for ch in "*?["):
        _EXACT.setdefault(_pattern, []).append(_target)
    elif _pattern.startswith("*.") and not any(ch in _pattern[2:] for ch in "*?[."):
        _BY_SUFFIX.setdefault(_pattern[1:], []).append(_target)
    else:
        _GLOBS.append((_pattern, _target))


_ORDER = {target: i for i, (_p, target) in reversed(list(enumerate(_SCANNERS)))}
"""Each target's first place in :data:`_SCANNERS`: the order a file's scanners run in."""


def _targets(key: str) -> list[str]:
    """The ``module:function`` targets for a lower-cased file name, in :data:`_SCANNERS`
    order (exact names and plain ``*.ext`` patterns by dictionary, the rest by glob).
    """
    found = list(_EXACT.get(key, ()))
    dot = key.rfind(".")
    if dot >= 0:
        found += _BY_SUFFIX.get(key[dot:], ())
    found += [t for pattern, t in _GLOBS if fnmatch.fnmatchcase(key, pattern)]
    return sorted(set(found), key=_ORDER.__getitem__)


_loaded: dict[str, Callable[[Path, str, Context], FileScan]] = {}


def scanners_for(name: str) -> list[Callable[[Path, str, Context], FileScan]]:
    """The scanners for a file called ``name`` (matched case-insensitively), in order; empty
    for a file pin does not read.
    """
    out = []
    for target in _targets(name.lower()):
        func = _loaded.get(target)
        if func is None:
            module, attr = target.split(":")
            func = getattr(import_module(f"pinning.audit.{module}"), attr)
            _loaded[target] = func
        out.append(func)
    return out


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


def _wanted(name: str) -> bool:
    """Whether pin reads a file called ``name``."""
    return bool(scanners_for(name))


def _held(name: str) -> bool:
    """Whether an archive member called ``name`` is kept in memory: a file pin reads, or a
    text file a requirements file may include (``-r extra.txt``).
    """
    return _wanted(name) or name.lower().endswith((".txt", ".in"))


def _display(root: str, rel: str) -> str:
    """The path shown for ``rel`` under the root typed as ``root`` (``./`` dropped)."""
    joined = posixpath.join(root, rel) if rel else root
    return posixpath.normpath(joined).removeprefix("./")


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


class _Collector:
    """Everything the scanners returned, deduplicated."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.packages: dict[tuple[str, str | None, int | None, str], DeclaredPackage] = {}
        self.skipped: list[Skipped] = []
        self.kernel_lines: dict[str, int] = {}
        self.files = 0
        self._seen_findings: set[tuple[str, str | None, int | None, str]] = set()

    def add(self, display: str, scan: FileScan) -> None:
        for f in scan.findings:
            key = (f.rule, f.path, f.line, f.subject)
            if key not in self._seen_findings:
                self._seen_findings.add(key)
                self.findings.append(f)
        for p in scan.packages:
            self.packages.setdefault((p.name, p.path, p.line, p.raw), p)
        self.skipped += scan.skipped
        if scan.kernel_lines:
            self.kernel_lines[display] = self.kernel_lines.get(display, 0) + scan.kernel_lines


def scan_file(path: Path, display: str, ctx: Context, out: _Collector,
              name: str | None = None) -> None:
    """Run every scanner for ``path`` (a file called ``name``, by default its own name) and
    add what they found to ``out``; a scanner's :class:`Skip` becomes a skipped entry (once
    per file).
    """
    out.files += 1
    for scanner in scanners_for(name or path.name):
        try:
            out.add(display, scanner(path, display, ctx))
        except Skip as exc:
            out.skipped.append(Skipped(path=display, reason=exc.reason))
            return
        except (RecursionError, MemoryError):
            out.skipped.append(Skipped(path=display, reason="too deeply nested or too large "
                                       "to read"))
            return


def _scan_paths(typed_paths: list[str], ctx: Context, out: _Collector,
                say: Callable[[str], None], include_vendored: bool = False) -> list[Path]:
    """Scan every file under the typed paths into ``out``; returns the CUDA sources seen."""
    cuda_files: list[Path] = []
    for typed in typed_paths:
        root = Path(typed)
        if root.is_dir():
            say(f"scanning {typed}")
            found = list(walk(root, out.skipped, ctx, wanted=_wanted))
            trees, items = set_apart([rel for _path, rel in found], partial(head_under, typed),
                                     partial(_display, typed), include_vendored)
            out.findings += items
            for path, rel in found:
                if trees and inside(rel, trees):
                    continue
                if out.files >= MAX_FILES:
                    out.skipped.append(Skipped(path=_display(typed, rel), reason=f"more than "
                                               f"{MAX_FILES} files; the rest not scanned"))
                    break
                scan_file(path, _display(typed, rel), ctx, out)
                if path.suffix in _CUDA_SUFFIXES:
                    cuda_files.append(path)
                if out.files % 1000 == 0:
                    say(f"{out.files} files scanned")
        elif is_archive(root.name) and not root.is_dir():
            say(f"reading the archive {typed}")
            _scan_archive(typed, ctx, out, include_vendored)
        elif not (root.exists() or root.is_symlink()):
            out.skipped.append(Skipped(path=typed, reason="does not exist"))
        elif scanners_for(root.name):
            scan_file(root, _display(typed, ""), ctx, out)
            if root.suffix in _CUDA_SUFFIXES:
                cuda_files.append(root)
        else:
            out.skipped.append(Skipped(path=typed, reason="not a file kind pin audits "
                                       "(requirements, pyproject, locks, Dockerfile, "
                                       "C/C++/CUDA, Python, ELF, sdists and wheels)"))
    return cuda_files


def _scan_archive(typed: str, ctx: Context, out: _Collector, include_vendored: bool) -> None:
    """Scan the members of the sdist or wheel ``typed`` in memory (shown ``typed!member``):
    text through :func:`~pinning.audit.files.memory_tree`, ELF files through an in-memory
    file. A member's includes are read only inside the archive.
    """
    from pinning.audit.archive import memory_file, read_archive
    from pinning.audit.files import memory_tree

    shown = _display(typed, "")
    try:
        archive = read_archive(Path(typed), shown, _held)
    except Skip as exc:
        out.skipped.append(Skipped(path=shown, reason=exc.reason))
        return
    out.skipped += archive.skipped
    root = f"{Path(typed).resolve()}!"
    inner = replace(ctx, roots=(Path(root),))
    with memory_tree(root, archive.members):
        rels = sorted(r for r in archive.members if _wanted(posixpath.basename(r)))
        trees, items = set_apart(rels, partial(head_under, root), partial("{}!{}".format, shown),
                                 include_vendored)
        out.findings += items
        for rel in rels:
            name, display, data = posixpath.basename(rel), f"{shown}!{rel}", archive.members[rel]
            if trees and inside(rel, trees):
                continue
            if not fnmatch.fnmatchcase(name.lower(), "*.so*"):
                scan_file(Path(f"{root}/{rel}"), display, inner, out)
                continue
            try:
                with memory_file(data) as path:
                    scan_file(path, display, inner, out, name=name)
            except Skip as exc:
                out.skipped.append(Skipped(path=display, reason=exc.reason))


def _scan_environments(request: AuditRequest, ctx: Context, out: _Collector,
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
        from pinning.audit.closure import resolve_closure
        say("resolving the dependency closure with uv")
        packages, skipped = resolve_closure(request.requirements,
                                            index_urls=request.index_urls)
        out.add("closure", FileScan(packages=packages, skipped=skipped))


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


def _refuse_nothing_scanned(request: AuditRequest, out: _Collector) -> None:
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
    ctx = Context(gfx_targets=targets, gpu_name=gpu_name, roots=_roots(request.paths))
    out = _Collector()
    say = request.progress or (lambda _line: None)
    cuda_files = _scan_paths(request.paths, ctx, out, say, request.include_vendored)
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
