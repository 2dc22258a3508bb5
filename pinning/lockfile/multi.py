"""The multi-target lock (``lock-version = 2``): one file, a section per target.

A target's section holds what differs between targets; ``[shared]`` holds what every target
has the same (the generator, the matrix provenance, the model, and the request's framework
and model constraints), written once. A target's *view* is ``[shared]`` merged with its
section: exactly a ``lock-version = 1`` lock, with the target's own ``content-hash`` (the
same rule as a single-target lock, so a result, signature or image bound to a lock stays
bound after ``pin lock migrate``). The file's own ``content-hash`` covers everything.

Version rules (docs/concepts/lock-versions.md): this pin reads ``lock-version`` 1 and 2;
``pin lock`` and ``pin lock migrate`` write 2; a command that updates a lock in place keeps
its version; a larger version is refused (exit 5) naming the pin that reads it.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from pinning.errors import LockfileError, UsageError
from pinning.lockfile.models import Lockfile
from pinning.lockfile.tomlout import schema_hint, toml_item
from pinning.lockfile.values import DIGEST_PATTERN
from pinning.util.digests import canonical_digest
from pinning.util.models import Strict
from pinning.util.text import printable

MULTI_VERSION: Literal[2] = 2
#: The lock versions this pin reads; what it writes is 1 (a single-target lock updated in
#: place) or :data:`MULTI_VERSION`.
READABLE_VERSIONS = (1, MULTI_VERSION)
#: The committed JSON Schema of a ``lock-version = 2`` file (``schemas/``).
MULTI_SCHEMA_NAME = "lockfile-v2.schema.json"
TARGET_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
TargetName = Annotated[str, Field(pattern=TARGET_NAME_PATTERN)]
#: Top-level keys of a target's view written once in ``[shared]`` when every target has the
#: same value; for ``request``, the keys below.
SHARED_KEYS = ("generator", "matrix", "model")
SHARED_REQUEST_KEYS = ("frameworks", "model", "as-of")


class MultiLock(Strict):
    """A whole ``lock-version = 2`` file (kebab-case keys). ``targets`` maps a target name
    (``current``, ``candidate``: the project file's) to its section as JSON data, each with
    its view's ``content-hash``; ``shared`` is JSON data merged into every view. Sections
    are validated as locks when their views are built (:func:`view_data`).
    """

    lock_version: Literal[2] = MULTI_VERSION
    content_hash: str = Field(pattern=DIGEST_PATTERN)
    project: str | None = Field(default=None, description="The project file's [project] "
                                "name, when `pin lock` wrote the file from one.")
    shared: dict[str, Any] = Field(default_factory=dict)
    targets: dict[TargetName, dict[str, Any]] = Field(min_length=1)

    @field_validator("shared")
    @classmethod
    def _shared_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        extra = sorted(set(value) - set(SHARED_KEYS) - {"request"})
        if extra:
            raise ValueError(f"[shared] holds only {', '.join((*SHARED_KEYS, 'request'))} "
                             f"(not {', '.join(map(shown_name, extra))})")
        if not isinstance(value.get("request", {}), dict):
            raise ValueError("[shared] request must be a table, not "
                             f"{type(value['request']).__name__}")
        extra = sorted(set(value.get("request", {})) - set(SHARED_REQUEST_KEYS))
        if extra:
            raise ValueError(f"[shared.request] holds only {', '.join(SHARED_REQUEST_KEYS)} "
                             f"(not {', '.join(map(shown_name, extra))})")
        return value

    @property
    def names(self) -> list[str]:
        """The target names, in file order."""
        return list(self.targets)


def multi_json(multi: MultiLock) -> dict[str, Any]:
    """``multi`` as JSON-ready data (kebab-case keys, ``None`` and an empty ``shared`` left
    out), in file order.
    """
    data = multi.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not data.get("shared"):
        data.pop("shared", None)
    return data


def view_data(multi: MultiLock, name: str, *, label: str) -> dict[str, Any]:
    """Target ``name``'s view as ``lock-version = 1`` data: ``[shared]`` merged with its
    section. Raises ``LockfileError`` (exit 5) naming ``label`` and the key when a key is in
    both (a hand edit).
    """
    section = multi.targets[name]
    if "lock-version" in section or not isinstance(section.get("request", {}), dict):
        bad = ("lock-version, which only the file's top holds" if "lock-version" in section
               else f"request as {type(section['request']).__name__}, not a table")
        raise LockfileError(f"{label}: [targets.{name}] holds {bad}.",
                            hint="Restore the file, or re-write it with `pin lock`.")
    both = sorted(set(multi.shared) & (set(section) - {"request"}))
    request = dict(section.get("request", {}))
    shared_request = multi.shared.get("request", {})
    both += [f"request.{k}" for k in sorted(set(shared_request) & set(request))]
    if both:
        raise LockfileError(f"{label}: [targets.{name}] repeats {', '.join(both)}, which "
                            "[shared] holds; a value is written once.",
                            hint="Restore the file, or re-write it with `pin lock`.")
    data: dict[str, Any] = {"lock-version": 1}
    data.update({k: v for k, v in multi.shared.items() if k != "request"})
    data.update(section)
    if shared_request or "request" in section:
        data["request"] = {**shared_request, **request}
    return data


def split(views: dict[str, dict[str, Any]], *, project: str | None = None) -> MultiLock:
    """Build a sealed :class:`MultiLock` from each target's view data (``lock-version = 1``
    JSON with its ``content-hash``), writing a :data:`SHARED_KEYS` value (and a
    :data:`SHARED_REQUEST_KEYS` request key) once when every target has it the same.
    ``views`` is kept in its order. Raises ``UsageError`` (exit 2) for a bad target name.
    """
    for name in views:
        if not re.fullmatch(TARGET_NAME_PATTERN, name):
            raise UsageError(f"{shown_name(name)} is not a target name ({NAME_RULE}).")
    sections = {name: {k: v for k, v in data.items() if k != "lock-version"}
                for name, data in views.items()}
    shared: dict[str, Any] = {}
    for key in SHARED_KEYS:
        value = _common(sections.values(), key)
        if value is not None:
            shared[key] = value
            for section in sections.values():
                del section[key]
    requests = [s.get("request", {}) for s in sections.values()]
    common = {k: v for k in SHARED_REQUEST_KEYS if (v := _common(requests, k)) is not None}
    if common:
        shared["request"] = common
        for section in sections.values():
            section["request"] = {k: v for k, v in section["request"].items() if k not in common}
    return seal_multi({"project": project, "shared": shared, "targets": sections})


#: What :data:`TARGET_NAME_PATTERN` allows, in words.
NAME_RULE = "letters, digits, `.`, `_`, `-`, starting with a letter or digit, at most 63"


def shown_name(name: str, limit: int = 40) -> str:
    """``name`` (a key read from a file) quoted for a message: escaped as
    :func:`~pinning.util.text.printable` does, cut to ``limit`` characters.
    """
    cut = name if len(name) <= limit else name[:limit] + f"... ({len(name)} characters)"
    return f"'{printable(cut, newlines=False)}'"


def bad_target_name(data: dict[str, Any]) -> str | None:
    """The first key of a parsed file's ``targets`` table that is not a target name, as
    :func:`shown_name` shows it; ``None`` when each is one (or ``targets`` is no table).
    """
    targets = data.get("targets")
    for name in targets if isinstance(targets, dict) else ():
        if not re.fullmatch(TARGET_NAME_PATTERN, name):
            return shown_name(name)
    return None


def _common(tables: Any, key: str) -> Any:
    """The value every table has at ``key`` when they all have the same one, else ``None``."""
    values = [t.get(key) for t in tables]
    first = values[0] if values else None
    if first is None or any(v != first for v in values[1:]):
        return None
    return first


def seal_multi(data: dict[str, Any]) -> MultiLock:
    """``data`` (without ``content-hash``; ``None`` values dropped) validated, with its
    ``content-hash`` set: the sha256 of the canonical JSON of everything else.
    """
    body = {k: v for k, v in data.items() if v not in (None, {}) and k != "content-hash"}
    body["lock-version"] = MULTI_VERSION
    body["content-hash"] = canonical_digest(body)
    return MultiLock.model_validate(body)


def multi_hash(data: dict[str, Any]) -> str:
    """The ``content-hash`` a ``lock-version = 2`` file's parsed ``data`` should carry."""
    return canonical_digest({k: v for k, v in data.items() if k != "content-hash"})


