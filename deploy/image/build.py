"""Build pin's own image (``deploy/image/Dockerfile``: pin with its ``serve`` extra) by pin's
own build path, push it, and record its reference in the Kubernetes manifests.

    python deploy/image/build.py --registry HOST[:PORT] [--repo pin] [--engine URL]
        [--kustomization FILE ...] [--source DIR]   (``make image REGISTRY=HOST[:PORT]``)

1. Wheels (``--wheels``, default ``.wheelhouse/pin-image``): pin's wheel, built from a clean
   copy of the source (tracked and new files) with ``SOURCE_DATE_EPOCH`` = the base recipe's
   epoch (the same bytes every time), and pin[serve]'s dependencies at ``constraints.txt``'s
   versions for the base's CPython 3.11 on glibc 2.36 (``pip download``, binary wheels
   only), listed in ``requirements.txt`` with their sha256.
2. The base: pin's debootstrap base (:func:`pinning.image.base.push_base_image`, cached by its
   recipe), pushed to the registry as ``pin/base``.
3. The Dockerfile, built on the engine with the network off
   (:func:`pinning.image.engine.engine_build`), the engine's images removed afterwards.
4. Its layers exported; everything above the base squashed and normalised (sorted entries,
   the recipe's epoch as every mtime, no owners) and compressed by pin's pinned compressor
   (:func:`pinning.image.assemble.assemble`); the config keeps what the Dockerfile set
   (``Env``, ``Entrypoint``, ``Cmd``, ``User``, ``WorkingDir``, ``Labels``) with the epoch as
   its time. The same inputs give the same manifest digest on every run.
5. Pushed (:meth:`pinning.oci.registry.Registry.push_image`, tag ``--tag``, default pin's
   version); ``HOST/REPO@sha256:...`` is printed and written as ``newName`` and ``digest`` of
   the ``pin`` entry under ``images:`` of each ``--kustomization`` file.

Why a script and not ``pin build``: ``pin build`` builds the trial image a GPU lock describes
(its Dockerfile rendered from the lock, the lock's hash as its label); pin's own image has no
GPU lock, so this script drives the same stages with pin's own Dockerfile. Exit 8 (pin's
BuildError) for a build, engine or registry failure, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # run from a checkout: pin's own modules, not an installed pin

from pinning import __version__  # noqa: E402
from pinning.errors import BuildError, PinError  # noqa: E402

# What the base's python3 accepts: CPython 3.11, manylinux wheels up to glibc 2.36 (Debian 12).
PYTHON = "3.11"
PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(36, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def _run(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    """Run ``argv``; BuildError with its last output lines when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        raise BuildError(f"{' '.join(argv[:4])} ... failed (exit {done.returncode}):\n{tail}")


def source_copy(dest: Path) -> Path:
    """Copy the checkout's tracked and new (not ignored) files into ``dest`` (as
    ``.ci/wheel-smoke`` does), so a stale ``build/`` can neither add nor hide a file.
    """
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=False)
    if listed.returncode != 0:
        raise BuildError(f"{ROOT} is not a git checkout: cannot tell its files from leftovers.")
    for name in sorted(filter(None, listed.stdout.decode().split("\0"))):
        src = ROOT / name
        if not (src.exists() or src.is_symlink()):
            continue  # deleted, not yet staged
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dest / name)
        else:
            shutil.copy2(src, dest / name)
    return dest


