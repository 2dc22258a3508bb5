"""pin verify and pin freeze with ``[serving]`` / ``[[extensions]]``: the serving rules judge
the lock's choices, rules that do not apply are hidden unless verbose, a ``pin audit`` JSON
report feeds the code rules, locked extensions are compared with the host, and freeze records
the extensions the host shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import UsageError
from pinning.guards.serving import serving_from_flags
from pinning.lockfile.io import write_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts
from pinning.resolve.to_lock import with_serving
from pinning.verify.freeze import freeze
from pinning.verify.report import VerifyReport, audit_device_strings, verify
from tests.support.cli import json_result, pin
from tests.support.hosts import MI300X, SITE, HostCopy, recorded
from tests.support.locks import frozen_mi300x


def served(lock: Lockfile, *, quantization: str | None = None,
           extensions: tuple[str, ...] = ()) -> Lockfile:
    serving, exts = serving_from_flags(lock.target.vendor, quantization=quantization,
                                       attention=None, head_dim=None, dtype=None,
                                       extensions=extensions)
    return with_serving(lock, serving, exts)


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


def run(lock: Lockfile, facts: HostFacts, matrix: Matrix, **kw: Any) -> VerifyReport:
    return verify(lock, facts, matrix, lock_name="lock", host_name="host", **kw)


def codes(report: VerifyReport) -> set[str]:
    return {f.code for f in report.findings}


def add_dist(site: Path, name: str, version: str, direct_url: str | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("")
    if direct_url:
        (info / "direct_url.json").write_text(json.dumps({"url": direct_url, "dir_info": {}}))


def test_rules_that_do_not_apply_are_hidden_unless_verbose(matrix: Matrix,
                                                           frozen: Lockfile) -> None:
    facts = recorded("mi300x-rocm7.1")
    quiet = run(frozen, facts, matrix)
    assert quiet.result == "match" and quiet.hidden_rules > 0
    assert not any(f.code.startswith("guard:") for f in quiet.findings)
    loud = run(frozen, facts, matrix, verbose=True)
    assert loud.hidden_rules == 0
    skipped = {f.code: f.message for f in loud.findings if f.status == "not-probed"}
    assert "--quantization" in skipped["guard:marlin-on-amd"]
    assert "not audited" in skipped["guard:torch-device-rocm"]
    assert len(skipped) == quiet.hidden_rules and loud.result == "match"


def test_marlin_in_the_lock_is_drift_on_an_amd_host(matrix: Matrix, frozen: Lockfile) -> None:
    facts = recorded("mi300x-rocm7.1")
    report = run(served(frozen, quantization="awq_marlin"), facts, matrix)
    assert report.result == "drift"
    hit = next(f for f in report.drift if f.code == "guard:marlin-on-amd")
    assert "awq_marlin" in hit.message and "vllm-project/vllm" in (hit.source or "")
    fine = run(served(frozen, quantization="awq:triton"), facts, matrix, verbose=True)
    assert fine.result == "match" and "guard:marlin-on-amd" not in codes(fine)


def test_audit_report_feeds_the_device_string_rule(matrix: Matrix, frozen: Lockfile,
                                                   tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text('import torch\nx = torch.zeros(1).to("hip")\n'
                                   'd = torch.device("rocm:0")\n')
    r = pin("audit", str(code), "--format", "json")
    assert r.returncode == 0, r.stderr  # a device string is "port": below --fail-on blocked
    report_path = tmp_path / "audit.json"
    report_path.write_text(r.stdout)
    assert audit_device_strings(report_path) == ["hip", "rocm:0"]
    facts = recorded("mi300x-rocm7.1")
    audited = run(frozen, facts, matrix, device_strings=audit_device_strings(report_path))
    assert audited.audited and audited.result == "drift"
    hit = next(f for f in audited.drift if f.code == "guard:torch-device-rocm")
    assert "device string hip, rocm in the code" in hit.message
    (code / "train.py").write_text('import torch\nd = torch.device("cuda")\n')
    clean = tmp_path / "clean.json"
    clean.write_text(pin("audit", str(code), "--format", "json").stdout)
    report = run(frozen, facts, matrix, device_strings=audit_device_strings(clean),
                 verbose=True)
    assert report.result == "match" and "guard:torch-device-rocm" not in codes(report)


@pytest.mark.parametrize("text", ["not json", "[]", '{"hits": [{"path": "a.py"}]}'])
def test_a_bad_audit_report_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "audit.json"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        audit_device_strings(path)
    assert err.value.exit_code == 2 and "--audit" in err.value.message
    with pytest.raises(UsageError, match="--audit"):
        audit_device_strings(tmp_path / "absent.json")


def test_locked_extensions_are_compared_with_the_host(matrix: Matrix, frozen: Lockfile,
                                                      host_copy: HostCopy) -> None:
    lock = served(frozen, extensions=("flash-attn==2.8.3:source@gfx942",))
    missing = run(lock, recorded("mi300x-rocm7.1"), matrix)
    assert {f.fact for f in missing.drift} == {"extensions.flash-attn"}
    assert next(f for f in missing.drift).status == "missing"
    host = host_copy("mi300x-rocm7.1")
    add_dist(host / SITE, "flash-attn", "2.8.2")
    changed = run(lock, recorded("", host), matrix)
    hit = next(f for f in changed.drift if f.fact == "extensions.flash-attn")
    assert (hit.status, hit.expected, hit.actual) == ("mismatch", "2.8.3", "2.8.2")


def test_extension_built_without_the_host_target_is_drift(matrix: Matrix, frozen: Lockfile,
                                                          host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    add_dist(host / SITE, "flash-attn", "2.8.3")
    facts = recorded("", host)
    wrong = served(frozen, extensions=("flash-attn==2.8.3:source@gfx950",))
    report = run(wrong, facts, matrix)
    hit = next(f for f in report.drift if f.code == "extension-without-gpu-target")
    assert (hit.expected, hit.actual) == ("gfx942", "gfx950")
    right = served(frozen, extensions=("flash-attn==2.8.3:source@gfx942",))
    assert run(right, facts, matrix).result == "match"


def test_freeze_records_the_extensions_the_host_shows(matrix: Matrix, frozen: Lockfile,
                                                      host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    add_dist(host / SITE, "flash-attn", "2.8.3", direct_url="file:///src/flash-attention")
    lock = served(frozen, extensions=("flash-attn==2.8.3:source@gfx942",))
    out, found, _ = freeze(lock, recorded("", host), matrix, host_label="copy")
    assert found == [] and out.extensions is not None
    (ext,) = out.extensions
    assert (ext.name, ext.version, ext.build, ext.origin) == ("flash-attn", "2.8.3", "source",
                                                              "host")
    assert ext.targets == ["gfx942"] and "as recorded before" in (ext.reason or "")
    # The recorded host shows none of the known extensions: nothing is invented.
    plain, _, _ = freeze(frozen, recorded("mi300x-rocm7.1"), matrix, host_label="mi300x")
    assert plain.extensions is None


def test_verify_cli_audit_and_verbose(matrix: Matrix, frozen: Lockfile, tmp_path: Path) -> None:
    lock_path = tmp_path / "pin.lock"
    write_lock(frozen, lock_path)
    host = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    r = pin("verify", str(lock_path), *host)
    assert r.returncode == 0, r.stderr
    assert "guard rule(s) that do not apply here hidden; -v lists them" in r.stdout
    assert "marlin-on-amd" not in r.stdout
    v = pin("verify", str(lock_path), *host, "-v")
    assert v.returncode == 0 and "Guard marlin-on-amd not evaluated" in v.stdout
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps({"hits": [{"path": "a.py", "line": 1, "column": 1,
                                           "text": "'rocm' as a device"}], "unparsed": [],
                                 "source": "x"}))
    a = pin("verify", str(lock_path), *host, "--audit", str(audit), "--format", "json")
    assert a.returncode == 6
    data = json_result(a)
    assert data["audited"] is True
    assert any(f["code"] == "guard:torch-device-rocm" for f in data["findings"])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    b = pin("verify", str(lock_path), *host, "--audit", str(bad))
    assert b.returncode == 2 and "--audit" in b.stderr
