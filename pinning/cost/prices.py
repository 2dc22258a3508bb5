"""The prices file and R, the whole-system hourly compute cost.

A prices file is TOML (schema ``prices``, :class:`~pinning.cost.model.PriceFile`): one
``[[prices]]`` row per GPU with its US dollars per GPU-hour, provider, providers in stock,
the date it was read and its source. pin ships the ROCm migration article's table as a dated
example (:data:`EXAMPLE_PRICES`); a GPU the source lists without a price has ``unknown``
instead, and its cost is reported unknown, never guessed.

R = (price per GPU-hour x GPU count + other billed resources per hour) / utilisation, as the
article says: "Multiply the per-GPU price by the required GPU count, then include other
billed resources"; utilisation is an explicit input (default 1).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

from pinning.cost.model import GpuRate, PriceFile, PriceRow
from pinning.errors import UsageError

__all__ = ["EXAMPLE_PRICES", "find_price", "gpu_key", "read_prices", "system_rate"]

#: The shipped example: the article's price table (checked 28 September 2026 per the article).
EXAMPLE_PRICES = Path(__file__).parent / "data" / "article-prices-2026-09-28.toml"

_HINT = (f"A prices file is TOML with [[prices]] rows (gpu, usd-per-gpu-hour or unknown, "
         f"provider, providers-in-stock, checked, source); see {EXAMPLE_PRICES.name} shipped "
         "with pin (schemas/prices.schema.json).")
# Vendor and family words that do not tell one GPU from another: "NVIDIA H100" = "H100",
# "AMD Instinct MI300X" = "MI300X". Linear: a fixed alternation at the start.
_PREFIX = re.compile(r"^(?:amd|nvidia|instinct|radeon|tesla)+")


def gpu_key(name: str) -> str:
    """``name`` as prices are matched: lower case, letters and digits only, without a
    leading vendor or family word (``"AMD Instinct MI300X"`` -> ``"mi300x"``,
    ``"h200"`` -> ``"h200"``). Different models stay different (``h100`` vs ``h100nvl``).
    """
    flat = "".join(ch for ch in name.lower() if ch.isascii() and ch.isalnum())
    return _PREFIX.sub("", flat) or flat


def read_prices(path: Path) -> tuple[PriceFile, str]:
    """Read and validate a prices file; return it and the sha256 of its bytes
    (``sha256:<hex>``).

    Raises :class:`UsageError` (exit 2) naming the file and the field when it cannot be
    read, is not TOML, does not match the schema, or names one GPU twice.
    """
    from pydantic import ValidationError

    from pinning.util.files import read_toml
    from pinning.util.models import error_location

    label = f"Prices file {path}"
    raw, data = read_toml(Path(path), UsageError, label=label, syntax_hint=_HINT,
                          unreadable_hint="Check the path given to --prices.")
    try:
        prices = PriceFile.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = error_location(err["loc"], data) or "the file"
        raise UsageError(f"{label}: {where}: {err['msg']}.", hint=_HINT) from exc
    seen: dict[str, str] = {}
    for row in prices.prices:
        key = gpu_key(row.gpu)
        if key in seen:
            raise UsageError(f"{label}: GPU {row.gpu!r} is listed twice (also as "
                             f"{seen[key]!r}); each GPU needs one price row.", hint=_HINT)
        seen[key] = row.gpu
    return prices, "sha256:" + hashlib.sha256(raw).hexdigest()


def find_price(prices: PriceFile, gpu: str) -> PriceRow | None:
    """The row of ``prices`` that names ``gpu`` (matched by :func:`gpu_key`), or ``None``."""
    key = gpu_key(gpu)
    return next((row for row in prices.prices if gpu_key(row.gpu) == key), None)


def system_rate(prices: PriceFile, gpu: str | None, gpu_from: Literal["lock", "flag"] | None,
                *, gpu_count: int, gpu_count_from: Literal["lock", "flag", "assumed"],
                other_usd_per_hour: float = 0.0, utilisation: float = 1.0) -> GpuRate:
    """R for ``gpu_count`` GPUs of ``gpu``: (row price x count + ``other_usd_per_hour``)
    / ``utilisation``, in US dollars per hour.

    A GPU that is not named (``gpu`` ``None``), has no row, or whose row has no price gives
    ``usd-per-hour`` ``None`` with the reason; nothing is guessed. ``utilisation`` must be in
    (0, 1] and ``other_usd_per_hour`` >= 0 (``UsageError``, exit 2, otherwise).
    """
    if not 0 < utilisation <= 1:
        raise UsageError(f"--utilisation {utilisation!r}: must be more than 0 and at most 1 "
                         "(the share of billed time that serves the measured load).")
    if not other_usd_per_hour >= 0 or other_usd_per_hour == float("inf"):
        raise UsageError(f"--other-usd-per-hour {other_usd_per_hour!r}: must be a finite "
                         "number of US dollars per hour, 0 or more.")
    row = find_price(prices, gpu) if gpu is not None else None
    unknown: str | None = None
    if gpu is None:
        unknown = ("the GPU is not known: the result names no lock; pass --lock LOCK or "
                   "--gpu NAME for it")
    elif row is None:
        known = ", ".join(r.gpu for r in prices.prices)
        unknown = (f"the prices file has no row for {gpu}; it knows {known} (name one of "
                   "them, or add a row for this GPU to a copy of the file)")
    elif row.usd_per_gpu_hour is None:
        unknown = f"no price for {row.gpu} in the prices file: {row.unknown}"
    per_gpu = row.usd_per_gpu_hour if row is not None else None
    total = None if per_gpu is None else (per_gpu * gpu_count + other_usd_per_hour) / utilisation
    return GpuRate(gpu=gpu, gpu_from=gpu_from, gpu_count=gpu_count,
                   gpu_count_from=gpu_count_from, price=row, usd_per_gpu_hour=per_gpu,
                   other_usd_per_hour=other_usd_per_hour, utilisation=utilisation,
                   usd_per_hour=total, unknown=unknown)
