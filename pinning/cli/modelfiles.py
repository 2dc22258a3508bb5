"""The lock's model files on this machine, shared by ``pin resolve --model`` and ``pin lock
model`` (kept apart from both command modules so neither imports the other).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pinning.lockfile.models import Model
    from pinning.probe.modelfiles import ModelTree

__all__ = ["model_folder", "model_line", "read_lock_model"]


def read_lock_model(model: Model, *, cache: str | None = None, path: str | None = None,
                    lock_file: Path | None = None) -> ModelTree:
    """Read and hash ``model``'s files on this machine, offline: a Hugging Face model's
    snapshot at its revision in the hub cache ``cache`` (default ``$HF_HUB_CACHE``, else
    ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``), or the folder ``path`` (default:
    the lock's model folder, ``~`` expanded; a relative one is read from the folder of
    ``lock_file``, the lock it comes from, else from the current folder). The lock file and
    pin's digest cache file are left out of a folder's files. Digests are remembered in
    pin's cache (:func:`~pinning.probe.modelfiles.default_cache_file`). Never raises for
    what is on disk, but :class:`~pinning.errors.DriftError` (exit 6) naming a file that
    changed while hashed, twice: nothing is written then.
    """
    from pinning.probe.hasher import Hasher, default_cache_file
    from pinning.probe.hubcache import read_hub_model
    from pinning.probe.modelfiles import read_model_dir

    cache_file = default_cache_file()
    hasher = Hasher(cache_file)
    source = model_source(model, cache=cache, path=path, lock_file=lock_file)
    if path is None and model.path is None:
        assert model.id is not None and model.revision is not None
        return read_hub_model(source, model.id, model.revision, hasher=hasher)
    left_out = [cache_file] + ([lock_file] if lock_file is not None else [])
    return read_model_dir(source, hasher=hasher, exclude=left_out)


def model_source(model: Model, *, cache: str | None = None, path: str | None = None,
                 lock_file: Path | None = None) -> Path:
    """The folder :func:`read_lock_model` reads ``model``'s files from: ``path``, else the
    lock's model folder, else the Hugging Face hub cache (``cache`` or the default).
    """
    import os

    from pinning.probe.hubcache import hf_cache_dir

    if path is not None:
        return Path(os.path.expanduser(path))
    if model.path is not None:
        return model_folder(model.path, lock_file)
    return Path(os.path.expanduser(cache or hf_cache_dir(os.environ)))


def model_folder(path: str, lock_file: Path | None) -> Path:
    """The absolute folder a lock's model ``path`` names on this machine: ``~`` expanded; a
    relative path taken from the folder of ``lock_file`` (the current folder without one).
    """
    import os

    full = os.path.expanduser(path)
    if not os.path.isabs(full):
        base = os.path.dirname(os.path.abspath(lock_file)) if lock_file else os.getcwd()
        full = os.path.join(base, full)
    return Path(os.path.normpath(full))


def model_line(model: Model) -> str:
    """One line on the lock's model files: how many are pinned with the content hash, the
    missing ones, or why none are.
    """
    if model.files:
        total = sum(f.size for f in model.files)
        gone = f"; missing: {', '.join(model.missing)}" if model.missing else ""
        return (f"Model {model.label}: {len(model.files)} files pinned ({total} bytes, "
                f"{model.content_hash}){gone}")
    return f"Model {model.label}: files not pinned ({model.files_unknown or 'none recorded'})"
