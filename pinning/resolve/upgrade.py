"""``pin lock upgrade`` / ``pin lock check``: re-resolve a lock's own ``[request]`` (pure).

:func:`upgrade` rebuilds the constraints from the lock's ``[request]`` with the changes the
user asks for (``--rocm`` / ``--cuda`` / ``--framework``), resolves them against the matrix
as it is today, and carries each value a ``pin freeze`` set forward when the new stack still
validates it: the host value lies inside the new allowed set or constraint, or equals the new
locked value (a series such as ``2.7`` holds ``2.7.1``). A value the new stack rules out is
dropped with why. Values that depend on another (the VBIOS string and firmware blocks on the
firmware version, the driver flavour on its version, the CUDA toolkit and the frozen
``[packages]`` on the runtime) go with it. The image a previous ``pin build`` recorded is kept
only when the stack is unchanged. ``pin lock check`` is an upgrade with no changes: the lock
is current when nothing of the stack differs (:func:`pinning.lockfile.diff.stack_changes`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinning import __version__
from pinning.lockfile.diff import Change, diff_locks, stack_changes
from pinning.lockfile.frozen import frozen_fields
from pinning.lockfile.io import amend, lock_json
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.matrix.names import OS_ID_VERSION, os_matches
from pinning.resolve.constraints import (
    Constraints,
    FrameworkRequest,
    ModelRef,
    parse_framework,
    parse_model,
    parse_os,
    parse_runtime_spec,
)
from pinning.util.versions import allowed_contains, constraint_holds

# A frozen value that only makes sense with another one: it goes when that one goes.
_DEPENDS: dict[str, str] = {
    "firmware.vbios": "firmware.version", "firmware.blocks": "firmware.version",
    "kernel-driver.flavor": "kernel-driver.version",
    "runtime.toolkit": "runtime", "target.count": "target",
}


@dataclass
class Upgraded:
    """The result of :func:`upgrade`: the new sealed ``lock``, the frozen values ``carried``
    forward (dotted names), those ``dropped`` as ``(name, why)``, the ``changes`` from the old
    lock to the new one (every layer) and the resolve guards' ``notes``.
    """

    lock: Lockfile
    carried: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def stack_changes(self) -> list[Change]:
        """The changes of the stack's own layers (what ``pin lock check`` calls drift)."""
        return stack_changes(self.changes)


def request_constraints(lock: Lockfile, matrix: Matrix, *, rocm: str | None = None,
                        cuda: str | None = None, frameworks: Sequence[str] = ()
                        ) -> Constraints:
    """The lock's ``[request]`` as :class:`Constraints`, with ``rocm`` / ``cuda`` replacing
    the runtime specifier (the other one is dropped) and each of ``frameworks``
    (``NAME[SPEC]``) replacing the request's framework of that name or adding one.

    Raises ``UsageError`` (exit 2) for a malformed specifier, as ``pin resolve`` does.
    """
    req = lock.request
    known = matrix.framework_names()
    wanted: dict[str, FrameworkRequest] = {}
    for text in req.frameworks:
        fw = parse_framework(text, known)
        wanted[fw.name] = fw
    for text in frameworks:
        fw = parse_framework(text, known)
        wanted[fw.name] = fw
    rocm_spec = rocm if rocm is not None else (req.rocm if cuda is None else None)
    cuda_spec = cuda if cuda is not None else (req.cuda if rocm is None else None)
    return Constraints(
        gpu=req.gpu,
        frameworks=tuple(wanted.values()),
        rocm=parse_runtime_spec("--rocm", rocm_spec) if rocm_spec else None,
        cuda=parse_runtime_spec("--cuda", cuda_spec) if cuda_spec else None,
        os=parse_os(req.os) if req.os else None,
        model=_request_model(lock),
        as_of=dt.date.fromisoformat(req.as_of) if req.as_of else None,
    )


def _request_model(lock: Lockfile) -> ModelRef | None:
    """The request's ``--model``: the lock's local model folder as recorded (it need not
    exist where the lock is upgraded), else parsed as ``pin resolve`` parses it.
    """
    model = lock.request.model
    if not model:
        return None
    if lock.model is not None and lock.model.path is not None and lock.model.path == model:
        return ModelRef(path=model)
    return parse_model(model)


