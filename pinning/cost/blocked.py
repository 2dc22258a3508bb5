"""Blocked findings priced or waived: the waivers file (``pin cost --waivers``) and how each
blocked item of a porting audit is settled for the migration cost.

A blocked finding (no ROCm equivalent) is not free and not absolute: a team prices it
(hours per finding of its kind in the effort file's ``[hours]``, ``kind = { blocked = H }``,
or dollars / hours for one finding in a ``[[price]]`` row here) or waives it with a reason
(a ``[[waiver]]`` row: finding id, reason, who, date). What is neither stays a reason to
stay. Line numbers in messages are found by a small scan of the TOML text, because
tomllib (the standard library's parser) does not report where a value was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from pinning.audit.bill import AuditReport
from pinning.audit.model import Finding, Kind, Verdict
from pinning.cost.model import BlockedPriced, BlockedWaived
from pinning.errors import UsageError
from pinning.util.models import FormatVersion, OneLine, Strict

__all__ = ["PriceRow", "Settled", "WaiverFile", "WaiverRow", "finding_id", "read_waivers",
           "settle_blocked"]

_HINT = ("A waivers file is TOML: [[waiver]] rows (finding, reason, by, date) and [[price]] "
         "rows (finding, usd or hours, reason, by, date); finding is the id pin cost prints "
         "for a blocked item, e.g. \"kernel.inline-ptx: asm volatile (csrc/reduce.cu:15)\".")
_Text = Annotated[OneLine, Field(min_length=1, max_length=500)]


class WaiverRow(Strict):
    """``[[waiver]]``: the blocked ``finding`` (its id, :func:`finding_id`) is waived for
    ``reason`` by ``by`` on ``date`` (a TOML date); it costs nothing and is no reason to stay.
    """

    finding: _Text
    reason: _Text
    by: _Text
    date: dt.date


class PriceRow(Strict):
    """``[[price]]``: the blocked ``finding`` costs ``usd`` US dollars, or ``hours`` hours
    at ``--labour-usd-per-hour`` (exactly one of the two), priced for ``reason`` by ``by``
    on ``date``.
    """

    finding: _Text
    usd: Annotated[float | None, Field(ge=0, le=1e12, allow_inf_nan=False)] = None
    hours: Annotated[float | None, Field(ge=0, le=1e6, allow_inf_nan=False)] = None
    reason: _Text
    by: _Text
    date: dt.date

    @model_validator(mode="after")
    def _one_price(self) -> PriceRow:
        if (self.usd is None) == (self.hours is None):
            raise ValueError("give either usd or hours, not both and not neither")
        return self


class WaiverFile(Strict):
    """The waivers file: ``[[waiver]]`` and ``[[price]]`` rows (either may be absent)."""

    schema_version: FormatVersion = 1
    waiver: list[WaiverRow] = Field(default_factory=list)
    price: list[PriceRow] = Field(default_factory=list)


def finding_id(f: Finding) -> str:
    """A finding's id as pin cost prints it: ``rule: subject (path:line)`` (``(path)``
    without a line, nothing without a path).
    """
    where = f" ({f.path}:{f.line})" if f.path and f.line else (f" ({f.path})" if f.path else "")
    return f"{f.rule}: {f.subject}{where}"


def _line_of(text: str, table: str, index: int, key: str | None) -> int | None:
    """The 1-based line of row ``index`` of ``[[table]]`` (of its ``key`` when found)."""
    header = re.compile(r"^\s*\[\[\s*" + re.escape(table) + r"\s*\]\]")
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if header.match(line)]
    if index >= len(starts):
        return None
    start = starts[index]
    if key is not None:
        keyed = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(start + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if keyed.match(lines[i]):
                return i + 1
    return start + 1


def _where(label: str, text: str, loc: tuple[Any, ...]) -> str:
    """``label line N: table[i].field`` for a validation error at ``loc``."""
    from pinning.util.text import printable

    parts = [str(p) for p in loc]
    if len(loc) >= 2 and loc[0] in ("waiver", "price") and isinstance(loc[1], int):
        key = str(loc[2]) if len(loc) > 2 else None
        line = _line_of(text, str(loc[0]), loc[1], key)
        field_name = f"[[{loc[0]}]] {loc[1] + 1}" + (f" {key}" if key else "")
        return (f"{label} line {line}: {printable(field_name)}" if line
                else f"{label}: {printable(field_name)}")
    return f"{label}: {printable('.'.join(parts) or 'the file')}"


def read_waivers(path: Path) -> tuple[WaiverFile, str]:
    """Read and validate a waivers file; return it and the sha256 of its bytes.

    Raises :class:`UsageError` (exit 2) naming the file, the line and the field for a file
    that cannot be read, is not TOML, does not fit :class:`WaiverFile`, or names one finding
    twice.
    """
    from pydantic import ValidationError

    from pinning.util.files import read_toml

    label = f"Waivers file {path}"
    raw, data = read_toml(Path(path), UsageError, label=label, syntax_hint=_HINT,
                          unreadable_hint="Check the path given to --waivers.")
    text = raw.decode("utf-8")
    try:
        waivers = WaiverFile.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UsageError(f"{_where(label, text, tuple(err['loc']))}: {err['msg']}.",
                         hint=_HINT) from exc
    seen: set[str] = set()
    rows = [("waiver", i, w.finding) for i, w in enumerate(waivers.waiver)]
    rows += [("price", i, p.finding) for i, p in enumerate(waivers.price)]
    for table, i, finding in rows:
        if finding in seen:
            raise UsageError(f"{_where(label, text, (table, i, 'finding'))}: the finding "
                             f"{finding!r} is waived or priced twice.", hint=_HINT)
        seen.add(finding)
    return waivers, "sha256:" + hashlib.sha256(raw).hexdigest()


@dataclass
class Settled:
    """The audit's findings once blocked items are settled: ``findings`` what the effort
    file prices (waived and ``[[price]]``-priced blocked findings removed), ``priced`` and
    ``waived`` the settled items, ``unpriced`` the blocked ids neither priced nor waived,
    ``usd`` the dollars of the ``[[price]]`` rows (hours at ``labour``).
    """

    findings: list[Finding]
    priced: list[BlockedPriced] = field(default_factory=list)
    waived: list[BlockedWaived] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)
    usd: float = 0.0


def settle_blocked(report: AuditReport, waivers: WaiverFile | None, waivers_name: str | None,
                   *, hours: dict[Kind, dict[Verdict, float]] | None, effort_name: str | None,
                   labour: float | None) -> Settled:
    """Settle each blocked finding of ``report``: waived (a ``[[waiver]]``), priced by a
    ``[[price]]`` row (hours need ``labour``), priced by the effort file (``hours`` gives
    hours for its kind and the ``blocked`` verdict; it stays in ``findings`` so the effort
    estimate counts it), or unpriced.

    Raises :class:`UsageError` (exit 2) when a row names a finding that is not a blocked
    finding of the audit (naming it and the blocked ids), or prices in hours without a
    labour rate (``--migration-usd`` gives none).
    """
    rows_w = {w.finding: w for w in (waivers.waiver if waivers else [])}
    rows_p = {p.finding: p for p in (waivers.price if waivers else [])}
    blocked = {finding_id(f) for f in report.findings if f.verdict is Verdict.BLOCKED}
    for name in [*rows_w, *rows_p]:
        if name not in blocked:
            raise UsageError(
                f"Waivers file {waivers_name}: {name!r} is not a blocked finding of the audit"
                f" (its blocked findings: {'; '.join(sorted(blocked)) or 'none'}).",
                hint="Copy the finding id from pin cost's output (rule: subject (path:line)).")
    out = Settled(findings=[])
    source = waivers_name or ""
    for f in report.findings:
        fid = finding_id(f)
        if f.verdict is not Verdict.BLOCKED:
            out.findings.append(f)
        elif (w := rows_w.get(fid)) is not None:
            out.waived.append(BlockedWaived(finding=fid, reason=w.reason, by=w.by, date=w.date,
                                            source=source))
        elif (p := rows_p.get(fid)) is not None:
            out.priced.append(_priced_row(fid, p, source, labour))
            out.usd += out.priced[-1].usd
        else:
            out.findings.append(f)
            each = (hours or {}).get(f.kind, {}).get(Verdict.BLOCKED)
            if each is None or labour is None:
                out.unpriced.append(fid)
            else:
                out.priced.append(BlockedPriced(finding=fid, usd=each * labour, hours=each,
                                                priced_by="effort", source=effort_name or ""))
    return out


def _priced_row(fid: str, row: PriceRow, source: str, labour: float | None) -> BlockedPriced:
    """A ``[[price]]`` row as priced: its dollars, or its hours x ``labour``."""
    if row.usd is not None:
        usd = row.usd
    elif labour is None:
        raise UsageError(f"Waivers file {source}: {fid!r} is priced in hours, but no "
                         "--labour-usd-per-hour is given (--migration-usd has none).",
                         hint="Price it in usd, or use --migration AUDIT --effort FILE "
                              "--labour-usd-per-hour X.")
    else:
        assert row.hours is not None
        usd = row.hours * labour
    return BlockedPriced(finding=fid, usd=usd, hours=row.hours, priced_by="waivers",
                         source=source, reason=row.reason, by=row.by, date=row.date)
