"""pin audit as a user runs it: findings, exit 10, and what it cannot scan."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import pin


def test_pin_audit_cli(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / ".venv").mkdir(parents=True)
    (src / "train.py").write_text("import torch\nm = m.to('hip')\n")
    (src / "ok.py").write_text("import torch\nm = m.to('cuda')\n")
    (src / ".venv" / "skip.py").write_text("torch.device('rocm')\n")
    (src / "broken.py").write_text("def (:\n")
    r = pin("audit", str(src))
    assert r.returncode == 10
    assert "train.py:2:5: 'hip' as a device" in r.stdout and "skip.py" not in r.stdout
    assert "broken.py: not valid Python" in r.stdout and "Traceback" not in r.stderr
    (src / "train.py").write_text("m = m.to('cuda')\n")
    ok = pin("audit", str(src / "train.py"))
    assert ok.returncode == 0 and "No rocm/hip device strings" in ok.stdout


def test_audit_lists_what_it_cannot_scan(tmp_path: Path) -> None:
    import os

    src = tmp_path / "p"
    src.mkdir()
    os.mkfifo(src / "fifo.py")
    (src / "dangling.py").symlink_to(src / "absent")
    (src / "dir.py").mkdir()
    (src / "big.py").write_bytes(b"#" * (10 * 1024 * 1024 + 1))
    (src / "ok.py").write_text("x = 1\n")
    r = pin("audit", str(src))
    assert r.returncode == 0, r.stderr
    assert "fifo.py: not a regular file" in r.stdout
    assert "dangling.py: not a regular file" in r.stdout
    assert "big.py: larger than 10 MiB" in r.stdout
    assert "No rocm/hip device strings found." in r.stdout
