"""A real one-node Slurm cluster for tests: munged, slurmctld and slurmd (Debian's ``munge``
and ``slurm-wlm``) on a private MUNGE socket, loopback ports and a temporary folder.

:func:`start_slurm` raises ``RuntimeError`` when a component is missing or does not come up;
:func:`unavailable` turns that into a skip, or a failure under ``PIN_REQUIRE_SLURM=1`` (CI).
Every daemon is one this module started (its pid file is in the cluster's folder); ``stop``
ends them with ``scontrol shutdown`` and the munged pid.

Configuration facts: ``man slurm.conf`` (Slurm 22.05, https://slurm.schedmd.com/slurm.conf.html,
read 2026-12-01) and ``munged --help`` (MUNGE 0.5.15): the socket's folder must be searchable
by all, the key file owned by the daemon's user and not readable by others.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.components import free_port, wait_for

DAEMONS = ("munged", "slurmctld", "slurmd", "scontrol", "sbatch")
_FIELD = re.compile(r"(?:^| )([A-Za-z]+)=(\S*)")


def unavailable(reason: str) -> None:
    """Skip the test, or fail it when ``PIN_REQUIRE_SLURM=1`` (CI installs Slurm)."""
    if os.environ.get("PIN_REQUIRE_SLURM") == "1":
        pytest.fail(f"PIN_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


def missing() -> str | None:
    """Why a cluster cannot start here (a program missing, not root), or ``None``."""
    absent = [d for d in DAEMONS if shutil.which(d, path=_path()) is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the one-node Slurm cluster runs its daemons as root"
    return None


def _path() -> str:
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


def _which(name: str) -> str:
    found = shutil.which(name, path=_path())
    if found is None:
        raise RuntimeError(f"{name} not installed")
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A daemon we started and that exited stays a zombie until reaped (munged forks).
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class SlurmCluster:
    """A running one-node cluster: ``dir`` (everything), ``conf`` (slurm.conf), ``node`` (the
    node's name), ``env`` (client environment: ``SLURM_CONF``)."""

    dir: Path
    conf: Path
    node: str
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client (``scontrol``, ``sbatch``...) against this cluster (30 s bound)."""
        done = subprocess.run([_which(argv[0]), *argv[1:]], env=self.env, text=True,
                              capture_output=True, timeout=30, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
        return done

    def submit(self, *args: str) -> str:
        """``sbatch --parsable ... --wrap true``: the job id."""
        out = self.run("sbatch", "--parsable", "-o", "/dev/null", "-D", str(self.dir), *args,
                       "--wrap", "true").stdout
        return out.strip().split(";")[0]

    def fields(self, *argv: str) -> dict[str, str]:
        """``KEY=VALUE`` fields of ``scontrol -o show ...`` (values up to a blank)."""
        line = self.run("scontrol", "-o", "show", *argv).stdout.strip()
        return {m.group(1): m.group(2) for m in _FIELD.finditer(line)}

    def job(self, job_id: str) -> dict[str, str]:
        """The job's fields (``JobState``, ``Reason``...)."""
        return self.fields("job", job_id)

    def node_fields(self) -> dict[str, str]:
        """The node's fields (``State``, ``ActiveFeatures``...), ``Reason`` in full: in Slurm
        22.05 it is the node's last field, followed by scontrol's ``[user@time]``."""
        line = self.run("scontrol", "-o", "show", "node", self.node).stdout.strip()
        out = {m.group(1): m.group(2) for m in _FIELD.finditer(line)}
        at = line.find(" Reason=")
        if at >= 0:
            out["Reason"] = re.sub(r" \[[^\]]*\]$", "", line[at + 8:].strip())
        return out

    def wait(self, check: Callable[[], object], what: str, timeout: float = 90.0) -> None:
        """Poll ``check()`` until truthy (``RuntimeError`` naming the logs after ``timeout``)."""
        try:
            wait_for(check, what, timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\nslurmd.log:\n{_tail(self.dir / 'slurmd.log')}\n"
                               f"slurmctld.log:\n{_tail(self.dir / 'slurmctld.log')}") from exc

    def start_slurmd(self) -> None:
        """Start slurmd (it runs the health check, then registers) and wait until this slurmd
        has registered: the node responds, in a known state, with a new start time.
        """
        before = self.node_fields().get("SlurmdStartTime")
        subprocess.run([_which("slurmd"), "-f", str(self.conf), "-N", self.node],
                       env=self.env, check=True, timeout=60, capture_output=True)

        def up() -> bool:
            node = self.node_fields()
            flags = node.get("State", "UNKNOWN").split("+")
            return ("NOT_RESPONDING" not in flags and flags[0] != "UNKNOWN"
                    and node.get("SlurmdStartTime") not in (None, "None", before))

        self.wait(up, "slurmd")

    def restart_slurmd(self) -> None:
        """Stop slurmd (SIGTERM to the pid it wrote) and start it again."""
        pid = _pid(self.dir / "slurmd.pid")
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: not _alive(pid), "slurmd exit", 30)
        (self.dir / "slurmd.pid").unlink(missing_ok=True)
        self.start_slurmd()

    def stop(self) -> None:
        """``scontrol shutdown``, then SIGTERM to whatever of ours still runs; munged last."""
        if _alive(_pid(self.dir / "slurmctld.pid") or 0):
            self.run("scontrol", "shutdown", check=False)
        for name in ("slurmd.pid", "slurmctld.pid", "munged.pid"):
            pid = _pid(self.dir / name)
            if pid is None:
                continue
            if name == "munged.pid":
                _terminate(pid)
            try:
                wait_for(lambda p=pid: not _alive(p), name, 10)  # type: ignore[misc]
            except RuntimeError:
                _terminate(pid)
                wait_for(lambda p=pid: not _alive(p), name, 10)  # type: ignore[misc]
        shutil.rmtree(self.dir, ignore_errors=True)


