"""pin audit: rocm/hip device strings found in Python source."""

from __future__ import annotations

from pathlib import Path


def test_audit_finds_rocm_and_hip_device_strings(tmp_path: Path) -> None:
    from pinning.audit.model import Context, Kind
    from pinning.audit.python_rules import scan_python_text

    code = (
        "import torch\n"
        "a = torch.device('rocm')\n"
        "b = x.to('hip:1')\n"
        "c = torch.zeros(3, device='hip')\n"
        "d = torch.device('cuda')\n"
        "e = x.to('cpu')\n"
        "f = 'rocm'\n"
    )
    scan = scan_python_text(code, "m.py", Context())
    hits = sorted((f.line, f.subject) for f in scan.findings if f.kind is Kind.DEVICE_STRING)
    assert [line for line, _subject in hits] == [2, 3, 4]
    assert all(device in subject for (_line, subject), device in
               zip(hits, ["'rocm'", "'hip:1'", "'hip'"], strict=True)), hits
