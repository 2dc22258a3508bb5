"""A project folder for ``pin trial`` tests, made from shipped data: a pin.toml with a
current (H100) and a candidate (MI300X) target, a requirements file and a CUDA source the
audit reads, the gates pin's template ships, real ``vllm bench serve`` results recorded for
the candidate only, and the article's prices. What each test changes is a keyword.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.paths import DATA, ROOT

PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
GATES = ROOT / "pinning" / "accept" / "template.toml"
RESULTS = DATA / "acceptance"


def trial_project(folder: Path, *, prices: bool = True, current_results: bool = False,
                  candidate_results: bool = True,
                  candidate_image: str = "", current_framework: str = "pytorch==2.13.0"
                  ) -> Path:
    """Write the project into ``folder`` (created) and return it. ``prices``: a [cost]
    table naming the prices file; ``current_results``: results recorded for the current
    target too; ``candidate_image``: extra lines of ``[targets.candidate.image]`` (none:
    no image table); ``current_framework``: the current target's framework request.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results").mkdir(exist_ok=True)
    shutil.copyfile(GATES, folder / "accept.toml")
    for name in ("vllm-bench-serve-smollm2-c1.json", "vllm-bench-serve-smollm2-c4.json"):
        shutil.copyfile(RESULTS / name, folder / "results" / name)
    (folder / "requirements.txt").write_text("torch==2.13.0\nnumpy==1.26.4\n")
    (folder / "kernel.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n")
    text = [
        'accept = "accept.toml"',
        "[project]", 'name = "demo"', 'requirements = "requirements.txt"',
        "[targets.current]", 'gpu = "h100"', f'frameworks = ["{current_framework}"]',
        "[targets.candidate]", 'gpu = "mi300x"', 'os = "ubuntu-24.04"',
        'frameworks = ["pytorch==2.9.1"]',
    ]
    if candidate_image:
        text += ["[targets.candidate.image]", candidate_image]
    if prices:
        shutil.copyfile(PRICES, folder / "prices.toml")
        text += ["[cost]", 'prices = "prices.toml"']
    if candidate_results:
        text += ["[results.candidate]", 'files = ["results/vllm-bench-serve-smollm2-c1.json", '
                 '"results/vllm-bench-serve-smollm2-c4.json"]']
    if current_results:
        text += ["[results.current]", 'files = ["results/vllm-bench-serve-smollm2-c1.json"]']
    (folder / "pin.toml").write_text("\n".join(text) + "\n")
    return folder
