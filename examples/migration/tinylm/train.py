"""One training loop of tinylm on a single H100: bf16 autocast, 8-bit AdamW, timed steps."""

import bitsandbytes as bnb
import torch
from torch import nn

from tinylm.ops import rms_norm

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


class Block(nn.Module):
    """A pre-norm MLP block."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.Parameter(torch.ones(dim))
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The input plus the MLP of its RMSNorm, shape kept."""
        return x + self.down(torch.nn.functional.gelu(self.up(rms_norm(x, self.norm))))


class TinyLM(nn.Module):
    """Embedding, a few blocks, a tied output head."""

    def __init__(self, vocab: int = 4096, dim: int = 512, depth: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits (batch, seq, vocab) for token ids (batch, seq)."""
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return x @ self.embed.weight.t()


def train_step(model: nn.Module, opt: torch.optim.Optimizer, tokens: torch.Tensor) -> float:
    """One next-token step under bf16 autocast; returns the loss."""
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), tokens[:, 1:].flatten())
    loss.backward()
    opt.step()
    return loss.item()


def main(steps: int = 50) -> None:
    """Train on random tokens for ``steps`` steps, printing loss, step time and peak memory."""
    assert torch.cuda.is_available(), "tinylm trains on a CUDA GPU"
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = TinyLM().to(device)
    opt = bnb.optim.AdamW8bit(model.parameters(), lr=3e-4)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for step in range(steps):
        tokens = torch.randint(0, 4096, (8, 257), device=device)
        start.record()
        loss = train_step(model, opt, tokens)
        end.record()
        torch.cuda.synchronize()
        print(f"step {step} loss {loss:.3f} {start.elapsed_time(end):.1f} ms "
              f"peak {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB "
              f"on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