def no_such_target(name: str, names: list[str], label: str) -> UsageError:
    """The ``UsageError`` (exit 2) for ``--target NAME`` that ``label`` (a lock or project
    file) does not have among ``names``, with the nearest name when one is close.
    """
    close = difflib.get_close_matches(name, names, n=1)
    mean = f" Did you mean {close[0]!r}?" if close else ""
    return UsageError(f"--target {name!r}: {label} has no such target (targets: "
                      f"{', '.join(names) or 'none'}).{mean}")


def pick(multi: MultiLock, name: str | None, *, label: str) -> str:
    """The target ``name`` names, else the only one. Raises ``UsageError`` (exit 2) for an
    unknown name (with the nearest) or, with several targets and none named, naming them.
    """
    names = multi.names
    if name is not None:
        if name not in multi.targets:
            raise no_such_target(name, names, label)
        return name
    if len(names) > 1:
        raise UsageError(f"{label} locks {len(names)} targets ({', '.join(names)}); name "
                         "one with --target NAME.",
                         hint=f"For example: --target {names[0]} (pin lock show {label} "
                              "lists them).")
    return names[0]


def pick_by_gpu(multi: MultiLock, vendor: str, gpus: set[str]) -> list[str]:
    """The targets whose locked vendor is ``vendor`` and whose GPU (matrix id, or the
    locked product) is one of ``gpus`` (lower-case matrix ids), in file order.
    """
    out = []
    for name, section in multi.targets.items():
        target = section.get("target", {})
        request_gpu = str(section.get("request", {}).get("gpu", "")).lower()
        product = str((target.get("gpu") or {}).get("value") or "").lower()
        if target.get("vendor") == vendor and ({request_gpu, product} & gpus):
            out.append(name)
    return out


