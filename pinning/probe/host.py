"""Read a host: files under a root directory and tool outputs through a :class:`Runner`.

``probe_host(root=Path("/"), runner=SystemRunner())`` reads this machine; with a recorded
tree and a :class:`~pinning.util.proc.ReplayRunner` it reads a recorded host the same way. Each
fact that cannot be read becomes a ``not-probed`` :class:`Reading` with the reason; only a
missing root or an unreadable recording fails the probe as a whole
(:class:`~pinning.errors.ProbeError`, exit 7).

Paths and formats: sysfs and ``/opt/rocm/.info/version`` (ROCm/rocm-systems@1b1610f,
rocm-core), ``/proc/driver/nvidia/version`` and ``nvidia-smi --query-gpu`` (NVIDIA), Triton
distribution names (ROCm/aiter@0132896:setup.py).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pinning import __version__
from pinning.errors import ProbeError
from pinning.lockfile.models import Model, model_content_hash
from pinning.probe.gpus import (
    AMD_VENDOR,
    NVIDIA_VENDOR,
    amd_gpus,
    nvidia_gpus,
    pci_display_devices,
    probe_amd_software,
    probe_nvidia_software,
)
from pinning.probe.models import (
    BEHAVIOUR_ENV,
    ContainerFacts,
    GpuFacts,
    HostFacts,
    ModelFacts,
    ModelFileProblem,
    OsFacts,
    ProbeInfo,
    Reading,
)
from pinning.probe.pyenv import probe_python, site_dirs
from pinning.probe.root import HostRoot, run_tool
from pinning.util.proc import Runner
from pinning.util.text import control_chars

if TYPE_CHECKING:
    from pinning.probe.modelfiles import Hasher, ModelTree

# --- OS ---------------------------------------------------------------------------------


def parse_os_release(text: str) -> dict[str, str]:
    """Parse os-release ``KEY=value`` lines (quotes and backslash escapes removed)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = re.sub(r"\\(.)", r"\1", value)
    return out


def _probe_os(host: HostRoot, runner: Runner, live: bool) -> OsFacts:
    text = host.read("/etc/os-release")
    src = "/etc/os-release"
    if text is None:
        text, src = host.read("/usr/lib/os-release"), "/usr/lib/os-release"
    fields = parse_os_release(text) if text else {}

    def field(key: str) -> Reading:
        if text is None:
            return Reading.missing(f"{host.why('/etc/os-release')}; "
                                   f"{host.why('/usr/lib/os-release')}")
        if not fields.get(key, "").strip():
            return Reading.missing(f"{src} has no {key}" if key not in fields
                                   else f"{key} is empty in {src}", src)
        return Reading.of(fields[key].strip()[:200], src)

    osrelease = "/proc/sys/kernel/osrelease"
    kernel_text = host.read_line(osrelease)
    if kernel_text:
        kernel = Reading.of(kernel_text[:200], osrelease)
    elif host.read(osrelease) is not None:
        kernel = Reading.missing(f"{osrelease} is empty", osrelease)
    else:
        kernel = Reading.missing(host.why(osrelease))
    return OsFacts(
        id=field("ID"),
        version_id=field("VERSION_ID"),
        version=field("VERSION"),
        pretty_name=field("PRETTY_NAME"),
        kernel=kernel,
        glibc=_probe_glibc(runner, live),
    )


def _probe_glibc(runner: Runner, live: bool) -> Reading:
    result, why = run_tool(runner, ("ldd", "--version"))
    if result is not None:
        first = (result.stdout.strip().splitlines() or [""])[0]
        match = re.search(r"(?<!\d)(\d+\.\d+)$", first)
        if match and ("GLIBC" in first.upper() or "GNU" in first.upper()):
            return Reading.of(match.group(1), "ldd --version")
        why = f"`ldd --version` does not name glibc (first line: {first[:80]!r})"
    if live:
        try:
            conf = os.confstr("CS_GNU_LIBC_VERSION")
        except (ValueError, OSError):
            conf = None
        if conf and conf.startswith("glibc "):
            return Reading.of(conf.split()[1], "confstr(CS_GNU_LIBC_VERSION)")
    return Reading.missing(why)


_COMMIT = re.compile(r"[0-9a-f]{40}")

# --- container and model --------------------------------------------------------------------


def _probe_container(host: HostRoot) -> ContainerFacts:
    no_digest = ("the container runtime does not expose the image digest inside the container; "
                 "compare the image by its digest in the registry instead")
    containerenv = host.read("/run/.containerenv")
    if containerenv is not None:
        fields = parse_os_release(containerenv)
        image = fields.get("image")
        image_id = fields.get("imageid")
        return ContainerFacts(
            inside=True, runtime=(fields.get("engine", "").split() or ["podman"])[0][:60],
            evidence="/run/.containerenv",
            image=Reading.of(image, "/run/.containerenv") if image
            else Reading.missing("/run/.containerenv names no image"),
            image_digest=Reading.of(f"sha256:{image_id}", "/run/.containerenv (image ID)")
            if image_id else Reading.missing(no_digest),
        )
    runtime, evidence = None, None
    if host.exists("/.dockerenv"):
        runtime, evidence = "docker", "/.dockerenv"
    else:
        cgroup = host.read("/proc/1/cgroup") or ""
        for marker, name in (("docker", "docker"), ("kubepods", "kubernetes"),
                             ("containerd", "containerd"), ("libpod", "podman")):
            if marker in cgroup:
                runtime, evidence = name, "/proc/1/cgroup"
                break
    if runtime is None:
        outside = "not inside a container"
        return ContainerFacts(inside=False, image=Reading.missing(outside),
                              image_digest=Reading.missing(outside))
    return ContainerFacts(inside=True, runtime=runtime, evidence=evidence,
                          image=Reading.missing(no_digest), image_digest=Reading.missing(no_digest))


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


