"""Plan the trial image a lockfile describes.

Plan (pure): :func:`plan_build` turns a lock, a base image reference and a wheel house into a
:class:`BuildPlan` (wheels with sha256, environment, epoch, the label holding the hash of the
lock's build inputs); :func:`render_context` writes the Dockerfile (from
``images/Dockerfile.tmpl``) and context. The engine executes it
(:mod:`pinning.image.engine`); :mod:`pinning.image.assemble` then normalises what it built.
Every failure is a :class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import string
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pinning.assets import asset_path
from pinning.errors import BuildError
from pinning.lockfile.io import lock_json
from pinning.lockfile.models import Lockfile
from pinning.lockfile.wheels import Wheel
from pinning.oci.documents import LOCK_LABEL
from pinning.oci.reference import parse, parse_pinned
from pinning.util.digests import canonical_digest, sha256_digest
from pinning.util.files import sha256_file
from pinning.util.text import control_chars, is_word
from pinning.util.versions import normalize_name

TEMPLATE = asset_path("images", "Dockerfile.tmpl")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class BuildPlan:
    """Everything a build needs, decided before any side effect.

    ``base_ref`` is ``HOST/REPO@sha256:...`` (:mod:`pinning.oci.reference`); ``wheels``
    what pip installs (name, version, file, sha256); ``env`` the lock's environment;
    ``epoch`` seconds since 1970;
    ``input_hash`` the sha256 of the build inputs: the lock (without its ``[image]``
    record), the base digest and the epoch (written as the image label).
    """

    base_ref: str
    wheels: tuple[Wheel, ...]
    env: dict[str, str] = field(default_factory=dict)
    epoch: int = 0
    input_hash: str = ""
    steps: tuple[str, ...] = ()


def default_epoch(lock: Lockfile) -> int:
    """The lock's fixed time: midnight UTC of the newest matrix row date it cites, so the
    same lock always gives the same epoch (seconds since 1970).
    """
    dates = [r.published or r.checked for r in lock.matrix.rows]
    newest = max((d for d in dates if d), default="2026-01-01")
    day = dt.date.fromisoformat(str(newest))
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def build_inputs_hash(lock: Lockfile) -> str:
    """sha256 of the lock without its ``[image]`` table (what a build records: base, epoch,
    digest, ref; the base is in the image as its layers) and the content hash: equal for a
    lock before and after it records its image.
    """
    data = lock_json(lock)
    data.pop("content-hash", None)
    data.pop("image", None)
    return canonical_digest(data)


_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")
# A wheel file name pin writes into the build context (no folder, space or quote).
_WHEEL_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl")


def find_wheels(lock: Lockfile, wheelhouse: Path) -> tuple[Wheel, ...]:
    """The wheels to install: the lock's recorded ``wheels`` (a rebuild), else one wheel per
    ``[packages]`` entry found in ``wheelhouse`` with its sha256 (the first build).

    Raises :class:`BuildError` when the lock names no packages, a wheel is missing, or a
    recorded hash does not match the file.
    """
    if not wheelhouse.is_dir():
        raise BuildError(f"Wheel house {wheelhouse} is not a directory.",
                         hint="Pass --wheelhouse DIR holding the wheels of the lock's packages.")
    files: dict[tuple[str, str], Path] = {}
    for path in sorted(wheelhouse.glob("*.whl")):
        m = _WHEEL.match(path.name)
        if m and _WHEEL_FILE.fullmatch(path.name):  # other names are not wheels pin installs
            files[(normalize_name(m["name"]), m["version"])] = path
    recorded = {(normalize_name(w.name), w.version) for w in lock.wheels or []}
    wanted = {(normalize_name(n), v) for n, v in (lock.packages or {}).items()}
    if lock.wheels and (not lock.packages or recorded == wanted):
        out = []
        for w in lock.wheels:
            path = wheelhouse / w.filename
            if not path.is_file():
                raise BuildError(f"Wheel {w.filename} recorded in the lock is not in {wheelhouse}.")
            got = sha256_file(path, BuildError, label=f"Wheel {path}")
            if got != w.sha256:
                raise BuildError(
                    f"Wheel {w.filename}: sha256 {got} does not match the lock's {w.sha256}.",
                    hint="The wheel house holds a different file than the one locked; fetch "
                         "the locked wheel again.")
            out.append(w)
        return tuple(out)
    if not lock.packages:
        raise BuildError("The lock names no Python packages to install.",
                         hint="Resolve its whole Python environment (pin lock packages LOCK), "
                              "or freeze it from the trial host (pin freeze).")
    wheels = []
    for name, version in sorted(lock.packages.items()):
        found = files.get((normalize_name(name), version))
        if found is None:
            raise BuildError(f"No wheel for {name}=={version} in {wheelhouse}.",
                             hint="Download it (pip download --no-deps) into the wheel house.")
        wheels.append(Wheel(name=name, version=version, filename=found.name,
                            sha256=sha256_file(found, BuildError, label=f"Wheel {found}")))
    return tuple(wheels)


def plan_build(lock: Lockfile, base_ref: str, wheelhouse: Path) -> BuildPlan:
    """Decide the build (pure but for reading the wheel house). ``base_ref`` must be an image
    reference naming a digest (``HOST/REPO@sha256:<64 hex>``,
    :mod:`pinning.oci.reference`); raises :class:`BuildError` otherwise, and as
    :func:`find_wheels` does.
    """
    base = parse(base_ref, error=BuildError)
    if base.digest is None:
        raise BuildError(f"Base image {base_ref!r} is not pinned by digest.",
                         hint="Give the base as HOST/REPO@sha256:<digest> (--base).")
    wheels = find_wheels(lock, wheelhouse)
    recorded = lock.model_copy(update={"wheels": list(wheels)})
    epoch = lock.image.epoch if lock.image.epoch is not None else default_epoch(lock)
    return BuildPlan(base_ref=base_ref, wheels=wheels, env=dict(lock.environment),
                     epoch=epoch, input_hash=inputs_label(recorded, base.digest, epoch),
                     steps=tuple(lock.build_steps or ()))


def inputs_label(lock: Lockfile, base_digest: str, epoch: int) -> str:
    """The value of the image's lock label: sha256 over the lock's build inputs (with its
    wheels), the base digest and the epoch.
    """
    text = f"{build_inputs_hash(lock)}\n{base_digest}\n{epoch}"
    return sha256_digest(text.encode())


def expected_label(lock: Lockfile) -> str | None:
    """The label a lock's recorded image must carry, or ``None`` when the lock records no
    build (no wheels, base digest or epoch).
    """
    base_digest = lock.image.base_digest.value
    if not lock.wheels or not base_digest or lock.image.epoch is None:
        return None
    return inputs_label(lock, base_digest, lock.image.epoch)


# What each value the build context renders may hold (checked again at rendering, whatever
# built the plan: the lock model checks the same, but a plan need not come from a lock).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REF_CHARS = re.compile(r"[A-Za-z0-9._:/@\[\]-]+")


def _refuse(what: str, value: str, why: str) -> BuildError:
    """The error for a plan value that must not reach the Dockerfile or build context."""
    return BuildError(f"Refusing to render the build: {what} {value!r} {why}.",
                      hint="The lock (or the flag) holds a value no build may use; "
                           "`pin lock validate LOCK` names the field.")


def check_plan(plan: BuildPlan) -> None:
    """Check every value of ``plan`` that :func:`render_context` writes into the Dockerfile,
    the requirements file, a file name or a step script: the base reference (the grammar of
    :mod:`pinning.oci.reference`, whole text), environment names (``[A-Za-z_][A-Za-z0-9_]*``)
    and values (no control character), wheel names (PEP 508), versions (one word), file
    names (a plain ``*.whl`` name) and sha256 (64 hex), step scripts (no control character
    but line feed and tab) and the label (``sha256:<64 hex>``).

    Raises :class:`BuildError` (exit 8) naming the first value that fails; the build
    context is then not written.
    """
    if not _is_pinned_ref(plan.base_ref):
        raise _refuse("base image", plan.base_ref, "is not HOST/REPO[:TAG]@sha256:<digest>")
    for key, value in plan.env.items():
        if not _ENV_NAME.fullmatch(key):
            raise _refuse("environment name", key, "is not [A-Za-z_][A-Za-z0-9_]*")
        if control_chars(value):
            raise _refuse(f"environment {key} value", value, "holds a control character")
    for w in plan.wheels:
        _check_wheel(w)
    for i, step in enumerate(plan.steps, start=1):
        if control_chars(step, allow="\n\t"):
            raise _refuse(f"build step {i}", step, "holds a control character")
    if not _DIGEST.fullmatch(plan.input_hash):
        raise _refuse("lock label", plan.input_hash, "is not sha256:<64 hex>")


def _is_pinned_ref(text: str) -> bool:
    """True when ``text`` is a whole image reference naming a digest, of safe characters."""
    if not _REF_CHARS.fullmatch(text):
        return False
    try:
        parse_pinned(text, error=BuildError)
    except BuildError:
        return False
    return True


def _check_wheel(w: Wheel) -> None:
    """Raise :class:`BuildError` unless ``w`` is safe to write into requirements.txt and to
    use as a file name (see :func:`check_plan`).
    """
    if not _DIST_NAME.fullmatch(w.name):
        raise _refuse("wheel name", w.name, "is not a PEP 508 name")
    if not is_word(w.version):
        raise _refuse(f"wheel {w.name} version", w.version, "is not one word")
    if not _WHEEL_FILE.fullmatch(w.filename):
        raise _refuse(f"wheel {w.name} file name", w.filename, "is not a plain *.whl name")
    if not _HEX64.fullmatch(w.sha256):
        raise _refuse(f"wheel {w.name} sha256", w.sha256, "is not 64 hex digits")


def render_context(plan: BuildPlan, wheelhouse: Path, dest: Path) -> Path:
    """Write the Dockerfile, ``wheels/`` (with ``requirements.txt``) and ``guard/`` (the
    in-build guard, the locked versions, one script per build step) into ``dest``; return
    ``dest``. Every value is checked first (:func:`check_plan`: :class:`BuildError`, exit 8,
    and nothing written for a value that could break out of its line, word or file name)
    and quoted where it is written. File-system errors propagate as ``OSError``.
    """
    check_plan(plan)
    wheels_dir = dest / "wheels"
    wheels_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for w in plan.wheels:
        shutil.copyfile(wheelhouse / w.filename, wheels_dir / w.filename)
        lines.append(f"{w.name}=={w.version} --hash=sha256:{w.sha256}")
    if plan.steps:  # the steps may install other files of the wheel house
        for path in sorted(wheelhouse.iterdir()):
            if path.is_file() and not (wheels_dir / path.name).exists():
                shutil.copyfile(path, wheels_dir / path.name)
    (wheels_dir / "requirements.txt").write_text("\n".join(lines) + "\n")
    guard_dir = dest / "guard"
    guard_dir.mkdir(exist_ok=True)
    # The in-build guard is a stdlib-only script shipped with the guards; it is read as a
    # file (it runs inside the image), not imported.
    shutil.copyfile(Path(str(resources.files("pinning.guards") / "inbuild.py")),
                    guard_dir / "guard.py")
    (guard_dir / "locked.json").write_text(
        json.dumps({w.name: w.version for w in plan.wheels}, sort_keys=True))
    env_lines = "\n".join(f"ENV {k}={_dockerfile_quote(v)}" for k, v in sorted(plan.env.items()))
    # Each step is a script of its own: its text cannot comment out, skip or inject around
    # the guard check that follows it.
    for i, cmd in enumerate(plan.steps, start=1):
        (guard_dir / f"step-{i}.sh").write_text(cmd + "\n")
    step_lines = "\n".join(
        f"RUN sh -e /tmp/pin-guard/step-{i}.sh \\\n && python3 /tmp/pin-guard/guard.py check "
        f"{i} /tmp/pin-guard/locked.json /tmp/pin-guard/before.json"
        for i in range(1, len(plan.steps) + 1))
    text = string.Template(TEMPLATE.read_text()).substitute(
        base_ref=plan.base_ref, env_lines=env_lines, step_lines=step_lines,
        label_key=LOCK_LABEL, label_value=plan.input_hash)
    (dest / "Dockerfile").write_text(text)
    return dest


def _dockerfile_quote(value: str) -> str:
    """A double-quoted Dockerfile word that means ``value`` exactly (``\\``, ``"`` and ``$``
    escaped; Dockerfile quoting has no ``\\u`` escapes). Raises :class:`BuildError` for a
    control character (a line feed or carriage return would end the instruction).
    """
    if control_chars(value):
        raise _refuse("Dockerfile word", value, "holds a control character")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'