def make_wheels(dest: Path, *, epoch: int, source: Path | None = None) -> Path:
    """Fill ``dest`` (emptied first) with pin's wheel, built from ``source`` (default: a clean
    copy of this checkout, :func:`source_copy`), and pin[serve]'s dependencies, and write
    ``dest/requirements.txt`` (``name==version --hash=sha256:...``, sorted).
    """
    from pinning.util.files import sha256_file

    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    with tempfile.TemporaryDirectory(prefix="pin-image-src-") as tmp:
        src = source or source_copy(Path(tmp) / "src")
        _run([*pip, "wheel", "--quiet", "--no-deps", "-w", str(dest), str(src)],
             env={"SOURCE_DATE_EPOCH": str(epoch)})
    (wheel,) = dest.glob("pin-*.whl")
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    _run([*pip, "download", "--quiet", "--only-binary", ":all:", *platforms,
          "--python-version", PYTHON, "--implementation", "cp", "--abi",
          "cp" + PYTHON.replace(".", ""), "-c", str(ROOT / "constraints.txt"), "-d", str(dest),
          f"{wheel}[serve]"])
    lines = []
    for path in sorted(dest.glob("*.whl")):
        m = _WHEEL.match(path.name)
        if m is None:
            raise BuildError(f"{path.name} is not a wheel file name.")
        lines.append(f"{m['name']}=={m['version']} "
                     f"--hash=sha256:{sha256_file(path, BuildError, label=str(path))}")
    (dest / "requirements.txt").write_text("\n".join(lines) + "\n")
    return dest


def render_context(dest: Path, base_ref: str, wheels: Path) -> Path:
    """The build context in ``dest``: the Dockerfile with ``ARG BASE=<base_ref>`` and, last,
    the label pin's engine clean-up knows its builds by (the sha256 of the Dockerfile and
    ``requirements.txt``; left out of the image pushed), and ``wheels/`` (a copy of
    ``wheels``). Returns ``dest``; BuildError when the Dockerfile has no ``ARG BASE`` line.
    """
    from pinning.oci.documents import LOCK_LABEL
    from pinning.util.digests import sha256_digest

    text = (HERE / "Dockerfile").read_text()
    if text.count("\nARG BASE\n") != 1:
        raise BuildError("deploy/image/Dockerfile must declare `ARG BASE` once, before FROM.")
    inputs = sha256_digest(text.encode() + (wheels / "requirements.txt").read_bytes())
    text = text.replace("\nARG BASE\n", f"\nARG BASE={base_ref}\n")
    (dest / "Dockerfile").write_text(f'{text}LABEL {LOCK_LABEL}="{inputs}"\n')
    shutil.copytree(wheels, dest / "wheels")
    return dest


def _config(attrs: dict[str, Any]) -> dict[str, Any]:
    """What the Dockerfile set, from the engine's image attributes, as image_docs takes it."""
    from pinning.oci.documents import LOCK_LABEL

    c = attrs.get("Config") or {}
    env = dict(e.split("=", 1) for e in c.get("Env") or [] if "=" in e)
    labels = {k: v for k, v in (c.get("Labels") or {}).items() if k != LOCK_LABEL}
    return {"env": env, "labels": labels or None, "cmd": c.get("Cmd") or None,
            "entrypoint": c.get("Entrypoint") or None, "user": c.get("User") or None,
            "working_dir": c.get("WorkingDir") or None,
            "architecture": str(attrs.get("Architecture") or "amd64")}


def build_docs(client: Any, base_ref: str, context: Path, *, epoch: int) -> Any:
    """Build ``context`` on the engine ``client`` (network off, no cache) and return the
    normalised :class:`~pinning.oci.documents.ImageDocs`; the engine's images are removed.
    """
    from pinning.image.assemble import assemble
    from pinning.image.build import added_layers, base_docs, pull_base
    from pinning.image.engine import build_tag, engine_build
    from pinning.image.layers import COMPRESSOR, COMPRESSOR_ANNOTATION
    from pinning.image.leftovers import engine_leftovers
    from pinning.image.plan import BuildPlan
    from pinning.oci.documents import LOCK_LABEL, image_docs
    from pinning.oci.reference import parse_pinned

    label = re.search(rf'^LABEL {re.escape(LOCK_LABEL)}="(sha256:[0-9a-f]{{64}})"$',
                      (context / "Dockerfile").read_text(), re.MULTILINE)
    if label is None:
        raise BuildError(f"{context / 'Dockerfile'} lacks the build's label (render_context).")
    inputs = label[1]
    pull_base(client, base_ref)
    base = base_docs(base_ref)
    with engine_leftovers(client) as made:
        image_id = engine_build(client, context, tag=build_tag(inputs),
                                nocache=True, progress=made.watch(None))
        made.image_id = image_id
        layers = added_layers(client, image_id, base)
        config = _config(client.images.get(image_id).attrs)
    plan = BuildPlan(base_ref=base_ref, wheels=(), epoch=epoch, input_hash=inputs)
    squashed = assemble(plan, layers, base)
    base_digest = parse_pinned(base_ref).required_digest
    history = [f"base {base_digest}"] * len(base.layers) + [
        f"deploy/image/Dockerfile: pin {__version__} with its serve extra"]
    return image_docs(squashed.layers, epoch=epoch, history=history, **config,
                      annotations={"org.opencontainers.image.base.digest": base_digest,
                                   COMPRESSOR_ANNOTATION: COMPRESSOR})


