"""pin probe over recorded hosts: every fact read from the real formats, or not-probed with
the reason; a missing tool or file never crashes the probe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.errors import ProbeError
from pinning.probe.gpus import gfx_from_target_version
from pinning.probe.host import parse_os_release, probe_host
from pinning.probe.hostmodel import probe_model
from pinning.probe.models import snapshot_hash
from pinning.probe.snapshot import read_snapshot, snapshot_text, write_snapshot
from pinning.util.proc import NoRunner, ReplayRunner, SystemRunner
from tests.support.hosts import recorded
from tests.support.paths import HOSTS, ROOT


def test_mi300x_rocm71_host() -> None:
    f = recorded("mi300x-rocm7.1")
    assert f.vendor == "amd"
    assert [g.pci_bus for g in f.gpus] == ["0000:05:00.0", "0000:26:00.0"]
    g = f.gpus[0]
    assert g.gfx_target is not None and g.pldm_bundle is not None
    assert (g.product, g.pci_device_id, g.gfx_target.value) == ("mi300x", "0x74a1", "gfx942")
    assert g.gfx_target.source == "/sys/class/kfd/kfd/topology/nodes/1/properties"
    assert g.pldm_bundle.value == "01.25.03.12" and g.pldm_bundle.source == "amd-smi firmware"
    assert g.vbios.value == "022.040.003.043.000001"
    assert g.memory_mib.value == "196592"
    assert g.firmware["mec"] == "0x000080bf" and g.firmware["TA_XGMI"] == "20.00.00.14"
    assert "PLDM_BUNDLE" not in g.firmware
    assert g.name.value == "MI300X"
    assert [x.target_id for x in f.gpus] == ["gfx942:sramecc+:xnack-"] * 2  # rocminfo, by BDFID
    assert f.amd is not None
    assert (f.amd.driver.value, f.amd.driver_kind, f.amd.rocm.value) == ("6.16.6", "dkms", "7.1.1")
    assert f.amd.amd_smi.value == "26.2.0+021c61fc"
    assert (f.os.id.value, f.os.version.value) == ("ubuntu", "24.04.3 LTS (Noble Numbat)")
    assert f.os.kernel.value == "6.8.0-85-generic" and f.os.glibc.value == "2.39"
    assert f.python.site_packages == ["/opt/venv/lib/python3.12/site-packages"]
    t = f.python.torch
    assert t is not None
    assert (t.version, t.kind, t.hip, t.cuda) == ("2.7.0+rocm6.3", "rocm", "6.3.42131-fa1d09cbd",
                                                  None)
    assert [(x.name, x.version, x.owns_import) for x in f.python.tritons] == [
        ("pytorch-triton-rocm", "3.3.0", True)]
    assert f.container.inside is False and f.nvidia is None


def test_mi250x_two_gcds_and_missing_amd_smi_firmware() -> None:
    f = recorded("mi250x-rocm6.3")
    # Every recorded AMD GPU has a gfx target (a None would fail the test all the same).
    assert [(g.product, g.gfx_target.value) for g in f.gpus] == [("mi250x", "gfx90a")] * 2  # type: ignore[union-attr]
    assert f.amd is not None
    assert f.amd.rocm.value == "6.3.3"  # "6.3.3-74" in .info/version
    # amd-smi firmware/static were not recorded: not-probed with the reason, no crash.
    pldm = f.gpus[0].pldm_bundle
    assert pldm is not None and pldm.reason is not None
    assert pldm.value is None and "amd-smi" in pldm.reason
    assert f.gpus[0].name.reason is not None
    assert f.gpus[0].name.value is None and "amd-smi static" in f.gpus[0].name.reason
    assert f.gpus[0].vbios.value == "113-D65201-042"


def test_radeon_inbox_driver_uses_kernel_release() -> None:
    f = recorded("radeon-inbox")
    assert f.amd is not None
    assert f.amd.driver_kind == "inbox"
    assert f.amd.driver.value == "6.14.0-29-generic"
    assert f.amd.driver.reason is not None
    assert "inbox" in f.amd.driver.reason
    g = f.gpus[0]
    assert g.gfx_target is not None
    assert (g.pci_device_id, g.gfx_target.value, g.product) == ("0x744c", "gfx1100",
                                                                 "radeon-rx-7900-xtx")
    assert f.python.tritons[0].name == "triton-rocm"


def test_h200_host() -> None:
    f = recorded("h200-cuda13")
    assert f.vendor == "nvidia" and f.amd is None
    g = f.gpus[0]
    assert g.compute_capability is not None
    assert (g.product, g.pci_device_id, g.compute_capability.value) == ("h200", "0x2335", "9.0")
    assert (g.name.value, g.vbios.value, g.memory_mib.value) == ("NVIDIA H200", "96.00.AF.00.01",
                                                                 "143771")
    assert f.nvidia is not None and f.python.torch is not None
    assert (f.nvidia.driver.value, f.nvidia.module_kind) == ("580.95.05", "open")
    assert f.nvidia.driver.source == "/proc/driver/nvidia/version"
    assert f.nvidia.cuda_toolkit.value == "13.0.2"
    assert (f.python.torch.kind, f.python.torch.cuda) == ("cuda", "13.0")


def test_no_gpu_host_says_so() -> None:
    f = recorded("no-gpu")
    assert f.vendor == "none" and f.gpus == [] and f.amd is None and f.nvidia is None
    assert any("no GPU found" in n for n in f.notes)
    assert f.python.version_of("numpy") == "1.24.2"
    assert f.python.torch is None


def test_bare_root_runs_no_tools_and_reports_why(tmp_path: Path) -> None:
    f = probe_host(HOSTS / "mi300x-rocm7.1" / "root", NoRunner())
    assert f.os.glibc.reason is not None
    assert f.os.glibc.value is None and "ldd" in f.os.glibc.reason
    assert f.gpus[0].pldm_bundle is not None
    assert f.gpus[0].pldm_bundle.value is None
    # Without the recorded VIRTUAL_ENV, the usual places (/opt/venv ...) are searched.
    assert f.python.site_packages == ["/opt/venv/lib/python3.12/site-packages"]
    assert f.environment == {}


def test_missing_root_fails_the_whole_probe(tmp_path: Path) -> None:
    with pytest.raises(ProbeError) as exc:
        probe_host(tmp_path / "absent", NoRunner())
    assert exc.value.exit_code == 7 and "absent" in exc.value.message


def test_bad_recording_is_a_probe_error(tmp_path: Path) -> None:
    bad = tmp_path / "commands.toml"
    bad.write_text('[[command]]\nargv = "amd-smi"\n')
    with pytest.raises(ProbeError) as exc:
        ReplayRunner(bad)
    assert "command[0]" in exc.value.message and "argv" in exc.value.message
    bad.write_text("[[command]\n")
    with pytest.raises(ProbeError):
        ReplayRunner(bad)


def test_empty_tree_reads_as_not_probed(tmp_path: Path) -> None:
    f = probe_host(tmp_path, NoRunner())
    assert f.vendor == "none"
    assert f.os.id.reason is not None
    assert f.os.id.value is None and "os-release" in f.os.id.reason
    assert f.os.kernel.value is None and f.python.distributions == []


def test_live_probe_on_this_machine_is_clean() -> None:
    f = probe_host(Path("/"), SystemRunner())
    assert f.probe.live is True
    assert f.os.kernel.value == os.uname().release
    if not f.gpus:
        assert any("no GPU found" in n for n in f.notes)


@pytest.mark.parametrize(("value", "gfx"), [
    (90402, "gfx942"), (90010, "gfx90a"), (90500, "gfx950"), (110000, "gfx1100"),
    (120001, "gfx1201"), (90008, "gfx908"), (0, None),
])
def test_gfx_target_version(value: int, gfx: str | None) -> None:
    assert gfx_from_target_version(value) == gfx


def test_os_release_quotes_and_escapes() -> None:
    fields = parse_os_release('NAME="Ubuntu"\nVERSION="24.04.3 LTS (Noble Numbat)"\n# c\nID=ubuntu\n'
                              "PRETTY_NAME='A \\\"b\\\"'\nbroken line\n")
    assert fields == {"NAME": "Ubuntu", "VERSION": "24.04.3 LTS (Noble Numbat)", "ID": "ubuntu",
                      "PRETTY_NAME": 'A "b"'}


def test_container_detection(tmp_path: Path) -> None:
    (tmp_path / ".dockerenv").write_text("")
    f = probe_host(tmp_path, NoRunner())
    assert (f.container.inside, f.container.runtime) == (True, "docker")
    assert f.container.image_digest.value is None and f.container.image_digest.reason
    podman = tmp_path / "p"
    (podman / "run").mkdir(parents=True)
    (podman / "run/.containerenv").write_text(
        'engine="podman-5.0.0"\nimage="localhost/pin/trial:1"\nimageid="' + "a" * 64 + '"\n')
    c = probe_host(podman, NoRunner()).container
    assert c.runtime == "podman-5.0.0" and c.image.value == "localhost/pin/trial:1"
    assert c.image_digest.value == "sha256:" + "a" * 64


def test_cpu_torch_build_is_read_without_import(tmp_path: Path) -> None:
    site = tmp_path / "usr/local/lib/python3.12/dist-packages"
    info = site / "torch-2.6.0+cpu.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.6.0+cpu\n")
    (site / "torch").mkdir()
    (site / "torch/version.py").write_text(
        "from typing import Optional\n__version__ = '2.6.0+cpu'\ncuda: Optional[str] = None\n"
        "hip: Optional[str] = None\n")
    t = probe_host(tmp_path, NoRunner()).python.torch
    assert t is not None
    assert (t.kind, t.version, t.source) == ("cpu", "2.6.0+cpu",
                                             "/usr/local/lib/python3.12/dist-packages/torch/version.py")


def _hf_cache(hub: Path, repo: str, rev: str) -> None:
    base = hub / f"models--{repo.replace('/', '--')}"
    (base / "blobs").mkdir(parents=True)
    (base / "blobs" / "abc123").write_text("{}")
    snap = base / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(Path("../../blobs/abc123"))
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(rev)


def test_model_revision_from_the_hf_cache(tmp_path: Path) -> None:
    from pinning.probe.root import HostRoot

    rev = "0123456789abcdef0123456789abcdef01234567"
    _hf_cache(tmp_path / "root/.cache/huggingface/hub", "org/model", rev)
    m = probe_model(HostRoot(tmp_path), {"HOME": "/root"}, "org/model")
    assert m.revisions == [rev] and m.reason is None
    other = probe_model(HostRoot(tmp_path), {"HOME": "/root"}, "org/other")
    assert other.reason is not None
    assert other.revisions == [] and "not in the cache" in other.reason
    none = probe_model(HostRoot(tmp_path), {"HF_HOME": "/nowhere"}, "org/model")
    assert none.reason is not None
    assert "no Hugging Face cache" in none.reason


def test_snapshot_round_trip_schema_and_hash(tmp_path: Path) -> None:
    f = recorded("mi300x-rocm7.1")
    path = tmp_path / "host.json"
    write_snapshot(f, path)
    back = read_snapshot(path)
    assert back == f and snapshot_hash(back) == snapshot_hash(f)
    schema = json.loads((ROOT / "schemas" / "host.schema.json").read_text())
    jsonschema.validate(json.loads(snapshot_text(f)), schema)
    assert snapshot_hash(recorded("mi300x-rocm7.1")) == snapshot_hash(f)  # deterministic


def test_broken_snapshot_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    data = json.loads(snapshot_text(recorded("no-gpu")))
    data["vendor"] = "intel"
    path.write_text(json.dumps(data))
    with pytest.raises(ProbeError) as exc:
        read_snapshot(path)
    assert "vendor" in exc.value.message and str(path) in exc.value.message
    path.write_text("{not json")
    with pytest.raises(ProbeError) as exc:
        read_snapshot(path)
    assert "line 1" in exc.value.message


@settings(max_examples=40, deadline=None)
@given(files=st.dictionaries(
    st.sampled_from(["sys/module/amdgpu/version", "opt/rocm/.info/version", "etc/os-release",
                     "proc/driver/nvidia/version", "proc/sys/kernel/osrelease",
                     "sys/bus/pci/devices/0000:01:00.0/vendor",
                     "sys/bus/pci/devices/0000:01:00.0/class",
                     "sys/bus/pci/devices/0000:01:00.0/device",
                     "sys/class/kfd/kfd/topology/nodes/1/properties",
                     "usr/local/cuda/version.json", "run/.containerenv",
                     "usr/lib/python3/dist-packages/torch-2.0.dist-info/METADATA",
                     "usr/lib/python3/dist-packages/torch-2.0.dist-info/direct_url.json",
                     "usr/lib/python3/dist-packages/torch/version.py",
                     "usr/lib/python3/dist-packages/triton-1.dist-info/RECORD"]),
    st.text(max_size=80), max_size=8))
def test_probe_never_crashes_on_odd_files(tmp_path_factory: pytest.TempPathFactory,
                                          files: dict[str, str]) -> None:
    root = tmp_path_factory.mktemp("odd")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    # Arbitrary text as VIRTUAL_ENV too (NUL bytes, odd paths) reaches the site-packages scan.
    f = probe_host(root, NoRunner(), environ={"VIRTUAL_ENV": files.get("etc/os-release", "")[:20]})
    assert f.vendor in ("amd", "nvidia", "mixed", "none")
