"""What differs between two lockfiles, value by value, grouped by layer (pure).

:func:`diff_locks` walks the two locks' JSON forms (kebab-case keys) and returns one
:class:`Change` per differing value: a pinned value's ``value``, ``allowed`` set or
``constraint`` (its ``reason`` text and ``origin`` are the value's explanation, not the
value), a plain key, or a whole list (notes, PCI IDs). Lists of tables are matched by their
name (``frameworks`` by ``name``, matrix rows by ``ref``). The ``content-hash`` is left
out: it follows from the rest.

``[serving]`` is compared as ``pin resolve`` spells its flags: ``serving.quantization``
(``METHOD[:BACKEND]``), ``serving.attention`` (``NAME[==VERSION][:BACKEND]``),
``serving.head-dim``, ``serving.dtype``; ``[[extensions]]`` one entry a name,
``extensions.NAME`` as ``NAME==VERSION[:BUILD][@TARGETS]``. Their source is the table's
``origin`` (``user``: a ``pin resolve`` flag; ``host``: ``pin freeze``).

Layers, in the order a stack is read: target, firmware, driver, os, runtime, frameworks,
packages, model, serving, extensions, image, environment (:data:`STACK_LAYERS`), then what
says how the lock was made: request, matrix, frozen, generator, notes (:data:`OTHER_LAYERS`).
"""

from __future__ import annotations

from typing import Any

from pinning.lockfile.io import lock_json
from pinning.lockfile.models import Lockfile
from pinning.util.models import Strict

#: The layers of the stack itself, in reading order.
STACK_LAYERS: tuple[str, ...] = ("target", "firmware", "driver", "os", "runtime", "frameworks",
                                 "packages", "model", "serving", "extensions", "image",
                                 "environment")
#: Layers that record how the lock was made rather than the stack.
OTHER_LAYERS: tuple[str, ...] = ("request", "matrix", "frozen", "generator", "notes")

_LAYER_OF: dict[str, str] = {
    "target": "target", "firmware": "firmware", "kernel-driver": "driver", "os": "os",
    "kernel": "os", "runtime": "runtime", "frameworks": "frameworks", "packages": "packages",
    "model": "model", "image": "image", "wheels": "image", "build-steps": "image",
    "python": "packages",
    "environment": "environment", "request": "request", "matrix": "matrix",
    "frozen": "frozen", "generator": "generator", "lock-version": "generator",
    "notes": "notes", "warnings": "notes", "serving": "serving", "extensions": "extensions",
}
# Lists of tables and the key that names each entry.
_LIST_KEYS: dict[str, str] = {"frameworks": "name", "sources": "name", "rows": "ref",
                              "wheels": "name"}
_PINNED_PARTS = ("value", "allowed", "constraint")


class Change(Strict):
    """One value that differs: its ``layer`` (see the module docstring), its dotted
    ``path`` in the lock (``runtime.version``, ``frameworks.pytorch.build``,
    ``packages.numpy``), the ``old`` and ``new`` value as text (``None`` when absent on
    that side) and ``source``: where the new value comes from (``matrix <row ref>``,
    ``host``, ``user``; ``None`` for plain keys).
    """

    layer: str
    path: str
    old: str | None
    new: str | None
    source: str | None = None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) if value else "(none)"
    return str(value)


def _is_pinned(value: Any) -> bool:
    return isinstance(value, dict) and "origin" in value


def _source(pinned: Any) -> str | None:
    if not _is_pinned(pinned):
        return None
    ref = pinned.get("ref")
    return f"{pinned['origin']} {ref}" if ref else str(pinned["origin"])


class _Walker:
    """Collects the changes of one layer while walking two JSON values side by side."""

    def __init__(self, layer: str, out: list[Change]) -> None:
        self.layer, self.out = layer, out

    def add(self, path: str, old: Any, new: Any, source: str | None = None) -> None:
        self.out.append(Change(layer=self.layer, path=path, old=_text(old), new=_text(new),
                               source=source))

    def walk(self, path: str, a: Any, b: Any) -> None:
        if a == b:
            return
        if _is_pinned(a) or _is_pinned(b):
            self.pinned(path, a or {}, b or {})
        elif isinstance(a, dict) and isinstance(b, dict):
            for key in [*a, *(k for k in b if k not in a)]:
                self.walk(f"{path}.{key}", a.get(key), b.get(key))
        elif path.rpartition(".")[2] in _LIST_KEYS and _tables(a) and _tables(b):
            self.tables(path, _LIST_KEYS[path.rpartition(".")[2]], a or [], b or [])
        elif path.rpartition(".")[2] in ("notes", "warnings") and not _tables(a or b):
            self.items(path, a or [], b or [])
        elif (isinstance(a, dict) and b is None) or (a is None and isinstance(b, dict)):
            self.walk(path, a or {}, b or {})
        else:
            self.add(path, a, b)

    def tables(self, path: str, name: str, a: list[Any], b: list[Any]) -> None:
        """Two lists of tables, matched by each table's ``name`` key."""
        left = {str(x.get(name)): x for x in a}
        right = {str(x.get(name)): x for x in b}
        for key in [*left, *(k for k in right if k not in left)]:
            if key in left and key in right:
                self.walk(f"{path}.{key}", left[key], right[key])
            else:  # an entry added or removed: one line, by its name
                self.add(f"{path}.{key}", key if key in left else None,
                         key if key in right else None)

    def items(self, path: str, a: list[Any], b: list[Any]) -> None:
        """Two lists of notes: one line per note removed, then per note added."""
        for item in a:
            if item not in b:
                self.add(path, item, None)
        for item in b:
            if item not in a:
                self.add(path, None, item)

    def pinned(self, path: str, a: dict[str, Any], b: dict[str, Any]) -> None:
        source = _source(b) if b else None
        for part in _PINNED_PARTS:
            if a.get(part) != b.get(part):
                self.add(path if part == "value" else f"{path} ({part})",
                         a.get(part), b.get(part), source)


