"""Queries people expect from the command line: `pin matrix gpus`, `matrix list` with CUDA
and GPUs, `matrix show` with a series and `--gpu`, `lock show` with every section, `lock
validate --format json`, shell completion, `pin --help` grouped by workflow, and tables
on a terminal but plain text in a pipe.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from pinning.cli import WORKFLOW, main
from pinning.cli.render import Style, sections_text, table_text, terminal_style
from pinning.lockfile.io import amend, write_lock
from pinning.matrix.load import Matrix
from tests.support.cli import json_result, pin
from tests.support.locks import lock_for

ESC = "\x1b"


def test_matrix_gpus_is_one_plain_row_per_gpu(matrix: Matrix) -> None:
    r = pin("matrix", "gpus")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["GPU", "Name", "Vendor", "Target/CC", "PCI", "IDs", "Memory"]
    assert len(lines) == 1 + len(matrix.gpus) and ESC not in r.stdout
    mi300x = next(ln for ln in lines if ln.startswith("mi300x "))
    assert "Instinct MI300X" in mi300x and " amd " in mi300x and " gfx942 " in mi300x
    assert "1002:74a1" in mi300x and mi300x.endswith("192 GiB")
    h200 = next(ln for ln in lines if ln.startswith("h200 "))
    assert " nvidia " in h200 and " 9.0 " in h200 and "10de:2335" in h200


def test_matrix_gpus_json_carries_sources(matrix: Matrix) -> None:
    rows = json_result(pin("matrix", "gpus", "--format", "json"))
    assert [g["id"] for g in rows] == [g.id for g in matrix.gpus]
    mi300x = next(g for g in rows if g["id"] == "mi300x")
    assert mi300x["target"] == "gfx942" and "0x74a1" in mi300x["pci-device-ids"]
    assert mi300x["memory-gib"] == 192 and mi300x["source"] and mi300x["published"]
    assert next(g for g in rows if g["id"] == "h200")["target"] == "9.0"


def test_matrix_list_includes_cuda_releases_and_gpus() -> None:
    r = pin("matrix", "list")
    assert r.returncode == 0, r.stderr
    cuda = r.stdout.split("CUDA toolkit releases (NVIDIA):\n")[1].split("PyTorch wheel")[0]
    assert any(ln.startswith("13.4.2 ") and "nvidia-cuda" in ln for ln in cuda.splitlines())
    gpus = r.stdout.split("GPUs (pin matrix gpus):\n")[1].split("Data files:")[0]
    assert any(ln.startswith("mi300x ") for ln in gpus.splitlines())
    data = json_result(pin("matrix", "list", "--format", "json"))
    assert "nvidia-cuda:cuda-13.4.2" in {t["ref"] for t in data["cuda-toolkits"]}
    assert {"mi300x", "h200"} <= {g["id"] for g in data["gpus"]}


def test_matrix_show_a_series_for_one_gpu() -> None:
    r = pin("matrix", "show", "rocm-7.1", "--gpu", "mi300x")
    assert r.returncode == 0, r.stderr
    refs = [ln.split("]")[0][1:] for ln in r.stdout.splitlines() if ln.startswith("[")]
    assert refs == ["amd-rocm-2026-01-21:rocm-7.1.1", "amd-rocm-2026-01-21:rocm-7.1.0",
                    "amd-rocm-2026-01-21:rocm-7.1.0/MI300X",
                    "amd-rocm-2026-01-21:rocm-7.1.1/MI300X"]
    none = pin("matrix", "show", "rocm-7.1", "--gpu", "h200")
    assert none.returncode == 0 and none.stdout == "rocm-7.1: no rows about h200.\n"
    bad = pin("matrix", "show", "rocm-7.1.2")
    assert bad.returncode == 2 and "Did you mean 'rocm-7.1.1'" in bad.stderr


def test_guard_ids_get_a_did_you_mean() -> None:
    r = pin("guard", "show", "aitr-replaces-triton")
    assert r.returncode == 2 and "Did you mean aiter-replaces-triton?" in r.stderr


def _full_lock(matrix: Matrix, path: Path) -> Path:
    """A resolved MI300X lock with every optional section filled (values made for the
    test: the wheel hash is the sha256 of bytes written here, not a published wheel).
    """
    lock = lock_for(matrix, "mi300x", "pytorch==2.13.0")
    digest = "sha256:" + hashlib.sha256(b"pin test image").hexdigest()
    image = lock.image.model_dump(mode="json", by_alias=True, exclude_none=True)
    image |= {"ref": {"value": f"registry.test/pin/trial@{digest}", "origin": "derived"},
              "digest": {"value": digest, "origin": "derived"}, "epoch": 1767225600}
    wheel = (path.parent / "six-1.16.0-py2.py3-none-any.whl")
    wheel.write_bytes(b"pin test wheel")
    lock = amend(
        lock, image=image,
        environment={"PYTORCH_ROCM_ARCH": "gfx942", "HIP_VISIBLE_DEVICES": "0"},
        packages={f"pkg-{i:02d}": f"1.{i}" for i in range(12)},
        wheels=[{"name": "six", "version": "1.16.0", "filename": wheel.name,
                 "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}],
        serving={"quantization": "awq", "quantization-backend": "triton"},
        extensions=[{"name": "flash-attn", "version": "2.8.3", "build": "source",
                     "targets": ["gfx942"]}],
    )
    write_lock(lock, path)
    return path


def test_lock_show_prints_every_section(matrix: Matrix, tmp_path: Path) -> None:
    path = _full_lock(matrix, tmp_path / "full.lock")
    r = pin("lock", "show", str(path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    titles = [ln[:-1] for ln in out.splitlines() if ln.endswith(":") and not ln.startswith(" ")]
    assert titles == ["Request", "Stack", "Image", "Environment", "Packages (12)", "Wheels (1)",
                      "Serving", "Extensions", "Sources"]
    assert "  ref          registry.test/pin/trial@sha256:" in out
    assert "  epoch        1767225600 (2026-01-01 00:00:00 UTC)" in out
    assert "  Kernel                  " in out and "  PYTORCH_ROCM_ARCH    gfx942" in out
    assert "  quantization-backend  triton" in out
    assert "  flash-attn  version 2.8.3  build source  targets gfx942" in out
    assert "pkg-07" in out and "pkg-08" not in out and "4 more packages (--full lists them)" in out
    assert "six-1.16.0-py2.py3-none-any.whl  sha256:" in out and "..." in out
    full = pin("lock", "show", "--full", str(path)).stdout
    assert "pkg-11" in full and "--full lists them" not in full
    wheel_hash = hashlib.sha256(b"pin test wheel").hexdigest()
    assert f"sha256:{wheel_hash}" in full


def test_lock_validate_json(matrix: Matrix, tmp_path: Path) -> None:
    good = _full_lock(matrix, tmp_path / "good.lock")
    ok = pin("lock", "validate", str(good), "--format", "json")
    assert ok.returncode == 0, ok.stderr
    data = json_result(ok)
    assert data["valid"] is True and data["locks"][0]["lock-version"] == 1
    bad = tmp_path / "bad.lock"
    bad.write_text(good.read_text().replace('quantization = "awq"', 'quantization = "gptq"'))
    r = pin("lock", "validate", str(good), str(bad), str(tmp_path / "gone.lock"),
            "--format", "json")
    assert r.returncode == 5
    res = json_result(r)
    assert res["valid"] is False and [x["valid"] for x in res["locks"]] == [True, False, False]
    assert "content" in res["locks"][1]["error"].lower() and res["locks"][2]["exit-code"] == 5
    assert "2 of 3 lockfile(s) invalid" in r.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    r = pin("completion", shell)
    assert r.returncode == 0 and "_PIN_COMPLETE" in r.stdout
    assert pin("completion", "tcsh").returncode == 2


def _complete(*words: str) -> list[str]:
    env = {**os.environ, "_PIN_COMPLETE": "bash_complete",
           "COMP_WORDS": " ".join(["pin", *words]), "COMP_CWORD": str(len(words))}
    r = subprocess.run([sys.executable, "-m", "pinning"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return [ln.split(",", 1)[1] for ln in r.stdout.splitlines()]


def test_value_completion_reads_the_matrix() -> None:
    gpus = _complete("resolve", "--gpu", "mi30")
    assert gpus[:3] == ["mi300x", "mi308x", "mi300a"] and "MI300X" not in gpus
    assert "ubuntu-24.04.3" in _complete("resolve", "--os", "ubuntu-24")
    assert _complete("resolve", "--framework", "pyt") == ["pytorch"]
    assert "pytorch==2.13.0" in _complete("resolve", "--framework", "pytorch==2.13")
    assert "gfx942" in _complete("matrix", "show", "x", "--gpu", "gfx9")


def test_help_groups_commands_by_workflow() -> None:
    r = pin("--help")
    assert r.returncode == 0
    names = main.list_commands(click.Context(main))
    heads = [ln[:-1] for ln in r.stdout.splitlines() if ln.endswith(":") and ln[0] != " "]
    titles = [t for t, _ in WORKFLOW]
    assert [h for h in heads if h in titles or h == "Other commands"] == [
        t for t, shown in WORKFLOW if set(shown) & set(names)] + (
        ["Other commands"] if set(names) - {n for _, ns in WORKFLOW for n in ns}
        else [])
    commands = r.stdout.split("Options:")[1].split("Exit codes:")[0]  # before the epilog
    listed = [ln.split()[0] for ln in commands.splitlines()  # "  name  summary" lines only
              if ln.startswith("  ") and ln[2:3] not in (" ", "-", "")]
    assert sorted(listed) == sorted(names)


def test_help_does_not_import_rich() -> None:
    code = "import sys, pinning.cli; print('rich' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_style(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert terminal_style(io.StringIO()) == Style(rich=False, color=False,
                                                  width=terminal_style(io.StringIO()).width)
    tty = terminal_style(_Tty())
    assert tty.rich and tty.color
    monkeypatch.setenv("NO_COLOR", "1")
    assert terminal_style(_Tty()).rich and not terminal_style(_Tty()).color
    monkeypatch.setenv("NO_COLOR", "")
    assert terminal_style(_Tty()).color
    monkeypatch.setenv("TERM", "dumb")
    assert not terminal_style(_Tty()).rich


def test_tables_colour_on_a_terminal_and_never_pass_controls() -> None:
    rows = [["mi300x", "evil\x1b[2J[bold]x[/bold]"]]
    plain = table_text(["GPU", "Name"], rows)
    assert ESC not in plain and "evil\\x1b[2J[bold]x[/bold]" in plain
    coloured = table_text(["GPU", "Name"], rows, style=Style(rich=True, color=True, width=80))
    assert "\x1b[" in coloured and "\x1b[2J" not in coloured
    assert "[bold]x[/bold]" in coloured  # shown as text, not read as markup
    no_color = sections_text([("Image", [("ref", "r")])],
                             style=Style(rich=True, color=False, width=80))
    assert ESC not in no_color and "Image" in no_color and "ref" in no_color
