"""A model in the local Hugging Face cache, hashed: :func:`read_hub_model` reads one
revision's snapshot (huggingface_hub's documented layout, offline) and checks each cache blob
against its name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from pinning.errors import ProbeError
from pinning.probe.digestcache import HEX40, HEX64
from pinning.probe.hasher import Digest, Hasher
from pinning.probe.modelfiles import (
    ModelProblem,
    ModelTree,
    Resolver,
    absent,
    collect,
    inside,
    problem_of,
    walk,
)
from pinning.util.files import read_regular_bytes

# A Hugging Face repo id (ORG/NAME or NAME) and a ref name (main, refs/pr/1): no `..`, no `--`.
_REPO_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_REF = re.compile(r"[A-Za-z0-9._-]{1,128}(?:/[A-Za-z0-9._-]{1,128}){0,4}")


def hf_cache_dir(env: Mapping[str, str]) -> str:
    """The Hugging Face hub cache path a host uses (``HF_HUB_CACHE``, ``HF_HOME/hub``, or
    ``~/.cache/huggingface/hub`` with ``HOME`` from the host environment, ``/root`` if unset).
    """
    if env.get("HF_HUB_CACHE"):
        return env["HF_HUB_CACHE"]
    if env.get("HF_HOME"):
        return env["HF_HOME"].rstrip("/") + "/hub"
    home = env.get("HOME") or "/root"
    return home.rstrip("/") + "/.cache/huggingface/hub"


def read_hub_model(cache_dir: Path, model_id: str, revision: str, *,
                   hasher: Hasher | None = None, root: Path | None = None) -> ModelTree:
    """The files of ``model_id`` at ``revision`` in the Hugging Face cache ``cache_dir``
    (huggingface_hub's documented layout, offline), hashed, each cache blob checked against
    its name.

    The layout (huggingface_hub guide "Manage huggingface_hub cache-system",
    https://huggingface.co/docs/huggingface_hub/guides/manage-cache, published_unknown: the
    page carries no date): ``<cache_dir>/models--ORG--NAME/`` holds ``blobs/`` (file bytes,
    each named by its etag: the sha256 for an LFS file, the git blob id ``sha1("blob
    <size>\\0" + bytes)`` for a small one), ``refs/<branch>`` (a commit hash) and
    ``snapshots/<commit>/<path>``: relative links to ``../../blobs/<name>``. A download in
    progress is ``blobs/<name>.incomplete`` and gets its snapshot link only when complete
    (``huggingface_hub/file_download.py``, ``hf_hub_download``); ``.no_exist/<commit>/``
    marks files known not to exist (``_CACHED_NO_EXIST``) and is not part of the model.

    ``revision`` is the 40-hex commit (a branch name is looked up in ``refs/``; the tree
    then carries the commit it names). Each file is listed with its real size and sha256;
    a blob whose bytes do not match its name is ``blob-mismatch`` (still listed), a link to
    an absent blob ``missing`` (``incomplete`` when its ``.incomplete`` download is there),
    a link leaving the model's cache folder ``unreadable`` (not followed), any
    ``blobs/*.incomplete`` an ``incomplete`` problem under its ``blobs/`` path. A model or
    revision not in the cache is ``reason`` (naming ``cache_dir``), ``files`` empty.
    Never raises for what is on disk, but :class:`~pinning.errors.DriftError` (exit 6) for
    a file that changed while hashed, twice; ``hasher`` ``None``: a Hasher without a cache
    file.

    ``root``: the root of a recorded host (``pin verify --root``) under which ``cache_dir``
    lies; links (the snapshot's, or an absolute one to ``/<cache>/models--.../blobs/...``)
    are then resolved as that host sees them, inside ``root``, and one that leaves the
    model's cache folder is refused as above. ``None``: links are resolved on this machine.
    """
    hasher = hasher or Hasher()
    resolver = Resolver(root)
    located = _locate(Path(cache_dir), model_id, revision, resolver)
    if isinstance(located, ModelTree):
        return located
    repo, snapshot, commit = located
    entries, problems = walk(snapshot, set())
    wanted = _snapshot_targets(repo, entries, problems, resolver)
    git = {Path(real) for _, real, blob in wanted if blob and HEX40.fullmatch(blob)}
    digests = hasher.digests([Path(real) for _, real, _ in wanted], git)
    files = collect([(rel, real) for rel, real, _ in wanted], digests, problems)
    listed = {f.path for f in files}
    for rel, real, blob in wanted:
        got = digests[Path(real)]
        if blob is not None and rel in listed and not isinstance(got, OSError):
            problems.extend(_blob_check(rel, blob, got))
    problems.extend(_incomplete_blobs(repo / "blobs"))
    return ModelTree(source="hf-cache", location=str(snapshot), id=model_id, revision=commit,
                     files=files, problems=sorted(problems, key=lambda p: (p.path, p.kind)))


def _locate(cache_dir: Path, model_id: str, revision: str,
            resolver: Resolver) -> tuple[Path, Path, str] | ModelTree:
    """``(model cache folder, snapshot folder, commit)`` (real paths under a recorded
    host's root), or a tree with ``reason`` when the id or revision is malformed or the
    snapshot is not in ``cache_dir``.
    """
    repo = cache_dir / ("models--" + model_id.replace("/", "--"))
    base = ModelTree(source="hf-cache", location=str(repo), id=model_id, revision=revision)
    if not _REPO_ID.fullmatch(model_id) or "--" in model_id or ".." in model_id:
        return absent(base, f"{model_id!r} is not a Hugging Face model id (ORG/NAME)")
    try:
        if resolver.host is not None:
            repo = Path(resolver.real(repo))
    except OSError as exc:
        return absent(base, f"the cache folder {repo} cannot be read ({exc.strerror or exc})")
    commit = _commit_of(repo, revision, resolver)
    if commit is None:
        return absent(base, f"{model_id}@{revision} is not in the Hugging Face cache "
                       f"{cache_dir} (no refs/{revision} naming a commit); pin a 40-hex commit")
    snapshot = repo / "snapshots" / commit
    if not snapshot.is_dir() or snapshot.is_symlink():
        base = ModelTree(source="hf-cache", location=str(snapshot), id=model_id,
                         revision=commit)
        return absent(base, f"{model_id}@{commit} is not in the Hugging Face cache "
                       f"{cache_dir} (no {snapshot}); download it on a host with network "
                       f"(`hf download {model_id} --revision {commit}`) or point HF_HUB_CACHE "
                       "at the cache that holds it")
    return repo, snapshot, commit


def _commit_of(repo: Path, revision: str, resolver: Resolver) -> str | None:
    """``revision`` when it is a 40-hex commit; else the commit ``refs/<revision>`` of the
    model's cache folder ``repo`` names; ``None`` when there is none.
    """
    if HEX40.fullmatch(revision):
        return revision
    if not _REF.fullmatch(revision) or ".." in revision:
        return None
    try:
        ref = Path(resolver.real(repo / "refs" / revision))
        text = read_regular_bytes(ref, ProbeError, label="ref",
                                  limit=1024).decode("ascii", "replace").strip()
    except (ProbeError, OSError):
        return None
    return text if HEX40.fullmatch(text) else None


def _snapshot_targets(repo: Path, entries: list[tuple[str, Path]], problems: list[ModelProblem],
                      resolver: Resolver) -> list[tuple[str, str, str | None]]:
    """``(relative path, real path, blob name or None)`` of each snapshot entry to hash; a
    link out of ``repo``, or to a blob that is absent, becomes a problem in ``problems``.
    """
    repo_real = resolver.real(repo)
    blobs_real = os.path.join(repo_real, "blobs")
    wanted: list[tuple[str, str, str | None]] = []
    for rel, path in entries:
        try:
            real = resolver.real(path)
        except OSError as exc:
            problems.append(problem_of(rel, exc))
            continue
        if not inside(real, repo_real):
            problems.append(ModelProblem(rel, "unreadable", "a link out of the model's cache "
                                         f"folder {repo}; not followed"))
            continue
        blob = os.path.basename(real) if os.path.dirname(real) == blobs_real else None
        if os.path.lexists(real):
            wanted.append((rel, real, blob))
        elif blob is not None and os.path.lexists(real + ".incomplete"):
            problems.append(ModelProblem(rel, "incomplete", f"blobs/{blob} is still "
                                         "downloading or was interrupted"))
        else:
            problems.append(ModelProblem(rel, "missing", f"its blob {blob or real} is not in "
                                         "the cache"))
    return wanted


def _blob_check(rel: str, blob: str, got: Digest) -> list[ModelProblem]:
    """A ``blob-mismatch`` problem when the blob's name (64 hex: sha256; 40 hex: git blob
    id) is not what its bytes hash to; nothing for other names.
    """
    if HEX64.fullmatch(blob):
        what, named = "sha256", got.sha256
    elif HEX40.fullmatch(blob):
        what, named = "git blob id", got.git_sha1 or ""
    else:
        return []
    if named == blob:
        return []
    return [ModelProblem(rel, "blob-mismatch", f"blobs/{blob}: the bytes' {what} is "
                         f"{named}, not the blob's name")]


def _incomplete_blobs(blobs: Path) -> list[ModelProblem]:
    """An ``incomplete`` problem per ``blobs/*.incomplete`` (a download not finished)."""
    try:
        names = sorted(e.name for e in os.scandir(blobs) if e.name.endswith(".incomplete"))
    except OSError:
        return []
    return [ModelProblem(f"blobs/{n}", "incomplete", "a download of this model that did not "
                         "finish; one of its files may be absent from the snapshot")
            for n in names]
