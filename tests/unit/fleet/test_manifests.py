"""deploy/kubernetes: every manifest against the Kubernetes API schema of its kind
(kubernetes-validate, strict), the NPD plugin config as NPD reads it, the paths the pieces
share, and the DaemonSet's loop and the NPD script run for real on the recorded host."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from pinning.fleet.nfd import NAMESPACE, check_feature_file
from pinning.fleet.npd import DEFAULT_MAX_OUTPUT
from tests.support.cli import pin
from tests.support.hosts import MI300X
from tests.support.paths import ROOT

DEPLOY = ROOT / "deploy" / "kubernetes"
# The oldest and the newest Kubernetes release the installed kubernetes-validate has schemas
# for that the manifests are meant to work on.
VERSIONS = ("1.30.0", "1.37.0")
GO_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+")
LOOP_LOCK = "/etc/pin/lock/pin.lock"


def docs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return found


def one(kind: str, name: str) -> dict[str, Any]:
    hits = [d for _f, d in docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, (kind, name)
    return hits[0]


def npd_config() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        one("ConfigMap", "pin-npd-plugin")["data"]["pin-lock-drift.json"])
    return data


def seconds(duration: str) -> float:
    assert GO_DURATION.fullmatch(duration), duration
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * unit[u] for n, _f, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|ms|s|m|h)",
                                                              duration))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_validates_strictly(version: str) -> None:
    kinds = set()
    for name, doc in docs():
        kubernetes_validate.validate(doc, version, strict=True)
        kinds.add((name, doc["kind"]))
    assert kinds == {("namespace.yaml", "Namespace"), ("daemonset.yaml", "DaemonSet"),
                     ("npd-plugin-config.yaml", "ConfigMap"),
                     ("init-container-example.yaml", "Deployment")}


def test_the_validator_catches_a_misspelt_field() -> None:
    ds = json.loads(json.dumps(one("DaemonSet", "pin-verify")))
    ds["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, VERSIONS[-1], strict=True)


def test_kustomization_lists_the_manifests_and_the_image_placeholder() -> None:
    k = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert k["kind"] == "Kustomization"
    assert all((DEPLOY / r).is_file() for r in k["resources"])
    assert set(k["resources"]) == {n for n, _d in docs()} - {"init-container-example.yaml"}
    assert [i["name"] for i in k["images"]] == ["pin"]
    gen = {g["name"]: g for g in k["configMapGenerator"]}
    assert gen["pin-lock"]["files"] == ["pin.lock"] and gen["pin-lock"]["namespace"] == "pin-system"


def test_npd_configmap_namespace_is_set_in_one_place_by_kustomize(tmp_path: Path) -> None:
    k = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    (patch,) = [p for p in k["patches"] if p["target"] == {"kind": "ConfigMap",
                                                          "name": "pin-npd-plugin"}]
    (op,) = yaml.safe_load(patch["patch"])
    assert op["op"] == "replace" and op["path"] == "/metadata/namespace"
    # The manifest alone (kubectl apply -f) and kustomize agree on NPD's namespace.
    assert op["value"] == one("ConfigMap", "pin-npd-plugin")["metadata"]["namespace"]
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (kustomize) is not installed")
    shutil.copytree(DEPLOY, tmp_path / "k")
    (tmp_path / "k" / "pin.lock").write_text("# placeholder\n")
    text = (tmp_path / "k" / "kustomization.yaml").read_text()
    (tmp_path / "k" / "kustomization.yaml").write_text(
        text.replace(f"value: {op['value']}", "value: monitoring"))
    built = subprocess.run([kubectl, "kustomize", str(tmp_path / "k")], capture_output=True,
                           text=True, check=False, timeout=120)
    assert built.returncode == 0, built.stderr
    where = {(d["kind"], d["metadata"]["name"]): d["metadata"].get("namespace")
             for d in yaml.safe_load_all(built.stdout) if d}
    assert where[("ConfigMap", "pin-npd-plugin")] == "monitoring"
    assert where[("DaemonSet", "pin-verify")] == "pin-system"
    locks = [ns for (_kind, name), ns in where.items() if name.startswith("pin-lock-")]
    assert locks == ["pin-system"]  # the generated pin-lock-<hash> stays with pin
    for d in yaml.safe_load_all(built.stdout):
        if d and d["kind"] != "Namespace":
            kubernetes_validate.validate(d, VERSIONS[-1], strict=True)


def test_npd_config_has_what_npd_reads() -> None:
    c = npd_config()
    assert c["plugin"] == "custom" and c["source"]
    g = c["pluginConfig"]
    assert seconds(g["invoke_interval"]) >= 10 and seconds(g["timeout"]) > 0
    assert g["max_output_length"] == DEFAULT_MAX_OUTPUT
    assert [x["type"] for x in c["conditions"]] == ["PinLockDrift"]
    assert all(x["reason"] and x["message"] for x in c["conditions"])
    (rule,) = c["rules"]
    assert rule["type"] == "permanent" and rule["condition"] == "PinLockDrift"
    assert rule["reason"] and isinstance(rule["args"], list)
    assert seconds(rule["timeout"]) <= seconds(g["timeout"])  # NPD's Validate refuses more
    # The rule's script is in the same ConfigMap, mounted at /config/pin (README).
    folder, script = rule["path"].rsplit("/", 1)
    assert folder == "/config/pin" and script in one("ConfigMap", "pin-npd-plugin")["data"]


def pod(kind: str, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(kind, name)["spec"]["template"]["spec"]
    return spec


def mounts(spec: dict[str, Any], container: dict[str, Any]) -> dict[str, tuple[dict[str, Any],
                                                                                bool]]:
    volumes = {v["name"]: v for v in spec["volumes"]}
    return {m["mountPath"]: (volumes[m["name"]], bool(m.get("readOnly")))
            for m in container["volumeMounts"]}


def test_daemonset_paths_agree() -> None:
    spec = pod("DaemonSet", "pin-verify")
    (c,) = spec["containers"]
    loop = c["args"][0]
    got = mounts(spec, c)
    assert f"pin verify {LOOP_LOCK} --root /host --chroot" in loop
    assert got["/etc/pin/lock"][0]["configMap"]["name"] == "pin-lock"
    # The host's / read-only (the tools run in it with --chroot: privileged); only NFD's
    # folder and pin's status folder are written.
    host_root, ro = got["/host"]
    assert ro and host_root["hostPath"]["path"] == "/"
    assert c["securityContext"]["privileged"] is True
    assert all(ro for path, (_v, ro) in got.items()
               if path not in ("/host-features.d", "/var/lib/pin", "/tmp"))
    features_d, ro = got["/host-features.d"]
    assert not ro and features_d["hostPath"]["path"] == (
        "/etc/kubernetes/node-feature-discovery/features.d")
    assert "-o /host-features.d/pin" in loop
    state, ro = got["/var/lib/pin"]
    assert not ro and state["hostPath"]["path"] == "/var/lib/pin"
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert int(env["PIN_NFD_EXPIRY"]) > int(env["PIN_INTERVAL"])  # labels outlive one run
    assert f"--max-output-length {npd_config()['pluginConfig']['max_output_length']}" in loop
    assert c["securityContext"]["readOnlyRootFilesystem"] and "/tmp" in got


def _loop(lock: Path, features_d: Path, state: Path) -> str:
    """The DaemonSet's loop run once on the recorded MI300X host, with local paths."""
    (c,) = pod("DaemonSet", "pin-verify")["containers"]
    host = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    loop: str = (c["args"][0].replace(LOOP_LOCK, str(lock))
                 .replace("--root /host --chroot", " ".join(host))
                 .replace("/host-features.d", str(features_d))
                 .replace("/var/lib/pin", str(state))
                 .replace('sleep "$PIN_INTERVAL"', "break"))
    return loop


