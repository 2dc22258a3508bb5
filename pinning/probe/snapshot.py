"""Host snapshots on disk: ``pin probe -o FILE`` writes one, ``--host FILE`` reads it back."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pinning.errors import ProbeError, UsageError
from pinning.probe.models import Distribution, HostFacts, canonical_json
from pinning.util.envelope import unwrap
from pinning.util.files import atomic_write_bytes, is_stdio, read_regular_bytes, read_stdin_bytes
from pinning.util.jsonread import load_json
from pinning.util.models import validation_summary
from pinning.util.text import json_safe
from pinning.util.versions import MAX_NUMBER_DIGITS, MAX_VERSION_CHARS, version_fields_problem

#: Keys of a snapshot whose values are versions (bounded on read, pinning.util.versions).
SNAPSHOT_VERSION_FIELDS = frozenset({"version", "version-id", "driver", "rocm", "hip", "cuda",
                                     "cuda-toolkit", "files-version", "pldm-bundle", "glibc"})


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (``args[0]`` is the key)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: the object as a dict; :class:`_DuplicateKey` when a key
    repeats (plain ``json`` keeps the last value, so an edit could hide behind the first).
    """
    out = dict(pairs)
    if len(out) != len(pairs):  # the first key seen twice names the error
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def snapshot_text(facts: HostFacts) -> str:
    """The snapshot as indented JSON (model field order, ``None`` left out), newline-ended."""
    data = facts.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json_safe(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def write_snapshot(facts: HostFacts, path: Path) -> None:
    """Write ``facts`` to ``path`` with :func:`~pinning.util.files.atomic_write_bytes`:
    atomically (temp file, then rename) over a regular file or a symbolic link's target, as a
    stream to a character device or FIFO, to standard output for ``-``.

    Raises :class:`~pinning.errors.UsageError` (exit 2) when ``path`` cannot be written;
    an existing file is then left as it was.
    """
    try:
        atomic_write_bytes(path, snapshot_text(facts).encode())
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write the snapshot ({exc.strerror or exc}).",
                         hint="Choose a writable file path (its folder must exist).") from exc


def read_snapshot(path: Path) -> HostFacts:
    """Read a snapshot written by ``pin probe -o`` (``-``: standard input), or the envelope
    ``pin probe --format json`` printed (its result is the snapshot).

    Raises :class:`ProbeError` (exit 7) naming the file, and the line or field, when it
    cannot be read, is not JSON, names a key twice in one object, or does not match
    ``schemas/host.schema.json`` exactly (no type coercion: ``"live": "true"`` is an error;
    environment names are POSIX names, values have no control characters).
    """
    if is_stdio(path):
        path = Path("(standard input)")  # the name in messages; the bytes come from stdin
        data_bytes = read_stdin_bytes(ProbeError, label=f"Host snapshot {path}", hint=HINT)
    else:
        data_bytes = read_regular_bytes(path, ProbeError, label=f"Host snapshot {path}",
                                        hint=HINT)
    return parse_snapshot(data_bytes, str(path))


#: The hint of every error reading a snapshot.
HINT = "Write a fresh snapshot with `pin probe -o FILE` on the host."


