"""Verify the hardware and system facts of a lock: GPU and gfx target / compute capability,
firmware (PLDM bundle, VBIOS, per-engine blocks), kernel driver (amdgpu/KMD, NVIDIA module),
OS and kernel, ROCm/CUDA user space.
"""

from __future__ import annotations

from pinning.lockfile.models import Pinned
from pinning.matrix.names import (
    DATACENTER_NVIDIA,
    os_matches,
)
from pinning.probe.models import GpuFacts, Reading
from pinning.verify.compare import (
    Comparer,
    allowed_text,
    host_os_key,
    host_os_text,
)


class HardwareFacts(Comparer):
    """The hardware and system fact groups; each method adds its findings."""

    def target(self) -> None:
        """The GPUs: product (PCI device IDs), gfx target or compute capability, count."""
        lock, facts = self.lock, self.facts
        gpus = [g for g in facts.gpus if g.vendor == lock.target.vendor]
        if not gpus:
            found = ", ".join(sorted({g.vendor for g in facts.gpus})) or "no GPU"
            self.add("gpu-missing", "target.gpu", "missing",
                     f"The lock is for {lock.target.gpu.value or lock.request.gpu} "
                     f"({lock.target.vendor}); the host has {found}.",
                     expected=lock.target.gpu.value, actual=found)
            return
        ids = set(lock.target.pci_device_ids)
        for g in gpus:
            if ids and g.pci_device_id not in ids:
                self.add("gpu-mismatch", "target.gpu", "mismatch",
                         f"GPU {g.index} is PCI device {g.pci_device_id or '(unknown)'}"
                         + (f" ({g.name.value})" if g.name.value else "") + ", "
                         f"not one of {', '.join(sorted(ids))} "
                         f"({lock.target.gpu.value}).", expected=", ".join(sorted(ids)),
                         actual=g.pci_device_id, gpu=g.index,
                         source=self.source_of(lock.target.gpu))
            elif ids:
                self.add("gpu", "target.gpu", "match",
                         f"GPU {g.index} is {lock.target.gpu.value} ({g.pci_device_id}).",
                         expected=lock.target.gpu.value, actual=g.pci_device_id, gpu=g.index)
            if lock.target.gfx_target is not None:
                self.compare("target.gfx_target", "gfx target", lock.target.gfx_target,
                             g.gfx_target, gpu=g.index)
            if lock.target.compute_capability is not None:
                self.compare("target.compute_capability", "compute capability",
                             lock.target.compute_capability, g.compute_capability, gpu=g.index)
        if lock.target.count is not None:
            self.compare("target.count", f"number of {lock.target.vendor.upper()} GPUs",
                         lock.target.count, Reading.of(str(len(gpus)), "/sys/bus/pci/devices"))

    def firmware(self) -> None:
        """Firmware per GPU: PLDM bundle or VBIOS, the VBIOS/IFWI string, per-engine blocks."""
        fw = self.lock.firmware
        label = {"pldm-bundle": "PLDM bundle", "vbios": "VBIOS", "ifwi": "IFWI",
                 "bkc": "BKC"}.get(fw.kind, fw.kind)
        for g in self._locked_gpus():
            reading = g.pldm_bundle if fw.kind == "pldm-bundle" else g.vbios
            # AMD's IFWI / BKC / MU / "VBIOS D3430401-037" labels are not what the host's VBIOS
            # string shows; only PLDM bundles and NVIDIA VBIOS strings compare with the matrix.
            comparable = fw.kind == "pldm-bundle" or (
                fw.kind == "vbios" and self.lock.target.vendor == "nvidia")
            self.compare("firmware.version", label, fw.version, reading, gpu=g.index,
                         comparable=comparable)
            if fw.vbios is not None:
                self.compare("firmware.vbios", "VBIOS/IFWI", fw.vbios, g.vbios, gpu=g.index)
            if fw.blocks:
                self._blocks(fw.blocks, g)

    def _blocks(self, blocks: dict[str, str], g: GpuFacts) -> None:
        """Compare the locked per-engine firmware blocks of GPU ``g``. A locked block the
        host lacks is a change only when its source was read there: amd-smi's upper-case
        block names (``CP_MEC1``) need ``amd-smi firmware``, sysfs's lower-case ones
        (``mec``) the device's ``fw_version`` folder; otherwise it could not be read
        (a ``--root`` probe without ``--replay`` or ``--chroot`` runs no amd-smi).
        """
        src = self.plan.host_source
        read_from = g.firmware_source or ""
        unread = list(blocks) if not g.firmware else [
            k for k in blocks if k not in g.firmware and not (
                "amd-smi firmware" in read_from if k.isupper() else "fw_version" in read_from)]
        changed = [(k, v, g.firmware.get(k)) for k, v in blocks.items()
                   if g.firmware.get(k) != v and k not in unread]
        if unread:
            why = ("no sysfs fw_version and no amd-smi firmware" if not g.firmware else
                   f"read from {read_from} only; these come from "
                   + ("amd-smi firmware" if unread[0].isupper() else "sysfs fw_version"))
            self.add("not-probed", "firmware.blocks", "not-probed",
                     f"Firmware blocks (GPU {g.index}) {', '.join(unread)} could not be read "
                     f"({why}).", expected=", ".join(f"{k}={blocks[k]}" for k in unread),
                     gpu=g.index, source=src)
        if changed:
            text = ", ".join(f"{k} {have or 'absent'} (lock {want})" for k, want, have in changed)
            self.add("firmware-blocks", "firmware.blocks", "mismatch",
                     f"Firmware blocks (GPU {g.index}) differ: {text}.",
                     expected=", ".join(f"{k}={w}" for k, w, _ in changed),
                     actual=", ".join(f"{k}={h}" for k, _, h in changed), gpu=g.index,
                     source=src)
        elif not unread:
            self.add("firmware-blocks", "firmware.blocks", "match",
                     f"{len(blocks)} firmware blocks (GPU {g.index}) match.", gpu=g.index)
        elif len(unread) < len(blocks):
            self.add("firmware-blocks", "firmware.blocks", "match",
                     f"{len(blocks) - len(unread)} firmware blocks (GPU {g.index}) read "
                     "match.", gpu=g.index)

    def _locked_gpus(self) -> list[GpuFacts]:
        return [g for g in self.facts.gpus if g.vendor == self.lock.target.vendor]

    def driver(self) -> None:
        """The kernel driver: amdgpu/KMD version and flavour (DKMS, inbox), or the NVIDIA module."""
        kd = self.lock.kernel_driver
        facts = self.facts
        if kd.name == "amdgpu":
            reading = facts.amd.driver if facts.amd else Reading.missing(
                "no AMD GPU or amdgpu module on the host", absent=True)
            kind = facts.amd.driver_kind if facts.amd else None
            if kd.flavor is not None:
                self.compare("kernel_driver.flavor", "amdgpu flavor", kd.flavor,
                             Reading.of(kind, "/sys/module/amdgpu") if kind else None)
            if kind == "inbox" and kd.version.allowed:
                self.add("inbox-driver", "kernel_driver.version", "outside-validated",
                         f"amdgpu is the kernel's inbox driver ({reading.value}), not one of the "
                         f"AMD GPU Driver releases the matrix validates "
                         f"({allowed_text(kd.version)}) for {self._context(kd.version.ref)}.",
                         expected=allowed_text(kd.version), actual=f"inbox {reading.value}",
                         source=self.source_of(kd.version))
                return
            # Module versions (6.16.6) and AMD GPU Driver releases (30.20.0) are numbered apart.
            self.compare("kernel_driver.version", "amdgpu kernel driver", kd.version, reading,
                         comparable=False)
        else:
            reading = facts.nvidia.driver if facts.nvidia else Reading.missing(
                "no NVIDIA GPU or kernel module on the host", absent=True)
            before = len(self.findings)
            self.compare("kernel_driver.version", "NVIDIA driver", kd.version, reading)
            gpus = self._locked_gpus()
            if (facts.nvidia and facts.nvidia.cuda_compat and gpus
                    and all(g.product in DATACENTER_NVIDIA for g in gpus)):
                # Forward compatibility: cuda-compat on a Data Center GPU runs newer CUDA on
                # an older driver branch (NVIDIA CUDA Compatibility.12).
                for i in range(before, len(self.findings)):
                    f = self.findings[i]
                    if f.status == "outside-validated":
                        self.findings[i] = f.model_copy(update={
                            "severity": "warning",
                            "message": f.message + " cuda-compat is present "
                                       f"({facts.nvidia.cuda_compat}) on a Data Center GPU, "
                                       "which NVIDIA supports."})
            if kd.flavor is not None:
                flavor = facts.nvidia.module_kind if facts.nvidia else None
                self.compare("kernel_driver.flavor", "NVIDIA kernel module", kd.flavor,
                             Reading.of(flavor, "/proc/driver/nvidia/version") if flavor
                             else Reading.missing("module kind not shown"))

    def os_and_kernel(self) -> None:
        """The OS (ID-VERSION as the matrix spells it) and the kernel release."""
        facts = self.facts
        os_text = host_os_text(facts)
        os_reading = Reading.of(os_text, "/etc/os-release") if os_text else facts.os.id
        pinned = self.lock.os
        if os_text and pinned.allowed and pinned.origin == "host":
            # Exact value first, then the matrix's set with its series semantics (ol-9, ...).
            exact, pinned = self._os_parts()
            self.compare("os", "OS", exact, os_reading)
        if os_text and pinned.allowed:
            key = host_os_key(facts)
            assert key is not None
            ok = any(os_matches(key, entry) for entry in pinned.allowed)
            if ok:
                if self.lock.os.origin != "host":
                    self.add("os", "os", "match", f"OS {os_text} is validated.",
                             expected=allowed_text(pinned), actual=os_text)
            else:
                self.add("os", "os", "outside-validated",
                         f"OS {os_text} is not one the matrix validates for "
                         f"{self._context(pinned.ref)} "
                         f"({allowed_text(pinned)}).", expected=allowed_text(pinned),
                         actual=os_text, source=self.source_of(pinned))
        else:
            self.compare("os", "OS", pinned, os_reading)
        self.compare("kernel", "kernel", self.lock.kernel, facts.os.kernel)

    def _os_parts(self) -> tuple[Pinned, Pinned]:
        """The lock's frozen OS as its exact value alone, and as the matrix's set alone
        (worked out once per lock: :class:`~pinning.verify.compare.LockPlan`).
        """
        parts = self.plan.derived.get("os-parts")
        if parts is None:
            pinned = self.lock.os
            parts = self.plan.derived["os-parts"] = (
                pinned.model_copy(update={"allowed": None}),
                pinned.model_copy(update={"origin": "matrix", "value": None}))
        return parts

    def runtime(self) -> None:
        """The ROCm user space, or the CUDA release (from the torch build or the toolkit)."""
        rt = self.lock.runtime
        facts = self.facts
        if rt.name == "rocm":
            reading = facts.amd.rocm if facts.amd else Reading.missing(
                "no AMD GPU or ROCm on the host", absent=True)
            self.compare("runtime.version", "ROCm user space", rt.version, reading)
            return
        if rt.toolkit is not None:
            toolkit = facts.nvidia.cuda_toolkit if facts.nvidia else Reading.missing(
                "no CUDA toolkit on the host", absent=True)
            self.compare("runtime.toolkit", "CUDA toolkit", rt.toolkit, toolkit)
        torch = facts.python.torch
        if torch is None or torch.cuda is None or rt.version.value is None:
            reading = facts.nvidia.cuda_toolkit if facts.nvidia else Reading.missing(
                "no NVIDIA GPU, CUDA build of torch or CUDA toolkit on the host", absent=True)
            self.compare("runtime.version", "CUDA", rt.version, reading)
            return
        # A CUDA wheel carries its CUDA runtime; torch.version.cuda is major.minor.
        want = ".".join(rt.version.value.split(".")[:2])
        if torch.cuda == want:
            self.add("runtime", "runtime.version", "match",
                     f"torch is built with CUDA {torch.cuda} (lock: {rt.version.value}).",
                     expected=rt.version.value, actual=torch.cuda)
        else:
            self.add("runtime", "runtime.version", "mismatch",
                     f"torch is built with CUDA {torch.cuda}, the lock has {rt.version.value}.",
                     expected=rt.version.value, actual=torch.cuda,
                     source=self.source_of(rt.version))

