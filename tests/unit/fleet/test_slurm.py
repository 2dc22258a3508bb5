"""Slurm prolog / health check / features: constraint parsing, lock selection, the drain
and resume policy (scontrol argv through a recording runner), timeouts, broken setups.
The host facts are those of the recorded MI300X host; the lock is frozen from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.errors import DriftError, LockfileError, PinError, ProbeError, UsageError
from pinning.fleet.config import ConfigError, FleetConfig, SlurmConfig
from pinning.fleet.slurm import (
    Deadline,
    Node,
    NodeState,
    NodeStateUnknown,
    ProbeTimeout,
    SlurmCommandError,
    bounded,
    drift_reason,
    error_reason,
    lock_feature,
    node_name,
    parse_node,
    pin_features,
    reason_lock,
    slurm_conf,
)
from pinning.fleet.slurm_checks import Check, Outcome, node_features, run_check
from pinning.fleet.slurm_locks import index_locks, select_locks, target_features
from pinning.lockfile.io import read_lock, write_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.models import HostFacts
from pinning.util.proc import CommandResult
from tests.support.hosts import HostCopy, recorded
from tests.support.locks import lock_for

A = "pin_0123456789ab"
B = "pin_ba9876543210"
# `scontrol -o show node` as Slurm 22.05.8 prints it (Debian bookworm), trimmed.
IDLE = ("NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE "
        "ThreadsPerCore=1 Partitions=debug BootTime=2026-12-01T09:21:22")
PIN_DRAINED = (IDLE.replace("State=IDLE", "State=IDLE+DRAIN")
               + f" Reason=pin: {A} firmware.blocks[0] 1!=2 (+1 more) [root@2026-12-01T21:18:32]")
ERROR_DRAINED = (IDLE.replace("State=IDLE", "State=IDLE+DRAIN")
                 + " Reason=pin: error: probe timed out after 30 s [root@2026-12-01T21:18:32]")
OTHER_DRAINED = (IDLE.replace("State=IDLE", "State=MIXED+DRAIN")
                 + " Reason=maintenance window [alice@2026-12-01T21:18:32]")
DOWN = IDLE.replace("State=IDLE", "State=DOWN+DRAIN") + " Reason=pin: x 1!=2 [root@2026]"


SHOW_FAILED = "slurm_load_node error: Socket timed out on send/recv operation"


class Recorder:
    """A Runner that records every argv and its timeout: ``show`` answers ``scontrol -o show
    node`` (the first ``show_fails`` times it fails as a flaky slurmctld makes it), other
    commands exit ``rc`` (124: timed out, as SystemRunner reports it); ``missing``: scontrol
    is not installed."""

    def __init__(self, show: str = IDLE, rc: int = 0, missing: bool = False,
                 show_fails: int = 0) -> None:
        self.show, self.rc, self.missing, self.show_fails = show, rc, missing, show_fails
        self.calls: list[list[str]] = []
        self.timeouts: list[float] = []

    def run(self, argv: Sequence[str], *, timeout: float = 20.0) -> CommandResult | None:
        self.calls.append(list(argv))
        self.timeouts.append(timeout)
        assert timeout <= 10
        if self.missing:
            return None
        if list(argv[1:4]) == ["-o", "--", "show"]:
            if self.show_fails > 0:
                self.show_fails -= 1
                return CommandResult(tuple(argv), 1, "", SHOW_FAILED + "\n")
            return CommandResult(tuple(argv), 0, self.show + "\n")
        if self.rc == 124:
            return CommandResult(tuple(argv), 124, "", f"timed out after {timeout:g} s")
        return CommandResult(tuple(argv), self.rc, "", "slurm_update error: Access denied")

    @property
    def updates(self) -> list[list[str]]:
        return [c for c in self.calls if c[1] == "update"]


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    from pinning.verify.freeze import freeze

    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    return freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="mi300x")[0]


@pytest.fixture(scope="module")
def facts() -> HostFacts:
    return recorded("mi300x-rocm7.1")


@pytest.fixture
def drifted(host_copy: HostCopy) -> HostFacts:
    host = host_copy("mi300x-rocm7.1")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    return recorded("mi300x-rocm7.1", root=host)


@pytest.fixture
def locks(tmp_path: Path, frozen: Lockfile) -> Path:
    folder = tmp_path / "locks"
    folder.mkdir()
    write_lock(frozen, folder / "site.lock")
    return folder


# --- constraints and features -------------------------------------------------------------

@pytest.mark.parametrize(("expr", "want"), [
    ("", []),
    (A, [A]),
    (f"{A}&gpu", [A]),
    (f"gpu,{A}", [A]),
    (f"[{A}*2&rack1]", [A]),
    (f"[(rack1|rack2)*1&({A})*2]", [A]),
    (f"{A}|{B}", [A, B]),
    (f"{A}&{A}", [A]),
    (f"!{A}&{B}", [B]),
    ("pin_gfx942&pin_0123456789AB", []),  # not a lock feature; hex is lower-case
    ("pin_0123456789abc pin_0123456789a", []),  # 13 and 11 digits
    ("xpin_0123456789ab", []),
])
def test_pin_features_are_found_in_constraint_expressions(expr: str, want: list[str]) -> None:
    assert pin_features(expr) == want


@given(st.text(max_size=300))
def test_any_constraint_text_gives_lock_features_only(text: str) -> None:
    for feat in pin_features(text):
        assert feat.startswith("pin_") and len(feat) == 16
        assert all(c in "0123456789abcdef" for c in feat[4:])


def test_a_lock_feature_is_the_first_twelve_hex_digits() -> None:
    assert lock_feature("sha256:" + "0123456789abcdef" * 4) == A


def test_target_features_name_gfx_targets_and_compute_capabilities(facts: HostFacts) -> None:
    assert target_features(facts) == ["pin_gfx942"]
    assert target_features(recorded("h200-cuda13")) == ["pin_sm90"]
    assert target_features(recorded("no-gpu")) == []


# --- lock selection -------------------------------------------------------------------------

def _index(known: dict[str, Path]) -> tuple[Callable[[Path], dict[str, Path]], list[Path]]:
    seen: list[Path] = []

    def index(folder: Path) -> dict[str, Path]:
        seen.append(folder)
        return known
    return index, seen


def test_the_job_feature_selects_its_lock(tmp_path: Path) -> None:
    fleet = FleetConfig(locks=tmp_path, default_lock=tmp_path / "d.lock")
    index, seen = _index({A: tmp_path / "a.lock", B: tmp_path / "b.lock"})
    sel = select_locks(f"{B}&gpu", fleet, index)
    assert (sel.source, sel.features, sel.locks) == ("job", (B,), (tmp_path / "b.lock",))
    assert seen == [tmp_path]
    either = select_locks(f"{A}|{B}", fleet, index)
    assert either.locks == (tmp_path / "a.lock", tmp_path / "b.lock")
    # One unknown feature beside a known one is left out.
    assert select_locks(f"{A}|pin_ffffffffffff", fleet, index).locks == (tmp_path / "a.lock",)


def test_without_a_job_feature_the_default_lock_or_nothing(tmp_path: Path) -> None:
    index, seen = _index({})
    sel = select_locks("gpu&rack1", FleetConfig(default_lock=tmp_path / "d.lock"), index)
    assert (sel.source, sel.locks) == ("default", (tmp_path / "d.lock",))
    assert select_locks("", FleetConfig(), index).source == "none"
    assert seen == []  # the folder is read only for a job that asks


def test_a_feature_this_node_has_no_lock_for_is_ignored(tmp_path: Path) -> None:
    index, _ = _index({A: tmp_path / "a.lock"})
    default = tmp_path / "d.lock"
    # Any user can put any pin_ feature in a job's constraint: it must not drain the node.
    sel = select_locks(f"{B}|gpu", FleetConfig(locks=tmp_path, default_lock=default), index)
    assert (sel.source, sel.locks, sel.features, sel.ignored) == (
        "default", (default,), (), (B,))
    assert sel.note == (f"the job names {B}, which this node has no lock for (not in [fleet] "
                        f"locks, {tmp_path}); checking [fleet] default-lock {default} instead")
    none = select_locks(B, FleetConfig(locks=tmp_path), index)
    assert (none.source, none.locks, none.ignored) == ("none", (), (B,))
    assert none.note is not None and none.note.endswith(
        "checking nothing ([fleet] default-lock is not set) instead")
    unset = select_locks(A, FleetConfig(default_lock=default), index)
    assert unset.source == "default" and unset.note is not None
    assert "([fleet] locks is not set)" in unset.note
    mixed = select_locks(f"{A}|{B}", FleetConfig(locks=tmp_path), index)
    assert (mixed.source, mixed.features, mixed.ignored) == ("job", (A,), (B,))
    assert mixed.note is not None and mixed.note.endswith(f"checking {A} instead")
    assert select_locks(A, FleetConfig(locks=tmp_path), index).note is None


def test_the_locks_folder_is_indexed_by_feature(locks: Path, frozen: Lockfile) -> None:
    (locks / "copy.lock").write_bytes((locks / "site.lock").read_bytes())
    (locks / "notes.txt").write_text("not a lock")
    assert index_locks(locks) == {lock_feature(frozen.content_hash): locks / "copy.lock"}
    (locks / "zz.lock").write_text("not toml [")
    with pytest.raises(LockfileError, match="zz.lock"):
        index_locks(locks)
    with pytest.raises(LockfileError, match="cannot be read"):
        index_locks(locks / "absent")


# --- names, reasons, bounds -----------------------------------------------------------------

def test_the_node_name_and_slurm_conf_precedence() -> None:
    env = {"SLURMD_NODENAME": "gpu07", "SLURM_CONF": "/run/slurm.conf"}
    assert node_name(SlurmConfig(node_name="gpu01"), env, "host.example") == "gpu01"
    assert node_name(SlurmConfig(), env, "host.example") == "gpu07"
    assert node_name(SlurmConfig(), {}, "host.example.org") == "host"
    with pytest.raises(UsageError):
        node_name(SlurmConfig(), {"SLURMD_NODENAME": "a b"}, "h")
    assert slurm_conf(SlurmConfig(slurm_conf=Path("/etc/x.conf")), env) == "/etc/x.conf"
    assert slurm_conf(SlurmConfig(), env) == "/run/slurm.conf"
    assert slurm_conf(SlurmConfig(), {}) == "/etc/slurm/slurm.conf"


def test_an_error_reason_is_kind_first_short_and_ascii() -> None:
    err = LockfileError("Lock /etc/pin/locks/é.lock:\tnot valid TOML " + "x" * 200 + "\nsecond")
    reason = error_reason(err)
    assert reason.startswith("pin: error: lock: Lock .../_.lock: not valid TOML")
    assert len(reason) == 128 and reason.endswith("~") and reason.isascii()
    assert "\n" not in reason and "second" not in reason
    assert error_reason(ProbeTimeout("probe timed out after 30 s")) == (
        "pin: error: probe timed out after 30 s")
    # The cause survives a long path in front of it (it used to be cut away).
    replay = ProbeError("/tmp/rev17/hosts/mi300x-rocm7.1/cmd-drift.toml: command[0]: cannot "
                        "read stdout file /tmp/rev17/hosts/mi300x-rocm7.1/out/~")
    assert error_reason(replay) == ("pin: error: probe: .../cmd-drift.toml: command[0]: "
                                    "cannot read stdout file .../~")
    assert error_reason(ConfigError("long", short="config [fleet] locks: bad")) == (
        "pin: error: config [fleet] locks: bad")
    assert error_reason(SlurmCommandError("scontrol not found: x.")).startswith(
        "pin: error: scontrol: ")


def test_a_drift_reason_names_the_lock_and_stays_bounded(drifted: HostFacts,
                                                         frozen: Lockfile,
                                                         matrix: Matrix) -> None:
    from pinning.fleet.slurm_locks import node_drift
    from pinning.verify.report import verify

    drift = node_drift(verify(frozen, drifted, matrix, lock_name="l", host_name="h"))
    assert drift_reason(A, drift) == f"pin: {A} firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"
    many = [f.model_copy(update={"fact": f"{f.fact}{n or ''}"}) for n in range(9) for f in drift]
    long = drift_reason(A, many, limit=60)
    assert long.startswith(f"pin: {A} firmware") and long.endswith(" (+8 more)")
    assert len(long) == 60 and "~" in long
    assert reason_lock(long) == A
    for other in ("pin: firmware.blocks[0] 1!=2", "pin: error: lock x", "maintenance", None,
                  f"pin: {A}x 1!=2"):
        assert reason_lock(other) is None


def test_bounded_returns_raises_or_times_out() -> None:
    assert bounded(lambda: 42, 5) == 42
    with pytest.raises(ProbeError, match="unreadable"):
        bounded(lambda: (_ for _ in ()).throw(ProbeError("unreadable")), 5)
    release = threading.Event()
    try:
        with pytest.raises(ProbeTimeout) as err:
            bounded(lambda: release.wait(30), 0.05)
        assert err.value.message == "probe timed out after 0.05 s"
        assert err.value.exit_code == 7
    finally:
        release.set()


# --- the node: state, drain, resume -------------------------------------------------------

def test_scontrol_node_lines_are_parsed() -> None:
    assert parse_node(IDLE) == NodeState("IDLE")
    pinned = parse_node(PIN_DRAINED)
    assert pinned == NodeState("IDLE+DRAIN", f"pin: {A} firmware.blocks[0] 1!=2 (+1 more)")
    assert pinned.pins and pinned.out_of_service
    other = parse_node(OTHER_DRAINED)
    assert other is not None and other.out_of_service and not other.pins
    assert parse_node("Node gpu01 not found") is None
    assert parse_node("") is None


def test_drain_writes_pins_reason_on_an_in_service_node() -> None:
    rec = Recorder(IDLE)
    assert Node(rec, "/usr/bin/scontrol", "gpu01").drain("pin: a 1!=2") == "drained"
    assert rec.calls == [
        ["/usr/bin/scontrol", "-o", "--", "show", "node", "gpu01"],
        ["/usr/bin/scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=pin: a 1!=2"],
    ]


@pytest.mark.parametrize(("show", "reason", "action"), [
    (PIN_DRAINED, f"pin: {A} firmware.blocks[0] 1!=2 (+1 more)", "already-drained"),
    (OTHER_DRAINED, "pin: a 1!=2", "left"),
    (DOWN, "pin: a 1!=2", "drained"),  # pin's own reason is refreshed
])
def test_drain_leaves_other_drains_alone(show: str, reason: str, action: str) -> None:
    rec = Recorder(show)
    assert Node(rec, "scontrol", "gpu01").drain(reason) == action
    assert bool(rec.updates) is (action == "drained")


@pytest.mark.parametrize("rec", [Recorder(OTHER_DRAINED, show_fails=1), Recorder("garbage"),
                                 Recorder(OTHER_DRAINED, rc=124, show_fails=1)])
def test_a_node_whose_state_cannot_be_read_is_neither_drained_nor_resumed(
        rec: Recorder) -> None:
    # It may be drained by someone else: pin must not overwrite that reason.
    with pytest.raises(NodeStateUnknown) as err:
        Node(rec, "scontrol", "gpu01").drain("pin: a 1!=2")
    assert err.value.exit_code == 2 and err.value.message.endswith("; not drained.")
    assert err.value.message.startswith("Could not read the state of node gpu01: ")
    want = SHOW_FAILED if rec.show != "garbage" else "showed no State="
    assert want in err.value.detail
    rec.show_fails = 1
    with pytest.raises(NodeStateUnknown, match="not resumed"):
        Node(rec, "scontrol", "gpu01").resume(A)
    assert rec.updates == []


def test_a_failing_or_missing_scontrol_is_a_setup_error() -> None:
    with pytest.raises(SlurmCommandError, match="Access denied") as err:
        Node(Recorder(IDLE, rc=1), "scontrol", "gpu01").drain("pin: a 1!=2")
    assert err.value.exit_code == 2
    with pytest.raises(SlurmCommandError, match="not found"):
        Node(Recorder(missing=True), "scontrol", "gpu01").drain("pin: a 1!=2")


def test_resume_only_what_pin_drained_for_this_lock_or_an_error() -> None:
    for show in (PIN_DRAINED, ERROR_DRAINED):
        rec = Recorder(show)
        assert Node(rec, "scontrol", "gpu01").resume(A) == "resumed"
        assert rec.updates == [["scontrol", "update", "NodeName=gpu01", "State=RESUME"]]
    # pin's drain for another lock (a job's, from the prolog) is left for a person.
    other_lock = Recorder(PIN_DRAINED)
    assert Node(other_lock, "scontrol", "gpu01").resume(B) == "kept"
    assert other_lock.updates == []
    for show in (IDLE, OTHER_DRAINED, DOWN):
        other = Recorder(show)
        assert Node(other, "scontrol", "gpu01").resume(A) == "none"
        assert other.updates == []


# --- whole runs -----------------------------------------------------------------------------

def _run(check: Check, facts: HostFacts, matrix: Matrix, fleet: FleetConfig, rec: Recorder,
         env: dict[str, str] | None = None,
         slurm: SlurmConfig | None = None) -> tuple[Outcome, PinError | None]:
    return run_check(check, slurm or SlurmConfig(), fleet,
                     {"SLURMD_NODENAME": "gpu01", **(env or {})}, runner=rec,
                     probe=lambda _path, _model: facts, matrix=matrix, hostname="h")


def test_prolog_on_a_matching_node_touches_nothing(locks: Path, frozen: Lockfile,
                                                   facts: HostFacts, matrix: Matrix) -> None:
    rec = Recorder()
    feat = lock_feature(frozen.content_hash)
    out, err = _run("prolog", facts, matrix, FleetConfig(locks=locks), rec,
                    {"SLURM_JOB_CONSTRAINTS": f"{feat}&gpu"})
    assert err is None and rec.calls == []
    assert (out.result, out.selection, out.features) == ("match", "job", (feat,))
    assert out.matched == str(locks / "site.lock") and out.node == "gpu01"


def test_prolog_on_drift_drains_with_pins_reason_and_exits_6(locks: Path, drifted: HostFacts,
                                                             matrix: Matrix) -> None:
    rec = Recorder()
    out, err = _run("prolog", drifted, matrix, FleetConfig(default_lock=locks / "site.lock"), rec)
    feat = lock_feature(read_lock(locks / "site.lock").content_hash)
    reason = f"pin: {feat} firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"
    assert isinstance(err, DriftError) and err.exit_code == 6
    assert (out.result, out.selection, out.reason, out.action) == (
        "drift", "default", reason, "drained")
    assert rec.updates == [["scontrol", "update", "NodeName=gpu01", "State=DRAIN",
                            f"Reason={reason}"]]


def test_behaviour_variables_are_the_jobs_not_the_nodes(tmp_path: Path, frozen: Lockfile,
                                                        facts: HostFacts,
                                                        matrix: Matrix) -> None:
    from pinning.lockfile.io import amend
    from pinning.verify.report import verify

    lock = amend(frozen, environment={"HSA_ENABLE_SDMA": "0"})
    assert verify(lock, facts, matrix, lock_name="l", host_name="h").result == "drift"
    write_lock(lock, tmp_path / "env.lock")
    out, err = _run("prolog", facts, matrix, FleetConfig(default_lock=tmp_path / "env.lock"),
                    Recorder())
    assert err is None and out.result == "match"


def test_healthcheck_drains_by_itself_and_exits_0(locks: Path, drifted: HostFacts,
                                                  matrix: Matrix) -> None:
    rec = Recorder()
    out, err = _run("healthcheck", drifted, matrix,
                    FleetConfig(default_lock=locks / "site.lock"), rec,
                    {"SLURM_JOB_CONSTRAINTS": "pin_ffffffffffff"})  # not read by the health check
    assert err is None and out.result == "drift" and out.action == "drained"


@pytest.mark.parametrize(("reason", "resume", "action"), [
    ("pin: {feat} firmware.blocks[0] 1!=2", True, "resumed"),
    ("pin: error: probe timed out after 30 s", True, "resumed"),
    ("pin: {feat} firmware.blocks[0] 1!=2", False, "none"),
    (f"pin: {B} firmware.blocks[0] 1!=2", True, "kept"),  # another lock's drain
    ("pin: firmware.blocks[0] 1!=2", True, "kept"),  # no lock named: not provably this one
    ("maintenance window", True, "none"),
])
def test_healthcheck_on_a_match_resumes_only_its_own_lock(
        locks: Path, frozen: Lockfile, facts: HostFacts, matrix: Matrix, reason: str,
        resume: bool, action: str) -> None:
    show = (IDLE.replace("State=IDLE", "State=IDLE+DRAIN") + " Reason="
            + reason.format(feat=lock_feature(frozen.content_hash)) + " [root@2026-12-01]")
    rec = Recorder(show)
    out, err = _run("healthcheck", facts, matrix, FleetConfig(default_lock=locks / "site.lock"),
                    rec, slurm=SlurmConfig(resume=resume))
    assert err is None and out.result == "match" and out.action == action
    assert bool(rec.updates) is (action == "resumed")
    if not resume:
        assert rec.calls == []


def test_a_failing_resume_is_reported_and_exits_2(locks: Path, frozen: Lockfile,
                                                  facts: HostFacts, matrix: Matrix) -> None:
    show = PIN_DRAINED.replace(A, lock_feature(frozen.content_hash))
    out, err = _run("healthcheck", facts, matrix, FleetConfig(default_lock=locks / "site.lock"),
                    Recorder(show, rc=1))
    assert isinstance(err, SlurmCommandError) and err.exit_code == 2
    assert out.action == "resume-failed" and "Access denied" in (out.slurm_error or "")


def test_a_prolog_that_must_not_drain_calls_no_slurm_command(locks: Path, drifted: HostFacts,
                                                             matrix: Matrix) -> None:
    quiet = SlurmConfig(drain_in_prolog=False)
    rec = Recorder()
    out, err = _run("prolog", drifted, matrix, FleetConfig(default_lock=locks / "site.lock"),
                    rec, slurm=quiet)
    assert isinstance(err, DriftError) and out.result == "drift" and out.action == "none"
    (locks / "zz.lock").write_text("not toml [")
    out, err = _run("prolog", drifted, matrix, FleetConfig(locks=locks), rec,
                    {"SLURM_JOB_CONSTRAINTS": A}, slurm=quiet)
    assert isinstance(err, LockfileError) and out.result == "error" and out.action == "none"
    assert rec.calls == []
    # The health check still drains: its exit code is ignored by Slurm.
    out, _ = _run("healthcheck", drifted, matrix, FleetConfig(default_lock=locks / "site.lock"),
                  rec, slurm=quiet)
    assert out.action == "drained"


def test_nothing_to_check_without_a_lock(facts: HostFacts, matrix: Matrix) -> None:
    checks: tuple[Check, ...] = ("prolog", "healthcheck")
    for check in checks:
        rec = Recorder()
        out, err = _run(check, facts, matrix, FleetConfig(), rec)
        assert err is None and out.result == "nothing-to-check" and rec.calls == []


def test_a_broken_setup_drains_with_the_error(locks: Path, facts: HostFacts,
                                              matrix: Matrix) -> None:
    rec = Recorder()
    (locks / "zz.lock").write_text("not toml [")
    out, err = _run("prolog", facts, matrix, FleetConfig(locks=locks), rec,
                    {"SLURM_JOB_CONSTRAINTS": A})
    assert isinstance(err, LockfileError)
    assert out.result == "error" and out.action == "drained"
    assert out.reason is not None and out.reason.startswith("pin: error: lock: ")
    assert "zz.lock" in out.reason
    assert rec.updates == [["scontrol", "update", "NodeName=gpu01", "State=DRAIN",
                            f"Reason={out.reason}"]]


def test_a_probe_past_its_bound_drains_and_exits_7(locks: Path, matrix: Matrix) -> None:
    release = threading.Event()
    rec = Recorder()
    try:
        out, err = run_check("prolog", SlurmConfig(node_name="gpu01"),
                             FleetConfig(default_lock=locks / "site.lock", timeout_s=0.05),
                             {}, runner=rec, matrix=matrix, hostname="h",
                             probe=lambda _p, _m: release.wait(30))  # type: ignore[arg-type,return-value]
    finally:
        release.set()
    assert isinstance(err, ProbeTimeout) and err.exit_code == 7
    assert out.reason == "pin: error: probe timed out after 0.05 s" and out.action == "drained"


@pytest.mark.parametrize(("rec", "action", "text"), [
    (Recorder(rc=1), "drain-failed", "could not drain: "),
    # Without scontrol the node's state cannot be read either: nothing is tried.
    (Recorder(missing=True), "state-unknown", "could not read the node's state: "),
])
def test_a_failing_scontrol_on_drift_is_reported(locks: Path, drifted: HostFacts,
                                                 matrix: Matrix, rec: Recorder, action: str,
                                                 text: str) -> None:
    from pinning.cli.slurm import outcome_text

    out, err = _run("healthcheck", drifted, matrix,
                    FleetConfig(default_lock=locks / "site.lock"), rec)
    assert isinstance(err, SlurmCommandError) and err.exit_code == 2
    assert out.result == "drift" and out.action == action
    why = "Access denied" if not rec.missing else "scontrol not found"
    assert why in (out.slurm_error or "")
    assert f"{text}{out.slurm_error}" in outcome_text(out)
    out, err = _run("prolog", drifted, matrix, FleetConfig(default_lock=locks / "site.lock"), rec)
    assert isinstance(err, DriftError) and out.action == action


def test_a_failing_scontrol_on_a_setup_error_is_reported(locks: Path, facts: HostFacts,
                                                         matrix: Matrix) -> None:
    (locks / "zz.lock").write_text("not toml [")
    out, err = _run("prolog", facts, matrix, FleetConfig(locks=locks), Recorder(rc=1),
                    {"SLURM_JOB_CONSTRAINTS": A})
    assert isinstance(err, LockfileError)
    assert out.result == "error" and out.action == "drain-failed"
    assert "Access denied" in (out.slurm_error or "")


ADMIN_DRAINED = (IDLE.replace("State=IDLE", "State=IDLE+DRAIN")
                 + " Reason=admin: bad DIMM [root@2026-12-01T21:18:32]")


def test_a_failed_state_read_never_overwrites_or_resumes_someone_elses_drain(
        locks: Path, frozen: Lockfile, facts: HostFacts, drifted: HostFacts,
        matrix: Matrix) -> None:
    from pinning.cli.slurm import outcome_text

    fleet = FleetConfig(default_lock=locks / "site.lock")
    rec = Recorder(ADMIN_DRAINED, show_fails=1)
    out, err = _run("healthcheck", drifted, matrix, fleet, rec)
    assert isinstance(err, NodeStateUnknown) and err.exit_code == 2
    assert (out.result, out.action) == ("drift", "state-unknown")
    assert out.slurm_error == (f"Slurm refused: `scontrol -o -- show node gpu01` exited 1: "
                               f"{SHOW_FAILED}")
    assert outcome_text(out).endswith(f"could not read the node's state: {out.slurm_error}; "
                                      "not drained")
    assert rec.updates == []
    # The prolog keeps its drift exit (Slurm drains with its own "Prolog error").
    rec.show_fails = 1
    out, err = _run("prolog", drifted, matrix, fleet, rec)
    assert isinstance(err, DriftError) and out.action == "state-unknown" and rec.updates == []
    # Matching again, with the state unreadable: not resumed, exit 2.
    rec.show_fails = 1
    out, err = _run("healthcheck", facts, matrix, fleet, rec)
    assert isinstance(err, NodeStateUnknown) and out.result == "match"
    assert out.action == "state-unknown" and outcome_text(out).endswith("; not resumed")
    # Readable: someone else's drain is left, never resumed.
    out, err = _run("healthcheck", facts, matrix, fleet, rec)
    assert err is None and out.action == "none" and rec.updates == []


def test_a_jobs_unknown_feature_falls_back_to_the_default_lock(
        locks: Path, frozen: Lockfile, facts: HostFacts, drifted: HostFacts,
        matrix: Matrix) -> None:
    env = {"SLURM_JOB_CONSTRAINTS": "pin_aaaaaaaaaaaa|gpu"}
    fleet = FleetConfig(locks=locks, default_lock=locks / "site.lock")
    rec = Recorder()
    out, err = _run("prolog", facts, matrix, fleet, rec, env)
    assert err is None and (out.result, out.selection, out.ignored) == (
        "match", "default", ("pin_aaaaaaaaaaaa",))
    assert out.note is not None and "pin_aaaaaaaaaaaa" in out.note and rec.calls == []
    # The default lock is what every node of this configuration must match anyway.
    out, err = _run("prolog", drifted, matrix, fleet, rec, env)
    feat = lock_feature(frozen.content_hash)
    assert isinstance(err, DriftError) and out.reason is not None
    assert out.reason.startswith(f"pin: {feat} ") and out.action == "drained"
    # No default lock: nothing is checked, the node is left alone.
    rec = Recorder()
    out, err = _run("prolog", drifted, matrix, FleetConfig(locks=locks), rec, env)
    assert err is None and out.result == "nothing-to-check" and rec.calls == []


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_scontrol_call_gets_only_the_time_left() -> None:
    clock = Clock()
    deadline = Deadline(50, clock=clock)
    assert deadline.left() == 50
    rec = Recorder()
    node = Node(rec, "scontrol", "gpu01", deadline)
    clock.now += 47
    assert node.drain("pin: a 1!=2") == "drained"
    assert rec.timeouts == [3, 3]
    clock.now += 2.8
    with pytest.raises(SlurmCommandError, match=r"no time left .*deadline-s, 50 s"):
        Node(rec, "scontrol", "gpu01", deadline).drain("pin: a 1!=2")
    assert len(rec.calls) == 2
    rec = Recorder()
    Node(rec, "scontrol", "gpu01", Deadline(50, clock=clock)).drain("pin: a 1!=2")
    assert rec.timeouts == [10, 10]  # never above scontrol's own bound


def test_a_drain_that_timed_out_is_not_tried_again(locks: Path, drifted: HostFacts,
                                                   matrix: Matrix) -> None:
    rec = Recorder(rc=124)
    node = Node(rec, "scontrol", "gpu01")
    with pytest.raises(SlurmCommandError, match=r"`scontrol update` timed out after 10 s"):
        node.drain("pin: a 1!=2")
    with pytest.raises(SlurmCommandError, match="earlier drain in this run failed"):
        node.drain("pin: error: something else")
    assert len(rec.updates) == 1
    rec = Recorder(rc=124)
    out, err = _run("healthcheck", drifted, matrix,
                    FleetConfig(default_lock=locks / "site.lock"), rec)
    assert isinstance(err, SlurmCommandError) and out.action == "drain-failed"
    assert "timed out" in (out.slurm_error or "") and len(rec.updates) == 1


def test_the_whole_run_stays_within_its_deadline(locks: Path, matrix: Matrix) -> None:
    release = threading.Event()
    rec = Recorder()
    try:
        # [fleet] timeout-s allows 30 s; the run's deadline has 0.2 s: the probe gets that,
        # and no scontrol call is started after it.
        out, err = run_check("healthcheck", SlurmConfig(node_name="gpu01"),
                             FleetConfig(default_lock=locks / "site.lock"), {}, runner=rec,
                             matrix=matrix, hostname="h", deadline=Deadline(0.2),
                             probe=lambda _p, _m: release.wait(30))  # type: ignore[arg-type,return-value]
    finally:
        release.set()
    assert isinstance(err, ProbeTimeout) and err.message.startswith("probe timed out after 0.")
    # Not even `scontrol show` is started: the node's state stays unknown, nothing drained.
    assert out.action == "state-unknown"
    assert (out.slurm_error or "").startswith("no time left for `scontrol show`")
    assert rec.calls == []


def test_reading_the_locks_folder_is_inside_the_bound(locks: Path, facts: HostFacts,
                                                      matrix: Matrix,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import pinning.fleet.slurm_locks as locks_module

    release = threading.Event()

    def slow(_folder: Path) -> dict[str, Path]:
        release.wait(30)
        return {}

    monkeypatch.setattr(locks_module, "index_locks", slow)
    rec = Recorder()
    try:
        out, err = _run("prolog", facts, matrix, FleetConfig(locks=locks, timeout_s=0.05), rec,
                        {"SLURM_JOB_CONSTRAINTS": A})
    finally:
        release.set()
    assert isinstance(err, ProbeTimeout) and err.exit_code == 7
    assert out.reason == "pin: error: reading the locks timed out after 0.05 s"
    assert out.action == "drained"


def test_a_missing_site_packages_folder_names_the_config_key(host_copy: HostCopy,
                                                             matrix: Matrix) -> None:
    from pinning.fleet.slurm_checks import probe_node

    host = host_copy("mi300x-rocm7.1")
    fleet = FleetConfig(root=host / "root", replay=host / "commands.toml",
                        site_packages=("/opt/absent/site-packages",))
    with pytest.raises(ConfigError) as err:
        probe_node(fleet, matrix)(None, None)
    assert "[fleet] site-packages /opt/absent/site-packages" in err.value.message
    assert "--site-packages" not in err.value.render()
    assert error_reason(err.value) == (
        "pin: error: config [fleet] site-packages /opt/absent/site-packages missing")


def test_features_are_the_matching_locks_then_the_targets(locks: Path, frozen: Lockfile,
                                                          facts: HostFacts, drifted: HostFacts,
                                                          matrix: Matrix) -> None:
    fleet = FleetConfig(locks=locks)
    feat = lock_feature(frozen.content_hash)
    assert node_features(fleet, probe=lambda _p, _m: facts, matrix=matrix) == {
        feat: locks / "site.lock", "pin_gfx942": None}
    assert node_features(fleet, probe=lambda _p, _m: drifted, matrix=matrix) == {
        "pin_gfx942": None}
    assert node_features(FleetConfig(), probe=lambda _p, _m: facts, matrix=matrix) == {
        "pin_gfx942": None}


# --- the commands -------------------------------------------------------------------------

def _site(tmp_path: Path, host: Path, locks: Path) -> tuple[Path, Path]:
    """A pin config for the recorded ``host`` and a fake scontrol that logs its argv."""
    log = tmp_path / "scontrol.log"
    fake = tmp_path / "bin" / "scontrol"
    fake.parent.mkdir()
    fake.write_text("#!/bin/bash\n"
                    f"printf '%s|' \"$@\" >> {log}; echo >> {log}\n"
                    '[ "$3" = show ] && echo "NodeName=gpu01 State=IDLE"\n'
                    "exit 0\n")
    fake.chmod(0o755)
    config = tmp_path / "config.toml"
    config.write_text(f'[fleet]\nlocks = "{locks}"\ndefault-lock = "{locks}/site.lock"\n'
                      f'root = "{host}/root"\nreplay = "{host}/commands.toml"\n'
                      f'[slurm]\nscontrol = "{fake}"\nnode-name = "gpu01"\n')
    return config, log


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM", "PIN_CONFIG"))}
    env["PATH"] = f"{tmp_path / 'bin'}:{env.get('PATH', '')}"
    return env | extra


def test_pin_slurm_prolog_features_and_healthcheck(tmp_path: Path, host_copy: HostCopy,
                                                   locks: Path, frozen: Lockfile) -> None:
    from tests.support.cli import json_result, pin

    host = host_copy("mi300x-rocm7.1")
    config, log = _site(tmp_path, host, locks)
    feat = lock_feature(frozen.content_hash)
    env = _env(tmp_path, SLURM_JOB_CONSTRAINTS=f"{feat}&gpu")
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"pin slurm prolog: node gpu01 matches {locks / 'site.lock'}\n"
    assert not log.exists()
    done = pin("slurm", "features", "--config", str(config), env=env)
    assert (done.returncode, done.stdout) == (0, f"{feat}\npin_gfx942\n")

    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    reason = f"pin: {feat} firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960"
    assert done.returncode == 6, done.stderr
    assert "drifted" in done.stderr and reason in done.stdout
    assert log.read_text().splitlines() == [
        "-o|--|show|node|gpu01|", f"update|NodeName=gpu01|State=DRAIN|Reason={reason}|"]
    done = pin("slurm", "healthcheck", "--config", str(config), "--format", "json",
               env=_env(tmp_path))
    out = json_result(done)
    assert (out["result"], out["reason"], out["action"]) == ("drift", reason, "drained")
    done = pin("slurm", "features", "--config", str(config), env=env)
    assert (done.returncode, done.stdout) == (0, "pin_gfx942\n")


def test_a_broken_config_drains_with_pins_reason(tmp_path: Path, host_copy: HostCopy,
                                                 locks: Path) -> None:
    from tests.support.cli import pin

    config, log = _site(tmp_path, host_copy("mi300x-rocm7.1"), locks)
    config.write_text(config.read_text() + "lokcs = 1\n")
    env = _env(tmp_path, SLURMD_NODENAME="gpu02", SLURM_CONF="/nonexistent/slurm.conf")
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    assert done.returncode == 2 and "unknown key [slurm] lokcs" in done.stderr
    assert "Extra inputs" not in done.stderr
    update = log.read_text().splitlines()[-1]
    assert update.startswith(
        "update|NodeName=gpu02|State=DRAIN|Reason=pin: error: config unknown key [slurm] lokcs")
    # Fixed: a matching node calls no Slurm command at all.
    config.write_text(config.read_text().replace("lokcs = 1\n", ""))
    log.unlink()
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    assert done.returncode == 0 and not log.exists()


def test_the_healthcheck_says_when_it_could_not_drain(tmp_path: Path, host_copy: HostCopy,
                                                      locks: Path) -> None:
    from tests.support.cli import json_result, pin

    host = host_copy("mi300x-rocm7.1")
    config, _ = _site(tmp_path, host, locks)
    fake = tmp_path / "bin" / "scontrol"
    fake.write_text(fake.read_text().replace("exit 0", '[ "$1" = update ] && { echo "slurm_'
                                                       'update error: Access denied" >&2; '
                                                       'exit 1; }\nexit 0'))
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    done = pin("slurm", "healthcheck", "--config", str(config), env=_env(tmp_path))
    assert done.returncode == 2
    assert "could not drain: Slurm refused" in done.stdout and "Access denied" in done.stdout
    done = pin("slurm", "healthcheck", "--config", str(config), "--format", "json",
               env=_env(tmp_path))
    out = json_result(done)
    assert out["action"] == "drain-failed" and "Access denied" in out["slurm-error"]


def test_a_flaky_scontrol_never_overwrites_an_admins_drain(tmp_path: Path,
                                                           host_copy: HostCopy,
                                                           locks: Path) -> None:
    from tests.support.cli import pin

    host = host_copy("mi300x-rocm7.1")
    config, log = _site(tmp_path, host, locks)
    state, once = tmp_path / "node.state", tmp_path / "flaky-once"
    state.write_text("NodeName=gpu01 State=IDLE+DRAIN Reason=admin: bad DIMM [root@2026]\n")
    once.touch()
    fake = tmp_path / "bin" / "scontrol"
    fake.write_text("#!/bin/bash\n"
                    f"printf '%s|' \"$@\" >> {log}; echo >> {log}\n"
                    f'if [ "$1" = -o ] && [ -f {once} ]; then rm {once}; '
                    f'echo "{SHOW_FAILED}" >&2; exit 1; fi\n'
                    f'[ "$1" = -o ] && cat {state}\n'
                    "exit 0\n")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    done = pin("slurm", "healthcheck", "--config", str(config), env=_env(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "could not read the node's state: Slurm refused" in done.stdout
    assert done.stdout.rstrip().endswith(f"{SHOW_FAILED}; not drained")
    assert "update" not in log.read_text()
    # Matching again: someone else's drain is never resumed.
    fw.write_text(fw.read_text().replace("FW_VERSION: 32960\n", "FW_VERSION: 32959\n", 1))
    done = pin("slurm", "healthcheck", "--config", str(config), env=_env(tmp_path))
    assert done.returncode == 0 and "update" not in log.read_text()


def test_a_job_naming_a_lock_the_node_lacks_is_checked_against_the_default(
        tmp_path: Path, host_copy: HostCopy, locks: Path) -> None:
    from tests.support.cli import pin

    config, log = _site(tmp_path, host_copy("mi300x-rocm7.1"), locks)
    env = _env(tmp_path, SLURM_JOB_CONSTRAINTS="pin_aaaaaaaaaaaa|gpu")
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    assert ("pin slurm prolog: the job names pin_aaaaaaaaaaaa, which this node has no lock for "
            f"(not in [fleet] locks, {locks}); checking [fleet] default-lock "
            f"{locks / 'site.lock'} instead") in done.stderr
    assert "matches" in done.stdout and not log.exists()
    config.write_text(config.read_text().replace(f'default-lock = "{locks}/site.lock"\n', ""))
    done = pin("slurm", "prolog", "--config", str(config), env=env)
    assert done.returncode == 0 and not log.exists()
    assert "nothing checked (the job names no pin_ feature this node has a lock for" in (
        done.stdout)


def test_a_prolog_without_drain_logs_the_reason(tmp_path: Path, host_copy: HostCopy,
                                                locks: Path) -> None:
    from tests.support.cli import pin

    host = host_copy("mi300x-rocm7.1")
    config, log = _site(tmp_path, host, locks)
    config.write_text(config.read_text() + "drain-in-prolog = false\n")
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    done = pin("slurm", "prolog", "--config", str(config), env=_env(tmp_path))
    assert done.returncode == 6 and not log.exists()
    assert "firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960 (not drained by pin" in done.stderr


def test_the_commands_refuse_what_they_cannot_do(tmp_path: Path) -> None:
    from tests.support.cli import pin

    done = pin("slurm", "features", "pin_0123456789ab", env=_env(tmp_path))
    assert done.returncode == 2 and "changes no stack" in done.stderr
    for command, line in (("prolog", "PrologFlags=Alloc"),
                          ("healthcheck", "HealthCheckProgram="),
                          ("features", "NodeFeaturesPlugins=node_features/helpers")):
        done = pin("slurm", command, "--help")
        assert done.returncode == 0 and line in done.stdout


@pytest.mark.parametrize(("script", "args", "want"), [
    ("pin-prolog", [], "slurm prolog"),
    ("pin-healthcheck", [], "slurm healthcheck"),
    ("pin-features", [], "slurm features"),
    ("pin-features", ["pin_0123456789ab"], "slurm features pin_0123456789ab"),
])
def test_contrib_scripts_run_pin_from_their_env_file(tmp_path: Path, script: str,
                                                     args: list[str], want: str) -> None:
    import shutil
    import subprocess

    from tests.support.paths import ROOT

    shutil.copy2(ROOT / "contrib" / "slurm" / script, tmp_path / script)
    fake = tmp_path / "fake-pin"
    fake.write_text('#!/bin/bash\necho "$*|${PIN_CONFIG-}|${SLURM_CONF-}|$PATH"\n')
    fake.chmod(0o755)
    (tmp_path / "pin-slurm.env").write_text(f"PIN_BIN={fake}\nPIN_CONFIG=/etc/pin/x.toml\n")
    # As slurmd runs them: no PATH, no SLURM_CONF.
    done = subprocess.run([str(tmp_path / script), *args], env={"SLURMD_NODENAME": "n1"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    line, config, conf, path = done.stdout.strip().split("|")
    assert (line, config) == (want, "/etc/pin/x.toml")
    assert "/usr/bin" in path.split(":") and "/usr/sbin" in path.split(":")
    assert conf == ("/etc/slurm/slurm.conf" if script == "pin-healthcheck" else "")


# --- reporting to a pin service ([report]) ---------------------------------------------------

def test_a_report_to_a_service_that_refuses_connections_changes_nothing(
        locks: Path, drifted: HostFacts, matrix: Matrix) -> None:
    from pinning.fleet.config import ReportConfig
    from tests.unit.remote.service import closed_port

    fleet = FleetConfig(default_lock=locks / "site.lock")
    plain, plain_err = _run("prolog", drifted, matrix, fleet, Recorder())
    lines: list[str] = []
    url = f"http://127.0.0.1:{closed_port()}"
    rec = Recorder()
    out, err = run_check("prolog", SlurmConfig(), fleet, {"SLURMD_NODENAME": "gpu01"},
                         runner=rec, probe=lambda _p, _m: drifted, matrix=matrix,
                         hostname="h", report=ReportConfig(url=url, timeout_s=2),
                         notify=lines.append)
    assert isinstance(err, DriftError) and isinstance(plain_err, DriftError)
    assert out.model_copy(update={"service": None}) == plain
    assert rec.updates[0][3] == "State=DRAIN"
    assert out.service is not None and out.service.startswith(f"report to {url} failed: ")
    assert "Connection refused" in out.service
    assert lines == [f"pin: warning: {out.service}"]


def test_a_report_posts_the_snapshot_as_the_node(locks: Path, frozen: Lockfile,
                                                facts: HostFacts, matrix: Matrix,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pinning.fleet.config import ReportConfig
    from pinning.probe.snapshot import snapshot_text
    from tests.unit.remote.service import GOOD, fake_service

    lines: list[str] = []
    with fake_service() as svc:
        out, err = run_check(
            "healthcheck", SlurmConfig(), FleetConfig(default_lock=locks / "site.lock"),
            {"SLURMD_NODENAME": "gpu01", "PIN_TOKEN": GOOD}, runner=Recorder(),
            probe=lambda _p, _m: facts, matrix=matrix, hostname="h",
            report=ReportConfig(url=svc.url, group="mi300x"), notify=lines.append)
    assert err is None and out.result == "match"
    (seen,) = svc.seen
    assert (seen.path, seen.body) == ("/api/v1/hosts/gpu01/reports",
                                      snapshot_text(facts).encode())
    assert seen.query == {"lock": [frozen.content_hash], "group": ["mi300x"]}
    assert out.service == f"reported to {svc.url}: match" and lines == [f"pin: {out.service}"]


def test_a_slow_service_is_bounded_by_the_deadline(locks: Path, facts: HostFacts,
                                                   matrix: Matrix) -> None:
    from pinning.fleet.config import ReportConfig
    from tests.unit.remote.service import fake_service

    with fake_service() as svc:
        svc.delay_s = 3.0
        out, err = run_check(
            "prolog", SlurmConfig(), FleetConfig(default_lock=locks / "site.lock"),
            {"SLURMD_NODENAME": "gpu01"}, runner=Recorder(), probe=lambda _p, _m: facts,
            matrix=matrix, hostname="h", deadline=Deadline(1.5),
            report=ReportConfig(url=svc.url, timeout_s=30), notify=lambda _l: None)
    assert err is None and out.result == "match"
    assert out.service is not None and "failed" in out.service
    out, _ = run_check(
        "prolog", SlurmConfig(), FleetConfig(default_lock=locks / "site.lock"),
        {"SLURMD_NODENAME": "gpu01"}, runner=Recorder(), probe=lambda _p, _m: facts,
        matrix=matrix, hostname="h", deadline=Deadline(0.8),
        report=ReportConfig(url="http://127.0.0.1:9"), notify=lambda _l: None)
    assert out.service is not None and out.service.startswith("not reported to")


def test_the_prolog_with_an_unreachable_service_exits_as_before(
        tmp_path: Path, host_copy: HostCopy, locks: Path, frozen: Lockfile) -> None:
    from tests.support.cli import pin
    from tests.unit.remote.service import closed_port

    host = host_copy("mi300x-rocm7.1")
    config, log = _site(tmp_path, host, locks)
    url = f"http://127.0.0.1:{closed_port()}"
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959\n", "FW_VERSION: 32960\n", 1))
    before = pin("slurm", "prolog", "--config", str(config), env=_env(tmp_path))
    config.write_text(config.read_text() + f'[report]\nurl = "{url}"\ntimeout-s = 2\n')
    after = pin("slurm", "prolog", "--config", str(config), env=_env(tmp_path))
    assert (after.returncode, after.stdout) == (before.returncode, before.stdout) == (
        6, before.stdout)
    extra = [line for line in after.stderr.splitlines()
             if line not in before.stderr.splitlines()]
    assert len(extra) == 1 and extra[0].startswith(f"pin: warning: report to {url} failed")
    assert log.read_text().count("State=DRAIN") == 2