def test_daemonset_reports_to_pin_serve_when_asked(tmp_path: Path) -> None:
    """With PIN_REPORT_URL the loop reports each check to a real pin serve, node-scoped,
    with the Secret's token; the verdict on the node is unchanged.
    """
    from tests.support.serve import admin_token, mi300x_lock_bytes, serving

    lock = tmp_path / "pin.lock"
    lock.write_bytes(mi300x_lock_bytes())
    features_d, state, secret = tmp_path / "features.d", tmp_path / "state", tmp_path / "tok"
    for folder in (features_d, state):
        folder.mkdir()
    db = f"sqlite:///{tmp_path / 'pin.db'}"
    secret.write_text(admin_token(db, "report", "node-1") + "\n")
    secret.chmod(0o600)
    loop = _loop(lock, features_d, state).replace("/etc/pin/report/token", str(secret))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "pin").write_text(f"#!/bin/sh\nexec {sys.executable} -m pinning \"$@\"\n")
    (bindir / "pin").chmod(0o755)
    with serving(db) as (url, admin, _proc):
        import requests

        pushed = requests.post(f"{url}/api/v1/locks", data=lock.read_bytes(), timeout=30,
                               headers={"Authorization": f"Bearer {admin}",
                                        "Content-Type": "application/toml"})
        assert pushed.status_code == 201, pushed.text
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "PIN_NFD_EXPIRY": "900",
               "PIN_INTERVAL": "1", "NODE_NAME": "node-1", "HOME": str(tmp_path),
               "PYTHONPATH": os.pathsep.join(sys.path), "PIN_REPORT_URL": url,
               "PIN_REPORT_GROUP": "gpu-nodes"}
        done = subprocess.run(["/bin/sh", "-c", loop], capture_output=True, text=True,
                              env=env, timeout=300, check=False)
        assert done.returncode == 0, done
        assert done.stdout.startswith("node-1 exit=0 pin: matches lock sha256:")
        assert f"reported to {url}: match" in done.stderr
        host = requests.get(f"{url}/api/v1/hosts/node-1", timeout=30).json()
        assert host["host"]["result"] == "match" and host["host"]["group"] == "gpu-nodes"
        assert host["host"]["lock_hash"] == pushed.json()["content_hash"]


