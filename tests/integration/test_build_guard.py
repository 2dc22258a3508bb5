"""The build-time guard in a real image build: a step that pulls another version of a locked
package, and an sdist whose setup reinstalls one (as AITER's does unless
AITER_USE_SYSTEM_TRITON=1), each stop the build with exit 10 naming step, package and
old -> new; with the remedy applied the build passes."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from pinning.errors import GuardRefused
from pinning.lockfile.io import lock_json, seal
from pinning.lockfile.models import Lockfile
from tests.support.components import WHEELS, BaseImage, Engine, small_lock

pytestmark = pytest.mark.docker

SETUP_PY = '''import os, subprocess, sys
from setuptools import setup
if os.environ.get("AITER_USE_SYSTEM_TRITON") != "1":
    # What AITER's setup does to Triton: replace the installed copy with its own pick.
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                           "--force-reinstall", "--break-system-packages",
                           "--find-links", "/tmp/pin-wheels", "six==1.15.0"])
setup(name="fake-aiter", version="0.1", py_modules=[])
'''


def _wheel(dest: Path, name: str, version: str, files: dict[str, str],
           requires: str = "") -> None:
    """A minimal pure-Python wheel ``name-version`` holding ``files``."""
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + (
        f"Requires-Dist: {requires}\n" if requires else "")
    files = {**files, f"{info}/METADATA": meta,
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: pin-test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(dest / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{info}/RECORD", record)


def _puller_wheel(dest: Path) -> None:
    """A wheel whose dependency is another version of a locked package (six==1.15.0)."""
    _wheel(dest, "puller", "1.0", {"puller.py": "VALUE = 1\n"}, requires="six==1.15.0")


def _aiter_sdist(dest: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in {"fake-aiter-0.1/setup.py": SETUP_PY,
                           "fake-aiter-0.1/PKG-INFO": "Metadata-Version: 2.1\nName: fake-aiter\n"
                                                      "Version: 0.1\n"}.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (dest / "fake-aiter-0.1.tar.gz").write_bytes(buf.getvalue())


def _overwriter_wheel(dest: Path) -> None:
    """A new distribution that writes a file a locked one owns (six.py), as a CUDA `triton`
    overwrites the ROCm one's `triton/` package."""
    _wheel(dest, "sixclone", "1.0", {"six.py": "# not the locked six\n"})


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    dest = tmp_path / "wheels"
    dest.mkdir()
    for whl in WHEELS.glob("*.whl"):
        shutil.copy(whl, dest)
    shutil.copy(next((WHEELS / "guard").glob("six-1.15.0-*.whl")), dest)
    _puller_wheel(dest)
    _aiter_sdist(dest)
    _overwriter_wheel(dest)
    return dest


def lock_with(steps: list[str], env: dict[str, str] | None = None) -> Lockfile:
    data = lock_json(small_lock())
    data["build_steps"] = steps
    if env:
        data["environment"] = {**data.get("environment", {}), **env}
    data.pop("content-hash")
    return seal(data)


PULL = ("python3 -m pip install --no-index --break-system-packages --root-user-action=ignore "
        "--find-links /tmp/pin-wheels puller")
AITER = ("python3 -m pip install --no-index --no-build-isolation --break-system-packages "
         "--root-user-action=ignore --find-links /tmp/pin-wheels "
         "/tmp/pin-wheels/fake-aiter-0.1.tar.gz")


def test_a_step_pulling_another_version_is_refused(dockerd: Engine, base_image: BaseImage,
                                                   wheelhouse: Path) -> None:
    from pinning.image.build import build_once

    with pytest.raises(GuardRefused) as exc:
        build_once(dockerd.client, lock_with([PULL]), base_image.ref, wheelhouse, nocache=True)
    assert exc.value.exit_code == 10
    assert "step 1: six 1.16.0 -> 1.15.0" in exc.value.message


def test_aiter_like_sdist_is_refused_then_remedied(dockerd: Engine, base_image: BaseImage,
                                                   wheelhouse: Path) -> None:
    from pinning.image.build import build_once

    with pytest.raises(GuardRefused) as exc:
        build_once(dockerd.client, lock_with([AITER]), base_image.ref, wheelhouse,
                   nocache=True)
    assert "step 1:" in exc.value.message and "six" in exc.value.message
    # The remedy of guard rule aiter-replaces-triton: AITER_USE_SYSTEM_TRITON=1 in the lock.
    built = build_once(dockerd.client, lock_with([AITER], {"AITER_USE_SYSTEM_TRITON": "1"}),
                       base_image.ref, wheelhouse, nocache=True)
    assert built.docs.digest.startswith("sha256:")


def test_a_new_distribution_overwriting_locked_files_is_refused(dockerd: Engine,
                                                                base_image: BaseImage,
                                                                wheelhouse: Path) -> None:
    from pinning.image.build import build_once

    step = ("python3 -m pip install --no-index --no-deps --break-system-packages "
            "--root-user-action=ignore --find-links /tmp/pin-wheels sixclone  # a comment")
    with pytest.raises(GuardRefused) as exc:
        build_once(dockerd.client, lock_with([step]), base_image.ref, wheelhouse, nocache=True)
    assert "new distribution sixclone 1.0 overwrote files of six" in exc.value.message


def test_a_step_that_adds_unlocked_packages_passes(dockerd: Engine, base_image: BaseImage,
                                                   wheelhouse: Path) -> None:
    from pinning.image.build import build_once

    step = ("python3 -m pip install --no-index --no-deps --break-system-packages "
            "--root-user-action=ignore --find-links /tmp/pin-wheels puller; exit 0")
    built = build_once(dockerd.client, lock_with([step]), base_image.ref, wheelhouse,
                       nocache=True)
    assert built.docs.digest.startswith("sha256:")
