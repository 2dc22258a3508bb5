"""Concurrent writers of one file, with real processes: two ``pin freeze`` of one lock, many
writers of one target, a writer killed with SIGKILL mid-write. Exactly one result wins (or
the writes happen one after the other), the file is never torn, the loser is told to re-run,
and the temporary file of a killed writer is removed by the next write. No wall-clock
asserts: every wait is on a process or a pipe."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pinning.errors import LockfileError
from pinning.lockfile.io import read_lock, read_lock_bytes, write_lock
from pinning.util.files import TargetChanged, atomic_write_bytes
from pinning.util.locks import WriteConflict, lock_path_of, remove_orphans, target_lock
from tests.support.cli import pin
from tests.support.hosts import MI300X
from tests.support.paths import ROOT

ROUNDS = 6


def leftovers(folder: Path, name: str) -> list[str]:
    """Temporary or lock files of ``name`` left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


def python(script: str, *args: str) -> subprocess.Popen[str]:
    """Run ``script`` in a new interpreter (the repository importable), pipes to talk to it."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


# -- two `pin freeze` of one lock ---------------------------------------------------------


@pytest.fixture(scope="module")
def freeze_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes, bytes]:
    """An unfrozen lock, a snapshot of the host it validates, and the bytes of the lock
    frozen once and frozen twice."""
    d = tmp_path_factory.mktemp("freeze")
    lock, snap = d / "orig.lock", d / "host.json"
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
            "-o", str(lock))
    assert r.returncode == 0, r.stderr
    r = pin("probe", "--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml"),
            "-o", str(snap))
    assert r.returncode == 0, r.stderr
    once, twice = d / "once.lock", d / "twice.lock"
    assert pin("freeze", str(lock), "--host", str(snap), "-o", str(once)).returncode == 0
    assert pin("freeze", str(once), "--host", str(snap), "-o", str(twice)).returncode == 0
    return lock, snap, once.read_bytes(), twice.read_bytes()


def test_two_freezes_of_one_lock_never_lose_a_result_silently(
        tmp_path: Path, freeze_inputs: tuple[Path, Path, bytes, bytes]) -> None:
    orig, snap, once, twice = freeze_inputs
    for i in range(ROUNDS):
        folder = tmp_path / f"round-{i}"
        folder.mkdir()
        lock = folder / "pin.lock"
        shutil.copy(orig, lock)
        cmd = [sys.executable, "-m", "pinning", "freeze", str(lock), "--host", str(snap)]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        results = []
        for p in procs:
            out, err = p.communicate()
            results.append((p.returncode, out, err))
        codes = sorted(rc for rc, _, _ in results)
        assert codes in ([0, 0], [0, 5]), results
        final = lock.read_bytes()
        if codes == [0, 5]:  # one read the lock the other replaced: refused, told to re-run
            loser = next(err for rc, _, err in results if rc == 5)
            assert "changed since pin read it" in loser and "Re-run" in loser, loser
            assert "nothing was written" in loser and "Traceback" not in loser
            assert final == once
        else:  # one after the other: the second froze the first one's result
            assert final in (once, twice)
        read_lock(lock)  # complete: its content hash verifies
        assert leftovers(folder, "pin.lock") == []


def test_freeze_refuses_a_lock_replaced_after_it_was_read(
        tmp_path: Path, freeze_inputs: tuple[Path, Path, bytes, bytes]) -> None:
    """The interleaving the race above may or may not hit, made to happen: read, another
    command writes (``pin resolve -o`` or a ``freeze``), then the write of the first."""
    orig, _snap, once, _twice = freeze_inputs
    lock = tmp_path / "pin.lock"
    shutil.copy(orig, lock)
    raw, model = read_lock_bytes(lock)
    assert raw == orig.read_bytes()
    lock.write_bytes(once)  # the other writer's complete result
    with pytest.raises(LockfileError) as info:
        write_lock(model, lock, if_unchanged=raw)
    assert info.value.exit_code == 5
    assert f"{lock}: changed since pin read it" in info.value.message
    assert "Re-run" in info.value.hint
    assert lock.read_bytes() == once  # the other result is kept
    assert write_lock(model, lock, if_unchanged=once) == lock.read_bytes()  # unchanged: written
    lock.unlink()
    with pytest.raises(LockfileError, match="changed since pin read it"):  # removed meanwhile
        write_lock(model, lock, if_unchanged=raw)
    assert not lock.exists() and leftovers(tmp_path, "pin.lock") == []


# -- many writers of one target ------------------------------------------------------------

WRITER = """
    import sys
    from pathlib import Path
    from pinning.util.files import atomic_write_bytes

    target, me, times = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for i in range(times):
        atomic_write_bytes(target, bytes([me]) * (256 * 1024 + me))
