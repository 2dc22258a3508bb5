"""pin on a real one-node Slurm cluster (Debian's slurm-wlm and munge, started here).

The node's host facts come from a copy of the recorded MI300X host; the lock is frozen from it.
contrib/slurm's scripts are the Prolog, the HealthCheckProgram and the node-features helper
(``NodeFeaturesPlugins=node_features/helpers``). A job asking for the lock's feature runs on
the matching node; after the recorded firmware changes, the next job is requeued held and the
node drained with pin's reason; once resumed by hand, the health check drains the idle
drifting node by itself, and resumes it when the firmware is back; a drain of pin's for
another lock stays for a person.

Without slurm-wlm and munge (or root) the test skips; ``PIN_REQUIRE_SLURM=1`` (CI) fails it.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hosts import MI300X
from tests.support.paths import ROOT
from tests.support.slurm import SlurmCluster, missing, start_slurm, unavailable

CONTRIB = ROOT / "contrib" / "slurm"
FIRMWARE = Path("out") / "amd-smi-firmware.txt"


def _pin() -> str:
    found = shutil.which("pin", path=str(Path(sys.executable).parent))
    assert found, f"pin is not installed beside {sys.executable}"
    return found


def _set_firmware(host: Path, old: str, new: str) -> None:
    """Change the first recorded ``FW_VERSION: old`` (GPU 0's CP_MEC1) to ``new``."""
    path = host / FIRMWARE
    text = path.read_text()
    assert f"FW_VERSION: {old}\n" in text
    path.write_text(text.replace(f"FW_VERSION: {old}\n", f"FW_VERSION: {new}\n", 1))


class Site:
    """The node's side: host copy, lock, pin config and the installed contrib scripts."""

    def __init__(self, base: Path) -> None:
        from pinning.fleet.slurm import lock_feature
        from pinning.lockfile.io import write_lock
        from pinning.matrix.load import load_matrix
        from pinning.verify.freeze import freeze
        from tests.support.hosts import recorded
        from tests.support.locks import lock_for

        self.host = base / "host"
        shutil.copytree(MI300X, self.host, symlinks=True)
        matrix = load_matrix()
        lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
        frozen, _, _ = freeze(lock, recorded("mi300x-rocm7.1", root=self.host), matrix,
                              host_label="mi300x")
        locks = base / "locks"
        locks.mkdir()
        self.lock = locks / "mi300x.lock"
        write_lock(frozen, self.lock)
        self.feature = lock_feature(frozen.content_hash)
        self.config = base / "config.toml"
        self.config.write_text(
            '[fleet]\nlocks = "locks"\ndefault-lock = "locks/mi300x.lock"\n'
            'root = "host/root"\nreplay = "host/commands.toml"\ntimeout-s = 30\n\n'
            f'[slurm]\nscontrol = "{shutil.which("scontrol")}"\n')
        # The site's copy of contrib/slurm, with pin-slurm.env beside the scripts.
        self.bin = base / "lib"
        self.bin.mkdir()
        for name in ("pin-prolog", "pin-healthcheck", "pin-features"):
            shutil.copy2(CONTRIB / name, self.bin / name)
        self.env_file = self.bin / "pin-slurm.env"
        self.env_file.write_text(f"PIN_BIN={_pin()}\nPIN_CONFIG={self.config}\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    return Site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def cluster(site: Site) -> Iterator[SlurmCluster]:
    why = missing()
    if why:
        unavailable(why)
    def tell(conf: Path) -> None:
        # The health check is started without SLURM_CONF: the site's env file gives it.
        site.env_file.write_text(site.env_file.read_text() + f"SLURM_CONF={conf}\n")

    try:
        c = start_slurm(prolog=site.bin / "pin-prolog", healthcheck=site.bin / "pin-healthcheck",
                        helper=site.bin / "pin-features", features=(site.feature, "pin_gfx942"),
                        on_config=tell)
    except RuntimeError as exc:
        unavailable(f"the one-node Slurm cluster did not start: {exc}")
    try:
        yield c
    finally:
        c.stop()


def test_jobs_run_on_a_matching_node_and_a_drifting_one_is_drained(site: Site,
                                                                   cluster: SlurmCluster) -> None:
    node = cluster.node_fields()
    assert site.feature in node["ActiveFeatures"].split(","), node  # from `pin slurm features`
    assert "pin_gfx942" in node["ActiveFeatures"].split(",")

    ok = cluster.submit("-C", site.feature)
    cluster.wait(lambda: cluster.job(ok)["JobState"] == "COMPLETED", "job on the matching node")

    _set_firmware(site.host, "32959", "32960")
    held = cluster.submit("-C", site.feature)
    cluster.wait(lambda: cluster.job(held)["Reason"] == "launch_failed_requeued_held",
                 "the job requeued held")
    job = cluster.job(held)
    assert job["JobState"] == "PENDING"
    node = cluster.node_fields()
    assert "DRAIN" in node["State"].split("+"), node
    assert node["Reason"] == (f"pin: {site.feature} "
                              "firmware.blocks[0] CP_MEC1=32959!=CP_MEC1=32960")
    cluster.run("scancel", held)

    # Resumed by hand, still drifting: slurmd's health check (run at its start) drains it.
    cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=RESUME")
    cluster.wait(lambda: "DRAIN" not in cluster.node_fields()["State"], "node resumed")
    cluster.restart_slurmd()
    cluster.wait(lambda: cluster.node_fields().get("Reason", "").startswith(
        f"pin: {site.feature} firmware"), "the health check's drain")
    assert "DRAIN" in cluster.node_fields()["State"].split("+")

    # The firmware is back: the health check resumes the node pin drained.
    _set_firmware(site.host, "32960", "32959")
    cluster.restart_slurmd()
    cluster.wait(lambda: "DRAIN" not in cluster.node_fields()["State"], "node resumed by pin")
    again = cluster.submit("-C", site.feature)
    cluster.wait(lambda: cluster.job(again)["JobState"] == "COMPLETED", "job after resume")


def test_the_health_check_leaves_a_node_drained_by_someone_else(site: Site,
                                                                cluster: SlurmCluster) -> None:
    import subprocess

    cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=DRAIN",
                "Reason=maintenance window")
    _set_firmware(site.host, "32959", "32961")
    try:
        # As slurmd runs it: no environment but the node's name.
        done = subprocess.run([str(site.bin / "pin-healthcheck")], text=True,
                              capture_output=True, timeout=90, check=False,
                              env={"SLURMD_NODENAME": cluster.node})
        assert done.returncode == 0, done.stderr
        assert "CP_MEC1=32959!=CP_MEC1=32961" in done.stdout
        assert "left as it is" in done.stdout
        node = cluster.node_fields()
        assert node["Reason"] == "maintenance window"
        assert "DRAIN" in node["State"].split("+")
    finally:
        _set_firmware(site.host, "32961", "32959")
        cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=RESUME")


def test_the_health_check_keeps_pins_drain_for_another_lock(site: Site,
                                                           cluster: SlurmCluster) -> None:
    import subprocess

    other = "pin: pin_ffffffffffff firmware.blocks[0] 1!=2"
    cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=DRAIN",
                f"Reason={other}")
    try:
        done = subprocess.run([str(site.bin / "pin-healthcheck")], text=True,
                              capture_output=True, timeout=90, check=False,
                              env={"SLURMD_NODENAME": cluster.node})
        assert done.returncode == 0, done.stderr
        assert "matches" in done.stdout and "left for a person" in done.stdout
        assert "State=RESUME" in done.stdout
        node = cluster.node_fields()
        assert node["Reason"] == other and "DRAIN" in node["State"].split("+")
    finally:
        cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=RESUME")
