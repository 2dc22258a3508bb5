"""pin build with a hostile lock written by hand (its content hash recomputed, so that only
validation can stop it): exit 5 naming the field, no image built, nothing pushed, the lock
untouched. And the text a valid lock may carry ($, quotes, backticks) reaches the image as
text: nothing it spells runs."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import tomlkit

from pinning.lockfile.io import content_hash, lock_json, read_lock
from pinning.oci.registry import fetch_docs
from tests.support.components import WHEELS, BaseImage, Engine, RegistryProc, small_lock

pytestmark = pytest.mark.docker

REPO = "pin/hostile"
Edit = Callable[[dict[str, Any]], None]


def pin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pinning", *args], capture_output=True,
                          text=True, timeout=900)


def hand_written(path: Path, edit: Edit) -> Path:
    """The small test lock with ``edit`` applied, written as TOML with a matching hash."""
    data = lock_json(small_lock())
    edit(data)
    data["content-hash"] = content_hash(data)
    path.write_text(tomlkit.dumps(data))
    return path


def _env(env: dict[str, str]) -> Edit:
    return lambda data: data.update(environment=env)


def _steps(steps: list[str]) -> Edit:
    return lambda data: data.update({"build-steps": steps})


def _base(value: str, digest: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        data["image"]["base"] = {"value": value, "origin": "user"}
        data["image"]["base-digest"] = {"value": digest, "origin": "user"}
    return edit


def _files(docs_layers: list[bytes]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for blob in docs_layers:
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
            for member in tar.getmembers():
                f = tar.extractfile(member) if member.isfile() else None
                out[member.name.lstrip("./")] = f.read() if f else b""
    return out


CASES = [
    ("env name", _env({"PIN_X=1\nRUN touch /pwned\nENV PIN_Y": "1"}), "environment."),
    ("env value", _env({"PIN_X": "1\nRUN touch /pwned"}), "environment.PIN_X"),
    ("env value cr", _env({"PIN_X": "1\rRUN touch /pwned"}), "environment.PIN_X"),
    ("step", _steps(["true\x00; touch /pwned"]), "build-steps[0]"),
    ("base", None, "image"),  # needs the registry's host: built in the test
]


@pytest.mark.parametrize("name,edit,field", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_lock_builds_nothing(dockerd: Engine, registry: RegistryProc,
                                       base_image: BaseImage, tmp_path: Path, name: str,
                                       edit: Edit | None, field: str) -> None:
    base_args = ["--base", base_image.ref]
    if edit is None:  # the lock's own base, with a line that would run outside the guard
        edit = _base(f"{registry.host}\nRUN touch /pwned\n#/{base_image.repo}",
                     base_image.digest)
        base_args = []
    lock = hand_written(tmp_path / "hostile.lock", edit)
    before = lock.read_bytes()
    images = {i.id for i in dockerd.client.images.list(all=True)}
    r = pin("build", str(lock), *base_args, "--registry", registry.url, "--repo", REPO,
            "--wheelhouse", str(WHEELS), "--engine", dockerd.url)
    assert r.returncode == 5, r.stdout + r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr
    assert "\x1b" not in r.stderr and "\r" not in r.stderr
    assert lock.read_bytes() == before
    assert {i.id for i in dockerd.client.images.list(all=True)} == images
    tags = requests.get(f"{registry.url}/v2/{REPO}/tags/list", timeout=10)
    assert tags.status_code == 404  # the repository was never pushed to


def test_shell_text_in_a_valid_lock_stays_text(dockerd: Engine, registry: RegistryProc,
                                               base_image: BaseImage, tmp_path: Path) -> None:
    value = '"$(touch /pwned)" `touch /pwned` \\ $HOME ${PATH} \'x\''

    def edit(data: dict[str, Any]) -> None:
        data["environment"] = {"PIN_X": value}
        data["build-steps"] = ['printf %s "$PIN_X" > /pin-x']

    lock = hand_written(tmp_path / "quoted.lock", edit)
    r = pin("build", str(lock), "--base", base_image.ref, "--registry", registry.url,
            "--repo", REPO + "-ok", "--wheelhouse", str(WHEELS), "--engine", dockerd.url)
    assert r.returncode == 0, r.stdout + r.stderr
    built = read_lock(lock)
    assert built.environment == {"PIN_X": value} and built.image.ref is not None
    assert built.image.ref.value is not None
    docs = fetch_docs(registry.url, built.image.ref.value)
    files = _files([layer.data for layer in docs.layers[-1:] if layer.data is not None])
    assert files["pin-x"].decode() == value  # what the build step saw, byte for byte
    assert not any(name.endswith("pwned") for name in files)