def _terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)


SLURM_CONF = """\
ClusterName=pintest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctl_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.sock
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
Prolog={prolog}
PrologFlags=Alloc
PrologEpilogTimeout=60
HealthCheckProgram={healthcheck}
HealthCheckInterval=3600
{features_plugin}
NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 {node_features}State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def start_slurm(*, prolog: Path, healthcheck: Path, helper: Path | None = None,
                features: tuple[str, ...] = (), node: str = "pinnode",
                on_config: Callable[[Path], None] | None = None) -> SlurmCluster:
    """Start munged, slurmctld and slurmd in a new folder under the temp folder.

    ``prolog`` / ``healthcheck``: the programs slurm.conf names (``HealthCheckInterval`` is an
    hour, so slurmd runs the health check at its start: :meth:`SlurmCluster.restart_slurmd`).
    ``features``: the node's features, reported by ``helper`` through
    ``NodeFeaturesPlugins=node_features/helpers`` when given, else set statically
    (``Feature=``). ``on_config(slurm.conf path)`` runs before any daemon starts (a
    HealthCheckProgram needs to be told where slurm.conf is). Raises ``RuntimeError`` when something does not come up (after stopping
    what did).
    """
    import socket

    base = Path(tempfile.mkdtemp(prefix="pin-slurm-"))
    base.chmod(0o755)  # munged: the socket's folder must be searchable by all
    for sub in ("state", "spool"):
        (base / sub).mkdir()
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = base / "slurm.conf"
    plugin = "NodeFeaturesPlugins=node_features/helpers" if helper else ""
    static = f"Feature={','.join(features)} " if features and not helper else ""
    conf.write_text(SLURM_CONF.format(
        host=socket.gethostname().split(".")[0], ctl_port=free_port(), d_port=free_port(),
        dir=base, prolog=prolog, healthcheck=healthcheck, node=node,
        features_plugin=plugin, node_features=static))
    if helper:
        (base / "helpers.conf").write_text(
            "".join(f"Feature={f} Helper={helper}\n" for f in features) + "ExecTime=60\n")
    if on_config is not None:
        on_config(conf)
    env = {"PATH": _path(), "SLURM_CONF": str(conf), "HOME": str(base), "LANG": "C.UTF-8"}
    cluster = SlurmCluster(dir=base, conf=conf, node=node, env=env)
    try:
        munged = subprocess.run(
            [_which("munged"), f"--socket={base}/munge.sock", f"--key-file={key}",
             f"--pid-file={base}/munged.pid", f"--log-file={base}/munged.log",
             f"--seed-file={base}/munged.seed"], env=env, capture_output=True, text=True,
            timeout=30, check=False)
        if munged.returncode != 0:
            raise RuntimeError(f"munged did not start: {munged.stderr.strip()}\n"
                               f"{_tail(base / 'munged.log')}")
        wait_for(lambda: (base / "munge.sock").exists(), "munged", 30)
        ctld = subprocess.run([_which("slurmctld"), "-f", str(conf), "-i"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        if ctld.returncode != 0:
            raise RuntimeError(f"slurmctld did not start: {ctld.stderr.strip()}\n"
                               f"{_tail(base / 'slurmctld.log')}")
        cluster.wait(lambda: cluster.run("scontrol", "ping", check=False).returncode == 0,
                     "slurmctld", 60)
        cluster.start_slurmd()
    except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
        cluster.stop()
        raise RuntimeError(str(exc)) from exc
    return cluster
