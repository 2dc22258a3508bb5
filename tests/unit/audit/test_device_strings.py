"""pin audit: rocm/hip device strings found in Python source."""

from __future__ import annotations

from pathlib import Path


def test_audit_finds_rocm_and_hip_device_strings(tmp_path: Path) -> None:
    from pinning.audit.device_strings import audit_source

    code = (
        "import torch\n"
        "a = torch.device('rocm')\n"
        "b = x.to('hip:1')\n"
        "c = torch.zeros(3, device='hip')\n"
        "d = torch.device('cuda')\n"
        "e = x.to('cpu')\n"
        "f = 'rocm'\n"
    )
    hits = audit_source(code, "m.py")
    assert [(h.line, h.text) for h in hits] == [
        (2, "'rocm' as a device"), (3, "'hip:1' as a device"), (4, "'hip' as a device")]