def parse_snapshot(data_bytes: bytes, where: str) -> HostFacts:
    """The snapshot (or ``pin probe --format json`` envelope) in ``data_bytes``, checked as
    :func:`read_snapshot` checks a file; ``where`` names it in errors (``hosts/n1.json``,
    ``fleet.jsonl line 12``). Raises :class:`ProbeError` (exit 7) as :func:`read_snapshot`.
    """
    hint = HINT
    try:
        raw = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeError(f"Host snapshot {where}: not UTF-8 ({exc}).", hint=hint) from exc
    try:
        data = load_json(raw, ProbeError, label=f"Host snapshot {where}", hint=hint,
                         object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise ProbeError(f"Host snapshot {where}: key {exc.args[0]!r} appears twice in one "
                         "object; a snapshot names each field once.", hint=hint) from exc
    data = unwrap(data, "probe")  # `pin probe --format json > FILE` wrote the envelope
    problem = None if _bytes_within_bounds(data_bytes) or _versions_within_bounds(data) else \
        version_fields_problem(data, SNAPSHOT_VERSION_FIELDS)
    if problem:
        raise ProbeError(f"Host snapshot {where}: {problem}.", hint=hint)
    known = _reuse_distributions(data)
    try:
        facts = HostFacts.model_validate(data, strict=True)
        _remember_distributions(facts, known)
        if "gpus" not in data:  # valid, so an object; pin probe always writes the field
            raise ProbeError(f"Host snapshot {where}: gpus: field required (the GPUs the probe "
                             "saw, `[]` for none; without it the host would read as one with "
                             "no GPU).", hint=hint)
        # Its hash must be computable (no lone surrogates). Text decoded from UTF-8 holds
        # none, so only a JSON escape (\udXXX) can bring one in.
        if "\\u" in raw:
            canonical_json(facts)
        return facts
    except UnicodeEncodeError as exc:
        raise ProbeError(f"Host snapshot {where}: a string is not valid Unicode ({exc.reason}).",
                         hint=hint) from exc
    except ValidationError as exc:
        raise ProbeError(f"Host snapshot {where}: {validation_summary(exc, data, limit=3)}.",
                         hint=hint) from exc


#: Python distributions already validated, by their JSON fields in order (a fleet's hosts
#: share most of their hundreds of packages): pydantic's validators run in Python for
#: some fields, so one validation per distinct entry instead of per host and entry.
_DISTRIBUTIONS: dict[tuple[tuple[str, Any], ...], Distribution] = {}
#: The most distinct entries remembered (a few MiB); past it the memory is cleared and
#: filled again (a fleet whose every host has its own versions stays flat in memory).
DISTRIBUTION_MEMO_LIMIT = 8192


def _reuse_distributions(data: Any) -> list[tuple[int, tuple[tuple[str, Any], ...]]]:
    """Put in place of each ``python.distributions`` entry of the parsed snapshot ``data``
    that an earlier snapshot held, field for field, the :class:`Distribution` validated
    then (an instance passes strict validation as it is, so the result and every error
    are what validating the entry again gives: only entries that validated are
    remembered). The entries not remembered, as ``(index, key)``, for
    :func:`_remember_distributions`. Raises nothing.
    """
    python = data.get("python") if type(data) is dict else None
    dists = python.get("distributions") if type(python) is dict else None
    if type(dists) is not list:
        return []
    memo, unknown = _DISTRIBUTIONS, []
    for i, entry in enumerate(dists):
        if type(entry) is not dict:
            continue
        key = tuple(entry.items())
        try:
            hit = memo.get(key)
        except TypeError:  # a list or object where a string belongs: not valid anyway
            continue
        if hit is None:
            unknown.append((i, key))
        else:
            dists[i] = hit
    return unknown


def _remember_distributions(facts: HostFacts,
                            unknown: list[tuple[int, tuple[tuple[str, Any], ...]]]) -> None:
    """Remember the validated :class:`Distribution` of each entry ``unknown`` names
    (:func:`_reuse_distributions`) of the snapshot that gave ``facts``. Raises nothing.
    """
    if not unknown:
        return
    if len(_DISTRIBUTIONS) + len(unknown) > DISTRIBUTION_MEMO_LIMIT:
        _DISTRIBUTIONS.clear()
    dists = facts.python.distributions
    for i, key in unknown:
        _DISTRIBUTIONS[key] = dists[i]


# Byte maps for _bytes_within_bounds: every byte but a quote becomes "x"; every byte but a
# digit becomes "x" (a digit becomes "0").
_QUOTES = bytes(b if b == 0x22 else 0x78 for b in range(256))
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_LONG_RUN = b"x" * (MAX_VERSION_CHARS + 1)
_LONG_NUMBER = b"0" * (MAX_NUMBER_DIGITS + 1)


def _bytes_within_bounds(data: bytes) -> bool:
    """True when no string in the JSON bytes ``data`` can be past the version bounds,
    judged on the bytes alone: no run of more than
    :data:`~pinning.util.versions.MAX_VERSION_CHARS` bytes without a quote (so no string
    has that many characters: UTF-8 takes at least a byte a character), no run of digits
    past :data:`~pinning.util.versions.MAX_NUMBER_DIGITS`, and no escape that could hide
    either (an escaped quote, a ``\\u`` escape). ``False`` only means the parsed data
    must be looked at (:func:`_versions_within_bounds`). About 20 times faster than that
    walk: a fleet reads thousands of snapshots.
    """
    return (b'\\"' not in data and b"\\u" not in data
            and _LONG_RUN not in data.translate(_QUOTES)
            and _LONG_NUMBER not in data.translate(_DIGITS))


_PAST = re.compile(r"[0-9]{19}")  # MAX_NUMBER_DIGITS + 1 digits (a test checks the bound)


def _past_bounds(text: str) -> bool:
    """True when ``text`` may be past :func:`~pinning.util.versions.version_problem`'s
    bounds (too long, or a number with too many digits).
    """
    return len(text) > MAX_VERSION_CHARS or (
        len(text) > MAX_NUMBER_DIGITS and _PAST.search(text) is not None)


def _versions_within_bounds(data: Any) -> bool:
    """True when :func:`~pinning.util.versions.version_fields_problem` finds nothing in
    ``data`` for :data:`SNAPSHOT_VERSION_FIELDS`: every string at or below a version field
    is within the version bounds (a superset of the strings that function judges, so a
    ``False`` only means it must be asked). The same walk without building a path for
    every node: a fleet reads thousands of snapshots. Iterative, as that function is.
    """
    versions = SNAPSHOT_VERSION_FIELDS
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, hot = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                under = hot or key in versions
                if isinstance(value, str):
                    if under and _past_bounds(value):
                        return False
                elif isinstance(value, dict | list):
                    stack.append((value, under))
        elif isinstance(node, list):
            for value in node:
                if isinstance(value, str):
                    if hot and _past_bounds(value):
                        return False
                elif isinstance(value, dict | list):
                    stack.append((value, hot))
    return True
