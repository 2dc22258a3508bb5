"""Writes that destroy nothing (issue 12, section 2): ``atomic_write_bytes`` on a symbolic link
writes the link's target and keeps the link; on a character device or a FIFO it streams the
bytes (``-o /dev/null`` is a dry run); a directory is refused; ``-`` is standard output; a
writer killed with SIGKILL at any point leaves the old file or the new one, never a torn one.
Device nodes, FIFOs and links are made in a temp folder, never the system's. No wall-clock
asserts: every wait is on a process or a pipe (random delays only pick kill points)."""

from __future__ import annotations

import errno
import io
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from pinning.errors import ProbeError
from pinning.util.files import atomic_write_bytes, read_regular_bytes
from tests.support.paths import ROOT

OLD = b"old = 1\n"


def leftovers(folder: Path) -> list[str]:
    """Temporary or sidecar lock files in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def null_clone(folder: Path) -> Path:
    """A character device 1:3 (what /dev/null is) in ``folder``; skips where mknod is not
    allowed (not root)."""
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    return node


def test_symlink_keeps_the_link_and_replaces_its_target(tmp_path: Path) -> None:
    real = tmp_path / "store" / "pin.lock"
    real.parent.mkdir()
    real.write_bytes(OLD)
    real.chmod(0o600)
    link = tmp_path / "pin.lock"
    link.symlink_to(Path("store") / "pin.lock")  # relative, as `ln -s` makes them
    chain = tmp_path / "current.lock"
    chain.symlink_to(link)
    atomic_write_bytes(chain, b"new = 2\n")
    assert chain.is_symlink() and os.readlink(chain) == str(link)
    assert link.is_symlink() and os.readlink(link) == "store/pin.lock"
    assert real.read_bytes() == b"new = 2\n" and not real.is_symlink()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600  # the file keeps its permissions
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []


def test_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("made.json")
    atomic_write_bytes(link, b"{}\n")
    assert link.is_symlink() and (tmp_path / "made.json").read_bytes() == b"{}\n"


def test_symlink_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError) as err:
        atomic_write_bytes(tmp_path / "a", b"x")
    assert err.value.errno == errno.ELOOP
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()


def test_character_device_is_written_as_a_stream(tmp_path: Path) -> None:
    node = null_clone(tmp_path)
    atomic_write_bytes(node, b"x" * 100_000)
    st = node.lstat()
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp, no sidecar
    link = tmp_path / "sink"
    link.symlink_to(node)  # a link to a device: the device is written, the link kept
    atomic_write_bytes(link, b"y")
    assert link.is_symlink() and stat.S_ISCHR(node.lstat().st_mode)


def test_fifo_is_written_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    # The reader is open before pin writes (pin refuses a FIFO nobody reads, see below).
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(rfd, True)
    keep = os.open(fifo, os.O_WRONLY)  # so the reader sees no end of file before pin writes

    def drain() -> None:
        with open(rfd, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=drain)
    reader.start()
    payload = os.urandom(300_000)  # more than a pipe buffer holds
    atomic_write_bytes(fifo, payload)
    os.close(keep)
    reader.join()
    assert got == [payload]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_fifo_without_a_reader_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as err:
        atomic_write_bytes(fifo, b"x")
    assert err.value.errno == errno.ENXIO and "no reader" in str(err.value)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("kind", ["loop", "fifo"])
def test_cli_output_to_a_link_loop_or_unread_fifo_is_exit_2(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out.lock"
    if kind == "loop":
        out.symlink_to(tmp_path / "other.lock")
        (tmp_path / "other.lock").symlink_to(out)
    else:
        os.mkfifo(out)
    r = subprocess.run([sys.executable, "-m", "pinning", "resolve", "--gpu", "mi300x",
                        "--framework", "pytorch==2.13.0", "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert str(out) in r.stderr and "Traceback" not in r.stderr


def test_directory_is_refused_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "to-out").symlink_to(folder)
    for path in (folder, tmp_path / "to-out"):
        with pytest.raises(IsADirectoryError) as err:
            atomic_write_bytes(path, b"x")
        assert str(folder) in str(err.value)
    assert list(folder.iterdir()) == [] and leftovers(tmp_path) == []


def test_if_unchanged_is_checked_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.lock"
    real.write_bytes(OLD)
    link = tmp_path / "pin.lock"
    link.symlink_to(real)
    atomic_write_bytes(link, b"new\n", if_unchanged=OLD)
    assert real.read_bytes() == b"new\n" and link.is_symlink()


def test_dash_is_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    monkeypatch.chdir(tmp_path)
    atomic_write_bytes(Path("-"), b"to stdout\n")
    assert capsysbinary.readouterr().out == b"to stdout\n"
    assert list(tmp_path.iterdir()) == []  # no file named '-'


def test_dash_reads_standard_input_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"lock-version = 1\n")))
    first = read_regular_bytes(Path("-"), ProbeError, label="-")
    again = read_regular_bytes(Path("-"), ProbeError, label="-")  # a command reading twice
    assert first == again == b"lock-version = 1\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 11)))
    with pytest.raises(ProbeError, match="larger than 10 bytes"):
        read_regular_bytes(Path("-"), ProbeError, label="-", limit=10)


# -- SIGKILL at every step of a write ----------------------------------------------------

# The child stops (blocks reading its stdin) at the named step and says so on stdout; the
# parent then kills it with SIGKILL. "none" writes with no stop (killed after a random delay).
WRITER = """
import os, sys
from pathlib import Path
from pinning.util.files import atomic_write_bytes