def test_init_container_example_gates_on_pins_labels() -> None:
    spec = pod("Deployment", "gpu-app")
    (init,) = spec["initContainers"]
    assert init["command"][:5] == ["pin", "verify", LOOP_LOCK, "--root", "/host"]
    assert all(ro for path, (_v, ro) in mounts(spec, init).items() if path != "/tmp")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {e["key"]: e["values"] for t in terms["nodeSelectorTerms"]
            for e in t["matchExpressions"]}
    assert keys == {f"{NAMESPACE}/result": ["match"], f"{NAMESPACE}/lock": ["LOCK_DIGEST12"]}


def run_script(state: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = state.parent / "pin-npd.sh"
    script.write_text(one("ConfigMap", "pin-npd-plugin")["data"]["pin-npd.sh"])
    script.chmod(0o755)
    return subprocess.run([str(script)], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "PIN_STATUS": str(state),
                               **(env or {})})


@pytest.mark.parametrize(("content", "code", "line"), [
    ("{now} 0\npin: matches lock sha256:0123456789ab\n", 0, "pin: matches lock"),
    ("{now} 1\npin: firmware.blocks[0] 1!=2\n", 1, "pin: firmware.blocks[0] 1!=2"),
    ("{now} 2\npin: unknown: x\n", 2, "pin: unknown: x"),
    ("{now} 7\n\n", 2, ""),
    ("{old} 0\npin: matches\n", 2, "pin: unknown: last result is older"),
    ("garbage\nline\n", 2, "pin: unknown:"),
    (None, 2, "pin: unknown: no result"),
])
def test_npd_script_reports_the_daemonsets_verdict(tmp_path: Path, content: str | None,
                                                   code: int, line: str) -> None:
    state = tmp_path / "npd"
    if content is not None:
        now = int(time.time())
        state.write_text(content.format(now=now, old=now - 3600))
    r = run_script(state)
    assert r.returncode == code, r
    assert r.stdout.startswith(line) and r.stdout.count("\n") == 1


def test_daemonset_loop_and_npd_script_on_the_recorded_host(tmp_path: Path) -> None:
    lock = tmp_path / "pin.lock"
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(lock)).returncode == 0
    host = ["--root", str(MI300X / "root"), "--replay", str(MI300X / "commands.toml")]
    assert pin("freeze", str(lock), *host).returncode == 0
    features_d, state = tmp_path / "features.d", tmp_path / "state"
    features_d.mkdir()
    state.mkdir()
    loop = _loop(lock, features_d, state)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "pin").write_text(f"#!/bin/sh\nexec {sys.executable} -m pinning \"$@\"\n")
    (bindir / "pin").chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "PIN_NFD_EXPIRY": "900", "PIN_INTERVAL": "1",
           "NODE_NAME": "node-1", "HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(["/bin/sh", "-c", loop], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done
    assert done.stdout.startswith("node-1 exit=0 pin: matches lock sha256:")
    text = (features_d / "pin").read_text()
    assert check_feature_file(text) == [] and "pin.dev/result=match" in text
    assert sorted(p.name for p in state.iterdir()) == ["npd"]
    r = run_script(state / "npd")
    assert r.returncode == 0 and r.stdout.startswith("pin: matches lock sha256:")
    # With pin on PATH the script runs pin itself.
    shutil.copy(lock, tmp_path / "lock-for-script")
    direct = run_script(state / "absent", {
        "PATH": env["PATH"], "PYTHONPATH": env["PYTHONPATH"], "HOME": str(tmp_path),
        "PIN_LOCK": str(tmp_path / "lock-for-script"), "PIN_ROOT": str(MI300X / "root")})
    same = pin("verify", str(tmp_path / "lock-for-script"), "--root", str(MI300X / "root"),
               "--format", "npd", "--max-output-length", "80")
    assert (direct.returncode, direct.stdout) == (same.returncode, same.stdout)
    assert direct.stdout.startswith("pin: ") and direct.stdout.count("\n") == 1
