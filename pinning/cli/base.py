"""``pin base build``: build pin's own debootstrap base image reproducibly and push it
(:mod:`pinning.image.base`).
"""

from __future__ import annotations

from pathlib import Path

import click

from pinning.cli.envelope import emit
from pinning.cli.options import ca_cert_option, format_option, path_given
from pinning.cli.progress import progress_for, quiet_option

__all__ = ["base", "base_build"]


@click.group()
def base() -> None:
    """Base images: pin's own debootstrap base, built reproducibly and pushed."""


@base.command("build")
@click.option("--recipe", metavar="FILE", type=click.Path(dir_okay=False), callback=path_given,
              help="Base recipe (TOML: suite, variant, mirror, include, epoch; default: "
                   "pin's images/base/recipe.toml).")
@click.option("--registry", "registry_url", required=True, metavar="URL",
              help="Registry to push to: https://HOST[:PORT], or HOST[:PORT] (HTTPS; plain "
                   "HTTP only for 127.0.0.1 / localhost).")
@click.option("--repo", default="pin/base", show_default=True, help="Repository name.")
@ca_cert_option
@quiet_option
@format_option
def base_build(recipe: str | None, registry_url: str, repo: str, ca_cert: str | None,
               quiet: bool, fmt: str) -> None:
    """Build pin's base image (a minimal Debian made with debootstrap, tarred
    deterministically) and push it; print HOST/REPO@sha256:DIGEST on standard output.

    The same recipe gives the same digest on every run and machine: every file gets the
    recipe's epoch, owners are cleared, entries are sorted and volatile apt/dpkg files are
    dropped. The root file system is cached by the recipe's sha256 under $PIN_CACHE_DIR
    (default ~/.cache/pin), so only the first run needs root, debootstrap and the recipe's
    mirror. Pass the printed reference to `pin build LOCK --base REF`.

    Exit 8 when debootstrap, the recipe or the registry fails (2 for a bad flag).
    """
    from pinning.image.base import push_base_image
    from pinning.oci.registry import Registry

    registry = Registry(registry_url, ca_cert=Path(ca_cert) if ca_cert else None)
    with progress_for(fmt, quiet=quiet) as progress:
        ref = push_base_image(registry, repo, recipe_path=Path(recipe) if recipe else None,
                              progress=progress)
    if fmt == "json":
        emit({"ref": ref, "digest": ref.rsplit("@", 1)[1]})
    else:
        click.echo(ref)