def render_multi(multi: MultiLock, *, dest: Path | None = None) -> str:
    """Render a multi-target lock as TOML text: the ``#:schema`` hint (as :func:`render`),
    a header naming the targets and how to regenerate them, then ``[shared]`` and one
    ``[targets.NAME]`` table per target, in order.
    """
    import tomlkit

    doc = tomlkit.document()
    hint = schema_hint(dest, MULTI_SCHEMA_NAME)
    if hint:
        doc.add(tomlkit.comment(f"schema {hint}"))
    shown = ", ".join(f"{name} ({printable(str(sec.get('request', {}).get('gpu', '?')))})"
                      for name, sec in multi.targets.items())
    generator = multi.shared.get("generator") or {}
    doc.add(tomlkit.comment(printable(
        f"pin lockfile (lock-version 2) for {shown}"
        + (f" of project {multi.project}" if multi.project else "")
        + (f": written by pin {generator.get('version')}" if generator else "")
        + "; do not edit by hand.", newlines=False)))
    doc.add(tomlkit.comment("Regenerate: pin lock (every target) or pin lock --target NAME "
                            "(keeps frozen host values)"))
    doc.add(tomlkit.comment("Show: pin lock show FILE    Validate: pin lock validate FILE    "
                            "One target: any lock command with --target NAME"))
    for key, value in multi_json(multi).items():
        doc.add(key, toml_item(value))
    text = tomlkit.dumps(doc)
    if hint:
        text = text.replace("# schema ", "#:schema ", 1)
    return text


def replace_target(multi: MultiLock, name: str, lock: Lockfile) -> MultiLock:
    """``multi`` with target ``name``'s section made from ``lock`` (added when new), the
    shared values re-factored and the file re-sealed.
    """
    views = {n: view_data(multi, n, label="lock") for n in multi.targets}
    views[name] = lock.model_dump(mode="json", by_alias=True, exclude_none=True)
    return split(views, project=multi.project)
