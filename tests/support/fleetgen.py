"""Generated host snapshots for fleet tests and ``bench/bench_fleet.py``.

:func:`generate` turns one recorded snapshot (``pin probe`` of a recorded host tree, as a
``dict``) into ``n`` host snapshots, deterministic for a seed. Most hosts are the base
unchanged, as identical nodes of one fleet are; the others carry one or two of the drifts
clusters see (:data:`DRIFTS`): a firmware block or the PLDM bundle changed on one GPU, an
older amdgpu module, another kernel or ROCm release, a Python package upgraded or removed,
a behaviour-changing variable set. Some files are the ``pin probe --format json`` envelope
instead of the bare snapshot, and ``unreadable`` of them can be broken on purpose.
Each host has its own name (``gpu-node-00042``), which names its file.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Snapshot = dict[str, Any]


def base_snapshot(host: str = "mi300x-rocm7.1") -> Snapshot:
    """The recorded host ``host`` probed as ``pin probe -o`` writes it (a JSON ``dict``)."""
    from tests.support.hosts import recorded

    facts = recorded(host)
    data: Snapshot = facts.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _hex_bump(value: str, rng: random.Random) -> str:
    """A firmware version one to three steps away: ``0x000080bf`` -> ``0x000080c1``."""
    if value.startswith("0x"):
        return f"0x{int(value, 16) + rng.randint(1, 3):0{len(value) - 2}x}"
    if value.isdigit():
        return str(int(value) + rng.randint(1, 3))
    return value + ".1"


def _firmware_block(s: Snapshot, rng: random.Random) -> None:
    gpu = rng.choice(s["gpus"])
    block = rng.choice(["mec", "mec2", "sos", "rlc", "sdma", "ta_ras"])
    if block in gpu["firmware"]:
        gpu["firmware"][block] = _hex_bump(gpu["firmware"][block], rng)


def _pldm_bundle(s: Snapshot, rng: random.Random) -> None:
    gpu = rng.choice(s["gpus"])
    if "pldm-bundle" in gpu:
        gpu["pldm-bundle"]["value"] = rng.choice(["01.25.02.04", "01.25.05.00"])


def _driver(s: Snapshot, rng: random.Random) -> None:
    if s.get("amd"):
        s["amd"]["driver"]["value"] = rng.choice(["6.12.12", "6.14.14", "6.10.5"])


def _kernel(s: Snapshot, rng: random.Random) -> None:
    s["os"]["kernel"]["value"] = rng.choice(["6.8.0-87-generic", "6.8.0-90-generic",
                                             "6.11.0-29-generic"])


def _rocm(s: Snapshot, rng: random.Random) -> None:
    if s.get("amd"):
        s["amd"]["rocm"]["value"] = rng.choice(["7.1.0", "7.0.2", "6.4.3"])


def _package_version(s: Snapshot, rng: random.Random) -> None:
    dists = [d for d in s["python"]["distributions"] if d["name"] != "torch"]
    if dists:
        d = rng.choice(dists)
        parts = d["version"].split(".")
        parts[-1] = str(int(parts[-1]) + rng.randint(1, 4)) if parts[-1].isdigit() else "9"
        d["version"] = ".".join(parts)


def _package_missing(s: Snapshot, rng: random.Random) -> None:
    dists = s["python"]["distributions"]
    names = [d["name"] for d in dists if d["name"] not in ("torch", "pytorch-triton-rocm")]
    if names:
        gone = rng.choice(names)
        s["python"]["distributions"] = [d for d in dists if d["name"] != gone]


def _environment(s: Snapshot, rng: random.Random) -> None:
    name, value = rng.choice([("HSA_OVERRIDE_GFX_VERSION", "9.4.2"),
                              ("PYTORCH_TUNABLEOP_ENABLED", "1"),
                              ("HIPBLASLT_ALLOW_TF32", "1")])
    s["environment"][name] = value


#: The drifts, by name: each changes a snapshot in place.
DRIFTS: dict[str, Callable[[Snapshot, random.Random], None]] = {
    "firmware-block": _firmware_block, "pldm-bundle": _pldm_bundle, "driver": _driver,
    "kernel": _kernel, "rocm": _rocm, "package-version": _package_version,
    "package-missing": _package_missing, "environment": _environment,
}


def envelope(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` as ``pin probe --format json`` prints it."""
    from pinning import __version__

    return {"pin": __version__, "command": "probe", "ok": True, "exit-code": 0,
            "result": snapshot, "error": None}


