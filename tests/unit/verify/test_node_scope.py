"""pin verify --node-only: only what a node provides beneath its containers is judged (GPUs,
firmware, kernel driver, kernel, OS); a node whose Python environment is not the lock's
(Kubernetes: it comes with the image) matches, a firmware change still drifts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pinning.lockfile.io import write_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.verify.report import NODE_FACTS, node_scope, verify
from tests.support.cli import json_result, pin
from tests.support.hosts import SITE, HostCopy, recorded
from tests.support.locks import frozen_mi300x


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    return frozen_mi300x(matrix)


def test_node_scope_keeps_node_facts_and_recomputes_the_result(
        matrix: Matrix, frozen: Lockfile, host_copy: HostCopy) -> None:
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / SITE)  # no Python environment on the node
    full = verify(frozen, recorded("", host), matrix, lock_name="l", host_name="h")
    assert full.result == "drift" and any(f.fact.startswith("frameworks.") for f in full.drift)
    node = node_scope(full)
    assert node.scope == "node" and node.result == "match"
    assert node.findings and all(f.fact.split(".")[0] in NODE_FACTS for f in node.findings)
    assert sum(node.counts.values()) == len(node.findings)
    fw = host / "out" / "amd-smi-firmware.txt"
    fw.write_text(fw.read_text().replace("FW_VERSION: 32959", "FW_VERSION: 32960"))
    drifting = node_scope(verify(frozen, recorded("", host), matrix, lock_name="l",
                                 host_name="h"))
    assert drifting.result == "drift"
    assert {f.fact for f in drifting.drift} == {"firmware.blocks"}


def test_the_cli_flag_judges_the_node_only(frozen: Lockfile, host_copy: HostCopy,
                                           tmp_path: Path) -> None:
    host = host_copy("mi300x-rocm7.1")
    shutil.rmtree(host / SITE)
    lock = tmp_path / "pin.lock"
    write_lock(frozen, lock)
    args = ["verify", str(lock), "--root", str(host / "root"), "--replay",
            str(host / "commands.toml")]
    assert pin(*args).returncode == 6  # the node's Python environment is not the lock's
    done = pin(*args, "--node-only", "--format", "json")
    report = json_result(done)
    assert done.returncode == 0 and report["scope"] == "node" and report["result"] == "match"
    assert pin(*args, "--node-only", "--format", "npd").stdout.startswith("pin: matches lock")
