"""The fast path of verifying one host snapshot (``pin fleet verify`` over hosts that differ
in packages or variables): the snapshot parse that reuses distributions validated before,
and the rule-findings key (:func:`~pinning.verify.rulekey.rule_key`) that leaves out
packages and variables no rule reads. Each gives exactly the verdicts and reasons of the
full path, on varied snapshots: drift in packages, variables and firmware; unknown and
missing facts; invalid entries.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from pinning.errors import ProbeError
from pinning.fleet.batch import FleetVerifier
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe import snapshot
from pinning.probe.models import HostFacts
from pinning.probe.snapshot import parse_snapshot
from pinning.verify.freeze import freeze
from pinning.verify.report import rule_findings, verify
from pinning.verify.rulekey import rule_key
from tests.support.fleetgen import DRIFTS, realistic_base
from tests.support.hosts import recorded
from tests.support.locks import lock_for

Snapshot = dict[str, Any]

#: Packages and variables some rule or coded check reads (each changes a rule finding on
#: the recorded MI300X host, or may), and some none reads.
READ_PACKAGES = [("nvidia-cublas-cu12", "12.4.5.8"), ("jax-rocm60-plugin", "0.4.35"),
                 ("jax", "0.4.35"), ("jaxlib", "0.4.31"), ("Triton", "3.2.0"),
                 ("amd_aiter", "0.1.0"), ("torch", "2.7.0"), ("flash-attn", "2.7.4")]
READ_ENV = [("HSA_OVERRIDE_GFX_VERSION", "9.4.2"), ("AITER_USE_SYSTEM_TRITON", "1"),
            ("HIPBLASLT_ALLOW_TF32", "1"), ("FLASH_ATTENTION_TRITON_AMD_ENABLE", "TRUE")]
UNREAD_ENV = [("HIP_VISIBLE_DEVICES", "0,1"), ("ROCR_VISIBLE_DEVICES", "3"),
              ("PYTORCH_TUNABLEOP_ENABLED", "1"), ("LD_LIBRARY_PATH", "/opt/x")]


@pytest.fixture(scope="module")
def base() -> Snapshot:
    return realistic_base(gpus=4, packages=60)


@pytest.fixture(scope="module")
def frozen(matrix: Matrix, base: Snapshot) -> Lockfile:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    out, found, _ = freeze(lock, facts_of(base), matrix, host_label="h")
    assert found == []
    return out


@pytest.fixture(scope="module")
def unfrozen(matrix: Matrix) -> Lockfile:
    return lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")


def facts_of(data: Snapshot) -> HostFacts:
    return parse_snapshot(json.dumps(data).encode(), "test")


def varied(base: Snapshot) -> Iterator[Snapshot]:
    """The base, every drift of the fleet generator, packages and variables that rules read
    or do not read (added, changed, removed, renamed), and unknown or missing facts."""
    yield copy.deepcopy(base)
    for seed in range(3):
        for name, change in sorted(DRIFTS.items()):
            s = copy.deepcopy(base)
            change(s, random.Random(f"{seed}{name}"))
            yield s
    for name, version in READ_PACKAGES:
        s = copy.deepcopy(base)
        s["python"]["distributions"].append({"name": name, "version": version})
        yield s
    for name, value in READ_ENV + UNREAD_ENV:
        s = copy.deepcopy(base)
        s["environment"][name] = value
        yield s
    renamed = copy.deepcopy(base)
    renamed["python"]["distributions"][-1]["name"] = "Fleetgen_Pkg.Renamed"
    torch_gone = copy.deepcopy(base)
    torch_gone["python"]["distributions"] = [
        d for d in torch_gone["python"]["distributions"] if d["name"] != "torch"]
    twice = copy.deepcopy(base)
    twice["python"]["distributions"].append({"name": "torch", "version": "2.6.0",
                                             "source": "conda"})
    no_python = copy.deepcopy(base)
    no_python["python"] = {"reason": "no site-packages found"}
    no_amd = copy.deepcopy(base)
    del no_amd["amd"]
    unknown_fw = copy.deepcopy(base)
    unknown_fw["gpus"][0]["vbios"] = {"reason": "amd-smi not found"}
    unknown_fw["amd"]["rocm"] = {"reason": "no /opt/rocm/.info/version", "absent": True}
    yield from (renamed, torch_gone, twice, no_python, no_amd, unknown_fw)


@pytest.mark.parametrize("which", ["frozen", "unfrozen"])
def test_fast_parse_gives_the_full_parse(which: str, base: Snapshot, matrix: Matrix,
                                         request: pytest.FixtureRequest) -> None:
    lock: Lockfile = request.getfixturevalue(which)
    hosts = [json.dumps(s).encode() for s in varied(base)]
    warm = [parse_snapshot(h, "t") for h in hosts]  # fills the memory of distributions
    assert snapshot._DISTRIBUTIONS
    results = set()
    for i, (data, first) in enumerate(zip(hosts, warm, strict=True)):
        snapshot._DISTRIBUTIONS.clear()
        fresh = parse_snapshot(data, "t")  # validated entry by entry
        parse_snapshot(hosts[(i + 1) % len(hosts)], "t")  # remember another host's
        again = parse_snapshot(data, "t")  # entries from the memory
        assert again == fresh == first
        assert again.model_dump(mode="json") == fresh.model_dump(mode="json")
        want = verify(lock, fresh, matrix, lock_name="l", host_name="h")
        assert verify(lock, again, matrix, lock_name="l", host_name="h") == want
        results.add(want.result)
    assert results == {"match", "drift"} or which == "unfrozen"


@pytest.mark.parametrize("entry", [
    {"name": "bad name", "version": "1.0"},
    {"name": "ok", "version": "1 0"},
    {"name": "ok", "version": ["1.0"]},
    {"name": "ok", "version": "1.0", "extra": True},
    {"name": "ok", "version": "1.0", "source": "apt"},
    {"name": "ok"},
    "ok==1.0",
])
def test_an_invalid_entry_gives_the_same_error_with_a_warm_memory(
        entry: Any, base: Snapshot) -> None:
    bad = copy.deepcopy(base)
    bad["python"]["distributions"].insert(2, entry)
    data = json.dumps(bad).encode()
    snapshot._DISTRIBUTIONS.clear()
    with pytest.raises(ProbeError) as cold:
        parse_snapshot(data, "n1.json")
    parse_snapshot(json.dumps(base).encode(), "warm")
    with pytest.raises(ProbeError) as warm:
        parse_snapshot(data, "n1.json")
    assert warm.value.message == cold.value.message
    assert "python.distributions[2]" in warm.value.message


def test_the_memory_of_distributions_is_bounded(base: Snapshot,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "DISTRIBUTION_MEMO_LIMIT", 70)
    for i in range(3):
        s = copy.deepcopy(base)
        for d in s["python"]["distributions"]:
            d["version"] += f".post{i}"
        parse_snapshot(json.dumps(s).encode(), "t")
        assert len(snapshot._DISTRIBUTIONS) <= 70


@pytest.mark.parametrize("which", ["frozen", "unfrozen"])
def test_equal_rule_keys_give_equal_rule_findings(which: str, base: Snapshot, matrix: Matrix,
                                                  request: pytest.FixtureRequest) -> None:
    lock: Lockfile = request.getfixturevalue(which)
    seen: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    hits = 0
    for s in varied(base):
        facts = facts_of(s)
        found = rule_findings(lock, facts, matrix, False, None)
        got = (tuple(f.model_dump_json() for f in found[0]), found[1])
        key = rule_key(facts)
        hits += key in seen
        assert seen.setdefault(key, got) == got
    assert hits >= 20  # drift no rule reads shares its key


def test_the_rule_key_leaves_out_what_no_rule_reads(base: Snapshot) -> None:
    key = rule_key(facts_of(base))
    for name, value in UNREAD_ENV:
        s = copy.deepcopy(base)
        s["environment"][name] = value
        assert rule_key(facts_of(s)) == key, name
    s = copy.deepcopy(base)
    s["python"]["distributions"][-1]["version"] = "9.9.9"
    assert rule_key(facts_of(s)) == key
    for name, value in READ_ENV:
        s = copy.deepcopy(base)
        s["environment"][name] = value
        assert rule_key(facts_of(s)) != key, name
    for name, version in READ_PACKAGES:
        s = copy.deepcopy(base)
        s["python"]["distributions"].append({"name": name, "version": version})
        assert rule_key(facts_of(s)) != key, name


@pytest.mark.parametrize("which", ["frozen", "unfrozen"])
def test_a_fleet_keyed_by_rule_key_reports_what_verify_reports(
        which: str, base: Snapshot, matrix: Matrix, request: pytest.FixtureRequest) -> None:
    lock: Lockfile = request.getfixturevalue(which)
    fleet = FleetVerifier(lock, matrix, lock_name="l")
    for i, s in enumerate([*varied(base)] * 2):
        data = json.dumps(s).encode()
        facts = parse_snapshot(data, "t")
        want = verify(lock, facts, matrix, lock_name="l", host_name=f"h{i}")
        assert fleet.report(facts, f"h{i}") == want
        out = fleet.check(data, "t")
        assert (out.result, dict(out.counts)) == (want.result, want.counts)


@pytest.mark.parametrize("host", ["mi300x-rocm7.1", "mi250x-rocm6.3", "h200-cuda13",
                                  "no-gpu", "radeon-inbox"])
def test_recorded_hosts_parse_the_same_warm_or_cold(host: str) -> None:
    facts = recorded(host)
    data = json.dumps(facts.model_dump(mode="json", by_alias=True, exclude_none=True)).encode()
    snapshot._DISTRIBUTIONS.clear()
    cold = parse_snapshot(data, "t")
    assert parse_snapshot(data, "t") == cold == facts
