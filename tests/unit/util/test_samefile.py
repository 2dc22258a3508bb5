"""The one rule against writing over an input (:mod:`pinning.util.samefile`): the same file
by device and inode with links followed, a path not there yet by its resolved path, streams
never, and the in-place exception for the one input a command amends.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.util.samefile import refuse_overwrite, same_file


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    path = tmp_path / "host.json"
    path.write_text('{"snapshot": true}\n')
    return path


def test_one_file_by_any_name_is_the_same_file(tmp_path: Path, snap: Path) -> None:
    (tmp_path / "sym.json").symlink_to(snap)
    os.link(snap, tmp_path / "hard.json")
    (tmp_path / "sub").mkdir()
    for name in ("host.json", "sym.json", "hard.json", "sub/../host.json"):
        assert same_file(tmp_path / name, snap), name
    other = tmp_path / "other.json"
    other.write_text('{"snapshot": true}\n')  # equal bytes, another file
    assert not same_file(other, snap)


def test_a_path_not_there_yet_is_compared_by_its_resolved_path(tmp_path: Path,
                                                               snap: Path) -> None:
    assert not same_file(tmp_path / "new.json", snap)
    assert same_file(tmp_path / "new.json", tmp_path / "." / "new.json")
    (tmp_path / "dangling").symlink_to(tmp_path / "new.json")
    assert same_file(tmp_path / "dangling", tmp_path / "new.json")
    assert not same_file(tmp_path / "a.json", tmp_path / "b.json")


def test_refusal_names_the_option_the_input_and_what_to_do(tmp_path: Path,
                                                           snap: Path) -> None:
    lock = tmp_path / "pin.lock"
    lock.write_text("lock-version = 1\n")
    with pytest.raises(UsageError) as exc:
        refuse_overwrite(snap, [("LOCK", lock), ("--host", snap)], command="pin freeze")
    assert exc.value.exit_code == 2
    assert exc.value.message.startswith(
        f"-o {snap} is one of the inputs of pin freeze: --host {snap}. Writing the output "
        "there would replace what it reads; nothing was read or written.")
    assert exc.value.hint == "Give -o a new file name."
    (tmp_path / "link").symlink_to(snap)
    with pytest.raises(UsageError, match="under another name or through a link"):
        refuse_overwrite(tmp_path / "link", [("--host", snap)], option="--out")
    refuse_overwrite(tmp_path / "new.json", [("LOCK", lock), ("--host", snap)])


def test_a_stream_output_replaces_nothing(snap: Path) -> None:
    refuse_overwrite(Path(os.devnull), [("--host", Path(os.devnull))])
    fifo = snap.parent / "fifo"
    os.mkfifo(fifo)
    refuse_overwrite(fifo, [("--host", fifo)])


def test_the_amended_input_may_be_rewritten_in_place_but_not_by_another_name(
        tmp_path: Path, snap: Path) -> None:
    lock = tmp_path / "pin.lock"
    lock.write_text("lock-version = 1\n")
    (tmp_path / "sym.lock").symlink_to(lock)
    os.link(lock, tmp_path / "hard.lock")
    inputs = [("LOCK", lock), ("--host", snap)]
    refuse_overwrite(lock, inputs, in_place="LOCK")
    refuse_overwrite(tmp_path / "sym.lock", inputs, in_place="LOCK")  # writes LOCK itself
    with pytest.raises(UsageError) as exc:
        refuse_overwrite(tmp_path / "hard.lock", inputs, in_place="LOCK")
    assert "LOCK" in exc.value.message and "rewrite LOCK in place" in exc.value.hint
    with pytest.raises(UsageError, match="--host"):
        refuse_overwrite(snap, inputs, in_place="LOCK")
