"""The locally made base image: debootstrap a minimal Debian, tar it deterministically.

A recipe (``images/base/recipe.toml``: suite, variant, mirror, packages, epoch) gives a
root filesystem via ``debootstrap`` (root only); :func:`rootfs_layer` turns it into one
normalised layer (:mod:`pinning.image.layers`). The layer is cached by the recipe's sha256
so tests and users build it once. Raises :class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pinning.assets import asset_path
from pinning.errors import BuildError
from pinning.image.layers import normalize_layer
from pinning.util.digests import sha256_hex
from pinning.util.files import atomic_write_bytes, read_toml

RECIPE = asset_path("images", "base", "recipe.toml")


@dataclass(frozen=True)
class BaseRecipe:
    """What to debootstrap: ``suite``, ``variant``, ``mirror``, extra packages, ``epoch``
    (seconds, every file's mtime) and ``sha256`` of the recipe file's bytes.
    """

    suite: str
    variant: str
    mirror: str
    include: tuple[str, ...]
    epoch: int
    sha256: str


def load_recipe(path: Path = RECIPE) -> BaseRecipe:
    """Read a base-image recipe. Raises :class:`BuildError` naming the file and field."""
    raw, data = read_toml(path, BuildError, label=f"Base image recipe {path}")
    try:
        return BaseRecipe(
            suite=str(data["suite"]), variant=str(data.get("variant", "minbase")),
            mirror=str(data["mirror"]), include=tuple(str(x) for x in data.get("include", [])),
            epoch=int(data["epoch"]), sha256=sha256_hex(raw),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BuildError(f"Base image recipe {path}: missing or bad field {exc}.") from exc


def cache_dir() -> Path:
    """Where built base layers are kept: ``$PIN_CACHE_DIR`` or ``~/.cache/pin``."""
    return Path(os.environ.get("PIN_CACHE_DIR") or Path.home() / ".cache" / "pin")


def debootstrap(recipe: BaseRecipe, target: Path, *, timeout: float = 1800) -> None:
    """Run ``debootstrap`` for ``recipe`` into ``target`` (needs root and the mirror).

    Raises :class:`BuildError` with the last lines of its log on failure.
    """
    exe = shutil.which("debootstrap")
    if exe is None:
        raise BuildError("debootstrap is not installed.",
                         hint="Install Debian's debootstrap (apt-get install debootstrap).")
    argv = [exe, f"--variant={recipe.variant}"]
    if recipe.include:
        argv.append("--include=" + ",".join(recipe.include))
    argv += [recipe.suite, str(target), recipe.mirror]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"debootstrap did not finish in {timeout:g} s.") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise BuildError(f"debootstrap failed (exit {done.returncode}):\n{tail}",
                         hint="Check the recipe's mirror is reachable and that pin runs as root.")


def rootfs_layer(rootfs: Path, *, epoch: int) -> bytes:
    """A normalised, uncompressed layer tar of the directory ``rootfs``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(rootfs.iterdir()):
            tar.add(entry, arcname=entry.name, recursive=True)
    raw.seek(0)
    return normalize_layer(raw, epoch=epoch)


def base_layer(recipe: BaseRecipe | None = None) -> Path:
    """The cached base layer tar for ``recipe`` (built on first use); returns its path."""
    recipe = recipe or load_recipe()
    dest = cache_dir() / f"base-{recipe.suite}-{recipe.sha256[:16]}.tar"
    if dest.is_file():
        return dest
    with tempfile.TemporaryDirectory(prefix="pin-base-") as tmp:
        root = Path(tmp) / "rootfs"
        debootstrap(recipe, root)
        data = rootfs_layer(root, epoch=recipe.epoch)
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(dest, data)
    return dest
