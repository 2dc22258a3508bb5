import subprocess

import pynvml
import torch

torch.backends.cuda.matmul.allow_tf32 = True
device = torch.device("cuda")


def gpu_memory() -> str:
    pynvml.nvmlInit()
    return subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"]).decode()


def main() -> None:
    model = torch.nn.Linear(16, 16).to(device)
    print(model, gpu_memory())
