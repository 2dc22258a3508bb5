"""The child processes of the import and training gates: started without a shell in a new
session, their standard output and error in files, bounded by a timeout after which the
whole process group is stopped (:func:`run_logged`), and the tail of standard error quoted
in a failed check's reason (:func:`stderr_tail`).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pinning.util.text import printable

__all__ = ["kill_group", "run_logged", "stderr_tail"]

# The tail of standard error kept for a reason (2 KiB).
_ERR_TAIL = 2048


def run_logged(argv: Sequence[str], out_path: Path, err_path: Path, timeout_s: float, *,
               env: dict[str, str] | None = None, cwd: Path | None = None
               ) -> tuple[int | None, str | None]:
    """Run ``argv`` (standard input closed, output to ``out_path`` and ``err_path``) for at
    most ``timeout_s`` seconds; ``(exit status, None)``, or ``(None, why)`` when it could
    not start (``could not start python3: No such file or directory``) or timed out (then
    its process group is stopped). Never raises for the child's faults; a Ctrl-C here stops
    the child and propagates.
    """
    try:
        with out_path.open("wb") as out, err_path.open("wb") as err:
            child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=err, env=env, cwd=cwd, start_new_session=True)
            try:
                return child.wait(timeout=timeout_s), None
            except subprocess.TimeoutExpired:
                kill_group(child)
                return None, f"timed out after {timeout_s:g} s"
            except BaseException:  # Ctrl-C or an error here: never leave the child running
                kill_group(child)
                raise
    except OSError as exc:
        return None, (f"could not start {printable(argv[0], newlines=False)}: "
                      f"{exc.strerror or exc}")


def kill_group(child: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop ``child``'s process group (it was started in a new session) and reap it:
    SIGTERM first, so a process that cleans up (the container shim removes its container)
    can, then SIGKILL after ``grace_s`` seconds.
    """
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(child.pid, sig)
        except OSError:
            child.send_signal(sig)
        try:
            child.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def stderr_tail(path: Path) -> str:
    """``": <last line(s) of standard error>"``, bounded, or ``""``."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - _ERR_TAIL))
            text = fh.read(_ERR_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()
             and not ln.lstrip().startswith("{\"info\"")]
    return f": {printable(' | '.join(lines[-3:]), newlines=False)}" if lines else ""
