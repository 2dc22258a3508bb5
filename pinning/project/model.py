"""The project file's model: ``pin.toml`` or ``[tool.pin]`` in ``pyproject.toml``.

Keys are kebab-case as everywhere in pin's TOML (:class:`~pinning.util.models.Strict`);
unknown keys are errors. Values a command parses (``os``, ``rocm`` / ``cuda``) are checked
here with the same parsers ``pin resolve`` uses, so a bad value is reported against the file;
framework names are checked by the command against the matrix. Paths are relative to the
file's folder (:func:`pinning.project.load.resolve_path`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from pinning.accept.config import AcceptConfig
from pinning.lockfile.wheels import PYTHON_PLATFORM_PATTERN
from pinning.util.models import Strict

__all__ = ["SCHEMA_NAME", "CostSettings", "ImageSettings", "Project", "ProjectFile",
           "ResultsSettings", "Target"]

#: The committed JSON Schema of the project file (``schemas/project.schema.json``).
SCHEMA_NAME = "project.schema.json"


def _as_value_error(parse: object, *args: str) -> None:
    """Call ``parse(*args)``; a ``UsageError`` it raises becomes a ``ValueError`` (pydantic
    reports it against the key).
    """
    from pinning.errors import UsageError

    try:
        parse(*args)  # type: ignore[operator]
    except UsageError as err:
        raise ValueError(err.message) from err


def _os(value: str) -> str:
    """``value`` when ``pin resolve --os`` accepts it (``ubuntu-24.04``)."""
    from pinning.resolve.constraints import parse_os

    _as_value_error(parse_os, value)
    return value


def _spec(flag: str) -> AfterValidator:
    """A validator: the value is a version specifier ``pin resolve FLAG`` accepts."""
    def check(value: str) -> str:
        from pinning.resolve.constraints import parse_runtime_spec

        _as_value_error(parse_runtime_spec, flag, value)
        return value
    return AfterValidator(check)


def _framework(value: str) -> str:
    """``value`` when ``pin resolve --framework`` accepts its form (``pytorch==2.13.0``;
    the name is checked against the matrix when resolving).
    """
    from pinning.resolve.constraints import parse_framework

    _as_value_error(parse_framework, value)
    return value


def _index_url(value: str) -> str:
    """``value`` when it is a simple-API index URL ``pin lock packages --index`` takes
    (:func:`pinning.resolve.pypackages.index_url`: https, plain http from a loopback host
    only).
    """
    from pinning.resolve.pypackages import index_url

    _as_value_error(index_url, value)
    return value


OsName = Annotated[str, AfterValidator(_os)]
NonBlank = Annotated[str, Field(min_length=1)]
FrameworkRequest = Annotated[str, Field(min_length=1), AfterValidator(_framework)]
IndexUrl = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_index_url)]


def _matching(pattern: str, expected: str) -> tuple[Any, AfterValidator]:
    """A string's schema pattern and validator: the value matches ``pattern`` (linear),
    else ``expected`` is said.
    """
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"expected {expected}")
        return value
    return Field(json_schema_extra={"pattern": f"^{pattern}$"}), AfterValidator(check)


#: The forms ``pin lock packages`` takes: ``3.12``; uv's platform (the lock's ``[python]``).
PythonVersion = Annotated[str, *_matching(r"3\.[0-9]{1,2}", "3.MINOR, e.g. 3.12")]
PythonPlatform = Annotated[str, *_matching(
    PYTHON_PLATFORM_PATTERN.strip("^$"),
    "a Linux platform as uv names it, ARCH-manylinux_2_N or ARCH-manylinux2014 (ARCH "
    "x86_64 or aarch64), e.g. x86_64-manylinux_2_28")]


class Project(Strict):
    """``[project]``: what is being migrated. ``model`` is ``ORG/NAME@REVISION`` or a folder
    path; ``frameworks`` are ``pin resolve --framework`` requests (``pytorch==2.13.0``);
    ``requirements`` / ``pyproject`` name the files the Python environment comes from;
    with ``indexes`` (simple-API URLs, the first the default index), ``python`` (``3.12``)
    and ``python-platform`` (uv's name, ``x86_64-manylinux_2_28``) ``pin lock`` locks it
    per target, as ``pin lock packages`` does.
    """

    name: NonBlank
    model: NonBlank | None = None
    frameworks: tuple[FrameworkRequest, ...] = ()
    requirements: NonBlank | None = None
    pyproject: NonBlank | None = None
    indexes: tuple[IndexUrl, ...] = ()
    python: PythonVersion | None = None
    python_platform: PythonPlatform | None = None


class ImageSettings(Strict):
    """``[targets.NAME.image]``: the base image, registry and repository of the target's
    image (``pin build``).
    """

    base: NonBlank | None = None
    registry: NonBlank | None = None
    repo: NonBlank | None = None


class Target(Strict):
    """``[targets.NAME]``: one platform, with the constraints ``pin resolve`` takes (each key
    is the flag's name) and its image settings. ``frameworks`` replaces the project's.
    """

    gpu: NonBlank
    os: OsName | None = None
    rocm: Annotated[str, _spec("--rocm")] | None = None
    cuda: Annotated[str, _spec("--cuda")] | None = None
    frameworks: tuple[FrameworkRequest, ...] | None = None
    as_of: dt.date | None = None
    matrix: tuple[NonBlank, ...] = ()
    build_steps: tuple[NonBlank, ...] = ()
    require_validated: bool = False
    quantization: NonBlank | None = None
    attention: NonBlank | None = None
    head_dim: int | None = None
    dtype: NonBlank | None = None
    extensions: tuple[NonBlank, ...] = ()
    image: ImageSettings | None = None

    @model_validator(mode="after")
    def _one_vendor(self) -> Target:
        """``rocm`` and ``cuda`` exclude each other, as the flags do."""
        if self.rocm is not None and self.cuda is not None:
            raise ValueError("rocm and cuda exclude each other: a GPU has one vendor")
        return self


class CostSettings(Strict):
    """``[cost]``: the inputs of ``pin cost`` (each key is the flag's name without ``--``);
    ``life-months`` is the horizon of the payback.
    """

    prices: NonBlank | None = None
    migration: NonBlank | None = None
    effort: NonBlank | None = None
    waivers: NonBlank | None = None
    utilisation: Annotated[float, Field(gt=0, le=1)] | None = None
    life_months: Annotated[float, Field(gt=0)] | None = None
    tokens_per_month: Annotated[float, Field(gt=0)] | None = None
    labour_usd_per_hour: Annotated[float, Field(ge=0)] | None = None
    migration_usd: Annotated[float, Field(ge=0)] | None = None
    other_usd_per_hour: Annotated[float, Field(ge=0)] | None = None
    validation_gpu_hours: Annotated[float, Field(ge=0)] | None = None
    maintenance_usd_per_month: Annotated[float, Field(ge=0)] | None = None
    gpus: Annotated[int, Field(ge=1, le=100_000)] | None = None


class ResultsSettings(Strict):
    """``[results.NAME]``: recorded acceptance results of target ``NAME`` (for a target pin
    cannot run here), paths relative to the file.
    """

    files: tuple[NonBlank, ...] = ()


class ProjectFile(Strict):
    """The whole project file. ``accept`` is an inline ``accept.toml`` or a path to one;
    ``results`` keys must name targets.
    """

    project: Project
    targets: dict[NonBlank, Target] = Field(default_factory=dict)
    accept: NonBlank | AcceptConfig | None = None
    cost: CostSettings | None = None
    results: dict[NonBlank, ResultsSettings] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _results_name_targets(self) -> ProjectFile:
        """Each ``[results.NAME]`` names a target."""
        for name in self.results:
            if name not in self.targets:
                known = ", ".join(sorted(self.targets)) or "none"
                raise ValueError(f"results.{name}: no target {name!r} (targets: {known})")
        return self