def _serving_text(table: dict[str, Any]) -> dict[str, str | None]:
    """A ``[serving]`` table (JSON form) as its ``pin resolve`` flag values, by key."""
    def joined(first: str, *rest: tuple[str, Any]) -> str | None:
        if table.get(first) is None:
            return None
        return str(table[first]) + "".join(f"{sep}{table[k]}" for sep, k in rest
                                           if table.get(k) is not None)

    head = table.get("head-dim")
    return {"quantization": joined("quantization", (":", "quantization-backend")),
            "attention": joined("attention", ("==", "attention-version"),
                                (":", "attention-backend")),
            "head-dim": None if head is None else str(head),
            "dtype": joined("dtype")}


def _extension_text(ext: dict[str, Any]) -> str:
    """An ``[[extensions]]`` entry as its ``--extension`` flag value
    (``NAME==VERSION[:BUILD][@TARGETS]``; ``NAME==?`` when the version is unknown).
    """
    targets = ext.get("targets")
    return (f"{ext['name']}=={ext.get('version') or '?'}"
            + (f":{ext['build']}" if ext.get("build") else "")
            + (f"@{','.join(targets)}" if targets else ""))


def _serving_changes(a: Any, b: Any, out: list[Change]) -> None:
    """The ``[serving]`` changes from ``a`` to ``b`` (JSON tables or ``None``)."""
    old, new = a or {}, b or {}
    source = str(new["origin"]) if new.get("origin") else None
    told, tnew = _serving_text(old), _serving_text(new)
    for key in told:
        if told[key] != tnew[key]:
            out.append(Change(layer="serving", path=f"serving.{key}", old=told[key],
                              new=tnew[key], source=source))
    if old and new and old.get("origin") != new.get("origin"):
        out.append(Change(layer="serving", path="serving (origin)", old=old.get("origin"),
                          new=new.get("origin")))


def _extension_changes(a: Any, b: Any, out: list[Change]) -> None:
    """The ``[[extensions]]`` changes from ``a`` to ``b`` (JSON lists or ``None``), one
    entry a name: its flag spelling, then its ``reason`` and ``origin`` when they differ.
    """
    left = {str(e["name"]): e for e in a or []}
    right = {str(e["name"]): e for e in b or []}
    for name in [*left, *(k for k in right if k not in left)]:
        old, new = left.get(name), right.get(name)
        path = f"extensions.{name}"
        source = str(new["origin"]) if new and new.get("origin") else None
        t_old = _extension_text(old) if old else None
        t_new = _extension_text(new) if new else None
        if t_old != t_new:
            out.append(Change(layer="extensions", path=path, old=t_old, new=t_new,
                              source=source))
        if old and new:
            for part in ("reason", "origin"):
                if old.get(part) != new.get(part):
                    out.append(Change(layer="extensions", path=f"{path} ({part})",
                                      old=old.get(part), new=new.get(part), source=source))


def _tables(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))


def diff_locks(old: Lockfile, new: Lockfile) -> list[Change]:
    """Every value that differs from ``old`` to ``new``, layer by layer in the order of
    :data:`STACK_LAYERS` then :data:`OTHER_LAYERS`; an empty list when the locks hold the same
    content (their bytes may still differ in the ``#:schema`` comment).
    """
    a, b = lock_json(old), lock_json(new)
    out: list[Change] = []
    for key in [*a, *(k for k in b if k not in a)]:
        if key == "content-hash":
            continue
        if key == "serving":
            _serving_changes(a.get(key), b.get(key), out)
            continue
        if key == "extensions":
            _extension_changes(a.get(key), b.get(key), out)
            continue
        _Walker(_LAYER_OF.get(key, "notes"), out).walk(key, a.get(key), b.get(key))
    order = {name: i for i, name in enumerate((*STACK_LAYERS, *OTHER_LAYERS))}
    return sorted(out, key=lambda c: order.get(c.layer, len(order)))


