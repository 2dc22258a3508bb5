"""pin's own image (deploy/image/Dockerfile, pin[serve]) built by deploy/image/build.py (what
`make image` runs) on the private engine with the network off, twice from scratch: the same
digest both times, the reference written into the kustomizations, and the image runs pin and
the migration Job's and the wait's scripts of deploy/kubernetes/serve as their pods do (as
nobody, read-only root, no network)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.components import BaseImage, Engine, RegistryProc
from tests.support.paths import ROOT
from tests.support.serve import image_builder, manifest_argv

pytestmark = pytest.mark.docker


def _build(engine: Engine, registry: RegistryProc, wheels: Path, source: Path,
           kustomizations: list[Path]) -> str:
    argv = [sys.executable, str(ROOT / "deploy" / "image" / "build.py"), "--registry",
            registry.url, "--engine", engine.url, "--wheels", str(wheels), "--source",
            str(source)]
    for k in kustomizations:
        argv += ["--kustomization", str(k)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    ref = done.stdout.strip()
    assert ref.startswith(f"{registry.host}/pin@sha256:") and len(ref.split("@")[1]) == 71
    return ref


def _build_tags(dockerd: Engine) -> set[str]:
    """The engine's ``pin-build:`` tags (what a build leaves unless it removes it)."""
    return {t for i in dockerd.client.images.list() for t in i.tags
            if t.startswith("pin-build:")}


def test_pin_image_builds_to_the_same_digest_and_runs_the_jobs(
        dockerd: Engine, registry: RegistryProc, base_image: BaseImage, tmp_path: Path) -> None:
    tree = tmp_path / "k"
    shutil.copytree(ROOT / "deploy" / "kubernetes", tree)
    kustomizations = [tree / "kustomization.yaml", tree / "serve" / "kustomization.yaml"]
    # One copy of the source for both runs (the checkout may change in between); each run
    # builds pin's wheel from it again.
    source = image_builder().source_copy(tmp_path / "src")
    before = _build_tags(dockerd)  # the engine is shared: what earlier tests left stays
    first = _build(dockerd, registry, tmp_path / "wheels", source, kustomizations)
    second = _build(dockerd, registry, tmp_path / "wheels", source, [])
    assert second == first  # rebuilt from scratch (no cache, engine images removed): same bytes
    name, digest = first.split("@")
    for k in kustomizations:
        assert yaml.safe_load(k.read_text())["images"] == [
            {"name": "pin", "newName": name, "digest": digest}]
    assert _build_tags(dockerd) == before
    out = dockerd.client.containers.run(first, ["--version"], network_mode="none", remove=True)
    assert out.decode().startswith("pin, version ")
    config = dockerd.client.api.inspect_image(first)["Config"]
    assert config["Entrypoint"] == ["pin"] and config["User"] == "65534:65534"
    # The wait (fails: not migrated), the Job, the wait again, on a SQLite file in the pod's
    # /tmp, with the command lines the manifests give.
    url = "sqlite:////tmp/pin.db"
    wait = shlex.join(manifest_argv("deployment.yaml", "wait-for-migration", url, wait="0"))
    job = shlex.join(manifest_argv("migrate-job.yaml", "migrate", url))
    run = (f"set -e; {wait} 2>/dev/null && exit 9 || true; {job}; {wait}; "
           f"pin serve token list --db {url} --format json")
    logs = dockerd.client.containers.run(
        first, ["-c", run], entrypoint=["/bin/sh"], network_mode="none", remove=True,
        read_only=True, tmpfs={"/tmp": ""}, user="65534:65534", environment={"HOME": "/tmp"})
    lines = logs.decode().splitlines()
    assert lines[0].startswith("pin: database migrated to ")
    assert lines[1] == "pin: database at " + lines[0].removeprefix("pin: database migrated to ")
    assert json.loads("\n".join(lines[2:])) is not None  # pin serve's own imports all work