"""


def test_many_writers_one_target_is_always_one_whole_result(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"\0" * 10)
    writers = [python(WRITER, str(target), str(me), "15") for me in range(1, 7)]
    whole = {b"\0" * 10} | {bytes([me]) * (256 * 1024 + me) for me in range(1, 7)}
    while any(w.poll() is None for w in writers):  # read while they write
        assert target.read_bytes() in whole
    for w in writers:
        _, err = w.communicate()
        assert w.returncode == 0, err
    assert target.read_bytes() in whole - {b"\0" * 10}
    assert leftovers(tmp_path, "out.bin") == []


COUNTER = """
    import sys
    from pathlib import Path
    from pinning.util.locks import target_lock

    target, times = Path(sys.argv[1]), int(sys.argv[2])
    for _ in range(times):
        with target_lock(target):  # read-modify-write, not atomic: only the lock protects it
            n = int(target.read_text())
            target.write_text(str(n + 1))
"""


def test_target_lock_excludes_other_processes(tmp_path: Path) -> None:
    """A lost update would show as a count below processes x increments; the sidecar is
    removed on every release, so this also covers a writer locking a removed sidecar."""
    target = tmp_path / "count"
    target.write_text("0")
    procs = [python(COUNTER, str(target), "60") for _ in range(5)]
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert target.read_text() == str(5 * 60)
    assert not lock_path_of(target).exists()


HOLDER = """
    import sys
    from pathlib import Path
    from pinning.util.locks import target_lock

    with target_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        sys.stdin.read()  # until the test closes stdin
"""


def test_a_writer_waits_its_turn_or_gives_up_naming_the_holder(tmp_path: Path) -> None:
    target = tmp_path / "pin.lock"
    target.write_bytes(b"old")
    holder = python(HOLDER, str(target))
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    with pytest.raises(WriteConflict, match="another process is writing") as info:
        atomic_write_bytes(target, b"new", wait=0.05)
    assert str(lock_path_of(target)) in str(info.value)
    assert not isinstance(info.value, TargetChanged) and target.read_bytes() == b"old"
    holder.communicate("")  # release
    assert holder.returncode == 0
    atomic_write_bytes(target, b"new", wait=0.05)
    assert target.read_bytes() == b"new" and leftovers(tmp_path, "pin.lock") == []


# -- a writer killed mid-write --------------------------------------------------------------

KILLED = """
    import os, sys
    from pathlib import Path
    from pinning.util import files

    real_fsync = os.fsync

    def stop_here(fd):  # the temp file is complete, the rename has not happened
        real_fsync(fd)
        print("written", flush=True)
        sys.stdin.read()  # wait for SIGKILL

    files.os.fsync = stop_here
    files.atomic_write_bytes(Path(sys.argv[1]), b"new lock " * 1000)
"""


def test_kill_9_mid_write_keeps_the_old_file_and_the_next_write_removes_the_orphan(
        tmp_path: Path) -> None:
    target = tmp_path / "pin.lock"
    target.write_bytes(b"old lock")
    writer = python(KILLED, str(target))
    assert writer.stdout is not None and writer.stdout.readline() == "written\n"
    orphan = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert [p.name.split(".")[3] for p in orphan] == [str(writer.pid)]  # .pin.lock.<pid>.*
    writer.send_signal(signal.SIGKILL)
    writer.communicate()
    assert writer.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"old lock"  # intact
    assert orphan[0].exists() and lock_path_of(target).exists()  # what the killed one left
    atomic_write_bytes(target, b"next")  # the kernel released its lock; its pid is gone
    assert target.read_bytes() == b"next"
    assert leftovers(tmp_path, "pin.lock") == []


def test_remove_orphans_keeps_live_fresh_and_foreign_files(tmp_path: Path) -> None:
    target = tmp_path / "pin.lock"
    me = os.getpid()
    live = tmp_path / f".pin.lock.{me}.abcd1234.tmp"  # a running writer's, fresh
    dead_old = tmp_path / ".pin.lock.zz_x9k2q.tmp"  # before pids were named: by age only
    dead_new = tmp_path / ".pin.lock.qwertyu1.tmp"
    other = tmp_path / ".pin.lock.x.abcd1234.tmp"  # not a temp of pin.lock's writers
    link = tmp_path / ".pin.lock.1.abcd1234.tmp"
    for p in (live, dead_old, dead_new, other):
        p.write_bytes(b"x")
    link.symlink_to(target)
    os.utime(dead_old, (0, 0))
    assert remove_orphans(target) == [dead_old]
    assert set(remove_orphans(target, max_age=-1)) == {live, dead_new}  # all its writers'
    assert other.exists() and link.is_symlink()


def test_a_folder_pin_cannot_lock_in_is_an_os_error_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "missing" / "pin.lock", b"x")
    with target_lock(tmp_path / "pin.lock") as sidecar:
        assert sidecar == tmp_path / ".pin.lock.lock" and sidecar.exists()
    assert not sidecar.exists()
