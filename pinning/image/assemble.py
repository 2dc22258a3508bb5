"""Normalise what the engine built into the trial image's OCI documents: :func:`assemble`
reuses the base's own blobs, squashes everything above the base into one normalised layer and
writes :class:`~pinning.oci.documents.ImageDocs` whose digest depends only on the files,
carrying the base's config (:func:`base_config`). Every failure is a
:class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pinning.errors import BuildError
from pinning.image.layers import (
    COMPRESSOR,
    COMPRESSOR_ANNOTATION,
    gzip_layers,
    normalize_layer,
    squash_layers,
)
from pinning.image.plan import DEFAULT_PATH, BuildPlan
from pinning.oci.documents import LOCK_LABEL, ImageDocs, LayerBlob, image_docs
from pinning.oci.reference import parse_pinned
from pinning.util.digests import sha256_digest
from pinning.util.jsonread import load_json
from pinning.util.progress import NULL_PROGRESS, Progress, Task


@dataclass(frozen=True)
class BaseConfig:
    """What pin carries from the base image's config into the image's: ``env`` (name ->
    value, from the base's ``Env``), ``entrypoint`` and ``cmd`` (argument lists, ``None``
    when the base sets none), ``working_dir`` and ``user`` (``""`` when unset) and the
    ``architecture``.
    """

    env: dict[str, str] = field(default_factory=dict)
    entrypoint: tuple[str, ...] | None = None
    cmd: tuple[str, ...] | None = None
    working_dir: str = ""
    user: str = ""
    architecture: str = "amd64"


def _str_list(value: object, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BuildError(f"The base image's config field {what} is not a list of strings.")
    return tuple(value)


def base_config(config: bytes) -> BaseConfig:
    """Read a base image's config blob (OCI image config, or Docker's, which has the same
    fields): its ``config.Env`` (``KEY=VALUE`` entries; one without ``=`` is ignored, a
    later duplicate wins), ``Entrypoint``, ``Cmd``, ``WorkingDir``, ``User`` and the
    top-level ``architecture``. Raises :class:`BuildError` (exit 8) when it is not such a
    document.
    """
    doc = load_json(config, BuildError, label="The base image's config")
    if not isinstance(doc, dict):
        raise BuildError("The base image's config is not a JSON object.")
    inner = doc.get("config") or {}
    if not isinstance(inner, dict):
        raise BuildError("The base image's config field config is not an object.")
    env: dict[str, str] = {}
    for item in _str_list(inner.get("Env"), "config.Env") or ():
        key, eq, value = item.partition("=")
        if eq and key:
            env[key] = value
    working_dir, user = inner.get("WorkingDir") or "", inner.get("User") or ""
    arch = doc.get("architecture") or "amd64"
    if not all(isinstance(v, str) for v in (working_dir, user, arch)):
        raise BuildError("The base image's config fields WorkingDir, User and architecture "
                         "must be strings.")
    return BaseConfig(env=env, entrypoint=_str_list(inner.get("Entrypoint"), "Entrypoint"),
                      cmd=_str_list(inner.get("Cmd"), "Cmd"), working_dir=working_dir,
                      user=user, architecture=arch)


def image_env(base: BaseConfig, lock_env: dict[str, str]) -> dict[str, str]:
    """The image's environment: the base's ``Env``, with ``PATH`` = :data:`DEFAULT_PATH`
    when the base sets none, then the lock's ``[environment]`` (which wins on a shared name).
    """
    env = dict(base.env)
    env.setdefault("PATH", DEFAULT_PATH)
    env.update(lock_env)
    return env


class _Counted(io.RawIOBase):
    """A readable stream over ``data`` that reports the bytes read to ``task``."""

    def __init__(self, data: bytes, task: Task) -> None:
        self._view = memoryview(data)
        self._pos = 0
        self._task = task

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        n = min(len(buf), len(self._view) - self._pos)
        buf[:n] = self._view[self._pos:self._pos + n]
        self._pos += n
        self._task.advance(n)
        return n


def _counted(data: bytes, task: Task) -> io.BufferedReader:
    """``data`` as a binary stream whose reads advance ``task``."""
    return io.BufferedReader(_Counted(data, task), buffer_size=1024 * 1024)


def assemble(plan: BuildPlan, layers: Sequence[bytes | None], base: ImageDocs, *,
             progress: Progress = NULL_PROGRESS, jobs: int | None = None) -> ImageDocs:
    """Make the image's OCI documents from the engine's saved ``layers`` (uncompressed
    tars, bottom first) on top of ``base`` (the base image's documents from its registry;
    its layers need no data).

    A base layer given as ``None`` (not exported because its diff ID is the base's) or
    whose tar has the diff ID of a base layer is the base's blob, reused as it is (never
    re-compressed); any other base layer is normalised on its own. Everything above the
    base is squashed into one normalised layer. The layers pin makes are compressed in
    parallel (:func:`~pinning.image.layers.gzip_layers`, ``jobs`` threads). The config
    carries the plan's epoch and label and the base's Entrypoint, Cmd, WorkingDir, User and
    Env (:func:`image_env`). ``progress`` gets a ``normalise`` task and the compress tasks,
    in bytes.

    Raises :class:`BuildError` when the build added no layer above the base, a base layer
    is missing, the base config is malformed or the plan's base reference names no digest.
    """
    count = len(base.layers)
    if len(layers) <= count:
        raise BuildError("The build added no layer above the base image.")
    base_digest = parse_pinned(plan.base_ref).required_digest
    config = base_config(base.config)
    known = {b.diff_id: b for b in base.layers}
    reused: dict[int, LayerBlob] = {}
    own: list[tuple[int, bytes]] = []
    for i, data in enumerate(layers[:count]):
        if data is None:
            reused[i] = base.layers[i]
        elif (blob := known.get(sha256_digest(data))) is not None:
            reused[i] = blob
        else:
            own.append((i, data))
    above = [d for d in layers[count:] if d is not None]
    if len(above) != len(layers) - count:
        raise BuildError("The engine's export lacks a layer the build added.")
    task = progress.task("normalise", sum(len(d) for _, d in own) + sum(map(len, above)))
    try:
        tars = [normalize_layer(_counted(d, task), epoch=plan.epoch) for _, d in own]
        tars.append(squash_layers((_counted(d, task) for d in above), epoch=plan.epoch))
    finally:
        task.done()
    made = gzip_layers(tars, jobs=jobs, progress=progress)
    slots = [i for i, _ in own] + [count]
    by_slot = dict(zip(slots, made, strict=True))
    blobs = [reused[i] if i in reused else by_slot[i] for i in range(count)] + [by_slot[count]]
    history = [f"base {base_digest}"] * count + [
        f"pip install --require-hashes {len(plan.wheels)} wheels"]
    return image_docs(blobs, epoch=plan.epoch, env=image_env(config, plan.env),
                      labels={LOCK_LABEL: plan.input_hash}, history=history,
                      architecture=config.architecture, cmd=config.cmd,
                      entrypoint=config.entrypoint, working_dir=config.working_dir,
                      user=config.user,
                      annotations={"org.opencontainers.image.base.digest": base_digest,
                                   COMPRESSOR_ANNOTATION: COMPRESSOR})
