"""Guard rules as data (``pinning/guards/rules.toml``, schema ``schemas/guards.schema.json``).

A rule names its source and date, the phases it acts in, the conditions under which it
fires (all must hold) or the coded check that judges it, and its remedy: set an environment
variable in the lock, add a constraint, warn, or refuse (exit 10). Unknown fields or
conditions fail to load (exit 3).
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, model_validator

from pinning.util.models import EnvName, FormatVersion, OneLine, Strict

Phase = Literal["resolve", "build", "verify"]


class PackageCount(Strict):
    """At least ``min`` of the distributions ``names`` are installed."""

    names: list[str]
    min: int = Field(ge=1)


class Conditions(Strict):
    """What must all hold for a rule to fire; an absent condition is not checked.

    ``packages`` maps a distribution to a PEP 440 specifier ("" = any version) that must all
    be installed; ``any_packages`` needs one of them; ``package_count`` several of a set;
    ``package_pattern`` a regular expression over installed names; ``runtime`` a PEP 440
    specifier on the ROCm / CUDA release; ``env_set`` / ``env_unset`` variables set / unset
    (or not equal to ``env_values``; names are POSIX names); ``device_strings`` torch device
    strings that ``pin audit`` found in the user's code; ``quantization`` methods or kernel
    backends (``awq_marlin``, ``marlin``) and ``attention`` implementations (``NAME`` or
    ``NAME:BACKEND``, e.g. ``flash-attn:ck``) that the lock's ``[serving]`` records.
    """

    vendor: Literal["amd", "nvidia"] | None = None
    gfx_targets: list[str] | None = None
    gpus: list[str] | None = None
    runtime: str | None = None
    torch_build: Literal["rocm", "cuda", "cpu"] | None = None
    packages: dict[str, str] | None = None
    any_packages: list[str] | None = None
    package_count: PackageCount | None = None
    package_pattern: str | None = None
    env_set: list[EnvName] | None = None
    env_unset: list[EnvName] | None = None
    env_values: dict[EnvName, str] | None = None
    quantization: list[str] | None = None
    attention: list[str] | None = None
    head_dim_above: int | None = None
    dtypes_not: list[str] | None = None
    platform: Literal["linux", "windows"] | None = None
    device_strings: list[str] | None = None


class Remedy(Strict):
    """What pin does when the rule fires: ``refuse`` (exit 10), ``warn``, ``set-env``
    (``name`` = ``value`` recorded in the lock: a POSIX variable name, a value without
    control characters) or ``constraint`` (a PEP 440 requirement).
    """

    kind: Literal["refuse", "warn", "set-env", "constraint"]
    name: EnvName | None = None
    value: OneLine | None = None
    text: str

    @model_validator(mode="after")
    def _complete(self) -> Remedy:
        if self.kind == "set-env" and not (self.name and self.value is not None):
            raise ValueError("a set-env remedy needs `name` and `value`")
        if self.kind == "constraint" and not self.value:
            raise ValueError("a constraint remedy needs `value` (a PEP 440 requirement)")
        return self


class Rule(Strict):
    """One guard rule with its source and date.

    A data rule fires when every condition in ``when`` holds. A coded rule names in
    ``check`` the finding code of a judgement in :mod:`pinning.guards.checks` (one that needs
    more than conditions can say: version arithmetic across packages, the host's release);
    its ``when``, if any, narrows which installs the entry covers. Either way the rule is
    stated once: here its title, reason, source and remedy; in code only the judgement.
    """

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    why: str
    source: str
    url: str | None = None
    date: dt.date
    phases: list[Phase] = Field(min_length=1)
    when: Conditions = Field(default_factory=Conditions)
    check: str | None = None
    remedy: Remedy


class RuleFile(Strict):
    """A rules file: ``schema-version`` and its rules."""

    schema_version: FormatVersion = 1
    rules: list[Rule]

    @model_validator(mode="after")
    def _unique(self) -> RuleFile:
        ids = [r.id for r in self.rules]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate rule ids: {', '.join(dup)}")
        return self