_IMAGES = re.compile(r"^images:\n  - name: pin\n(?:    (?:newName|newTag|digest): .*\n)+",
                     re.MULTILINE)


def set_image(kustomization: Path, ref: str) -> None:
    """Write ``ref`` (``HOST/REPO@sha256:...``) as the ``pin`` entry of ``images:`` in the
    kustomization file (its other lines and comments kept). BuildError when it has none.
    """
    name, digest = ref.split("@", 1)
    text = kustomization.read_text()
    new, count = _IMAGES.subn(f"images:\n  - name: pin\n    newName: {name}\n"
                              f"    digest: {digest}\n", text)
    if count != 1:
        raise BuildError(f"{kustomization}: no `images:` entry named pin to set.")
    kustomization.write_text(new)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, build, push and record; the exit code (0, 2, or the PinError's)."""
    ap = argparse.ArgumentParser(prog="deploy/image/build.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--registry", required=True, help="HOST[:PORT] or https://HOST[:PORT]")
    ap.add_argument("--repo", default="pin")
    ap.add_argument("--tag", default=__version__)
    ap.add_argument("--engine", help="Docker Engine URL (default: DOCKER_HOST)")
    ap.add_argument("--wheels", type=Path, default=ROOT / ".wheelhouse" / "pin-image")
    ap.add_argument("--kustomization", type=Path, action="append", default=[])
    ap.add_argument("--source", type=Path, help="build pin's wheel from this source tree "
                    "(default: a clean copy of the checkout's tracked and new files)")
    ap.add_argument("--ca-cert", type=Path, help="CA of an HTTPS registry")
    args = ap.parse_args(argv)
    try:
        ref = build_and_push(args)
    except PinError as exc:
        print(f"pin image: {exc}", file=sys.stderr)
        return exc.exit_code
    for path in args.kustomization:
        set_image(path, ref)
    print(ref)
    return 0


def build_and_push(args: argparse.Namespace) -> str:
    """Steps 1-5 of the module docstring; the pushed ``HOST/REPO@sha256:...``."""
    from pinning.image.base import load_recipe, push_base_image
    from pinning.image.engine import engine_client
    from pinning.oci.reference import ImageRef
    from pinning.oci.registry import Registry

    epoch = load_recipe().epoch
    wheels = make_wheels(args.wheels, epoch=epoch, source=args.source)
    with Registry(args.registry, ca_cert=args.ca_cert) as registry:
        base_ref = push_base_image(registry, "pin/base")
        with tempfile.TemporaryDirectory(prefix="pin-image-") as tmp:
            context = render_context(Path(tmp), base_ref, wheels)
            docs = build_docs(engine_client(args.engine), base_ref, context, epoch=epoch)
        digest = registry.push_image(args.repo, args.tag, docs)
        if registry.manifest_digest(args.repo, digest) != digest:
            raise BuildError(f"{registry.host} does not serve {args.repo}@{digest} after the "
                             "push.")
        print(json.dumps({"digest": digest, "layer_bytes": [b.size for b in docs.layers]}),
              file=sys.stderr)
        return str(ImageRef(registry=registry.host, repository=args.repo, digest=digest))


if __name__ == "__main__":
    sys.exit(main())
