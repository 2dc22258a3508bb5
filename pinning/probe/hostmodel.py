"""The model on a host, offline: the cached revisions of a Hugging Face model, and the files
of the lock's model (a snapshot in the host's hub cache or a local folder), hashed, read under
the host's root (:class:`~pinning.probe.root.HostRoot`) so a recorded host reads as a live one.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pinning.lockfile.models import Model, model_content_hash
from pinning.probe.models import ModelFacts, ModelFileProblem
from pinning.probe.root import HostRoot

if TYPE_CHECKING:
    from pinning.probe.hasher import Hasher
    from pinning.probe.modelfiles import ModelTree

_COMMIT = re.compile(r"[0-9a-f]{40}")


def probe_model(host: HostRoot, env: Mapping[str, str], model_id: str | None = None, *,
                model: Model | None = None, hasher: Hasher | None = None,
                lock_path: str | None = None) -> ModelFacts:
    """The model on the host, offline: the cached revisions of ``model_id`` (huggingface_hub's
    cache scan), and with the lock's ``model`` also its files, hashed by ``hasher``
    (:mod:`pinning.probe.modelfiles`): a Hugging Face model's snapshot at the locked revision
    in the host's cache (:func:`~pinning.probe.hubcache.hf_cache_dir`), read file by file by
    :func:`~pinning.probe.hubcache.read_hub_model` (a missing blob is a problem of its
    file, never of the whole cache; ``revisions`` are the 40-hex snapshot folders of the
    model), or a local model folder (``model.path``: ``~`` is the host's ``HOME``; a
    relative path is taken from the folder of the lock file ``lock_path`` (a path on this
    machine; under a recorded root, the same folder inside the root), else from the current
    folder live or the root's ``/``). The lock file itself is left out of the folder's
    files. Paths are read under the root. What cannot be read is the ``reason``; raises
    only ``DriftError`` (exit 6) for a file that changed while hashed, twice.
    """
    if model is not None and model.path is not None:
        return _probe_model_dir(host, env, model.path, hasher, lock_path)
    wanted = model.id if model is not None else model_id
    assert wanted is not None, "probe_model needs model_id or model"
    if model is None or model.revision is None:
        return _cached_revisions(host, env, wanted)
    rev = model.revision
    from pinning.probe.hubcache import hf_cache_dir, read_hub_model

    cache = hf_cache_dir(env)
    facts = ModelFacts(id=wanted, cache=cache, revision=rev, source="hf-cache")
    if not host.is_dir(cache):
        return facts.model_copy(update={"reason": f"no Hugging Face cache at {cache}"})
    try:
        tree = read_hub_model(host.path(cache), wanted, rev, hasher=hasher)
    except OSError as exc:
        return facts.model_copy(update={
            "reason": f"cannot read {wanted}@{rev} in {cache}: {exc.strerror or exc}"})
    revs = set(_snapshot_commits(host, cache, wanted))
    if tree.reason is None:
        revs.add(rev)
    return _with_tree(host, facts.model_copy(update={"revisions": sorted(revs)}), tree)


def _snapshot_commits(host: HostRoot, cache: str, model_id: str) -> list[str]:
    """The 40-hex snapshot folders of ``model_id`` in the host's hub ``cache`` (the
    revisions it holds; huggingface_hub's cache layout ``models--ORG--NAME/snapshots/``).
    """
    folder = host.path(posixpath.join(cache, "models--" + model_id.replace("/", "--"),
                                      "snapshots"))
    try:
        with os.scandir(folder) as it:
            return sorted(e.name for e in it if _COMMIT.fullmatch(e.name)
                          and e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _probe_model_dir(host: HostRoot, env: Mapping[str, str], path: str,
                     hasher: Hasher | None, lock_path: str | None) -> ModelFacts:
    """The files of the local model folder ``path`` (as the lock ``lock_path`` names it) on
    the host.
    """
    where = path
    lock_abs = os.path.abspath(lock_path) if lock_path else None
    if where == "~" or where.startswith("~/"):
        home = (env.get("HOME") or "/root").rstrip("/")
        where = home + where[1:]
    elif not where.startswith("/"):
        base = (posixpath.dirname(lock_abs) if lock_abs
                else os.getcwd() if host.live else "/")
        where = posixpath.normpath(posixpath.join(base, where))
    base_facts = ModelFacts(path=path, source="directory", location=where)
    if not host.is_dir(where):
        state = "is not a folder" if host.exists(where) else "is absent"
        looked = (f" (the lock's relative path {path} read from the lock's folder "
                  f"{posixpath.dirname(lock_abs)})" if lock_abs and where != path else "")
        return base_facts.model_copy(update={
            "reason": f"the model folder {where} {state}{looked}"})
    from pinning.probe.hasher import default_cache_file

    left_out = [default_cache_file()]
    if lock_abs:
        left_out += [Path(lock_abs), host.path(lock_abs)]
    try:
        tree = read_model_folder(host.path(where), hasher, left_out,
                                 root=None if host.live else host.root)
    except OSError as exc:
        return base_facts.model_copy(update={
            "reason": f"cannot read the model folder {where}: {exc.strerror or exc}"})
    return _with_tree(host, base_facts, tree)


def read_model_folder(folder: Path, hasher: Hasher | None, left_out: Sequence[Path], *,
                      root: Path | None = None) -> ModelTree:
    """:func:`~pinning.probe.modelfiles.read_model_dir` of ``folder`` with the files
    ``left_out`` (the lock, pin's digest cache) excluded by their resolved paths; ``root``
    is a recorded host's root (links resolved as that host sees them), ``None`` live.
    """
    from pinning.probe.modelfiles import read_model_dir

    return read_model_dir(folder, hasher=hasher, exclude=left_out, root=root)


def _with_tree(host: HostRoot, facts: ModelFacts, tree: ModelTree) -> ModelFacts:
    """``facts`` with what :mod:`~pinning.probe.modelfiles` read: the files whose bytes
    check out (a file with a problem is left out of ``files`` and listed in ``problems``),
    their content hash, and where they were read (a host path).
    """
    bad = {p.path for p in tree.problems}
    files = [f for f in tree.files if f.path not in bad]
    problems = [ModelFileProblem(path=p.path, kind=p.kind, detail=p.detail)
                for p in tree.problems]
    reason = tree.reason
    if not files and not problems and reason is None:
        reason = "the model folder holds no file"
    return facts.model_copy(update={
        "source": tree.source,
        "location": host.show(Path(tree.location)) if tree.location else facts.location,
        "files": files, "problems": problems, "reason": reason,
        "content_hash": model_content_hash(files) if files else None,
    })


def _cached_revisions(host: HostRoot, env: Mapping[str, str], model_id: str) -> ModelFacts:
    """Revisions of ``model_id`` cached locally, by huggingface_hub's cache scan (offline)."""
    from pinning.probe.hubcache import hf_cache_dir

    cache = hf_cache_dir(env)
    if not host.is_dir(cache):
        return ModelFacts(id=model_id, cache=cache, reason=f"no Hugging Face cache at {cache}")
    real = host.path(cache)
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir(real)
    except (CacheNotFound, OSError, ValueError) as exc:
        return ModelFacts(id=model_id, cache=cache, reason=f"cannot scan {cache}: {exc}")
    for repo in info.repos:
        if repo.repo_type == "model" and repo.repo_id == model_id:
            revs = sorted(r.commit_hash for r in repo.revisions)
            return ModelFacts(id=model_id, cache=cache, revisions=revs)
    folder = "models--" + model_id.replace("/", "--")
    problems = [str(w) for w in info.warnings if folder in str(w)]
    if problems:
        return ModelFacts(id=model_id, cache=cache,
                          reason=f"the cache entry for {model_id} is unreadable: {problems[0]}")
    return ModelFacts(id=model_id, cache=cache, reason=f"{model_id} is not in the cache at {cache}")
