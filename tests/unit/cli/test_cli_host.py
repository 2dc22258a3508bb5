"""pin probe / freeze / verify / doctor as a user runs them: exit codes 0, 6 and 7, one
paragraph on error, nothing half-written, JSON that matches the committed schemas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from tests.support.cli import json_result, pin
from tests.support.hosts import MI300X
from tests.support.paths import DATA, HOSTS, ROOT


def host_args(host: Path) -> list[str]:
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


def test_probe_text_json_and_snapshot(tmp_path: Path) -> None:
    r = pin("probe", *host_args(MI300X), "-o", str(tmp_path / "h.json"))
    assert r.returncode == 0, r.stderr
    assert "PLDM bundle    01.25.03.12" in r.stdout and "6.16.6 (dkms)" in r.stdout
    j = pin("probe", *host_args(MI300X), "--format", "json")
    data = json_result(j)
    jsonschema.validate(data, json.loads((ROOT / "schemas/host.schema.json").read_text()))
    assert data == json.loads((tmp_path / "h.json").read_text())


def test_probe_no_gpu_is_clean() -> None:
    r = pin("probe", *host_args(HOSTS / "no-gpu"))
    assert r.returncode == 0 and "no GPU found" in r.stdout and not r.stderr


def test_probe_missing_root_is_exit_7(tmp_path: Path) -> None:
    r = pin("probe", "--root", str(tmp_path / "nope"))
    assert r.returncode == 7
    assert "Traceback" not in r.stderr and "not a directory" in r.stderr


def test_resolve_freeze_verify_round_trip(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(lock)).returncode == 0
    snap = tmp_path / "host.json"
    assert pin("probe", *host_args(MI300X), "-o", str(snap)).returncode == 0
    f = pin("freeze", str(lock), "--host", str(snap))
    assert f.returncode == 0, f.stderr
    assert "Froze" in f.stdout and "frozen from" in lock.read_text().lower()
    ok = pin("verify", str(lock), "--host", str(snap))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "MATCH" in ok.stdout
    # The same from the recorded tree directly, and as JSON against the schema.
    j = pin("verify", str(lock), *host_args(MI300X), "--format", "json")
    assert j.returncode == 0
    jsonschema.validate(json_result(j),
                        json.loads((ROOT / "schemas/verify-report.schema.json").read_text()))
    # A changed firmware value: exit 6 naming the fact, on stderr in one paragraph.
    host = tmp_path / "changed"
    shutil.copytree(MI300X, host)
    fw = host / "out/amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("01.25.03.12", "01.25.02.04"))
    bad = pin("verify", str(lock), *host_args(host))
    assert bad.returncode == 6
    assert "DRIFT" in bad.stdout and "below 01.25.03.12" in bad.stdout
    assert "firmware.version[GPU 0]" in bad.stderr and "Traceback" not in bad.stderr


def test_freeze_refusal_writes_nothing(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    shutil.copy(ROOT / "lockfiles/h200-pytorch-2.13.0.lock", lock)
    before = lock.read_bytes()
    r = pin("freeze", str(lock), *host_args(MI300X))
    assert r.returncode == 6 and "nothing was written" in r.stderr and "--force" in r.stderr
    assert lock.read_bytes() == before
    forced = pin("freeze", str(lock), *host_args(MI300X), "--force", "-o",
                 str(tmp_path / "forced.lock"))
    assert forced.returncode == 0 and "Recorded deviation" in forced.stdout
    assert "forced = true" in (tmp_path / "forced.lock").read_text()
    assert lock.read_bytes() == before


def test_verify_bad_inputs(tmp_path: Path) -> None:
    lock = ROOT / "lockfiles/h200-pytorch-2.13.0.lock"
    snap = tmp_path / "host.json"
    snap.write_text('{"host-version": 1}')
    r = pin("verify", str(lock), "--host", str(snap))
    assert r.returncode == 7 and "host.json" in r.stderr and "Traceback" not in r.stderr
    broken = tmp_path / "broken.lock"
    broken.write_text("lock-version = 1\n")
    assert pin("verify", str(broken), *host_args(MI300X)).returncode == 5
    both = pin("verify", str(lock), "--host", str(snap), "--root", "/")
    assert both.returncode == 2


def test_doctor_exit_codes(tmp_path: Path) -> None:
    dumps = DATA / "dumps"
    ok = pin("doctor", str(dumps / "pytorch-pytorch-33469.txt"))
    assert ok.returncode == 0 and "No problems found" in ok.stdout
    bad = pin("doctor", str(dumps / "pytorch-pytorch-37320.txt"), "--format", "json")
    assert bad.returncode == 6
    report = json_result(bad)
    jsonschema.validate(report, json.loads((ROOT / "schemas/doctor-report.schema.json")
                                           .read_text()))
    assert [f["code"] for f in report["findings"]] == ["driver-too-old-for-cuda"]
    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    r = pin("doctor", str(junk))
    assert r.returncode == 7 and "junk.txt" in r.stderr
    absent = pin("doctor", str(tmp_path / "absent.txt"))  # cannot be read: 7, as README says
    assert absent.returncode == 7 and "absent.txt" in absent.stderr


def test_host_commands_have_help() -> None:
    for cmd in ("probe", "verify", "freeze", "doctor"):
        r = pin(cmd, "--help")
        assert r.returncode == 0
        assert "exit" in r.stdout.lower() and "--format" in r.stdout


def test_probe_and_verify_the_lock_model(tmp_path: Path) -> None:
    rev = "0123456789abcdef0123456789abcdef01234567"
    lock = tmp_path / "pin.lock"
    r = pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
            "--model", f"org/model@{rev}", "-o", str(lock))
    assert r.returncode == 0, r.stderr
    host = tmp_path / "host"
    shutil.copytree(MI300X, host)
    r = pin("probe", *host_args(host), "--lock", str(lock))
    assert "Model org/model" in r.stdout and "not cached" in r.stdout
    snap = host / "root/root/.cache/huggingface/hub/models--org--model/snapshots" / rev
    snap.mkdir(parents=True)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs/main").write_text(rev)
    r = pin("probe", *host_args(host), "--lock", str(lock))
    line = next(x for x in r.stdout.splitlines() if x.startswith("Model org/model"))
    assert line.split()[-1] == rev
    v = pin("verify", str(lock), *host_args(host), "-v", "--format", "json")
    model = [f for f in json_result(v)["findings"] if f["fact"] == "model.revision"]
    assert [(f["status"], f["actual"]) for f in model] == [("match", rev)]


def test_match_says_what_was_not_compared(tmp_path: Path) -> None:
    """Against an unfrozen lock the driver cannot be compared and the kernel and build are
    not locked: the verdict line says MATCH only on what was compared, and how much was not.
    """
    lock = tmp_path / "pin.lock"
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(lock)).returncode == 0
    r = pin("verify", str(lock), *host_args(MI300X))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].endswith(
        ": MATCH on what was compared; not compared: 1 cannot-compare, 2 not-locked")