def recorded_overlays(lock: Lockfile, lock_path: Path | None = None) -> list[str]:
    """The overlay paths the lock was resolved with, as recorded: each as given when it
    exists from here, else beside the lock (``lock_path``'s folder) when it exists there.
    """
    out = []
    for src in lock.matrix.sources:
        if not src.overlay or not src.path:
            continue
        p = Path(src.path)
        if not p.exists() and lock_path is not None and not p.is_absolute():
            beside = lock_path.parent / p
            if beside.exists():
                p = beside
        out.append(str(p) if p != Path(src.path) else src.path)
    return out


def upgrade(old: Lockfile, matrix: Matrix, c: Constraints, *,
            overlays: Sequence[str] = ()) -> Upgraded:
    """Resolve ``c`` against ``matrix`` as ``pin resolve`` does (resolve guards included,
    the old lock's build steps kept), then carry the old lock's frozen values forward.

    Raises what :func:`pinning.resolve.resolver.resolve` raises (``NoValidatedCombination``,
    exit 4; ``UsageError``, exit 2) and ``GuardRefused`` (exit 10).
    """
    from pinning.resolve.guards import apply_at_resolve
    from pinning.resolve.resolver import resolve
    from pinning.resolve.to_lock import lock_from_resolution, with_build_steps, with_serving

    res = resolve(matrix, c)
    fresh = lock_from_resolution(res, matrix, overlays=list(overlays))
    fresh = with_build_steps(fresh, old.build_steps or [])
    # The serving choices go through the guards again on the new stack (Marlin on AMD...).
    fresh = with_serving(fresh, old.serving, old.extensions or [])
    fresh, notes = apply_at_resolve(fresh)
    result = carry_forward(old, fresh)
    result.notes = notes
    return result


def _validates(path: str, new: dict[str, Any] | None, value: str) -> str | None:
    """Why the new pinned value ``new`` (JSON form) rules out host ``value``, or ``None``."""
    if new is None:
        return "the new stack has no such value"
    if path == "os" and new.get("allowed"):
        m = OS_ID_VERSION.match(value)
        key = (m.group(1), m.group(2)) if m else None
        if key and any(os_matches(key, e) for e in new["allowed"]):
            return None
        return f"not among the validated {', '.join(new['allowed'])}"
    locked = new.get("value") if new.get("origin") != "host" else None
    if locked is not None:
        if value == locked or allowed_contains([locked], value):
            return None
        return f"the new stack locks {locked}"
    if new.get("allowed"):
        if allowed_contains(new["allowed"], value):
            return None
        return f"not among {', '.join(new['allowed'])} that the new stack allows"
    if new.get("constraint") and constraint_holds(new["constraint"], value) is False:
        return f"outside {new['constraint']} that the new stack requires"
    return None


def _frameworks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(fw["name"]): fw for fw in data.get("frameworks", [])}


def _slot(data: dict[str, Any], path: str) -> tuple[dict[str, Any] | None, str]:
    """The table holding ``path`` in lock JSON ``data`` and the key in it."""
    parts = path.split(".")
    if parts[0] == "frameworks":
        return _frameworks(data).get(parts[1]), parts[2]
    table: Any = data
    for part in parts[:-1]:
        table = table.get(part) if isinstance(table, dict) else None
    return (table if isinstance(table, dict) else None), parts[-1]