point, target, size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
real_write, real_fsync, real_replace = os.write, os.fsync, os.replace
writes = [0]

def stop(name):
    sys.stdout.write(name + "\\n")
    sys.stdout.flush()
    sys.stdin.read()

def write(fd, data):
    n = real_write(fd, data)
    writes[0] += 1
    if point == "mid-data" and writes[0] == 3:
        stop(point)
    return n

def fsync(fd):
    if point == "before-fsync":
        stop(point)
    real_fsync(fd)

def replace(src, dst):
    if point == "before-rename":
        stop(point)
    real_replace(src, dst)
    if point == "after-rename":
        stop(point)

os.write, os.fsync, os.replace = write, fsync, replace
sys.stdout.write("start\\n")
sys.stdout.flush()
atomic_write_bytes(target, b"N" * size + b"\\n")
stop("done")
"""

SIZE = 8 * 1024 * 1024
NEW = b"N" * SIZE + b"\n"
STEPS = ["mid-data", "before-fsync", "before-rename", "after-rename", "done"]


def kill_writer(point: str, target: Path, *, delay: float | None = None) -> None:
    """Run the writer, SIGKILL it at ``point`` (or ``delay`` seconds after it starts)."""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), point,
                              str(target), str(SIZE)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, cwd=ROOT)
    assert child.stdout is not None
    assert child.stdout.readline() == b"start\n"
    if delay is None:
        assert child.stdout.readline().decode().strip() == point
    else:
        threading.Event().wait(delay)
    child.send_signal(signal.SIGKILL)
    child.communicate()
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize("via_link", [False, True], ids=["file", "symlink"])
@pytest.mark.parametrize("point", STEPS)
def test_sigkill_at_each_step_leaves_old_or_new(tmp_path: Path, point: str,
                                                via_link: bool) -> None:
    real = tmp_path / "pin.lock"
    real.write_bytes(OLD)
    target = real
    if via_link:
        target = tmp_path / "link.lock"
        target.symlink_to(real)
    kill_writer(point, target)
    content = real.read_bytes()
    expected = OLD if point in ("mid-data", "before-fsync", "before-rename") else NEW
    assert content == expected
    assert not via_link or target.is_symlink()
    # The next write removes what the killed writer left (its temporary file, its sidecar).
    atomic_write_bytes(target, OLD)
    assert real.read_bytes() == OLD and leftovers(tmp_path) == []


def test_sigkill_at_random_moments_never_tears(tmp_path: Path) -> None:
    real = tmp_path / "pin.lock"
    real.write_bytes(OLD)
    rng = random.Random(12)
    for _ in range(8):
        kill_writer("none", real, delay=rng.uniform(0.0, 0.15))
        assert real.read_bytes() in (OLD, NEW)
        atomic_write_bytes(real, OLD)
        assert leftovers(tmp_path) == []
