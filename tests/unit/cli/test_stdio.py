"""Issue 12's reproductions of ``-`` and of ``-o`` on what is not a plain file, run as a user
runs pin: ``-`` is standard output for ``-o`` and standard input for ``--host`` and LOCK (the
messages then go to stderr); ``-o`` on a character device or FIFO streams, on a symbolic link
writes the target and keeps the link, on a directory exits 2 naming it; ``pin doctor`` of a
dump that cannot be read exits 7. Nodes and links are made in a temp folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.cli import json_result
from tests.support.paths import DATA, HOSTS, ROOT

LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
H200 = HOSTS / "h200-cuda13"
PROBE = ["--root", str(H200 / "root"), "--replay", str(H200 / "commands.toml")]


def run(*args: str, stdin: bytes = b"", cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    """``pin ARGS`` with ``stdin`` on standard input; bytes out."""
    return subprocess.run([sys.executable, "-m", "pinning", *args], input=stdin, cwd=cwd,
                          capture_output=True)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The H200 test host's snapshot, as ``pin probe -o -`` prints it."""
    cwd = tmp_path_factory.mktemp("probe")
    r = run("probe", *PROBE, "-o", "-", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == []  # no file named '-'
    assert b"Wrote the snapshot to standard output" in r.stderr
    assert b"GPU" in r.stderr  # the report went to stderr, the data alone to stdout
    return r.stdout


def test_probe_to_stdout_is_the_snapshot(snapshot: bytes, tmp_path: Path) -> None:
    data = json.loads(snapshot)
    assert data["host-version"] == 1
    r = run("probe", *PROBE, "-o", "-", "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and b"choose one" in r.stderr  # one document on stdout
    assert json_result(r) is None and list(tmp_path.iterdir()) == []
    r = run("probe", *PROBE, "--format", "json", cwd=tmp_path)
    assert json_result(r) == data  # the envelope's result is the snapshot
    r = run("probe", *PROBE, "-o", "./-", cwd=tmp_path)  # a file named '-' is still reachable
    assert r.returncode == 0 and (tmp_path / "-").read_bytes() == snapshot


def test_host_dash_reads_the_snapshot_from_stdin(snapshot: bytes, tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_bytes(snapshot)
    from_file = run("verify", str(LOCK), "--host", str(snap), "--format", "json")
    from_stdin = run("verify", str(LOCK), "--host", "-", "--format", "json", stdin=snapshot)
    assert from_stdin.returncode == from_file.returncode == 0, from_stdin.stderr
    report = json_result(from_stdin)
    assert report["result"] == "match" and report["host"] == "standard input"
    r = run("probe", "--host", "-", "--format", "json", stdin=snapshot)
    assert r.returncode == 0 and json_result(r) == json.loads(snapshot)
    # The envelope `pin probe --format json > FILE` writes reads back as the snapshot.
    r = run("verify", str(LOCK), "--host", "-", "--format", "json", stdin=r.stdout)
    assert json_result(r)["result"] == "match"
    r = run("verify", str(LOCK), "--host", "-", stdin=b"{not json")
    assert r.returncode == 7 and b"standard input" in r.stderr


def test_freeze_to_stdout_and_from_stdin(snapshot: bytes, tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_bytes(snapshot)
    lock = tmp_path / "pin.lock"
    lock.write_bytes(LOCK.read_bytes())
    r = run("freeze", str(lock), "--host", str(snap), "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert b"into standard output" in r.stderr and b"into standard output" not in r.stdout
    frozen = tomllib.loads(r.stdout.decode())
    assert frozen["frozen"]["snapshot"].startswith("sha256:")
    assert lock.read_bytes() == LOCK.read_bytes()  # -o -: the lock itself is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.json", "pin.lock"]
    piped = run("freeze", "-", "--host", str(snap), stdin=LOCK.read_bytes(), cwd=tmp_path)
    assert piped.returncode == 0 and piped.stdout == r.stdout  # LOCK '-': stdin to stdout
    check = run("verify", "-", "--host", str(snap), stdin=r.stdout)
    assert check.returncode == 0, check.stderr
    both = run("freeze", "-", "--host", "-", stdin=LOCK.read_bytes())
    assert both.returncode == 2 and b"standard input" in both.stderr
    clash = run("freeze", str(lock), "--host", str(snap), "-o", "-", "--format", "json")
    assert clash.returncode == 2 and b"choose one" in clash.stderr


def test_output_on_a_device_a_fifo_a_link_a_directory(snapshot: bytes, tmp_path: Path) -> None:
    snap = tmp_path / "host.json"
    snap.write_bytes(snapshot)
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own
    except PermissionError:
        pytest.skip("mknod needs root")
    r = run("freeze", str(LOCK), "--host", str(snap), "-o", str(node))
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(node.lstat().st_mode)  # a dry run: the device is still a device
    r = run("probe", *PROBE, "-o", str(node))
    assert r.returncode == 0 and stat.S_ISCHR(node.lstat().st_mode)
    # A symlinked lock: frozen in place, the link kept.
    real = tmp_path / "locks" / "h200.lock"
    real.parent.mkdir()
    real.write_bytes(LOCK.read_bytes())
    link = tmp_path / "pin.lock"
    link.symlink_to(Path("locks") / "h200.lock")
    r = run("freeze", str(link), "--host", str(snap))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and "frozen" in tomllib.loads(real.read_text())
    # A FIFO: the bytes stream to its reader.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-m", "pinning", "probe", *PROBE, "-o",
                               str(fifo)], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    with open(fifo, "rb") as fh:
        streamed = fh.read()
    _, err = writer.communicate()
    assert writer.returncode == 0, err
    assert json.loads(streamed)["host-version"] == 1 and stat.S_ISFIFO(fifo.lstat().st_mode)
    # A directory: exit 2 naming it, nothing written.
    folder = tmp_path / "out"
    folder.mkdir()
    for argv in (["probe", *PROBE, "-o", str(folder)],
                 ["freeze", str(LOCK), "--host", str(snap), "-o", str(folder)]):
        r = run(*argv)
        assert r.returncode == 2 and str(folder).encode() in r.stderr
        assert b"Traceback" not in r.stderr
    assert list(folder.iterdir()) == []


def test_doctor_reads_stdin_and_exits_7_for_an_unreadable_dump(tmp_path: Path) -> None:
    dump = (DATA / "dumps" / "pytorch-pytorch-33469.txt").read_bytes()
    r = run("doctor", "-", stdin=dump)
    assert r.returncode == 0 and b"No problems found" in r.stdout
    r = run("doctor", str(tmp_path / "nonexistent"))
    assert r.returncode == 7 and b"nonexistent" in r.stderr
    r = run("doctor", str(tmp_path))  # a directory is a dump that cannot be read too
    assert r.returncode == 7 and b"directory" in r.stderr


def test_commands_refuse_what_cannot_share_stdout(tmp_path: Path) -> None:
    r = run("keygen", "-o", "-", cwd=tmp_path)
    assert r.returncode == 2 and list(tmp_path.iterdir()) == []
    r = run("build", "-", "--wheelhouse", str(tmp_path), "--registry", "http://127.0.0.1:9",
            "--format", "json", stdin=LOCK.read_bytes())
    assert r.returncode == 2 and b"choose one" in r.stderr
