"""Text from locks, snapshots, recorded hosts, dumps and file names reaches the terminal
escaped: a crafted value cannot erase pin's lines, retitle the window or reorder text, and
cannot start a line of its own that reads like pin's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import tomlkit

from pinning.cli.render_host import finding_line
from pinning.cli.render_lock import lock_summary
from pinning.guards.view import Finding
from pinning.lockfile.io import content_hash, lock_json, read_lock
from tests.support.cli import json_result, pin
from tests.support.hosts import MI300X, HostCopy
from tests.support.paths import DUMPS, ROOT

ERASE = "\x1b[1A\x1b[2K\x1b[1A\x1b[2K"  # cursor up, erase line, twice
TITLE = "\x1b]0;owned\x07"                # OSC: set the window title
RTL = "\u202e"                            # right-to-left override


def raw_controls(text: str) -> list[str]:
    """The characters in ``text`` a terminal would act on (line feed aside)."""
    return [c for c in text if c in "\x1b\x07\r\x9b\u202e\u2028" or (ord(c) < 32 and c != "\n")]


def host_args(host: Path) -> list[str]:
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


def frozen_lock(tmp_path: Path) -> tuple[Path, Path]:
    lock, snap = tmp_path / "pin.lock", tmp_path / "host.json"
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(lock)).returncode == 0
    assert pin("probe", *host_args(MI300X), "-o", str(snap)).returncode == 0
    assert pin("freeze", str(lock), "--host", str(snap)).returncode == 0
    return lock, snap


def test_verify_shows_a_crafted_snapshot_escaped_and_keeps_every_mismatch(tmp_path: Path) -> None:
    lock, snap = frozen_lock(tmp_path)
    data: dict[str, Any] = json.loads(snap.read_text())
    data["os"]["kernel"]["value"] = "6.8.0-99" + ERASE
    data["gpus"][0]["vbios"]["value"] = "113-EVIL" + TITLE + RTL
    snap.write_text(json.dumps(data))
    r = pin("verify", str(lock), "--host", str(snap))
    assert r.returncode == 6, r.stdout + r.stderr
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    mismatches = [ln for ln in r.stdout.splitlines() if " mismatch " in ln]
    assert len(mismatches) == 2
    assert "kernel is 6.8.0-99\\x1b[1A\\x1b[2K" in r.stdout
    assert "113-EVIL\\x1b]0;owned\\x07\\u202e" in r.stdout
    # JSON output stays JSON (its own escaping), and carries the value exactly.
    j = pin("verify", str(lock), "--host", str(snap), "--format", "json")
    assert "\x1b" not in j.stdout
    assert "6.8.0-99" + ERASE in {f.get("actual") for f in json_result(j)["findings"]}


def test_lock_show_escapes_what_the_lock_says(tmp_path: Path) -> None:
    data = lock_json(read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"))
    data["generator"]["command"] = "pin resolve" + ERASE + "\nFAKE: all good"
    data["notes"] = ["note" + TITLE, "two\nlines" + RTL]
    data["content-hash"] = content_hash(data)
    path = tmp_path / "crafted.lock"
    path.write_text(tomlkit.dumps(data))
    r = pin("lock", "show", str(path))
    assert r.returncode == 0, r.stderr
    assert raw_controls(r.stdout) == []
    assert "pin resolve\\x1b[1A\\x1b[2K\\x1b[1A\\x1b[2K\\x0aFAKE: all good" in r.stdout
    assert not any(ln.startswith("FAKE") for ln in r.stdout.splitlines())
    assert "Note: two\\x0alines\\u202e" in r.stdout


def test_probe_text_escapes_a_recorded_host(host_copy: HostCopy) -> None:
    root = host_copy(MI300X.name)
    release = root / "root" / "etc" / "os-release"
    release.write_text(release.read_text().replace(
        'PRETTY_NAME="Ubuntu 24.04.3 LTS"', f'PRETTY_NAME="Ubuntu{ERASE}{TITLE}"'))
    r = pin("probe", *host_args(root))
    assert r.returncode == 0, r.stderr
    assert raw_controls(r.stdout) == []
    assert "Ubuntu\\x1b[1A" in r.stdout


def test_error_paragraph_escapes_file_names_and_content(tmp_path: Path) -> None:
    missing = tmp_path / f"gone{ERASE}{TITLE}.lock"
    r = pin("lock", "validate", str(missing))
    assert r.returncode == 5
    assert raw_controls(r.stderr) == [] and "gone\\x1b[1A" in r.stderr
    debug = pin("--debug", "lock", "validate", str(missing))
    assert debug.returncode == 5 and raw_controls(debug.stderr) == []


def test_doctor_escapes_the_dump_file_name(tmp_path: Path) -> None:
    dump = tmp_path / f"collect{ERASE}.txt"
    shutil.copy(DUMPS / "pytorch-pytorch-37320.txt", dump)
    r = pin("doctor", str(dump))
    assert r.returncode == 6, r.stdout + r.stderr
    assert raw_controls(r.stdout) == [] and "collect\\x1b[1A" in r.stdout


def test_finding_line_is_one_line_per_value() -> None:
    f = Finding(code="x", fact="kernel", status="mismatch", severity="error",
                message="kernel is 1\n✓ match             kernel: all good" + ERASE,
                source="snapshot\r")
    lines = finding_line(f).splitlines()
    assert len(lines) == 2 and lines[1] == "    source: snapshot\\x0d"
    assert "\\x0a✓ match" in lines[0] and raw_controls(lines[0]) == []


def test_a_reason_with_a_control_character_is_refused(tmp_path: Path) -> None:
    """Why a value is unknown is one line of text: a lock whose reason carries an escape is
    invalid (exit 5, field named), not shown."""
    data = lock_json(read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"))
    data["os"]["reason"] = "unknown" + ERASE
    data["content-hash"] = content_hash(data)
    path = tmp_path / "crafted.lock"
    path.write_text(tomlkit.dumps(data))
    r = pin("lock", "show", str(path))
    assert r.returncode == 5
    assert "os.reason: character \\x1b not allowed in a reason" in r.stderr
    assert raw_controls(r.stderr) == []


def test_lock_summary_keeps_ordinary_text() -> None:
    lock = read_lock(ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock")
    assert "\\x" not in lock_summary(lock) and "\\u" not in lock_summary(lock)


C1_AND_SEPARATORS = "\x9b2J\x7f\u2028\u2029\u202e\U000e0041"  # C1 CSI, DEL, LS, PS, RLO, tag


def test_json_output_carries_c1_bidi_and_separators_as_escapes(tmp_path: Path) -> None:
    """JSON encoders escape only C0; pin's ``--format json`` and snapshot files escape the rest,
    and the value read back is exact."""
    lock, snap = frozen_lock(tmp_path)
    data: dict[str, Any] = json.loads(snap.read_text())
    data["gpus"][0]["vbios"]["value"] = "113-EVIL" + C1_AND_SEPARATORS
    snap.write_text(json.dumps(data))
    verify = pin("verify", str(lock), "--host", str(snap), "--format", "json")
    assert verify.returncode == 6, verify.stderr
    assert raw_controls(verify.stdout) == [] and "\x7f" not in verify.stdout
    assert "\\u009b2J\\u007f\\u2028\\u2029\\u202e\\udb40\\udc41" in verify.stdout
    actual = {f.get("actual") for f in json_result(verify)["findings"]}
    assert "113-EVIL" + C1_AND_SEPARATORS in actual

    dump = tmp_path / "collect.txt"
    dump.write_text((DUMPS / "pytorch-pytorch-37320.txt").read_text().replace(
        "Tesla P100-PCIE-16GB", "Tesla P100-PCIE-16GB" + C1_AND_SEPARATORS, 1))
    doctor = pin("doctor", str(dump), "--format", "json")
    assert raw_controls(doctor.stdout) == [] and "\x7f" not in doctor.stdout, doctor.stderr
    assert "\\u009b2J" in doctor.stdout
    gpus = json_result(doctor)["environment"]["gpus"]
    assert "Tesla P100-PCIE-16GB\x9b2J\x7f" in gpus  # the dump's line ends at U+2028

    out = tmp_path / "again.json"
    assert pin("probe", "--host", str(snap), "-o", str(out)).returncode == 0
    written = out.read_text(encoding="utf-8")
    assert raw_controls(written) == [] and "\\u009b2J" in written
    assert json.loads(written)["gpus"][0]["vbios"]["value"].endswith(C1_AND_SEPARATORS)


def test_resolve_prints_overlay_notes_escaped(tmp_path: Path) -> None:
    from tests.support.matrix import OVERLAY

    overlay = tmp_path / "ov.toml"
    overlay.write_text(OVERLAY.replace(
        'versions = ["2.10.0"]\n', 'versions = ["2.10.0"]\nnotes = ["evil\\u202edone\\u009bx"]\n'))
    r = pin("resolve", "--matrix", str(overlay), "--gpu", "mi300x", "--framework",
            "pytorch==2.10.0", "--rocm", "==7.2.1", "-o", str(tmp_path / "x.lock"), "--explain")
    assert r.returncode == 0, r.stderr
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    assert "Note (pytorch): evil\\u202edone\\x9bx" in r.stdout
