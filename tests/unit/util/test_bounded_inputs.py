"""Every file pin reads from a path the user gives is a regular file of bounded size, opened
without blocking: a FIFO, ``/dev/zero``, a directory, a symbolic-link loop or a file over the
reader's size bound is refused with the reader's exit code, and never hangs or eats memory.

Each case runs ``pin`` in a subprocess with a generous timeout, so a regression fails (the
timeout) instead of hanging the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.matrix.importers.build import MAX_SOURCE_BYTES
from pinning.util.files import (
    MAX_INPUT_BYTES,
    MAX_KEY_BYTES,
    read_regular_bytes,
    sha256_file,
)
from tests.support.paths import AMD_SOURCES, ROOT

TIMEOUT_S = 120
CSV = AMD_SOURCES / "rocm-compat-historical-2026-01-21.csv"
LOCK = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
REF = "127.0.0.1:9/pin/x@sha256:" + "0" * 64
# load_rules has no command of its own: a tiny driver maps its PinError to the exit code.
RULES_DRIVER = (
    "import sys\nfrom pathlib import Path\nfrom pinning.errors import PinError\n"
    "from pinning.guards.engine import load_rules\n"
    "try:\n    load_rules(Path(sys.argv[1]))\n"
    "except PinError as exc:\n    print(exc.render(), file=sys.stderr)\n"
    "    sys.exit(exc.exit_code)\n"
)

# reader -> (argv with {} for the path, exit code, size bound in bytes)
READERS: dict[str, tuple[list[str], int, int]] = {
    "private key": (["sign", REF, "--key", "{}"], 9, MAX_KEY_BYTES),
    "public key": (["verify-image", REF, "--key", "{}"], 9, MAX_KEY_BYTES),
    "AMD CSV": (["matrix", "import-amd", "{}", "--published", "2026-01-21"], 2,
                MAX_SOURCE_BYTES),
    "--page": (["matrix", "import-amd", str(CSV), "--page", "{}"], 2, MAX_SOURCE_BYTES),
    "--release-notes": (["matrix", "import-amd", str(CSV), "--release-notes", "{}"], 2,
                        MAX_SOURCE_BYTES),
    "PyTorch matrix": (["matrix", "import-pytorch", "{}", "--checked", "2026-11-29"], 2,
                       MAX_SOURCE_BYTES),
    "dump": (["doctor", "{}"], 7, MAX_INPUT_BYTES),
    "lock": (["lock", "validate", "{}"], 5, MAX_INPUT_BYTES),
    "snapshot": (["verify", str(LOCK), "--host", "{}"], 7, MAX_INPUT_BYTES),
    "overlay": (["matrix", "list", "--matrix", "{}"], 3, MAX_INPUT_BYTES),
    "rules": (["<rules>", "{}"], 3, MAX_INPUT_BYTES),
}


def _fifo(tmp: Path, _bound: int) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


def _zero(_tmp: Path, _bound: int) -> Path:
    return Path("/dev/zero")


def _directory(tmp: Path, _bound: int) -> Path:
    (tmp / "folder").mkdir()
    return tmp / "folder"


def _link_loop(tmp: Path, _bound: int) -> Path:
    (tmp / "a").symlink_to(tmp / "b")
    (tmp / "b").symlink_to(tmp / "a")
    return tmp / "a"


def _too_big(tmp: Path, bound: int) -> Path:
    path = tmp / "big"
    with path.open("wb") as fh:  # sparse: one byte over the bound costs no disk
        fh.truncate(bound + 1)
    return path


SPECIAL: dict[str, tuple[Callable[[Path, int], Path], str]] = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "/dev/zero": (_zero, "not a regular file (a character device)"),
    "directory": (_directory, "directory"),
    "symlink loop": (_link_loop, "cannot be read"),
    "over the bound": (_too_big, "larger than"),
}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    if argv[0] == "<rules>":
        cmd = [sys.executable, "-c", RULES_DRIVER, *argv[1:]]
    else:
        cmd = [sys.executable, "-m", "pinning", *argv]
    env = {**os.environ, "PIN_KEY_PASSWORD": "secret"}
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pin {' '.join(argv)} did not finish in {TIMEOUT_S} s (it hangs)")


@pytest.mark.parametrize("special", list(SPECIAL))
@pytest.mark.parametrize("reader", list(READERS))
def test_special_file_is_refused_with_the_readers_exit_code(
        tmp_path: Path, reader: str, special: str) -> None:
    template, code, bound = READERS[reader]
    make, words = SPECIAL[special]
    path = make(tmp_path, bound)
    r = _run([a.replace("{}", str(path)) for a in template])
    assert r.returncode == code, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr


def test_bounds_are_what_the_readers_document() -> None:
    assert MAX_KEY_BYTES == 1024 * 1024
    assert MAX_SOURCE_BYTES == 4 * 1024 * 1024
    assert MAX_INPUT_BYTES == 64 * 1024 * 1024


def test_a_file_that_grows_past_the_bound_after_the_check_is_cut(tmp_path: Path) -> None:
    # st_size says 10 bytes, but the reader never reads more than limit + 1 bytes anyway:
    # a file appended to between fstat and read is refused, not read whole.
    path = tmp_path / "grows"
    path.write_bytes(b"x" * 10)
    assert read_regular_bytes(path, UsageError, label="f", limit=10) == b"x" * 10
    path.write_bytes(b"x" * 11)
    with pytest.raises(UsageError, match="larger than 10 bytes"):
        read_regular_bytes(path, UsageError, label="f", limit=10)


def test_sha256_file_refuses_a_fifo_and_hashes_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.whl")
    with pytest.raises(UsageError, match="not a regular file"):
        sha256_file(tmp_path / "x.whl", UsageError, label="wheel")
    (tmp_path / "y.whl").write_bytes(b"abc")
    assert sha256_file(tmp_path / "y.whl", UsageError, label="wheel") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
