"""The key of a host's lock-free rule findings (:func:`rule_key`): what of a snapshot the
guard rules and coded checks read, so that ``pin fleet verify`` judges them once per
distinct key instead of once per host. Hosts of one fleet differ in packages no rule
names and in run-scoped variables (``HIP_VISIBLE_DEVICES``); those stay out of the key.
"""

from __future__ import annotations

from typing import Any

from pinning.guards.engine import RuleReads, load_rules, rule_reads
from pinning.guards.view import package_key
from pinning.probe.models import HostFacts

#: The most package names whose answer (read by a rule or not) is remembered.
_NAMES_LIMIT = 8192

_READS: RuleReads | None = None
_READ: dict[str, bool] = {}


def _reads() -> RuleReads:
    """The :class:`~pinning.guards.engine.RuleReads` of the shipped rules (read once)."""
    global _READS
    if _READS is None:
        _READS = rule_reads(load_rules())
    return _READS


def _package_read(name: str) -> bool:
    """Whether some shipped rule or coded check reads distribution ``name`` (remembered)."""
    hit = _READ.get(name)
    if hit is None:
        if len(_READ) >= _NAMES_LIMIT:
            _READ.clear()
        hit = _READ[name] = _reads().reads_package(package_key(name))
    return hit


def rule_key(facts: HostFacts) -> tuple[Any, ...]:
    """Everything of ``facts`` that :func:`~pinning.verify.report.rule_findings` reads for
    one lock and the shipped rules (not verbose, no audit): the GPUs (vendor, name, PCI
    device ID, gfx target, compute capability, product), the torch build, the NVIDIA and
    AMD drivers and the ROCm release, the installed distributions some rule or check
    names (name, version, source, in listed order), whether any is installed, and the
    variables some rule reads. Two hosts with equal keys get equal rule findings
    (``tests/unit/verify/test_fast_path.py`` holds it on varied snapshots). Raises nothing.
    """
    torch = facts.python.torch
    amd, nvidia = facts.amd, facts.nvidia
    env = _reads().env
    dists = facts.python.distributions
    known = _READ
    return (
        tuple((g.vendor, g.name.value, g.pci_device_id,
               g.gfx_target.value if g.gfx_target else None,
               g.compute_capability.value if g.compute_capability else None, g.product)
              for g in facts.gpus),
        (torch.version, torch.kind, torch.cuda, torch.hip, torch.files_version)
        if torch else None,
        (nvidia.driver.value, bool(nvidia.cuda_compat)) if nvidia else None,
        (amd.rocm.value, amd.driver.value, amd.driver_kind) if amd else None,
        bool(dists),
        tuple((d.name, d.version, d.source) for d in dists
              if known.get(d.name) or (d.name not in known and _package_read(d.name))),
        tuple(sorted((n, v) for n, v in facts.environment.items() if n in env)),
    )