class _Carry:
    """Moves frozen values from the old lock's JSON into the new one's, noting drops."""

    def __init__(self, old: Lockfile, new: Lockfile) -> None:
        self.old, self.new = old, new
        self.o, self.n = lock_json(old), lock_json(new)
        self.carried: list[str] = []
        self.dropped: list[tuple[str, str]] = []

    def drop(self, path: str, why: str) -> None:
        self.dropped.append((path, why))

    def pinned(self, path: str) -> None:
        o_table, key = _slot(self.o, path)
        n_table, _ = _slot(self.n, path)
        old = (o_table or {}).get(key)
        if not isinstance(old, dict) or n_table is None:
            self.drop(path, "the new stack has no such value")
            return
        new = n_table.get(key)
        if self._numbered_apart(path):
            # The host shows another numbering than the matrix's set: only the same set as
            # the freeze accepted still validates it.
            same = (new or {}).get("allowed") == old.get("allowed") and \
                (new or {}).get("constraint") == old.get("constraint")
            why = None if same else (
                "the new stack's set is numbered apart from what the host shows, so it "
                "cannot be checked; freeze it from a host on the new stack")
        else:
            why = _validates(path, new, str(old["value"]))
        if why:
            self.drop(path, f"host value {old['value']}: {why}")
            return
        merged = dict(new or {})
        merged.pop("reason", None)
        if path.startswith("frameworks.") and path.endswith(".build") \
                and merged.get("origin") == "unknown":
            merged = {k: v for k, v in old.items()}  # upstream variants were only a hint
        elif path.startswith("frameworks.") and path.endswith(".version") and merged.get("value"):
            merged["allowed"] = [merged["value"]]  # what was asked, as pin freeze keeps it
        merged.update(value=old["value"], origin="host")
        n_table[key] = merged
        self.carried.append(path)

    def _numbered_apart(self, path: str) -> bool:
        """True for values whose host reading is not comparable with the matrix's set
        (as :mod:`pinning.verify.hardware` treats them): the amdgpu module version against
        AMD GPU Driver releases, AMD IFWI / BKC / VBIOS labels against the VBIOS string.
        """
        n = self.new
        if path == "kernel-driver.version":
            return n.kernel_driver.name == "amdgpu" == self.old.kernel_driver.name
        if path == "firmware.version":
            return n.firmware.kind == self.old.firmware.kind and not (
                n.firmware.kind == "pldm-bundle"
                or (n.firmware.kind == "vbios" and n.target.vendor == "nvidia"))
        return False

    def dependent(self, path: str) -> None:
        parent = _DEPENDS[path]
        o_table, key = _slot(self.o, path)
        n_table, _ = _slot(self.n, path)
        why = self._parent_changed(parent)
        if why or n_table is None or o_table is None:
            self.drop(path, why or "the new stack has no such value")
            return
        n_table[key] = o_table[key]
        self.carried.append(path)

    def _parent_changed(self, parent: str) -> str | None:
        if any(p == parent for p, _ in self.dropped):
            return f"goes with {parent}, which was dropped"
        o, n = self.old, self.new
        if parent == "target":
            ot = o.target.gfx_target or o.target.compute_capability
            nt = n.target.gfx_target or n.target.compute_capability
            if (o.target.vendor, o.target.gpu.value, ot and ot.value) != \
                    (n.target.vendor, n.target.gpu.value, nt and nt.value):
                return "the new stack is for another GPU"
        if parent == "runtime" and (o.runtime.name, o.runtime.version.value) != \
                (n.runtime.name, n.runtime.version.value):
            return (f"frozen with {o.runtime.name} {o.runtime.version.value}; the new stack has "
                    f"{n.runtime.name} {n.runtime.version.value}")
        if parent == "firmware.version" and o.firmware.kind != n.firmware.kind:
            return f"the new stack's firmware is a {n.firmware.kind}"
        if parent == "kernel-driver.version" and o.kernel_driver.name != n.kernel_driver.name:
            return "the new stack has another kernel driver"
        return None


_DROPPED_NOTE = "Re-resolved by pin {version}; frozen values dropped (re-freeze them): "
# One "path (why)" entry of that note: a new entry starts after "; " with a dotted name and
# " (" (a why may itself hold "; ", never followed by a name and a parenthesis).
_ENTRY_START = re.compile(r"; (?=[a-z][a-z0-9._-]* \()")
_NOTE_HEAD = re.compile(r"^(Re-resolved by pin \S+; frozen values dropped \(re-freeze them\): )"
                        r"(.*)\.$", re.DOTALL)


def _pending_refreeze(old: Lockfile, frozen: Sequence[str]) -> list[str]:
    """The old lock's "frozen values dropped (re-freeze them)" notes with only the entries
    whose value is still not frozen (``frozen``: :func:`frozen_fields` of ``old``); a note
    whose values were all re-frozen since (``pin freeze``) is left out, one with none
    re-frozen is kept word for word (so an upgrade with nothing new changes nothing).
    """
    out = []
    for note in old.notes:
        m = _NOTE_HEAD.match(note)
        if not m:
            continue
        entries = _ENTRY_START.split(m.group(2))
        pending = [e for e in entries if e.partition(" (")[0] not in frozen]
        if len(pending) == len(entries):
            out.append(note)
        elif pending:
            out.append(m.group(1) + "; ".join(pending) + ".")
    return out


