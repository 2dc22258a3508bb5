"""The locally made base image: debootstrap a minimal Debian, tar it deterministically.

A recipe (``images/base/recipe.toml``: suite, variant, mirror, packages, epoch) gives a
root filesystem via ``debootstrap`` (root only); :func:`rootfs_layer` turns it into one
normalised layer (:mod:`pinning.image.layers`). The layer is cached by the recipe's sha256
so tests and users build it once. :func:`base_image_docs` makes the image of that one layer
and :func:`push_base_image` pushes it (``pin base build``): the same recipe gives the same
digest on every run. Raises :class:`~pinning.errors.BuildError` (exit 8).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pinning.assets import asset_path
from pinning.errors import BuildError
from pinning.image.layers import COMPRESSOR, COMPRESSOR_ANNOTATION, gzip_layers, normalize_layer
from pinning.image.plan import DEFAULT_PATH
from pinning.oci.documents import ImageDocs, image_docs
from pinning.oci.reference import ImageRef
from pinning.oci.registry import Registry
from pinning.util.digests import sha256_hex
from pinning.util.files import atomic_write_bytes, read_toml
from pinning.util.progress import NULL_PROGRESS, Progress

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
    """Where built base layers are kept: pin's cache folder
    (:func:`pinning.util.cache.cache_root`: ``$PIN_CACHE_DIR``, ``$XDG_CACHE_HOME/pin``,
    ``~/.cache/pin``), as for every other cache of pin's.
    """
    from pinning.util.cache import cache_root

    return cache_root()


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


def base_layer(recipe: BaseRecipe | None = None, *,
               progress: Progress = NULL_PROGRESS) -> Path:
    """The cached base layer tar for ``recipe`` (built on first use, shown as a
    ``debootstrap`` task of unknown size); returns its path.
    """
    recipe = recipe or load_recipe()
    dest = cache_dir() / f"base-{recipe.suite}-{recipe.sha256[:16]}.tar"
    if dest.is_file():
        return dest
    task = progress.task(f"debootstrap {recipe.suite}", None)
    try:
        with tempfile.TemporaryDirectory(prefix="pin-base-") as tmp:
            root = Path(tmp) / "rootfs"
            debootstrap(recipe, root)
            data = rootfs_layer(root, epoch=recipe.epoch)
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(dest, data)
    finally:
        task.done()
    return dest


BASE_ENV = {"PATH": DEFAULT_PATH}
"""The base image's config ``Env``: only ``PATH``, the one pin's trial images default to."""


def base_image_docs(recipe: BaseRecipe | None = None, *, progress: Progress = NULL_PROGRESS,
                    jobs: int | None = None) -> ImageDocs:
    """The base image of ``recipe`` (default: pin's own): its one layer (:func:`base_layer`,
    compressed with :func:`~pinning.image.layers.gzip_layers` on ``jobs`` threads), a config
    with the recipe's epoch and :data:`BASE_ENV`, and the compressor annotation. The same
    recipe gives the same bytes on every run. Raises :class:`BuildError` (exit 8) as
    :func:`base_layer` does.
    """
    recipe = recipe or load_recipe()
    tar = base_layer(recipe, progress=progress).read_bytes()
    layer = gzip_layers([tar], jobs=jobs, progress=progress)[0]
    return image_docs([layer], epoch=recipe.epoch, env=BASE_ENV,
                      history=[f"debootstrap {recipe.suite} ({recipe.sha256[:12]})"],
                      annotations={COMPRESSOR_ANNOTATION: COMPRESSOR})


def push_base_image(registry: Registry, repo: str, *, recipe_path: Path | None = None,
                    progress: Progress = NULL_PROGRESS) -> str:
    """Build pin's base image from the recipe at ``recipe_path`` (default: pin's
    ``images/base/recipe.toml``), or take its layer from the cache, and push it to ``repo``
    on ``registry`` tagged with the recipe's suite; return ``HOST/REPO@sha256:<digest>``
    (the same digest on every run). ``progress`` gets the debootstrap, compress and push
    tasks. Raises :class:`BuildError` (exit 8) for a bad recipe, a debootstrap failure or
    a registry that does not serve the image after the push.
    """
    recipe = load_recipe(recipe_path or RECIPE)
    docs = base_image_docs(recipe, progress=progress)
    digest = registry.push_image(repo, recipe.suite, docs, progress=progress)
    if registry.manifest_digest(repo, digest) != digest:
        raise BuildError(f"Registry {registry.host} does not serve {repo}@{digest} after the "
                         "push.", hint="Check the registry's storage and logs.")
    return str(ImageRef(registry=registry.host, repository=repo, digest=digest))
