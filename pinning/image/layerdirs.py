"""Read the layers a build added straight from the engine's overlay2 store, so that pin never
exports the base it only mounts.

The Engine API has no call that gives one layer of an image: ``docker save`` (``GET
/images/{name}/get``) writes every layer, the base's too (a 184.5 MB tar for an 11.9 MB
layer), which is what made ``pin build`` slower than ``docker build`` + ``docker push``
(issue 33). ``docker push`` reads its own layer store; when the engine is on this machine,
uses the ``overlay2`` graph driver with native diffs, and pin runs as root (the store and the
``trusted.overlay.*`` attributes are root's), :func:`local_layers` does the same: it reads
the ``diff`` directories the engine names in ``GraphDriver.Data`` (``UpperDir``, then
``LowerDir``, top first) for the layers above the base only, and writes each as the
uncompressed tar ``docker save`` would give (moby's ``archive.TarWithOptions`` with its
overlay whiteout format: the source directory itself left out, entries in lexical walk
order, hard links to the first path of an inode, sockets skipped, a ``0:0`` character device
written as an empty ``.wh.NAME`` file of mode 0600, a directory whose
``trusted.overlay.opaque`` is ``y`` followed by an empty ``.wh..wh..opq`` file of the
directory's permissions; moby/moby v20.10 ``pkg/archive/archive.go`` and
``archive_linux.go``, read 2026-12-05). What pin keeps of a tar after
:func:`~pinning.image.layers.squash_layers` (names, types, modes, link targets, device
numbers, data) is then the same either way; owners, times and extended attributes are
normalised away. Anything else (a remote or rootless engine, another driver, a layer count
that does not match) gives ``None`` and the caller exports with ``docker save``.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path
from typing import Any

from pinning.image.engine import engine_errors
from pinning.util.progress import NULL_PROGRESS, Progress

WHITEOUT_PREFIX = ".wh."
OPAQUE = ".wh..wh..opq"
_OPAQUE_XATTR = "trusted.overlay.opaque"


def store_readable(client: Any) -> bool:
    """True when the engine stores layers with ``overlay2`` and native diffs, in the clear
    (not with ``userxattr``, a rootless engine's), and this process is root. Engine
    failures propagate (see :func:`~pinning.image.engine.engine_errors`).
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    info = client.info()
    if info.get("Driver") != "overlay2":
        return False
    status = {str(k): str(v) for k, v in info.get("DriverStatus") or []}
    return status.get("Native Overlay Diff") == "true" and status.get("userxattr") != "true"


def layer_dirs(client: Any, image_id: str) -> list[Path] | None:
    """The ``diff`` directories of ``image_id``'s layers, bottom first, when they are
    readable here (see the module docstring), else ``None``: also when the engine names
    more or fewer directories than the image has layers, or one that is not a directory
    here (a remote engine's: their names carry the engine's random cache IDs). Engine
    failures give ``None`` too: ``docker save`` then reports them.
    """
    try:
        if not store_readable(client):
            return None
        attrs = client.images.get(image_id).attrs
    except engine_errors():
        return None
    driver = attrs.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    layers = (attrs.get("RootFS") or {}).get("Layers") or []
    if driver.get("Name") != "overlay2" or not data.get("UpperDir"):
        return None
    top_first = [str(data["UpperDir"]), *filter(None, str(data.get("LowerDir") or "").split(":"))]
    dirs = [Path(p) for p in reversed(top_first)]
    if len(dirs) != len(layers) or not all(d.is_dir() for d in dirs):
        return None
    return dirs


def walk_order(root: Path) -> list[str]:
    """Every path under ``root`` (relative, ``/``-separated), the root itself left out, in
    the order Go's ``filepath.Walk`` visits them: depth first, names sorted by their bytes.
    """
    out: list[str] = []

    def walk(rel: bytes) -> None:
        here = os.path.join(os.fsencode(root), rel) if rel else os.fsencode(root)
        for name in sorted(os.listdir(here)):
            path = rel + b"/" + name if rel else name
            out.append(os.fsdecode(path))
            if stat.S_ISDIR(os.lstat(os.path.join(os.fsencode(root), path)).st_mode):
                walk(path)

    walk(b"")
    return out


def dir_layer_tar(root: Path) -> bytes:
    """The uncompressed layer tar of overlay2 ``diff`` directory ``root``, as ``docker save``
    writes it (see the module docstring). ``OSError`` when it cannot be read.
    """
    out = io.BytesIO()
    seen: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in walk_order(root):
            path = root / rel
            st = os.lstat(path)
            mode = st.st_mode
            if stat.S_ISSOCK(mode):
                continue
            if stat.S_ISCHR(mode) and st.st_rdev == 0:
                parent, _, name = rel.rpartition("/")
                info = tarfile.TarInfo(f"{parent}/{WHITEOUT_PREFIX}{name}" if parent
                                       else WHITEOUT_PREFIX + name)
                info.mode = 0o600
                tar.addfile(info)
                continue
            info = tar.gettarinfo(str(path), arcname=rel)
            if stat.S_ISREG(mode) and st.st_nlink > 1:
                first = seen.setdefault((st.st_dev, st.st_ino), rel)
                if first != rel:
                    info.type, info.linkname, info.size = tarfile.LNKTYPE, first, 0
                    tar.addfile(info)
                    continue
            if stat.S_ISREG(mode):
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            else:
                tar.addfile(info)
            if stat.S_ISDIR(mode) and _opaque(path):
                wh = tarfile.TarInfo(f"{rel}/{OPAQUE}")
                wh.mode = stat.S_IMODE(mode) & 0o777
                tar.addfile(wh)
    return out.getvalue()


def _opaque(path: Path) -> bool:
    """True when overlay marks directory ``path`` opaque (it hides the lower layers' tree)."""
    try:
        return os.getxattr(path, _OPAQUE_XATTR, follow_symlinks=False) == b"y"
    except OSError:
        return False


def local_layers(client: Any, image_id: str, keep_from: int, *,
                 progress: Progress = NULL_PROGRESS) -> list[bytes | None] | None:
    """``image_id``'s layers as :func:`~pinning.image.engine.export_layers` gives them
    (uncompressed tars, bottom first), the first ``keep_from`` (the base's) ``None`` and
    never read, the others read from the engine's overlay2 store (:func:`layer_dirs`,
    :func:`dir_layer_tar`); ``None`` when that store cannot be read here, or a read fails
    midway (the caller then exports with ``docker save``). ``progress`` gets an ``export``
    task counting the tar bytes made. Raises nothing of its own.
    """
    dirs = layer_dirs(client, image_id)
    if dirs is None or keep_from > len(dirs):
        return None
    task = progress.task(f"export {image_id.removeprefix('sha256:')[:12]}", None)
    layers: list[bytes | None] = [None] * keep_from
    try:
        for d in dirs[keep_from:]:
            layers.append(dir_layer_tar(d))
            task.advance(len(layers[-1] or b""))
    except OSError:
        return None
    finally:
        task.done()
    return layers