def stack_changes(changes: list[Change]) -> list[Change]:
    """The changes of the stack's own layers (:data:`STACK_LAYERS`)."""
    return [c for c in changes if c.layer in STACK_LAYERS]


_LABELS = {"runtime.version": "{runtime}", "runtime.hip": "HIP",
           "kernel-driver.version": "{driver}", "firmware.version": "firmware",
           "target.gpu": "GPU", "os": "OS", "kernel": "kernel"}


def summary_lines(changes: list[Change], lock: Lockfile | None = None) -> list[str]:
    """Short lines for a write's change summary: ``ROCm 10.0.0 -> 7.2.0``,
    ``pytorch 2.13.0 -> 2.12.0``, ``serving: quantization awq:triton -> (absent)``,
    ``extensions: flash-attn flash-attn==2.8.3:source@gfx942 -> (absent)``, ``packages: 4
    value(s) changed``; stack layers only, ``lock`` (the new one) names the runtime and
    driver.
    """
    runtime = ("ROCm" if lock.runtime.name == "rocm" else "CUDA") if lock else "runtime"
    driver = lock.kernel_driver.name if lock else "driver"
    out = []
    counts: dict[str, int] = {}
    for c in stack_changes(changes):
        if c.layer in ("packages", "environment"):
            counts[c.layer] = counts.get(c.layer, 0) + 1
            continue
        if c.path.endswith(")"):  # an allowed set or constraint: `pin lock diff` shows it
            continue
        label = _LABELS.get(c.path, c.path).format(runtime=runtime, driver=driver)
        if c.path.startswith("frameworks.") and c.path.endswith(".version"):
            label = c.path.split(".")[1]
        elif c.layer in ("serving", "extensions"):
            label = f"{c.layer}: {c.path.partition('.')[2]}"
        out.append(f"{label} {c.old or '(absent)'} -> {c.new or '(absent)'}")
    out += [f"{layer}: {n} value(s) changed" for layer, n in counts.items()]
    return out


def diff_text(changes: list[Change]) -> str:
    """``pin lock diff``'s text: a heading per layer, then ``path: old -> new (source)``
    lines; ``"no differences\\n"`` when ``changes`` is empty.
    """
    if not changes:
        return "no differences\n"
    lines: list[str] = []
    layer = None
    for c in changes:
        if c.layer != layer:
            layer = c.layer
            lines.append(f"{layer}:")
        src = f"  [{c.source}]" if c.source and c.new is not None else ""
        lines.append(f"  {c.path}: {c.old or '(absent)'} -> {c.new or '(absent)'}{src}")
    return "\n".join(lines) + "\n"


class TargetsDiff(Strict):
    """What differs between two multi-target locks (``lock-version = 2``), target by target:
    the target names only in the new lock (``added``) and only in the old (``removed``), in
    file order, and for each target in both (the new file's order) its :class:`Change` list
    (:func:`diff_locks` of the two views; empty when equal).
    """

    added: list[str]
    removed: list[str]
    changes: dict[str, list[Change]]

    @property
    def equal(self) -> bool:
        """True when both locks have the same targets, each with the same content."""
        return not (self.added or self.removed or any(self.changes.values()))

    def as_json(self) -> dict[str, Any]:
        """``{"equal", "added-targets", "removed-targets", "targets": {name: {"equal",
        "changes": [{"layer", "path", "old", "new", "source"}]}}}``.
        """
        return {"equal": self.equal, "added-targets": self.added,
                "removed-targets": self.removed,
                "targets": {name: {"equal": not changes,
                                   "changes": [c.model_dump(mode="json") for c in changes]}
                            for name, changes in self.changes.items()}}


def diff_targets(old: dict[str, Lockfile], new: dict[str, Lockfile]) -> TargetsDiff:
    """Every target's changes from ``old`` to ``new`` (each a target name -> its view, as
    :func:`pinning.lockfile.io.read_locks` returns them), with the targets added and removed.
    """
    return TargetsDiff(added=[n for n in new if n not in old],
                       removed=[n for n in old if n not in new],
                       changes={n: diff_locks(old[n], lk) for n, lk in new.items() if n in old})


def target_heading(name: str) -> str:
    """The line that starts a target's part of a multi-target lock's text output."""
    return f"== target {name} =="


def targets_diff_text(diff: TargetsDiff) -> str:
    """``pin lock diff``'s text for two multi-target locks: a line per target added or
    removed, then a :func:`target_heading` per target in both with its :func:`diff_text`.
    """
    lines = [f"target {n}: added (only in NEW)" for n in diff.added]
    lines += [f"target {n}: removed (only in OLD)" for n in diff.removed]
    text = "".join(f"{line}\n" for line in lines)
    for name, changes in diff.changes.items():
        text += f"{target_heading(name)}\n{diff_text(changes)}"
    return text
