"""The container shim's pure parts: GPU device options from a (fake) /dev tree, the spec
file, the shim's argv and argument errors, the image identity and leftover removal against
a fake engine client. The real engine runs in tests/integration/test_accept_image.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker.errors
import docker.types
import pytest

from pinning.accept.container import (
    ContainerSpec,
    main,
    new_name,
    read_spec,
    wrap_argv,
    write_spec,
)
from pinning.accept.engine import ACCEPT_LABEL, device_options, image_identity, remove_leftovers
from pinning.errors import BuildError, UsageError

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
IMAGE_ID = "sha256:" + "0f" * 32


def _node(path: Path, gid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    if os.geteuid() == 0:
        os.chown(path, -1, gid)


def _dev_tree(root: Path) -> dict[str, int]:
    """A fake /dev with kfd, two dri nodes and a by-path folder; the gid of each node."""
    base = os.getgid()
    gids = {"kfd": base, "card0": base, "renderD128": base}
    if os.geteuid() == 0:  # as root the nodes can belong to distinct groups
        gids = {"kfd": 44, "card0": 44, "renderD128": 105}
    _node(root / "dev" / "kfd", gids["kfd"])
    _node(root / "dev" / "dri" / "card0", gids["card0"])
    _node(root / "dev" / "dri" / "renderD128", gids["renderD128"])
    (root / "dev" / "dri" / "by-path").mkdir()
    return gids


def test_amd_passes_kfd_and_every_dri_node_with_their_groups(tmp_path: Path) -> None:
    gids = _dev_tree(tmp_path)
    opts = device_options("amd", tmp_path)
    dev = tmp_path / "dev"
    assert opts["devices"] == [f"{dev}/kfd:/dev/kfd:rwm",
                               f"{dev}/dri/card0:/dev/dri/card0:rwm",
                               f"{dev}/dri/renderD128:/dev/dri/renderD128:rwm"]
    assert opts["group_add"] == [str(g) for g in sorted(set(gids.values()))]
    assert set(opts) == {"devices", "group_add"}


def test_amd_without_dri_still_passes_kfd(tmp_path: Path) -> None:
    _node(tmp_path / "dev" / "kfd", os.getgid())
    opts = device_options("amd", tmp_path)
    assert opts == {"devices": [f"{tmp_path}/dev/kfd:/dev/kfd:rwm"],
                    "group_add": [str(os.getgid())]}


def test_amd_without_kfd_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "dev" / "dri").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"dev/kfd does not exist") as err:
        device_options("amd", tmp_path)
    assert err.value.exit_code == 2


def test_nvidia_requests_every_gpu_and_cpu_passes_nothing(tmp_path: Path) -> None:
    opts = device_options("nvidia", tmp_path)
    assert list(opts) == ["device_requests"]
    (req,) = opts["device_requests"]
    assert isinstance(req, docker.types.DeviceRequest)
    assert req.count == -1 and req.capabilities == [["gpu"]]
    assert device_options("cpu", tmp_path) == {}


def _spec(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"image": "127.0.0.1:5000/pin/base@" + DIGEST,
                            "name": "pin-accept-0123456789abcdef", "vendor": "cpu",
                            "mounts": [{"path": "/tmp/work"},
                                       {"path": "/opt/harness", "read-only": True}],
                            "workdir": "/tmp/work", "env": ["HF_HOME"]}
    data.update(over)
    return data


def test_spec_round_trips_through_its_json_file(tmp_path: Path) -> None:
    spec = ContainerSpec.model_validate(_spec())
    path = tmp_path / "spec.json"
    write_spec(spec, path)
    raw = json.loads(path.read_text())
    assert raw["mounts"][1] == {"path": "/opt/harness", "read-only": True}
    assert read_spec(path) == spec
    assert spec.mounts[0].read_only is False and spec.engine is None


@pytest.mark.parametrize(("over", "field"), [
    ({"vendor": "intel"}, "vendor"),
    ({"name": "-bad name"}, "name"),
    ({"mounts": [{"path": "relative/dir"}]}, "mounts"),
    ({"mounts": [{"path": "/tmp/../etc"}]}, "mounts"),
    ({"mounts": [{"path": "/"}]}, "mounts"),
    ({"mounts": [{"path": "/a"}, {"path": "/a", "read-only": True}]}, "listed twice"),
    ({"workdir": "work"}, "workdir"),
    ({"env": ["NOT-A-NAME"]}, "env"),
    ({"image": "img\nFROM evil"}, "image"),
    ({"network": "host"}, "network"),
])
def test_bad_specs_are_usage_errors_naming_the_field(tmp_path: Path, over: dict[str, Any],
                                                      field: str) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(**over)))
    with pytest.raises(UsageError, match=field) as err:
        read_spec(path)
    assert str(path) in err.value.message


def test_unreadable_or_non_json_spec_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read it"):
        read_spec(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UsageError, match="bad.json: not JSON"):
        read_spec(tmp_path / "bad.json")


def test_new_names_are_valid_and_distinct() -> None:
    a, b = new_name(), new_name()
    assert a != b and a.startswith("pin-accept-") and len(a) == len("pin-accept-") + 16
    assert ContainerSpec.model_validate(_spec(name=a)).name == a


def test_wrap_argv_puts_the_shim_in_front() -> None:
    argv = ["python3", "-c", "print(1)"]
    assert wrap_argv(Path("/w/spec.json"), argv) == [
        sys.executable, "-m", "pinning.accept.container", "--spec", "/w/spec.json", "--",
        *argv]


@pytest.mark.parametrize(("args", "message"), [
    (["--spec", "s.json"], "missing: put it after `--`"),
    (["--spec", "s.json", "--"], "after `--` is empty"),
    (["--", "true"], "--spec SPEC.json is required"),
    (["--spec", "--", "true"], "--spec needs a file"),
    (["--spec=", "--", "true"], "--spec SPEC.json is required"),
    (["--spec", "a", "--spec", "b", "--", "true"], "given twice"),
    (["--network", "host", "--", "true"], "Unknown argument --network"),
])
def test_shim_argument_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str],
                                     message: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Usage: python -m pinning.accept.container" in err


def test_shim_with_a_bad_spec_or_missing_mount_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(vendor="gpu")))
    assert main(["--spec", str(path), "--", "true"]) == 2
    assert "vendor" in capsys.readouterr().err
    path.write_text(json.dumps(_spec(mounts=[{"path": str(tmp_path / "nope")}])))
    assert main([f"--spec={path}", "--", "true"]) == 2
    assert "nope does not exist on this host" in capsys.readouterr().err


def test_shim_without_an_engine_exits_8_saying_how_to_point_at_one(tmp_path: Path) -> None:
    # A program, not main(): docker-py leaks the socket of a failed connect (a warning here).
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_spec(mounts=[], workdir=None,
                                     engine=f"unix://{tmp_path}/no/docker.sock")))
    out = subprocess.run(wrap_argv(path, ["true"]), capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 8, out.stderr
    assert "does not answer" in out.stderr and "DOCKER_HOST=" in out.stderr
    assert "--engine" in out.stderr and "Traceback" not in out.stderr


def test_the_module_runs_as_a_program() -> None:
    out = subprocess.run([sys.executable, "-m", "pinning.accept.container", "--", "true"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2 and "--spec SPEC.json is required" in out.stderr


def test_environment_passes_pin_variables_and_named_ones() -> None:
    from pinning.accept.container import _environment

    spec = ContainerSpec.model_validate(_spec(env=["HF_HOME", "UNSET_ONE", "PIN_STEPS"]))
    env = {"PIN_STEPS": "20", "PIN_RESUME": "0", "HF_HOME": "/h", "HOME": "/root",
           "PINNED": "x"}
    assert _environment(spec, env) == {"PIN_STEPS": "20", "PIN_RESUME": "0", "HF_HOME": "/h",
                                       "HOME": "/tmp/work"}  # not the host's /root
    mounted = ContainerSpec.model_validate(_spec(mounts=[
        {"path": "/opt/harness", "read-only": True}, {"path": "/tmp/work"}]))
    assert _environment(mounted, {})["HOME"] == "/tmp/work"
    passed_on = ContainerSpec.model_validate(_spec(env=["HOME"], mounts=[{"path": "/tmp/w"}]))
    assert _environment(passed_on, {"HOME": "/home/me"})["HOME"] == "/home/me"


class _Image:
    def __init__(self, repo_digests: list[str]) -> None:
        self.id = IMAGE_ID
        self.attrs = {"RepoDigests": repo_digests}


class _Images:
    def __init__(self, known: dict[str, _Image]) -> None:
        self.known = known

    def get(self, ref: str) -> _Image:
        if ref not in self.known:
            raise docker.errors.ImageNotFound(f"No such image: {ref}")
        return self.known[ref]


class _Client:
    def __init__(self, images: dict[str, _Image] | None = None,
                 containers: dict[str, _Container] | None = None) -> None:
        self.images = _Images(images or {})
        self.containers = _Containers(containers or {})


def test_identity_is_the_digest_the_ref_names() -> None:
    ref = f"127.0.0.1:5000/pin/trial@{DIGEST}"
    client = _Client({ref: _Image([f"127.0.0.1:5000/pin/trial@{DIGEST}"])})
    digest, kind, reason = image_identity(client, ref)
    assert (digest, kind) == (DIGEST, "manifest") and "names its manifest digest" in reason


def test_identity_comes_from_repo_digests_of_the_same_repository() -> None:
    img = _Image([f"127.0.0.1:5000/other@{OTHER}", f"127.0.0.1:5000/pin/trial@{DIGEST}"])
    client = _Client({"127.0.0.1:5000/pin/trial:t1": img, "python:3.12": _Image(
        [f"python@{DIGEST}"]), "docker.io/library/python:3.12": _Image([f"python@{DIGEST}"])})
    assert image_identity(client, "127.0.0.1:5000/pin/trial:t1")[:2] == (DIGEST, "manifest")
    assert image_identity(client, "python:3.12")[:2] == (DIGEST, "manifest")
    assert image_identity(client, "docker.io/library/python:3.12")[:2] == (DIGEST,
                                                                           "manifest")


def test_identity_falls_back_to_the_image_id() -> None:
    client = _Client({"pin-build:abc": _Image([]),
                      "127.0.0.1:5000/pin/trial:t1": _Image([f"127.0.0.1:5000/x@{DIGEST}"]),
                      "r.example/a:1": _Image([f"r.example/a@{DIGEST}", f"r.example/a@{OTHER}"])})
    digest, kind, reason = image_identity(client, "pin-build:abc")
    assert (digest, kind) == (IMAGE_ID, "image-id") and "no registry manifest digest" in reason
    assert image_identity(client, "127.0.0.1:5000/pin/trial:t1")[:2] == (IMAGE_ID, "image-id")
    digest, kind, reason = image_identity(client, "r.example/a:1")
    assert kind == "image-id" and "2 manifest digests" in reason


def test_identity_of_a_missing_image_says_to_pull_or_build_it() -> None:
    with pytest.raises(UsageError, match="not in the Docker Engine") as err:
        image_identity(_Client(), "127.0.0.1:5000/pin/gone:t1")
    assert err.value.exit_code == 2 and "pull" in err.value.hint.lower()
    assert "pin build" in err.value.hint


class _Container:
    def __init__(self, labels: dict[str, str], fail: bool = False) -> None:
        self.labels = labels
        self.removed = False
        self.fail = fail

    def remove(self, force: bool = False) -> None:
        if self.fail:
            raise docker.errors.APIError("engine went away")
        assert force
        self.removed = True


class _Containers:
    def __init__(self, known: dict[str, _Container]) -> None:
        self.known = known

    def get(self, name: str) -> _Container:
        if name not in self.known:
            raise docker.errors.NotFound(f"No such container: {name}")
        return self.known[name]


def test_remove_leftovers_removes_only_labelled_containers() -> None:
    ours, theirs = _Container({ACCEPT_LABEL: "1"}), _Container({"app": "db"})
    client = _Client(containers={"pin-accept-a": ours, "pin-accept-b": theirs})
    assert remove_leftovers(client, ["pin-accept-a", "pin-accept-b", "gone"]) == [
        "pin-accept-a"]
    assert ours.removed and not theirs.removed


def test_remove_leftovers_engine_failure_is_a_build_error() -> None:
    client = _Client(containers={"pin-accept-a": _Container({ACCEPT_LABEL: "1"}, fail=True)})
    with pytest.raises(BuildError, match="cannot remove container pin-accept-a"):
        remove_leftovers(client, ["pin-accept-a"])
