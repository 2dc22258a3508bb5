"""Conda ``environment.yml`` / ``environment.yaml`` read into declared packages, with the
CUDA-only conda channel and packages found.

The file is composed with PyYAML's safe loader (:func:`yaml.compose` with ``SafeLoader``:
no Python objects are built, and every node keeps its line). ``channels`` is a list of
channel names; ``dependencies`` a list of conda match specs (``pytorch-cuda=12.1``,
``numpy>=1.24``, ``nvidia::cuda-toolkit``, ``python 3.11.*``) and one ``pip:`` list, read
as requirements-file lines (:func:`~pinning.audit.sources.requirements.parse_lines`;
``--index-url`` / ``--extra-index-url`` there are index findings as in a requirements file).

Conda packages keep their names as written (origin ``conda``): conda names are not PyPI
names, and the package knowledge may have no row for them (then: no data). Version: the
exact version only for ``==`` (conda's ``=1.2`` means ``1.2.*``); the rest of the spec is
the specifier.

Findings (kind ``index``, verdict ``swap``, source :data:`~pinning.audit.indexes.
PYTORCH_INDEXES`: PyTorch's conda commands install CUDA builds with
``pytorch-cuda=X.Y -c pytorch -c nvidia`` or ``cudatoolkit=X.Y``, and the page lists ROCm
builds only as pip wheels from ``https://download.pytorch.org/whl/rocmX.Y``): the ``nvidia``
channel (rule :data:`RULE_CHANNEL`) and the ``pytorch-cuda`` / ``cudatoolkit`` packages (rule
:data:`RULE_PACKAGE`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from pinning.audit.files import read_text
from pinning.audit.indexes import PYTORCH_INDEXES, ROCM_INDEX, index_findings
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
from pinning.audit.sources.pep508 import shown, valid_name
from pinning.audit.sources.requirements import parse_lines

__all__ = ["RULE_CHANNEL", "RULE_PACKAGE", "scan_environment_yml"]

RULE_CHANNEL = "conda.nvidia-channel"
"""Rule id of the ``nvidia`` conda channel in ``channels`` or as a ``nvidia::`` prefix."""
RULE_PACKAGE = "conda.cuda-package"
"""Rule id of a CUDA-only conda package PyTorch's install commands use (``pytorch-cuda``,
``cudatoolkit``)."""

CUDA_CONDA_PACKAGES = frozenset({"pytorch-cuda", "cudatoolkit"})
"""Conda packages that exist to pull CUDA into a PyTorch install (named on PyTorch's
install-command page, :data:`PYTORCH_INDEXES`)."""

_NAME_END = " =<>!~"
_STR_TAG = "tag:yaml.org,2002:str"
NOT_A_STRING = "an entry is not a string"
"""The reason for a dependency that YAML reads as a number, boolean, null or list."""
_TODO = ("PyTorch lists ROCm builds only as pip wheels: drop the nvidia channel, pytorch-cuda "
         "and cudatoolkit, and install torch in this file's pip: list with "
         f"--index-url {ROCM_INDEX} for the ROCm release you target.")


@dataclass
class _Scan:
    display: str
    packages: list[DeclaredPackage] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    indexes: list[tuple[str, str, int | None]] = field(default_factory=list)
    channel_lines: list[int] = field(default_factory=list)


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise Skip(f"not valid YAML: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:
        raise Skip("not readable YAML: nested too deeply") from None


def _mapping(node: yaml.Node | None) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _is_nvidia(channel: str) -> bool:
    """Whether ``channel`` (``nvidia``, ``nvidia/label/cuda-12.1.0``,
    ``https://conda.anaconda.org/nvidia``) is NVIDIA's conda channel.
    """
    text = channel.strip()
    if "://" in text:
        text = text.split("://", 1)[1].partition("/")[2]
    return text.split("/", 1)[0] == "nvidia"


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _is_string(node: yaml.Node) -> bool:
    """Whether ``node`` is a YAML string (quoted, or plain and not a number, boolean or
    null): ``5``, ``1.5``, ``true`` and ``~`` are no package names.
    """
    return isinstance(node, yaml.ScalarNode) and node.tag == _STR_TAG


def _spec(text: str, line: int, scan: _Scan) -> None:
    """One conda match spec: a package (and a finding for a CUDA-only one)."""
    spec = text.strip()
    channel, sep, rest = spec.partition("::")
    if not sep:
        channel, rest = "", spec
    if _is_nvidia(channel):
        scan.channel_lines.append(line)
    rest = rest.strip()
    cut = next((i for i, c in enumerate(rest) if c in _NAME_END), len(rest))
    name, constraint = rest[:cut], rest[cut:].strip()
    if not valid_name(name.lstrip("_")):
        scan.skipped.append(Skipped(path=f"{scan.display}:{line}", reason=(
            "dependencies: not a conda package spec (no valid package name)")))
        return
    exact = constraint[2:].strip() if constraint.startswith("==") else None
    version = exact if exact and "*" not in exact and " " not in exact else None
    scan.packages.append(DeclaredPackage(
        name=name, raw=spec, origin="conda", version=version,
        specifier="" if version else constraint, path=scan.display, line=line))
    if name.lower() in CUDA_CONDA_PACKAGES:
        scan.findings.append(Finding(
            kind=Kind.INDEX, rule=RULE_PACKAGE, verdict=Verdict.SWAP, subject=spec,
            path=scan.display, line=line, package=name,
            why=(f"{name} is the conda package PyTorch's conda installs use to pull in "
                 "CUDA; there is no ROCm counterpart on conda."),
            todo=_TODO, replacement=ROCM_INDEX, citation=PYTORCH_INDEXES))


def _pip(node: yaml.Node, scan: _Scan) -> None:
    if not isinstance(node, yaml.SequenceNode):
        scan.skipped.append(Skipped(path=f"{scan.display}:{_line(node)}",
                                    reason="pip: is not a list"))
        return
    lines: list[tuple[int, str]] = []
    for item in node.value:
        if not _is_string(item):
            scan.skipped.append(Skipped(path=f"{scan.display}:{_line(item)}",
                                        reason=f"pip: {NOT_A_STRING}"))
        elif str(item.value).strip():
            lines.append((_line(item), str(item.value).strip()))
    parsed = parse_lines(lines, scan.display, origin="conda")
    urls = tuple(dict.fromkeys(url for url, _line in parsed.indexes))
    scan.packages += [replace(p, index_urls=urls) for p in parsed.packages]
    scan.skipped += parsed.skipped
    scan.indexes += [(url, scan.display, line) for url, line in parsed.indexes]
    for target, line, _constraint in parsed.includes:
        scan.skipped.append(Skipped(path=f"{scan.display}:{line}", reason=(
            f"pip include '{shown(target)}' in an environment file is not followed; "
            "scan that file itself")))


def _dependencies(node: yaml.Node, scan: _Scan) -> None:
    if not isinstance(node, yaml.SequenceNode):
        scan.skipped.append(Skipped(path=f"{scan.display}:{_line(node)}",
                                    reason="dependencies is not a list"))
        return
    for item in node.value:
        if _is_string(item):
            _spec(str(item.value), _line(item), scan)
        elif "pip" in _mapping(item):
            _pip(_mapping(item)["pip"], scan)
        elif not isinstance(item, yaml.MappingNode):
            scan.skipped.append(Skipped(path=f"{scan.display}:{_line(item)}",
                                        reason=f"dependencies: {NOT_A_STRING}"))
        else:
            scan.skipped.append(Skipped(path=f"{scan.display}:{_line(item)}",
                                        reason="a dependency that is neither a spec nor pip:"))


def _channels(node: yaml.Node | None, scan: _Scan) -> None:
    if not isinstance(node, yaml.SequenceNode):
        return
    for item in node.value:
        if _is_string(item) and _is_nvidia(str(item.value)):
            scan.channel_lines.append(_line(item))


def scan_environment_yml(path: Path, display: str, ctx: Context) -> FileScan:
    """Scan a conda environment file at ``path`` (shown as ``display``).

    Returns a :class:`FileScan`: conda packages (origin ``conda``, names as written) and
    ``pip:`` requirements (origin ``conda``, PEP 503 names, the pip list's index URLs);
    findings for the ``nvidia`` channel (one, with every line), ``pytorch-cuda`` /
    ``cudatoolkit`` and CUDA wheel indexes in the pip list; skipped entries for specs that
    cannot be read. Raises :class:`Skip` when the file cannot be read or is not YAML.
    """
    del ctx
    root = _compose(read_text(path))
    top = _mapping(root)
    if root is not None and not top:
        raise Skip("not a conda environment file: the document is not a mapping")
    scan = _Scan(display=display)
    _channels(top.get("channels"), scan)
    if "dependencies" in top:
        _dependencies(top["dependencies"], scan)
    if scan.channel_lines:
        lines = sorted(set(scan.channel_lines))
        scan.findings.insert(0, Finding(
            kind=Kind.INDEX, rule=RULE_CHANNEL, verdict=Verdict.SWAP, subject="nvidia",
            path=display, line=lines[0], lines=lines if len(lines) > 1 else [],
            why=("The nvidia conda channel serves CUDA packages (PyTorch's conda installs "
                 "use it with pytorch-cuda); they do not run on ROCm."),
            todo=_TODO, replacement=ROCM_INDEX, citation=PYTORCH_INDEXES))
    return FileScan(findings=scan.findings + index_findings(scan.indexes),
                    packages=scan.packages, skipped=scan.skipped)
