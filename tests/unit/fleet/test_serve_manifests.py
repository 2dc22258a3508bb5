"""deploy/kubernetes/serve: pin serve's manifests against the Kubernetes API schema of their
kind (kubernetes-validate, strict, as the DaemonSet's), the pieces agreeing with each other
(two replicas behind the Service, the database URL and password from Secret pin-serve-db
only, a restricted pod everywhere), the migration Job's and the wait's scripts run for real
on SQLite and PostgreSQL, and deploy/image/build.py's rewrite of the image reference that
kustomize then applies to the DaemonSet and the service alike."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.paths import ROOT
from tests.support.serve import image_builder, manifest_argv

SERVE = ROOT / "deploy" / "kubernetes" / "serve"
VERSIONS = ("1.30.0", "1.37.0")  # as tests/unit/fleet/test_manifests.py
# A digest for the rewrite test only: sha256 of the empty string, not an image of pin's.
EMPTY_SHA256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def docs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(SERVE.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            found += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if d]
    return found


def one(kind: str) -> dict[str, Any]:
    (hit,) = [d for _n, d in docs() if d["kind"] == kind]
    return hit


def containers(kind: str) -> list[dict[str, Any]]:
    spec = one(kind)["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_serve_manifest_validates_strictly(version: str) -> None:
    kinds = set()
    for name, doc in docs():
        kubernetes_validate.validate(doc, version, strict=True)
        kinds.add((name, doc["kind"]))
    assert kinds == {("namespace.yaml", "Namespace"), ("migrate-job.yaml", "Job"),
                     ("deployment.yaml", "Deployment"), ("service.yaml", "Service")}


def test_the_validator_catches_a_misspelt_field_in_the_deployment() -> None:
    dep = one("Deployment")
    dep["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, VERSIONS[-1], strict=True)


def test_two_replicas_behind_the_service_and_a_rollout_that_keeps_serving() -> None:
    dep, svc = one("Deployment"), one("Service")
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    (serve,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in serve["ports"]}
    (port,) = svc["spec"]["ports"]
    assert ports[port["targetPort"]] == 8470
    assert serve["command"] == ["pin"] and serve["args"][:1] == ["serve"]
    args = serve["args"]
    assert args[args.index("--port") + 1] == "8470" and args[args.index("--host") + 1] == "0.0.0.0"
    assert serve["readinessProbe"]["httpGet"]["path"] == "/api/v1/health"
    assert {d["metadata"]["namespace"] for _n, d in docs() if d["kind"] != "Namespace"} == {
        one("Namespace")["metadata"]["name"]}


def test_database_url_and_password_come_from_the_secret_only() -> None:
    for kind in ("Job", "Deployment"):
        for c in containers(kind):
            env = {e["name"]: e for e in c["env"]}
            for name, key in (("PIN_DB_URL", "url"), ("PGPASSWORD", "password")):
                assert "value" not in env[name], (kind, c["name"], name)
                ref = env[name]["valueFrom"]["secretKeyRef"]
                assert (ref["name"], ref["key"]) == ("pin-serve-db", key)
            assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"]["optional"] is True
    (serve,) = one("Deployment")["spec"]["template"]["spec"]["containers"]
    assert serve["args"][serve["args"].index("--db") + 1] == "$(PIN_DB_URL)"  # kubelet expands
    assert "Secret" not in {d["kind"] for _n, d in docs()}  # no secret is committed


def test_every_pod_meets_pod_security_restricted() -> None:
    assert one("Namespace")["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"] == "restricted"
    for kind in ("Job", "Deployment"):
        pod = one(kind)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert pod["automountServiceAccountToken"] is False
        for c in containers(kind):
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"]
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert c["image"] == "pin"  # set by kustomize's images: entry


def _run(manifest: str, container: str, url: str, **flags: str
         ) -> subprocess.CompletedProcess[str]:
    """Run a container's command from the manifest as its pod would (``pin`` is this venv's)."""
    argv = manifest_argv(manifest, container, url, **flags)
    assert argv[0] == "pin"
    return subprocess.run([sys.executable, "-m", "pinning", *argv[1:]], capture_output=True,
                          text=True, check=False, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(sys.path),
                               "HOME": os.environ.get("HOME", "/tmp")})


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pin.db'}"
        return
    from tests.support.postgres import postgres_for_test

    server = postgres_for_test()
    try:
        yield server.new_database()
    finally:
        server.stop()


def test_the_pods_wait_for_the_job_that_migrates(db_url: str) -> None:
    """Before the Job the wait fails (a pod would not start pin serve); the Job migrates to
    the revision pin ships; then the wait passes and pin serve opens the database as is."""
    from pinning.serve.storage import Store
    from pinning.serve.storage.migrate import head

    want = head()
    before = _run("deployment.yaml", "wait-for-migration", db_url, wait="0")
    assert before.returncode == 2, before
    assert f"The database is not migrated; this pin needs schema revision {want}." \
        in before.stderr and "Traceback" not in before.stderr
    job = _run("migrate-job.yaml", "migrate", db_url)
    assert job.returncode == 0, job
    assert job.stdout == f"pin: database migrated to {want}\n"
    after = _run("deployment.yaml", "wait-for-migration", db_url, wait="0")
    assert (after.returncode, after.stdout) == (0, f"pin: database at {want}\n")
    store = Store(db_url, migrate=False)
    try:
        assert store.revision() == want
    finally:
        store.close()
    again = _run("migrate-job.yaml", "migrate", db_url)  # a second run changes nothing
    assert (again.returncode, again.stdout) == (0, f"pin: database already at {want}; nothing to do\n")


def test_the_job_fails_with_pins_message_on_a_bad_url() -> None:
    bad = _run("migrate-job.yaml", "migrate", "mysql://nowhere/pin")
    assert bad.returncode == 2 and bad.stderr.startswith("pin: error: ") and not bad.stdout
    assert "Traceback" not in bad.stderr


def test_the_build_writes_its_reference_into_both_kustomizations(tmp_path: Path) -> None:
    from pinning.errors import BuildError

    tree = tmp_path / "k"
    shutil.copytree(ROOT / "deploy" / "kubernetes", tree)
    (tree / "pin.lock").write_text("# placeholder\n")
    ref = f"127.0.0.1:5000/pin@{EMPTY_SHA256}"
    build = image_builder()
    for k in (tree / "kustomization.yaml", tree / "serve" / "kustomization.yaml"):
        before = k.read_text()
        build.set_image(k, ref)
        text = k.read_text()
        assert yaml.safe_load(text)["images"] == [
            {"name": "pin", "newName": "127.0.0.1:5000/pin", "digest": EMPTY_SHA256}]
        kept = [line for line in before.splitlines() if line.startswith("#")]
        assert kept == [line for line in text.splitlines() if line.startswith("#")]
        build.set_image(k, ref)  # again: the same file
        assert k.read_text() == text
    (tree / "serve" / "kustomization.yaml").write_text("resources: []\n")
    with pytest.raises(BuildError, match="no `images:` entry"):
        build.set_image(tree / "serve" / "kustomization.yaml", ref)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (kustomize) is not installed")
    shutil.copy(SERVE / "kustomization.yaml", tree / "serve" / "kustomization.yaml")
    build.set_image(tree / "serve" / "kustomization.yaml", ref)
    for folder in (tree, tree / "serve"):
        built = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True,
                               text=True, check=False, timeout=120)
        assert built.returncode == 0, built.stderr
        images = set()
        for d in yaml.safe_load_all(built.stdout):
            if d and d["kind"] in ("DaemonSet", "Deployment", "Job"):
                kubernetes_validate.validate(d, VERSIONS[-1], strict=True)
                spec = d["spec"]["template"]["spec"]
                images |= {c["image"] for c in [*spec.get("initContainers", []),
                                                *spec["containers"]]}
        assert images == {ref}


def test_migrate_check_creates_no_file_and_wait_goes_with_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    check = _run("deployment.yaml", "wait-for-migration", url, wait="0")
    assert check.returncode == 2 and "not migrated" in check.stderr
    assert not (tmp_path / "none.db").exists()
    assert _run("migrate-job.yaml", "migrate", url).returncode == 0
    both = subprocess.run([sys.executable, "-m", "pinning", "serve", "migrate", "--db", url,
                           "--wait", "5"], capture_output=True, text=True, check=False)
    assert both.returncode == 2 and "it goes with --check" in both.stderr
