"""ChrootRunner: the host's own tools run inside the host's root (a node agent's --chroot)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pinning.util.proc import ChrootRunner, SystemRunner


def test_a_tool_is_found_in_the_roots_folders_even_through_an_absolute_link(
        tmp_path: Path) -> None:
    (tmp_path / "opt/rocm/bin").mkdir(parents=True)
    (tmp_path / "opt/rocm/bin/rocminfo").write_text("#!/bin/sh\n")
    (tmp_path / "usr/bin").mkdir(parents=True)
    # Absolute inside the host: dangling from pin's own /, valid inside the chroot.
    (tmp_path / "usr/bin/amd-smi").symlink_to("/opt/rocm/libexec/amdsmi_cli/amdsmi_cli.py")
    runner = ChrootRunner(tmp_path)
    assert runner.find("rocminfo") == "/opt/rocm/bin/rocminfo"
    assert runner.find("amd-smi") == "/usr/bin/amd-smi"
    assert runner.find("nvidia-smi") is None
    assert runner.run(["nvidia-smi"]) is None  # not installed on that host


def test_the_tool_runs_under_chroot_with_the_roots_path(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/ldd").write_text("#!/bin/sh\n")
    seen: list[tuple[list[str], dict[str, Any]]] = []

    def fake(self: SystemRunner, argv: list[str], **kw: Any) -> Any:
        from pinning.util.proc import CommandResult

        seen.append((list(argv), kw))
        return CommandResult(tuple(argv), 0, "ldd (GNU libc) 2.39\n", "")

    monkeypatch.setattr(SystemRunner, "run", fake)
    done = ChrootRunner(tmp_path).run(["ldd", "--version"], timeout=5)
    assert done is not None and done.argv == ("ldd", "--version") and done.ok
    argv, kw = seen[0]
    assert argv == ["chroot", str(tmp_path), "/usr/bin/ldd", "--version"]
    assert kw["timeout"] == 5 and "/opt/rocm/bin" in kw["env"]["PATH"]


def test_a_missing_chroot_is_a_failed_tool_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/ldd").write_text("#!/bin/sh\n")
    done = ChrootRunner(tmp_path, chroot="no-such-chroot-binary").run(["ldd", "--version"])
    assert done is not None and done.returncode == 127 and not done.ok
    assert "no-such-chroot-binary is not installed" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot(2) needs CAP_SYS_CHROOT (root)")
def test_a_real_chroot_into_this_machines_root_reads_its_glibc() -> None:
    done = ChrootRunner(Path("/")).run(["ldd", "--version"])
    assert done is not None and done.ok
    assert "GLIBC" in done.stdout or "GNU libc" in done.stdout


def test_a_chroot_that_fails_itself_is_a_probe_failure_not_a_missing_tool(
        tmp_path: Path) -> None:
    from pinning.errors import ProbeError

    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/ldd").write_text("#!/bin/sh\n")
    fake = tmp_path / "fake-chroot"  # what GNU chroot prints and returns without CAP_SYS_CHROOT
    fake.write_text("#!/bin/sh\necho \"chroot: cannot change root directory to '$1': "
                    "Operation not permitted\" >&2\nexit 125\n")
    fake.chmod(0o755)
    with pytest.raises(ProbeError, match="Operation not permitted") as info:
        ChrootRunner(tmp_path, chroot=str(fake)).run(["ldd", "--version"])
    assert info.value.exit_code == 7 and "CAP_SYS_CHROOT" in (info.value.hint or "")