def probe_model(host: HostRoot, env: Mapping[str, str], model_id: str | None = None, *,
                model: Model | None = None, hasher: Hasher | None = None,
                lock_path: str | None = None) -> ModelFacts:
    """The model on the host, offline: the cached revisions of ``model_id`` (huggingface_hub's
    cache scan), and with the lock's ``model`` also its files, hashed by ``hasher``
    (:mod:`pinning.probe.modelfiles`): a Hugging Face model's snapshot at the locked revision
    in the host's cache (:func:`hf_cache_dir`), read file by file by
    :func:`~pinning.probe.modelfiles.read_hub_model` (a missing blob is a problem of its
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
    cache = hf_cache_dir(env)
    facts = ModelFacts(id=wanted, cache=cache, revision=rev, source="hf-cache")
    if not host.is_dir(cache):
        return facts.model_copy(update={"reason": f"no Hugging Face cache at {cache}"})
    from pinning.probe.modelfiles import read_hub_model

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
    from pinning.probe.modelfiles import default_cache_file

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


# --- the whole probe --------------------------------------------------------------------------


def probe_host(
    root: Path = Path("/"),
    runner: Runner | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    site_packages: Sequence[str] = (),
    model_id: str | None = None,
    model: Model | None = None,
    hasher: Hasher | None = None,
    lock_path: str | None = None,
    replay: str | None = None,
    identify: Callable[[str], str | None] | None = None,
) -> HostFacts:
    """Probe the host whose filesystem is ``root`` (``/`` = this machine, live).

    ``runner`` runs tools (``None``: none are run); ``environ`` is the host's environment
    (live default: ``os.environ``; a recorded host: its recording's ``[environment]``);
    ``site_packages`` overrides Python environment discovery; ``model_id`` asks for the
    cached revisions of that Hugging Face model, ``model`` (the lock's) also for its files,
    hashed by ``hasher`` (:func:`probe_model`; ``lock_path``, the lock file, anchors a
    relative model folder and is left out of it); ``identify`` maps a PCI device ID to a pin
    GPU id (the matrix's identity table). Raises :class:`ProbeError` when ``root`` is not a
    directory.
    """
    from pinning.util.proc import NoRunner

    if not root.is_dir():
        raise ProbeError(f"Host root {root} is not a directory.",
                         hint="Pass --root DIR pointing at a recorded host tree, or omit it.")
    live = root.resolve() == Path("/")
    runner = runner or NoRunner()
    env: Mapping[str, str] = environ if environ is not None else (os.environ if live else {})
    identify = identify or (lambda _device: None)
    host = HostRoot(root)
    notes: list[str] = []
    os_facts = _probe_os(host, runner, live)

    devices = pci_display_devices(host)
    amd_devices = [d for d in devices if d[1] == AMD_VENDOR]
    nv_devices = [d for d in devices if d[1] == NVIDIA_VENDOR]
    gpus: list[GpuFacts] = []
    amd = nvidia = None
    if amd_devices or host.exists("/sys/module/amdgpu"):
        found, tool = amd_gpus(host, runner, amd_devices, identify, 0, notes)
        gpus += found
        amd = probe_amd_software(host, env, tool, os_facts.kernel)
    if nv_devices or host.exists("/proc/driver/nvidia/version"):
        found, smi_driver = nvidia_gpus(host, runner, nv_devices, identify, len(gpus))
        gpus += found
        nvidia = probe_nvidia_software(host, smi_driver)
    vendors = {g.vendor for g in gpus}
    vendor = "none" if not vendors else vendors.pop() if len(vendors) == 1 else "mixed"
    if not gpus:
        notes.append("no GPU found: no AMD or NVIDIA display controller under /sys/bus/pci/devices")

    dirs, why = site_dirs(host, env, live, site_packages)
    if live and not site_packages and not (env.get("VIRTUAL_ENV") or env.get("CONDA_PREFIX")):
        import sys

        notes.append(f"read the Python environment pin runs in ({sys.prefix}); if the workload "
                     "uses another, pass --site-packages DIR or activate it first")
    python = probe_python(host, dirs, why, notes)
    environment = {k: env[k] for k in BEHAVIOUR_ENV if k in env and not control_chars(env[k])}
    notes += [f"{k} not recorded: its value holds a control character"
              for k in BEHAVIOUR_ENV if k in env and k not in environment]
    model_facts = (probe_model(host, env, model=model, hasher=hasher,
                               lock_path=lock_path) if model is not None
                   else probe_model(host, env, model_id) if model_id else None)
    return HostFacts(
        probe=ProbeInfo(tool=f"pin {__version__}", root=str(root), replay=replay, live=live),
        vendor=vendor,
        os=os_facts,
        gpus=gpus,
        amd=amd,
        nvidia=nvidia,
        python=python,
        environment=environment,
        container=_probe_container(host),
        model=model_facts,
        notes=notes,
    )
