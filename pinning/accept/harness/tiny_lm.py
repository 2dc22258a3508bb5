"""pin's tiny decoder-only language model: a training workload for ``pin accept``.

Run by file path in the environment under test (imports only torch and the stdlib):

    PYTHON tiny_lm.py --steps N --seed S --checkpoint-dir D [--stop-at K] [--resume]

Trains a two-block causal transformer (vocabulary 64, width 32) with Adam on synthetic
token sequences drawn from a fixed-seed generator (each sequence follows
``x[t+1] = (5 * x[t] + 3) mod 64`` from a random start, 10% of tokens replaced by noise), so
the loss falls from about ln 64. Deterministic algorithms are on; the device is ``cuda``
when torch sees one (ROCm builds expose HIP devices as ``cuda``), else ``cpu`` with one
thread (steadier step times; the model is too small to gain from more).

Standard output: one JSON object per step, ``{"step", "loss", "tokens", "step_time_s"}``
(``step`` from 1, ``tokens`` trained on in that step, ``step_time_s`` wall seconds). With
``--stop-at K`` it saves a checkpoint (model, optimizer, step, torch and data-generator
RNG states) to ``D/tiny-lm.pt`` after step K and exits 0; with ``--resume`` it loads that
checkpoint and continues from step K+1 to ``--steps``. Standard error gets one JSON line
``{"info": {"device", "torch", "hip", "cuda"}}``. Exit 2 on bad arguments or a missing
checkpoint.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

# cuBLAS needs this before CUDA initialises for deterministic matmuls (ignored on CPU).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
from torch import nn

VOCAB = 64
WIDTH = 32
HEADS = 2
BLOCKS = 2
SEQ = 32
BATCH = 16
NOISE = 0.1
MUL = 5
ADD = 3
LR = 3e-3
CHECKPOINT = "tiny-lm.pt"


class Block(nn.Module):
    """Pre-norm transformer block: causal multi-head attention, then a 4x MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(),
                                 nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x`` ``[batch, time, WIDTH]`` -> the same shape; ``mask`` true above the
        diagonal (future positions hidden).
        """
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(WIDTH, dim=-1)
        q, k, v = (z.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(WIDTH // HEADS)
        att = att.masked_fill(mask[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.proj(y)
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


class TinyLM(nn.Module):
    """Token and position embeddings, ``BLOCKS`` blocks, a final norm and the LM head."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Embedding(SEQ, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.register_buffer("mask", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids ``[batch, time]`` -> logits ``[batch, time, VOCAB]``."""
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x, self.mask)
        logits: torch.Tensor = self.head(self.norm(x))
        return logits


def batch(gen: torch.Generator, device: torch.device) -> torch.Tensor:
    """One ``[BATCH, SEQ + 1]`` int64 batch from ``gen`` (on the CPU, then moved)."""
    x = torch.empty(BATCH, SEQ + 1, dtype=torch.long)
    x[:, 0] = torch.randint(0, VOCAB, (BATCH,), generator=gen)
    for t in range(SEQ):
        x[:, t + 1] = (MUL * x[:, t] + ADD) % VOCAB
    noise = torch.rand(BATCH, SEQ + 1, generator=gen) < NOISE
    x = torch.where(noise, torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen), x)
    return x.to(device)


def load_checkpoint(path: Path, model: TinyLM, optim: torch.optim.Optimizer,
                    gen: torch.Generator, device: torch.device) -> int:
    """Restore the model, optimiser and every random state from ``path``; its step."""
    state = torch.load(path, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optim.load_state_dict(state["optim"])
    gen.set_state(state["data_rng"])
    torch.set_rng_state(state["torch_rng"])
    if device.type == "cuda" and "cuda_rng" in state:
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    return int(state["step"])


def save_checkpoint(path: Path, step: int, model: TinyLM, optim: torch.optim.Optimizer,
                    gen: torch.Generator, device: torch.device) -> None:
    """Write what :func:`load_checkpoint` restores to ``path`` (temp file, then rename)."""
    state = {"model": model.state_dict(), "optim": optim.state_dict(), "step": step,
             "data_rng": gen.get_state(), "torch_rng": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    """Train as the arguments say, printing one JSON line per step; the exit status."""
    parser = argparse.ArgumentParser(description="pin's tiny LM training workload")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--stop-at", type=int, default=None)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    if args.steps < 1 or (args.stop_at is not None and not 1 <= args.stop_at <= args.steps):
        parser.error("need --steps >= 1 and 1 <= --stop-at <= --steps")

    torch.use_deterministic_algorithms(True)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(1)  # a model this small gains nothing; steadier step times
    sys.stderr.write(json.dumps({"info": {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "hip": getattr(torch.version, "hip", None),
        "cuda": torch.version.cuda}}) + "\n")
    model = TinyLM().to(device)
    optim = torch.optim.Adam(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(args.seed)
    path = args.checkpoint_dir / CHECKPOINT
    start = 0
    if args.resume:
        if not path.is_file():
            sys.stderr.write(f"tiny_lm: no checkpoint at {path}; run with --stop-at first\n")
            return 2
        start = load_checkpoint(path, model, optim, gen, device)

    for step in range(start + 1, args.steps + 1):
        began = time.perf_counter()
        data = batch(gen, device)
        logits = model(data[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), data[:, 1:].reshape(-1))
        optim.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        optim.step()
        value = loss.item()
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - began
        print(json.dumps({"step": step, "loss": value, "tokens": BATCH * SEQ,
                          "step_time_s": elapsed}), flush=True)
        if step == args.stop_at:
            save_checkpoint(path, step, model, optim, gen, device)
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