def carry_forward(old: Lockfile, new: Lockfile) -> Upgraded:
    """``new`` with the values ``old`` froze from a host wherever ``new`` still validates
    them (see the module docstring), the old ``[frozen]`` record, environment and freeze
    note when anything was carried, the earlier upgrades' "re-freeze them" notes until
    those values are frozen again, the old image and wheels when the stack is unchanged,
    and any other section of ``old`` that ``new`` lacks. Returns the sealed result with
    what was carried, what was dropped (with why) and the changes from ``old``.
    """
    cf = _Carry(old, new)
    frozen = frozen_fields(old)
    for path in frozen:
        if path in _DEPENDS or path in ("packages", "environment", "firmware.blocks"):
            continue
        version = path.removesuffix(".build") + ".version"
        if path.startswith("frameworks.") and path.endswith(".build") \
                and any(p == version for p, _ in cf.dropped):
            cf.drop(path, f"goes with {version}, which was dropped")
            continue
        cf.pinned(path)
    for path in frozen:
        if path in _DEPENDS:
            cf.dependent(path)
    data = cf.n
    # [packages] that pin lock packages wrote go with its [[wheels]] (_carry_rest).
    if "packages" in frozen and "wheels" not in cf.o:
        why = cf._parent_changed("runtime") or next(
            (f"goes with {p}, which was dropped" for p, _ in cf.dropped
             if p.startswith("frameworks.")), None)
        if why:
            cf.drop("packages", why)
        else:
            data["packages"] = cf.o["packages"]
            cf.carried.append("packages")
    if cf.carried:
        data["environment"] = cf.o.get("environment", {})
        if "frozen" in cf.o:  # [packages] from pin lock packages: no host was frozen in
            data["frozen"] = cf.o["frozen"]
        data["notes"] = [*data.get("notes", []),
                         *(n for n in cf.o.get("notes", []) if n.startswith("Frozen from "))]
    # Earlier upgrades' notes of what to re-freeze stay until those values are re-frozen.
    data["notes"] = [*data.get("notes", []), *_pending_refreeze(old, frozen)]
    if cf.dropped:
        data["notes"] = [*data["notes"], (
            f"{_DROPPED_NOTE.format(version=__version__)}"
            + "; ".join(f"{p} ({why})" for p, why in cf.dropped) + ".")]
    _carry_rest(cf, data)
    _carry_model(old, data)
    fields = {f.alias or name: name for name, f in Lockfile.model_fields.items()}
    updates = {fields[k]: v for k, v in data.items() if k in fields and k != "content-hash"}
    lock = amend(new, **updates)
    return Upgraded(lock=lock, carried=cf.carried, dropped=cf.dropped,
                    changes=diff_locks(old, lock))


def _carry_model(old: Lockfile, data: dict[str, Any]) -> None:
    """The old ``[model]`` (its pinned files, missing list, origin) when the new lock names
    the same model (id and revision, or folder path): a re-resolve reads no file.
    """
    new = data.get("model")
    if old.model is None or not isinstance(new, dict):
        return
    if (new.get("id"), new.get("revision"), new.get("path")) == (
            old.model.id, old.model.revision, old.model.path):
        data["model"] = lock_json(old)["model"]


def _carry_rest(cf: _Carry, data: dict[str, Any]) -> None:
    """The old image, and the wheels with the ``[packages]`` pin lock packages resolved
    beside them, when the stack is unchanged (else dropped, with why), and any other
    top-level section of the old lock the fresh resolve does not write.
    """
    o = cf.o
    for key, value in o.items():
        if key in data or key in ("packages", "frozen", "wheels"):
            continue
        data[key] = value
    wheels: dict[str, Any] = {k: o[k] for k in ("wheels", "packages") if "wheels" in o and k in o}
    probe = {**data, "image": o["image"], **wheels}
    if o["image"] == cf.n.get("image") and not wheels:  # nothing built or resolved beside
        return
    draft = amend(cf.new, **{k.replace("-", "_"): v for k, v in probe.items()
                             if k.replace("-", "_") in Lockfile.model_fields
                             and k != "content-hash"})
    if [c for c in stack_changes(diff_locks(cf.old, draft)) if c.layer != "image"]:
        if o["image"] != cf.n.get("image"):
            cf.drop("image", "built for the old stack; run pin build again")
        if "packages" in wheels:
            cf.drop("packages", "resolved with its wheels for the old stack; run "
                                "pin lock packages again")
        return
    data.update(image=o["image"], **wheels)