def generate(base: Snapshot, n: int, *, seed: int = 17, drift: float = 0.3,
             envelopes: float = 0.1, unreadable: int = 0) -> Iterator[tuple[str, str]]:
    """``n`` hosts as ``(name, JSON text)``: a ``drift`` share of them with one or two of
    :data:`DRIFTS` (the rest equal to ``base``), an ``envelopes`` share written as the
    probe envelope, and ``unreadable`` of them broken (cut short, or a field of the
    wrong type), spread evenly. One line of text each (JSON Lines ready).
    """
    rng = random.Random(seed)
    broken = {round(i * n / unreadable) + n // (2 * unreadable) for i in range(unreadable)} \
        if unreadable else set()
    names = sorted(DRIFTS)
    for i in range(n):
        name = f"gpu-node-{i:05d}"
        snap = copy.deepcopy(base)
        if rng.random() < drift:
            for kind in rng.sample(names, rng.choice([1, 1, 1, 2])):
                DRIFTS[kind](snap, rng)
        doc = envelope(snap) if rng.random() < envelopes else snap
        text = json.dumps(doc, separators=(",", ":"))
        if i in broken:
            text = text[: len(text) // 2] if i % 2 else text.replace('"live":false',
                                                                    '"live":"false"')
        yield name, text


def write_folder(folder: Path, hosts: Iterator[tuple[str, str]]) -> int:
    """Write each host as ``folder/NAME.json``; the number written."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, text in hosts:
        (folder / f"{name}.json").write_text(text + "\n")
        count += 1
    return count


def write_jsonl(path: Path, hosts: Iterator[tuple[str, str]]) -> int:
    """Write the hosts as JSON Lines at ``path``; the number written."""
    count = 0
    with path.open("w") as out:
        for _name, text in hosts:
            out.write(text + "\n")
            count += 1
    return count


#: Per-host text of a realistic fleet (:func:`realistic_base`): markers replaced on every
#: host (:func:`host_text`), so no two snapshots are byte-identical.
_NOISE = "@BUS"
_ROOT = "@ROOT"

#: Where a fleet's snapshots say they were probed from: ``/`` by ``pin probe`` on the host,
#: ``/host`` by the Kubernetes DaemonSet (``--root /host``); a fleet may mix both.
PROBE_ROOTS = ("/", "/host")


def realistic_base(gpus: int = 8, packages: int = 300) -> Snapshot:
    """The recorded MI300X host grown to a production node, probed live: ``gpus`` GPUs
    (copies of the recorded GPU 0, each with its own index and PCI address) and
    ``packages`` Python distributions (the recorded ones plus synthetic
    ``fleetgen-pkg-NNN`` at ``1.0.N``: test data, not real packages). Markers stand for
    what differs from host to host (:func:`host_text`): each GPU's PCI address, and so
    every sysfs path naming it (``pci-bus``, the ``source`` of memory and VBIOS readings,
    ``firmware-source``), and the probe root.

    What the snapshot format has per host, and so what a fleet's snapshots can differ in
    without drift (pin's schema, :mod:`pinning.probe.models`, is strict: no serial
    number, telemetry, uptime or host name field exists, so none is generated): where the
    GPUs sit on the PCI bus and the paths that name them, and how the host was probed
    (``probe.root``). The Python environment's paths, ``ROCM_PATH`` and the model's
    location are per deployment, the same on every host of one; the run-scoped variables
    (``HIP_VISIBLE_DEVICES``...) are those of the probe's own process.
    """
    base = base_snapshot()
    base["probe"] = {"tool": base["probe"]["tool"], "root": _ROOT, "live": True}
    gpu0 = base["gpus"][0]
    old_bus = gpu0["pci-bus"]
    out = []
    for i in range(gpus):
        text = json.dumps(gpu0).replace(old_bus, f"0000:{_NOISE}{i}:00.0")
        gpu = json.loads(text)
        gpu["index"] = i
        out.append(gpu)
    base["gpus"] = out
    dists = base["python"]["distributions"]
    extra = packages - len(dists)
    dists += [{"name": f"fleetgen-pkg-{n:03d}", "version": f"1.0.{n}", "installer": "pip"}
              for n in range(max(extra, 0))]
    return base


def host_text(text: str, i: int, rng: random.Random, gpus: int) -> str:
    """``text`` (JSON of :func:`realistic_base`, drifted or not) as host ``i`` of a fleet
    writes it: each GPU's PCI bus number drawn at random, host ``i``'s own bus for GPU 0
    (so no two hosts of a fleet below 65,536 are alike), and one of :data:`PROBE_ROOTS`.
    """
    for g in range(gpus - 1, 0, -1):  # @BUS10 before @BUS1
        text = text.replace(f"{_NOISE}{g}:00.0", f"{rng.randrange(256):02x}:00.0")
    text = text.replace(_ROOT, rng.choice(PROBE_ROOTS))
    return text.replace(f"0000:{_NOISE}0:00.0", f"{i >> 8 & 0xff:04x}:{i & 0xff:02x}:00.0")


def realistic_hosts(base: Snapshot, n: int, *, seed: int = 17, drift: float = 0.3,
                    pool: int = 64, gpus: int = 8) -> Iterator[str]:
    """``n`` JSON Lines of a realistic fleet from :func:`realistic_base`, every snapshot
    distinct (:func:`host_text`), a ``drift`` share carrying one or two of
    :data:`DRIFTS` (taken from a pool of ``pool`` drifted variants, so generating a
    hundred thousand hosts stays fast). Deterministic for ``seed``.
    """
    rng = random.Random(seed)
    names = sorted(DRIFTS)
    clean = json.dumps(base, separators=(",", ":"))
    drifted = []
    for _ in range(pool):
        snap = copy.deepcopy(base)
        for kind in rng.sample(names, rng.choice([1, 1, 1, 2])):
            DRIFTS[kind](snap, rng)
        drifted.append(json.dumps(snap, separators=(",", ":")))
    for i in range(n):
        text = rng.choice(drifted) if rng.random() < drift else clean
        yield host_text(text, i, rng, gpus)
