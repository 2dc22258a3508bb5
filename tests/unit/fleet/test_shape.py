"""The shape memory of pin fleet verify (pinning/fleet/shape.py): snapshots equal but for
the GPUs' PCI addresses are verified once, and every host still gets exactly the verdict,
reason and counts the full comparison gives (issue 33 §4)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from pinning.errors import ProbeError
from pinning.fleet.batch import FleetVerifier, Outcome
from pinning.fleet.shape import shape_key
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.probe.snapshot import parse_snapshot
from tests.support.fleetgen import DRIFTS, host_text, realistic_base, realistic_hosts
from tests.support.locks import lock_for

Snapshot = dict[str, Any]


@pytest.fixture(scope="module")
def big() -> Snapshot:
    return realistic_base(gpus=8, packages=40)


@pytest.fixture(scope="module")
def big_lock(matrix: Matrix, big: Snapshot) -> Lockfile:
    from pinning.verify.freeze import freeze

    one = host_text(json.dumps(big), 0, random.Random(1), 8)
    lock, _, _ = freeze(lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1"),
                        parse_snapshot(one.encode(), "t"), matrix, host_label="h")
    return lock


def traps(big: Snapshot, rng: random.Random) -> list[str]:
    """Snapshots the shape must not merge wrongly: unknown and missing facts, an
    environment variable or firmware block named like an address field (its value the
    host's own address: equal shapes, other verdicts), a source that is not a sysfs path,
    a wrong type beside an address, pretty-printed JSON, a NUL escape."""
    out: list[Snapshot] = []
    for change in ("unknown", "absent", "env", "block", "torch-source", "badtype"):
        s = copy.deepcopy(big)
        gpu = s["gpus"][rng.randrange(8)]
        if change == "unknown":
            gpu["vbios"] = {"reason": "not readable"}
        elif change == "absent":
            s["amd"]["driver"] = {"reason": "amdgpu not loaded", "absent": True}
        elif change == "env":  # its value is the host's own GPU 0 address: per host
            s["environment"]["source"] = "/sys/bus/pci/devices/0000:@BUS0:00.0"
        elif change == "block":
            gpu["firmware"]["source"] = "/sys/bus/pci/devices/0000:@BUS0:00.0"
        elif change == "torch-source":
            s["python"]["torch"]["source"] = "/sys/bus/pci/devices/0000:@BUS0:00.0/x"
        else:
            gpu["index"] = "0"
        out.append(s)
    texts = [json.dumps(s, separators=(",", ":")) for s in out]
    texts.append(json.dumps(out[0], indent=2))
    texts.append(json.dumps(big, separators=(",", ":")).replace('"live":false',
                                                                '"live":false,"x":"\\u0000"'))
    return texts


def full(lock: Lockfile, matrix: Matrix, data: bytes, strict: bool = False) -> Outcome | str:
    """The outcome without any memory (or the unreadable message)."""
    try:
        facts = parse_snapshot(data, "w")
    except ProbeError as exc:
        return exc.message
    return FleetVerifier(lock, matrix, lock_name="l", strict=strict, memo=False,
                         views=False).outcome(facts)


@pytest.mark.parametrize("strict", [False, True])
def test_the_fast_path_gives_the_full_verdict_on_every_host(
        big: Snapshot, big_lock: Lockfile, matrix: Matrix, strict: bool) -> None:
    rng = random.Random(33)
    templates = [json.dumps(big, separators=(",", ":")), *traps(big, rng)]
    for name in sorted(DRIFTS):
        s = copy.deepcopy(big)
        DRIFTS[name](s, rng)
        templates.append(json.dumps(s, separators=(",", ":")))
    fleet = FleetVerifier(big_lock, matrix, lock_name="l", strict=strict)
    seen = set()
    for i in range(3 * len(templates)):  # each template three times, other addresses
        data = host_text(templates[i % len(templates)], i, rng, 8).encode()
        try:
            got: Outcome | str = fleet.check(data, "w")
        except ProbeError as exc:
            got = exc.message
        assert got == full(big_lock, matrix, data, strict), templates[i % len(templates)][:200]
        seen.add(got.result if isinstance(got, Outcome) else "unreadable")
    assert seen == {"match", "drift", "unreadable"} or strict


def test_a_realistic_fleet_is_verified_once_per_shape(
        big: Snapshot, big_lock: Lockfile, matrix: Matrix) -> None:
    lines = [h.encode() for h in realistic_hosts(big, 120, pool=4)]
    assert len(set(lines)) == 120  # every snapshot distinct
    shapes = {shape_key(h) for h in lines}
    assert len(shapes) <= 10  # the clean host and the four drifted ones, two probe roots
    fleet = FleetVerifier(big_lock, matrix, lock_name="l")
    calls: list[int] = []
    outcome = fleet.outcome

    def counted(facts: Any, *, node_only: bool = False) -> Outcome:
        calls.append(1)
        return outcome(facts, node_only=node_only)

    fleet.outcome = counted  # type: ignore[method-assign]
    for h in lines:
        assert fleet.check(h, "w") == full(big_lock, matrix, h)
    assert len(calls) == len(shapes)


def test_no_shape_for_bytes_holding_a_nul() -> None:
    assert shape_key(b'{"pci-bus":"0000:05:00.0"}\x00') is None
    assert shape_key(b'{"pci-bus":"0000:05:00.0"}') == shape_key(b'{"pci-bus":"0000:ff:00.7"}')
    assert shape_key(b'{"pci-bus":"0000:05:00.0"}') != shape_key(b'{"pci-bus":"0000:05:00.8"}')
    assert shape_key(b'{"vbios":"/sys/bus/pci/devices/0000:05:00.0"}') != \
        shape_key(b'{"vbios":"/sys/bus/pci/devices/0000:06:00.0"}')


def test_a_trap_valued_per_host_is_never_shared(big: Snapshot, big_lock: Lockfile,
                                                matrix: Matrix) -> None:
    """An environment variable named like an address field, valued with the host's own GPU
    address: its hosts have one shape, but each its own verdict, so none may stand for
    another (the not-shared branch of ``FleetVerifier.check``)."""
    s = copy.deepcopy(big)
    s["environment"]["source"] = "/sys/bus/pci/devices/0000:@BUS0:00.0"
    template = json.dumps(s, separators=(",", ":"))
    hosts = [host_text(template, i, random.Random(0), 8).encode() for i in (3, 4, 5)]
    assert len({shape_key(h) for h in hosts}) == 1
    fleet = FleetVerifier(big_lock, matrix, lock_name="l")
    got = [fleet.check(h, "w") for h in hosts]
    assert got == [full(big_lock, matrix, h) for h in hosts]
    assert len({o.reason for o in got}) == 3  # each names its own address
