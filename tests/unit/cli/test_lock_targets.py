"""``pin lock show``, ``validate``, ``diff`` and ``check`` on a multi-target lock
(lock-version 2), as a user runs them: every target in turn under a heading naming it, or
the one ``--target NAME`` names (shown exactly as a single-target lock), JSON through the
envelope, and the refusals (several targets and none named, ``--target`` with a
single-target lock: exit 2; a file edited by hand: exit 5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.lockfile.io import amend, read_lock, read_lock_at, write_lock
from tests.support.cli import json_result, pin
from tests.support.multilock_locktargets import H200, MI300X, shipped_multi, write_multi


@pytest.fixture
def multi(tmp_path: Path) -> Path:
    return shipped_multi(tmp_path / "pin.lock")


def test_show_every_target_under_its_heading(multi: Path) -> None:
    r = pin("lock", "show", str(multi))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{multi}: lock-version 2, sha256:")
    assert lines[0].endswith("project demo, 2 target(s): current, candidate")
    assert lines[1] == "Shared by every target:"
    assert lines[2].split() == ["request.frameworks", "pytorch==2.13.0"]
    assert lines.count("== target current ==") == 1
    assert lines.count("== target candidate ==") == 1
    assert lines.index("== target current ==") < lines.index("== target candidate ==")
    # Each target's part is exactly what --target NAME shows.
    for name, nxt in (("current", "== target candidate =="), ("candidate", None)):
        start = lines.index(f"== target {name} ==") + 1
        part = lines[start:lines.index(nxt) if nxt else len(lines)]
        one = pin("lock", "show", str(multi), "--target", name)
        assert one.returncode == 0, one.stderr
        assert one.stdout.splitlines() == part
    hash_line = f"{multi} [targets.candidate]: a target of a lock-version 2 file, " \
                f"{read_lock(MI300X).content_hash}"
    assert hash_line in lines


def test_show_json(multi: Path) -> None:
    doc = json_result(pin("lock", "show", str(multi), "--format", "json"))
    assert set(doc) == {"lock-version", "content-hash", "project", "targets"}
    assert doc["lock-version"] == 2 and doc["project"] == "demo"
    assert list(doc["targets"]) == ["current", "candidate"]
    assert doc["targets"]["current"]["content-hash"] == read_lock(H200).content_hash
    one = json_result(pin("lock", "show", str(multi), "--target", "candidate",
                          "--format", "json"))
    v1 = json_result(pin("lock", "show", str(MI300X), "--format", "json"))
    assert one == v1 == doc["targets"]["candidate"]


def test_target_errors_read_well(multi: Path) -> None:
    r = pin("lock", "show", str(H200), "--target", "current")
    assert r.returncode == 2
    assert "is a single-target lock (lock-version 1)" in r.stderr
    assert "Traceback" not in r.stderr
    r = pin("lock", "show", str(multi), "--target", "candidat")
    assert r.returncode == 2
    assert "has no such target (targets: current, candidate). Did you mean 'candidate'?" \
        in r.stderr


def test_validate_says_so_per_target(multi: Path, tmp_path: Path) -> None:
    r = pin("lock", "validate", str(multi), str(H200))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{multi}: valid (lock-version 2, sha256:")
    assert lines[0].endswith(", 2 target(s))")
    assert lines[1] == f"  current: valid ({read_lock(H200).content_hash})"
    assert lines[2] == f"  candidate: valid ({read_lock(MI300X).content_hash})"
    assert lines[3].startswith(f"{H200}: valid (lock-version 1, ")
    doc = json_result(pin("lock", "validate", str(multi), "--format", "json"))
    entry = doc["locks"][0]
    assert entry["valid"] and entry["lock-version"] == 2
    assert [(t["name"], t["valid"]) for t in entry["targets"]] == [("current", True),
                                                                  ("candidate", True)]
    text = multi.read_text()
    bad = tmp_path / "bad.lock"
    bad.write_text(text.replace('[targets.candidate.request]\ngpu = "mi300x"',
                                '[targets.candidate.request]\ngpu = "mi250x"', 1))
    assert bad.read_text() != text
    r = pin("lock", "validate", str(bad))
    assert r.returncode == 5
    assert "[targets.candidate]: content-hash" in r.stderr


def test_diff_target_by_target(multi: Path, tmp_path: Path) -> None:
    same = pin("lock", "diff", str(multi), str(multi))
    assert same.returncode == 0, same.stderr
    assert same.stdout == ("== target current ==\nno differences\n"
                           "== target candidate ==\nno differences\n")
    other = tmp_path / "other.lock"
    shipped_multi(other)
    read = read_lock_at(other, "candidate")
    write_lock(amend(read.lock, notes=[*read.lock.notes, "a note"]), other,
               if_unchanged=read.raw, into=read)
    r = pin("lock", "diff", str(multi), str(other))
    assert r.returncode == 6, r.stderr
    part = r.stdout.split("== target candidate ==\n")
    assert part[0] == "== target current ==\nno differences\n"
    assert "notes:\n  notes:" in part[1]
    doc = json_result(pin("lock", "diff", str(multi), str(other), "--format", "json"))
    assert doc["equal"] is False and doc["added-targets"] == doc["removed-targets"] == []
    assert doc["targets"]["current"] == {"equal": True, "changes": []}
    assert [c["layer"] for c in doc["targets"]["candidate"]["changes"]] == ["notes"]
    three = write_multi(tmp_path / "three.lock", {"current": read_lock(H200),
                                                  "edge": read_lock(MI300X)})
    r = pin("lock", "diff", str(multi), str(three))
    assert r.returncode == 6
    assert r.stdout.splitlines()[:2] == ["target edge: added (only in NEW)",
                                         "target candidate: removed (only in OLD)"]


def test_diff_a_single_target_lock_with_a_target(multi: Path) -> None:
    r = pin("lock", "diff", str(H200), str(multi), "--target", "current")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "no differences\n"
    r = pin("lock", "diff", str(multi), str(H200), "--target", "candidate")
    assert r.returncode == 6
    assert "target.vendor: amd -> nvidia" in r.stdout
    r = pin("lock", "diff", str(H200), str(multi))
    assert r.returncode == 2
    assert f"{multi} locks 2 targets (current, candidate); name one with --target NAME." \
        in r.stderr
    r = pin("lock", "diff", str(H200), str(MI300X), "--target", "current")
    assert r.returncode == 2
    assert "are single-target locks (lock-version 1)" in r.stderr


def test_check_every_target(multi: Path) -> None:
    r = pin("lock", "check", str(multi))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "== target current ==",
        f"{multi} [targets.current]: up to date: today's matrix resolves its request to the "
        "same stack.",
        "== target candidate ==",
        f"{multi} [targets.candidate]: up to date: today's matrix resolves its request to the "
        "same stack."]
    doc = json_result(pin("lock", "check", str(multi), "--format", "json"))
    assert doc["current"] is True
    assert {n: t["current"] for n, t in doc["targets"].items()} == {"current": True,
                                                                   "candidate": True}
    one = json_result(pin("lock", "check", str(multi), "--target", "current",
                          "--format", "json"))
    assert one == doc["targets"]["current"]


def test_check_names_the_target_that_drifts(tmp_path: Path) -> None:
    # A target whose recorded PyTorch is not what today's matrix gives its request.
    old = read_lock(MI300X)
    data = old.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["frameworks"][0]["version"]["value"] = "2.12.0"
    drifted = amend(old, frameworks=data["frameworks"])
    path = write_multi(tmp_path / "pin.lock", {"current": read_lock(H200), "candidate": drifted})
    r = pin("lock", "check", str(path))
    assert r.returncode == 6
    assert f"{path} [targets.current]: up to date:" in r.stdout
    assert "frameworks.pytorch.version: 2.12.0 -> 2.13.0" in r.stdout
    assert (f"{path} [targets.candidate]: out of date: today's matrix resolves its request "
            f"to another stack. Run `pin lock upgrade {path} --target candidate` to take it."
            in r.stderr.replace("\n", " "))
    doc = json_result(pin("lock", "check", str(path), "--format", "json"))
    assert doc["current"] is False
    assert doc["targets"]["current"]["current"] is True
    assert doc["targets"]["candidate"]["current"] is False
