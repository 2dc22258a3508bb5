"""The lock's serving sections: ``[serving]`` (quantization and attention choices) and
``[[extensions]]`` (compiled extensions with their build and targets).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from pinning.lockfile.values import Origin
from pinning.util.models import DistName, Reason, Strict, Token

SERVING_WORD = r"^[a-z0-9][a-z0-9._+-]*$"
"""A serving choice as one lower-case word: ``awq``, ``awq_marlin``, ``triton``, ``flash-attn``."""
TARGET_PATTERN = r"^(gfx[0-9a-f]+(:[a-z]+[+-])*|[0-9]+\.[0-9]+[a-z]?)$"
"""A gfx target (``gfx942``, ``gfx942:sramecc+:xnack-``) or a compute capability (``9.0``,
``9.0a``)."""


class Serving(Strict):
    """How the model is served: what the migration article says to record ("the selected
    quantization backend, attention implementation and custom extensions").

    ``quantization`` is the method as the server names it (``awq``, ``gptq``, ``awq_marlin``,
    ``fp8``) and ``quantization-backend`` the kernels behind it (``triton``: AWQ by Triton
    dequantization on AMD; ``marlin``). ``attention`` is the implementation (``ck``,
    ``triton``, ``aiter``, ``flash-attn``), ``attention-version`` its distribution's version
    and ``attention-backend`` the backend inside it (FlashAttention on ROCm: ``ck`` or
    ``triton``). ``head-dim`` (elements) and ``dtype`` are what the attention runs with. Set by
    ``pin resolve`` flags (``origin = "user"``); an absent value is not known.
    """

    quantization: str | None = Field(default=None, pattern=SERVING_WORD)
    quantization_backend: str | None = Field(default=None, pattern=SERVING_WORD)
    attention: str | None = Field(default=None, pattern=SERVING_WORD)
    attention_version: Token | None = None
    attention_backend: str | None = Field(default=None, pattern=SERVING_WORD)
    head_dim: int | None = Field(default=None, ge=1, le=65536)
    dtype: str | None = Field(default=None, pattern=SERVING_WORD)
    origin: Origin = "user"


class Extension(Strict):
    """A compiled extension the stack uses (FlashAttention, AITER, xFormers, a custom op).

    ``name`` is its PEP 508 distribution name, ``version`` the installed or requested
    version, ``build`` ``source`` (compiled for this stack) or ``wheel`` (a prebuilt wheel),
    ``targets`` the gfx targets or compute capabilities it was built for. ``origin`` is
    ``user`` (a ``pin resolve --extension`` flag) or ``host`` (``pin freeze`` saw it
    installed). A value left empty (unknown) needs ``reason``.
    """

    name: DistName
    version: Token | None = None
    build: Literal["source", "wheel"] | None = None
    targets: list[Annotated[str, Field(pattern=TARGET_PATTERN)]] | None = None
    origin: Origin = "user"
    reason: Reason | None = None

    @model_validator(mode="after")
    def _explained(self) -> Extension:
        if None in (self.version, self.build, self.targets) and not self.reason:
            raise ValueError("an extension whose version, build or targets is unknown needs "
                             "`reason`")
        return self
