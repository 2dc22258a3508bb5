"""``--report-to URL`` on pin verify, audit and cost, and ``pin lock push`` / ``pull``,
against a fake pin service (tests/unit/remote/service.py): the exact bytes posted, the
lines printed, and the exit code when the service refuses or cannot be reached (the local
result decides; a failed report is 13 only when the command itself succeeded).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pinning.lockfile.io import read_lock
from tests.support.cli import json_result, pin
from tests.support.hosts import HostCopy
from tests.support.paths import DATA, HOSTS, ROOT
from tests.unit.remote.service import GOOD, FakeService, closed_port

HOST = HOSTS / "mi300x-rocm7.1"
PROBE = ["--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml")]





def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIN_")}
    return env | extra


def _drifted(host_copy: HostCopy) -> list[str]:
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    return ["--root", str(host / "root"), "--replay", str(host / "commands.toml")]


# --- pin verify --report-to -----------------------------------------------------------------

def test_verify_posts_the_probe_snapshot_bytes_and_prints_the_verdict(
        service: FakeService, frozen_lock: Path, tmp_path: Path) -> None:
    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", service.url,
               "--report-host", "gpu01", "--report-group", "mi300x",
               env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"reported to {service.url}: match"
    snap = tmp_path / "host.json"
    assert pin("probe", *PROBE, "-o", str(snap)).returncode == 0
    (seen,) = service.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/hosts/gpu01/reports")
    assert seen.query == {"lock": [read_lock(frozen_lock).content_hash], "group": ["mi300x"]}
    assert seen.body == snap.read_bytes()
    assert seen.headers["authorization"] == f"Bearer {GOOD}"
    assert GOOD not in done.stdout + done.stderr


def test_a_node_only_check_asks_the_service_to_judge_the_node_only(
        service: FakeService, frozen_lock: Path) -> None:
    done = pin("verify", str(frozen_lock), *PROBE, "--node-only", "--report-to", service.url,
               "--report-host", "gpu01", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    (seen,) = service.seen
    assert seen.query == {"lock": [read_lock(frozen_lock).content_hash], "scope": ["node"]}


def test_the_services_own_verdict_and_lock_are_shown(service: FakeService,
                                                     frozen_lock: Path) -> None:
    service.verdict = ("drift", "pin: firmware.blocks[0] CP_MEC1=1!=CP_MEC1=2")
    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", service.url,
               "--report-host", "gpu01", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr  # the local check decides
    assert done.stdout.splitlines()[-1] == (
        f"reported to {service.url}: drift (pin: firmware.blocks[0] CP_MEC1=1!=CP_MEC1=2)")


def test_a_refused_report_of_a_matching_host_is_exit_13(service: FakeService,
                                                        frozen_lock: Path) -> None:
    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", service.url,
               "--report-host", "gpu01", env=_env())
    assert done.returncode == 13, done.stderr
    assert f"{service.url} refused POST /api/v1/hosts/gpu01/reports: HTTP 401" in done.stderr
    assert "Create one with pin serve token create." in done.stderr
    assert "reported to" not in done.stdout


def test_drift_wins_over_a_failed_report(service: FakeService, frozen_lock: Path,
                                         host_copy: HostCopy) -> None:
    done = pin("verify", str(frozen_lock), *_drifted(host_copy), "--report-to",
               f"http://127.0.0.1:{closed_port()}", "--report-host", "gpu01",
               env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 6, done.stderr
    assert "Connection refused" in done.stderr and "has drifted" in done.stderr


def test_a_matching_host_whose_service_is_down_is_exit_13(frozen_lock: Path) -> None:
    port = closed_port()
    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", f"http://127.0.0.1:{port}",
               "--report-host", "gpu01", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 13
    assert (f"Cannot reach the pin service at http://127.0.0.1:{port} (POST "
            "/api/v1/hosts/gpu01/reports): Connection refused.") in done.stderr


def test_json_keeps_the_report_and_puts_the_verdict_on_stderr(service: FakeService,
                                                              frozen_lock: Path) -> None:
    import jsonschema

    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", service.url,
               "--report-host", "gpu01", "--format", "json", env=_env(PIN_TOKEN=GOOD))
    result = json_result(done)
    schema = json.loads((ROOT / "schemas" / "verify-report.schema.json").read_text())
    jsonschema.validate(result, schema)
    assert f"reported to {service.url}: match" in done.stderr


def test_npd_output_and_exit_ignore_the_report(frozen_lock: Path) -> None:
    done = pin("verify", str(frozen_lock), *PROBE, "--format", "npd", "--report-to",
               f"http://127.0.0.1:{closed_port()}", "--report-host", "gpu01",
               env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0 and "Connection refused" in done.stderr


@pytest.mark.parametrize(("args", "problem"), [
    (["--report-host", "gpu01"], "give --report-to URL too"),
    (["--report-to", "http://127.0.0.1:9", "--host", str(HOST / "none.json")],
     "--report-host NAME"),
    (["--report-to", "http://127.0.0.1:9", *PROBE], "etc/hostname"),
    (["--report-to", "http://127.0.0.1:9", "--report-host", "a b", *PROBE], "--report-host"),
    (["--report-to", "ftp://x", "--report-host", "gpu01", *PROBE], "not a pin service URL"),
])
def test_report_flags_are_checked_before_the_probe(frozen_lock: Path, args: list[str],
                                                   problem: str) -> None:
    done = pin("verify", str(frozen_lock), *args, env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 2 and problem in done.stderr, done.stderr


def test_a_token_file_others_can_read_is_warned_about(service: FakeService,
                                                      frozen_lock: Path,
                                                      tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(GOOD + "\n")
    token.chmod(0o644)
    done = pin("verify", str(frozen_lock), *PROBE, "--report-to", service.url,
               "--report-host", "gpu01", "--token-file", str(token), env=_env())
    assert done.returncode == 0, done.stderr
    assert f"pin: warning: token file {token} is accessible by others (mode 0644)" \
        in done.stderr
    assert GOOD not in done.stdout + done.stderr


# --- pin lock push / pull -------------------------------------------------------------------

def test_push_prints_the_hash_and_assigns(service: FakeService, frozen_lock: Path) -> None:
    digest = read_lock(frozen_lock).content_hash
    done = pin("lock", "push", str(frozen_lock), "--to", service.url, "--assign-host",
               "gpu01", "--assign-group", "mi300x", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    assert done.stdout == digest + "\n"
    assert service.seen[0].body == frozen_lock.read_bytes()
    assert [(s.method, s.path) for s in service.seen[1:]] == [
        ("PUT", "/api/v1/assignments/hosts/gpu01"), ("PUT", "/api/v1/assignments/groups/mi300x")]
    assert "(stored)" in done.stderr
    done = pin("lock", "push", str(frozen_lock), "--to", service.url, "--format", "json",
               env=_env(PIN_TOKEN=GOOD))
    assert json_result(done)["content_hash"] == digest and not json_result(done)["created"]


def test_push_without_a_token_or_service_is_exit_13(service: FakeService,
                                                     frozen_lock: Path) -> None:
    done = pin("lock", "push", str(frozen_lock), "--to", service.url, env=_env())
    assert done.returncode == 13 and "HTTP 401" in done.stderr
    done = pin("lock", "push", str(frozen_lock), "--to", f"http://127.0.0.1:{closed_port()}",
               "--format", "json", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 13 and json.loads(done.stdout)["error"]["kind"] == "ServiceError"
    before = len(service.seen)
    done = pin("lock", "push", str(DATA / "none.lock"), "--to", service.url, env=_env())
    assert done.returncode == 5 and len(service.seen) == before  # nothing sent


def test_pull_writes_the_exact_bytes(service: FakeService, frozen_lock: Path,
                                     tmp_path: Path) -> None:
    digest = read_lock(frozen_lock).content_hash
    service.locks[digest] = frozen_lock.read_bytes()
    out = tmp_path / "got.lock"
    for ref in (digest, digest[7:19], "pin_" + digest[7:19]):
        out.unlink(missing_ok=True)
        done = pin("lock", "pull", ref, "--from", service.url, "-o", str(out), env=_env())
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == frozen_lock.read_bytes()
    done = pin("lock", "pull", digest, "--from", service.url, "-o", "-", env=_env())
    assert done.stdout == frozen_lock.read_text()


def test_pull_refuses_a_lock_that_is_not_the_one_asked_for(
        service: FakeService, frozen_lock: Path, tmp_path: Path) -> None:
    other = ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock"
    service.pulled = other.read_bytes()
    digest = read_lock(frozen_lock).content_hash
    out = tmp_path / "got.lock"
    out.write_text("keep me\n")
    done = pin("lock", "pull", digest, "--from", service.url, "-o", str(out), env=_env())
    assert done.returncode == 13
    assert (f"has the content hash {read_lock(other).content_hash}, not the {digest} asked "
            "for; nothing was written.") in done.stderr
    assert out.read_text() == "keep me\n"
    service.pulled = b"not a lock"
    done = pin("lock", "pull", digest, "--from", service.url, "-o", str(out), env=_env())
    assert done.returncode == 13 and "not valid TOML" in done.stderr
    service.pulled = None
    done = pin("lock", "pull", digest, "--from", service.url, "-o", str(out), env=_env())
    assert done.returncode == 13 and "HTTP 404 not-found: No stored lock" in done.stderr
    done = pin("lock", "pull", "abc", "--from", service.url, "-o", str(out), env=_env())
    assert done.returncode == 2


# --- pin audit / cost --report-to -----------------------------------------------------------

def test_audit_posts_the_json_bill_it_writes(service: FakeService, frozen_lock: Path,
                                             tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text("numpy==2.1.0\n")
    bill = tmp_path / "audit.json"
    done = pin("audit", str(project), "-o", str(bill), "--format", "json", "--report-to",
               service.url, "--report-lock", str(frozen_lock), "--no-hipify-perl",
               env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    (seen,) = service.seen
    assert (seen.path, seen.body) == ("/api/v1/audits", bill.read_bytes())
    assert seen.query == {"lock": [read_lock(frozen_lock).content_hash]}
    assert f"reported to {service.url}: audit #1" in done.stderr
    done = pin("audit", str(project), "--report-lock", str(frozen_lock), env=_env())
    assert done.returncode == 2 and "--report-to" in done.stderr


def test_cost_posts_the_report_it_writes_and_a_failure_is_13(service: FakeService,
                                                             tmp_path: Path) -> None:
    args = [str(DATA / "acceptance" / "judged-c1.json"), "--gpu", "H100", "--unbound-ok",
            "--prices",
            str(ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml")]
    out = tmp_path / "cost.json"
    done = pin("cost", *args, "-o", str(out), "--report-to", service.url,
               "--report-lock", "sha256:" + "e" * 64, env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    (seen,) = service.seen
    assert (seen.path, seen.body) == ("/api/v1/cost-verdicts", out.read_bytes())
    assert seen.query == {"lock": ["sha256:" + "e" * 64]}
    assert f"reported to {service.url}: cost verdict #1" in done.stderr
    done = pin("cost", *args, "--report-to", service.url, env=_env())
    assert done.returncode == 13 and "HTTP 401" in done.stderr


# --- names, token sources and hints (the messages name where things came from) ------------

def test_names_follow_the_services_rule(service: FakeService, frozen_lock: Path) -> None:
    for bad in ("..", "a" * 254, "a/b"):
        done = pin("lock", "push", str(frozen_lock), "--to", service.url, "--assign-host", bad,
                   env=_env(PIN_TOKEN=GOOD))
        assert done.returncode == 2, done.stderr
        assert "use 1-253 letters, digits, '.', '_' or '-', not dots alone" in done.stderr
    assert service.seen == []  # nothing sent
    done = pin("lock", "push", str(frozen_lock), "--to", service.url, "--assign-host", "a" * 253,
               "--assign-group", "n-1.example", env=_env(PIN_TOKEN=GOOD))
    assert done.returncode == 0, done.stderr
    assert service.seen[-1].path == "/api/v1/assignments/groups/n-1.example"


def test_a_refused_token_and_a_timeout_name_the_configuration(service: FakeService,
                                                               frozen_lock: Path,
                                                               tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("pin_revoked\n")
    token.chmod(0o600)
    conf = tmp_path / "pin.toml"
    conf.write_text(f'[report]\ntoken-file = "{token}"\ntimeout-s = 0.5\n')
    done = pin("lock", "push", str(frozen_lock), "--to", service.url,
               env=_env(PIN_CONFIG=str(conf)))
    assert done.returncode == 13, done.stderr
    assert (f"The token sent (from [report] token-file {token} in {conf} ($PIN_CONFIG)) is "
            "not one the service knows") in " ".join(done.stderr.split())
    assert "pin_revoked" not in done.stderr
    done = pin("lock", "push", str(frozen_lock), "--to", service.url, "--token-file", str(token),
               env=_env())
    assert f"(from --token-file {token})" in " ".join(done.stderr.split())
    token.write_text(f"{GOOD}\n")
    service.delay_s = 2.0
    done = pin("lock", "push", str(frozen_lock), "--to", service.url,
               env=_env(PIN_CONFIG=str(conf)))
    assert done.returncode == 13, done.stderr
    assert (f"raise [report] timeout-s in {conf} ($PIN_CONFIG)."
            in " ".join(done.stderr.split()))
