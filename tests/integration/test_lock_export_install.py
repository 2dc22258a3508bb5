"""``pin lock export`` (issue 34, section 2) installed as it is: a lock made by ``pin lock
packages`` from a PEP 503 index on 127.0.0.1 (real uv), exported as ``pylock.toml`` and as a
requirements file, each installed into a fresh venv by uv (``uv pip sync``) and by pip
(``pip install --require-hashes --no-deps -r`` and ``pip install -r pylock.toml``). Then
every installed distribution is one the lock pins, every wheel served has the lock's sha256,
and every file the wheel's RECORD lists is installed with that RECORD's hash.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import platform
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinning.util.proc import find_uv
from tests.support.cli import pin
from tests.support.paths import ROOT
from tests.support.pyindex import serve_index

GRAPH = {"torch==2.13.0+rocm7.2": ["filelock>=3"], "filelock==3.0": [], "app==1.0": ["helper>=1"],
         "helper==1.2": []}
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No proxy, no pip or uv configuration from this machine, private caches."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()
           and not k.startswith(("PIP_", "UV_"))}
    env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_NO_CONFIG="1",
               NO_PROXY="127.0.0.1", PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.fixture
def exported(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[Path, Path]]:
    """A lock of GRAPH's closure for this interpreter, its wheels served on 127.0.0.1, and
    the two exports: ``(lock, folder with pylock.toml and requirements.txt and the wheels)``.
    """
    lock = tmp_path / "pin.lock"
    lock.write_bytes((ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock").read_bytes())
    arch = "aarch64" if platform.machine() == "aarch64" else "x86_64"
    with serve_index(tmp_path, GRAPH) as (url, _):
        r = pin("lock", "packages", str(lock), "--index", url, "--requirement", "app==1.0",
                "--python-version", PYTHON, "--python-platform", f"{arch}-manylinux_2_17",
                env=env)
        assert r.returncode == 0, r.stderr
        for fmt, name in (("pylock", "pylock.toml"), ("requirements", "requirements.txt")):
            r = pin("lock", "export", str(lock), "--format", fmt, "-o", str(tmp_path / name))
            assert r.returncode == 0, r.stderr
        yield lock, tmp_path


def _record(rows: str) -> dict[str, str]:
    """A RECORD's ``path -> sha256=...`` for the rows that carry a hash."""
    return {row[0]: row[1] for row in csv.reader(io.StringIO(rows)) if len(row) > 1 and row[1]}


def _digest(data: bytes) -> str:
    """RECORD's hash form: ``sha256=`` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def _check_installed(venv: Path, lock: Path, wheels: Path) -> None:
    """Every distribution in ``venv`` is one the lock pins (and every pinned one is there);
    each served wheel has the lock's sha256; each file of its RECORD is installed with
    that RECORD's hash.
    """
    data = tomllib.loads(lock.read_text())
    (site,) = venv.glob("lib/python*/site-packages")
    installed = {p.name.split("-")[0].lower(): p for p in site.glob("*.dist-info")}
    assert set(installed) == set(data["packages"])
    for wheel in data["wheels"]:
        raw = (wheels / wheel["filename"]).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == wheel["sha256"]
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            record_name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            record = _record(zf.read(record_name).decode())
        assert record, wheel["filename"]
        for path, digest in record.items():
            assert _digest((site / path).read_bytes()) == digest, (wheel["filename"], path)


def _fresh_venv(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder


def _pip_reads_pylock(env: dict[str, str]) -> bool:
    """Whether this pip installs from a pylock.toml (pip 25.1 and later say so in --help)."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--help"], env=env,
                       capture_output=True, text=True, check=True)
    return "pylock.toml" in r.stdout


@pytest.mark.parametrize("installer", ["uv-pylock", "uv-requirements", "pip-requirements",
                                       "pip-pylock"])
def test_each_export_installs_the_locked_files(installer: str, exported: tuple[Path, Path],
                                               env: dict[str, str]) -> None:
    lock, folder = exported
    venv = _fresh_venv(folder / f"venv-{installer}")
    py = str(venv / "bin" / "python")
    uv = find_uv("the export test")
    pip = [sys.executable, "-m", "pip", "--python", py, "install"]
    if installer == "pip-pylock" and not _pip_reads_pylock(env):
        pytest.skip("this pip cannot install from a pylock.toml (pip 25.1 and later can)")
    command = {
        "uv-pylock": [uv, "pip", "sync", "--python", py, str(folder / "pylock.toml")],
        "uv-requirements": [uv, "pip", "sync", "--require-hashes", "--python", py,
                            str(folder / "requirements.txt")],
        "pip-requirements": [*pip, "--require-hashes", "--no-deps", "-r",
                             str(folder / "requirements.txt")],
        "pip-pylock": [*pip, "-r", str(folder / "pylock.toml")],
    }[installer]
    r = subprocess.run(command, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _check_installed(venv, lock, folder / "index")


def test_a_changed_wheel_is_refused(exported: tuple[Path, Path], env: dict[str, str]) -> None:
    """The hashes are enforced: a requirements file whose hash no served wheel has fails."""
    _, folder = exported
    reqs = folder / "requirements.txt"
    text = reqs.read_text()
    start = text.index("--hash=sha256:") + len("--hash=sha256:")
    digest = text[start:start + 64]
    reqs.write_text(text.replace(digest, hashlib.sha256(digest.encode()).hexdigest()))
    venv = _fresh_venv(folder / "venv-tampered")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                        "install", "--require-hashes", "--no-deps", "-r", str(reqs)],
                       env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "hash" in r.stderr.lower()
