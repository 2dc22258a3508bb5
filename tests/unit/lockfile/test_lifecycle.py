"""The lock lifecycle in the core: canonical requests (same request, same bytes), the diff
by layer, the frozen values a fresh resolve would drop, and upgrade / check carrying frozen
host values forward (with the recorded MI300X host, ROCm 7.1.1).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinning.errors import LockfileError
from pinning.guards.serving import serving_from_flags
from pinning.lockfile.diff import (
    STACK_LAYERS,
    Change,
    diff_locks,
    diff_text,
    stack_changes,
    summary_lines,
)
from pinning.lockfile.frozen import frozen_fields, guard_frozen
from pinning.lockfile.io import amend, render, write_lock
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.resolve.constraints import Constraints, parse_framework, parse_runtime_spec
from pinning.resolve.resolver import resolve
from pinning.resolve.to_lock import lock_from_resolution, with_serving
from pinning.resolve.upgrade import request_constraints, upgrade
from pinning.verify.freeze import freeze
from tests.support.hosts import recorded


def lock_of(matrix: Matrix, gpu: str, *frameworks: str, rocm: str | None = None) -> Lockfile:
    c = Constraints(gpu=gpu, frameworks=tuple(parse_framework(f, matrix.framework_names())
                                              for f in frameworks),
                    rocm=parse_runtime_spec("--rocm", rocm) if rocm else None)
    return lock_from_resolution(resolve(matrix, c), matrix)


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    """The demo lock (MI300X, pytorch 2.7 series, ROCm 7.1.1) frozen from the recorded host."""
    lock = lock_of(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    out, _found, _unfrozen = freeze(lock, recorded("mi300x-rocm7.1"), matrix,
                                    host_label="host.json")
    return out


# ------------------------------------------------------------------ same request, same bytes
GPU_SPELLINGS = ["mi300x", "MI300X", "Instinct MI300X", "AMD Instinct MI300X", " mi300x "]
FW_SPELLINGS = ["pytorch==2.13.0", "torch==2.13.0", "PyTorch == 2.13.0", "torch ==2.13.0"]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpu=st.sampled_from(GPU_SPELLINGS), fw=st.sampled_from(FW_SPELLINGS),
       name=st.from_regex(r"[a-z][a-z0-9_-]{0,12}\.lock", fullmatch=True))
def test_same_request_in_any_spelling_and_path_gives_the_same_bytes(
        matrix: Matrix, tmp_path: Path, gpu: str, fw: str, name: str) -> None:
    reference = write_lock(lock_of(matrix, "mi300x", "pytorch==2.13.0"), tmp_path / "ref.lock")
    written = write_lock(lock_of(matrix, gpu, fw), tmp_path / name)
    assert written == reference
    assert (tmp_path / name).read_bytes() == reference


def test_request_holds_canonical_ids(matrix: Matrix) -> None:
    lock = lock_of(matrix, "Instinct MI300X", "torch>=2.12,<3", "JAX==0.11.0")
    assert lock.request.gpu == "mi300x"
    assert lock.request.frameworks == ["jax==0.11.0", "pytorch<3,>=2.12"]
    assert lock.generator.command == ("pin resolve --gpu mi300x --framework jax==0.11.0 "
                                      "--framework 'pytorch<3,>=2.12'")
    assert [f.name for f in lock.frameworks] == ["jax", "pytorch"]
    text = render(lock)
    assert "-o " not in text and "Regenerate: pin lock upgrade FILE" in text


def test_order_of_framework_flags_does_not_change_the_lock(matrix: Matrix) -> None:
    a = lock_of(matrix, "mi300x", "pytorch==2.13.0", "jax==0.11.0")
    b = lock_of(matrix, "mi300x", "jax==0.11.0", "pytorch==2.13.0")
    assert render(a) == render(b)


# ------------------------------------------------------------------------------- diff
def test_diff_groups_changes_by_layer_with_the_new_source(matrix: Matrix) -> None:
    old = lock_of(matrix, "mi300x", "pytorch==2.13.0")
    new = lock_of(matrix, "mi300x", "pytorch==2.9.1")
    assert diff_locks(old, old) == []
    changes = diff_locks(old, new)
    by_path = {c.path: c for c in changes}
    rt = by_path["runtime.version"]
    assert (rt.layer, rt.old, rt.new) == ("runtime", "10.0.0", "7.2.0")
    assert rt.source is not None and rt.source.startswith("matrix ") and "7.2.0" in rt.source
    fw = by_path["frameworks.pytorch.version"]
    assert (fw.layer, fw.old, fw.new) == ("frameworks", "2.13.0", "2.9.1")
    layers = [c.layer for c in changes]
    assert layers.index("runtime") < layers.index("frameworks") < layers.index("request")
    assert "ROCm 10.0.0 -> 7.2.0" in summary_lines(changes, new)
    assert "runtime:\n  runtime.version: 10.0.0 -> 7.2.0" in diff_text(changes)


def test_frozen_packages_differ_one_line_each(matrix: Matrix, frozen: Lockfile) -> None:
    fresh = lock_of(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    pkgs = [c for c in diff_locks(frozen, fresh) if c.layer == "packages"]
    assert frozen.packages is not None and len(pkgs) == len(frozen.packages)
    assert all(c.path.startswith("packages.") and c.new is None for c in pkgs)


def test_the_python_target_is_part_of_the_packages_layer(matrix: Matrix) -> None:
    from pinning.lockfile.wheels import PythonTarget

    old = lock_of(matrix, "mi300x", "pytorch==2.13.0")
    new = amend(old, python=PythonTarget(version="3.11", platform="x86_64-manylinux_2_28",
                                         indexes=["https://pypi.org/simple"]))
    changes = [c for c in diff_locks(old, new) if c.path.startswith("python")]
    assert changes and {c.layer for c in changes} == {"packages"}


# -------------------------------------------------------------- frozen values and writing
def test_frozen_fields_name_what_a_fresh_resolve_drops(matrix: Matrix, frozen: Lockfile) -> None:
    assert frozen_fields(lock_of(matrix, "mi300x", "pytorch==2.13.0")) == []
    names = frozen_fields(frozen)
    for name in ("target.count", "firmware.version", "kernel-driver.version", "os", "kernel",
                 "frameworks.pytorch.version", "packages"):
        assert name in names


def test_writing_over_a_frozen_lock_is_refused_unless_forced(frozen: Lockfile,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "pin.lock"
    before = write_lock(frozen, path)
    with pytest.raises(LockfileError) as info:
        guard_frozen(path, force=False)
    assert info.value.exit_code == 5
    assert "frozen from a host" in info.value.message and "Nothing was written" in \
        info.value.message
    assert "pin lock upgrade" in info.value.hint
    assert path.read_bytes() == before
    assert guard_frozen(path, force=True) == before
    assert guard_frozen(tmp_path / "absent.lock", force=False) is None


# ------------------------------------------------------------------- upgrade and check
def test_check_of_an_unchanged_frozen_lock_finds_no_drift(matrix: Matrix,
                                                          frozen: Lockfile) -> None:
    up = upgrade(frozen, matrix, request_constraints(frozen, matrix))
    assert up.dropped == []
    assert up.stack_changes == []
    assert sorted(up.carried) == sorted(f for f in frozen_fields(frozen)
                                        if f != "environment")
    assert up.lock.packages == frozen.packages and up.lock.frozen == frozen.frozen


def test_upgrade_carries_what_the_new_stack_validates_and_drops_the_rest(
        matrix: Matrix, frozen: Lockfile) -> None:
    c = request_constraints(frozen, matrix, rocm="7.2.0", frameworks=["pytorch==2.7.*"])
    up = upgrade(frozen, matrix, c)
    assert up.lock.runtime.version.value == "7.2.0"
    assert up.lock.request.rocm == "==7.2.0" and up.lock.request.frameworks == ["pytorch==2.7.*"]
    dropped = dict(up.dropped)
    # The host's torch 2.7.0 is not the 2.7.1 ROCm 7.2.0 validates; its packages go with it.
    assert "the new stack locks 2.7.1" in dropped["frameworks.pytorch.version"]
    assert "goes with frameworks.pytorch.version" in dropped["frameworks.pytorch.build"]
    assert "7.1.1" in dropped["packages"] and up.lock.packages is None
    # The OS, kernel and GPU count are still inside what ROCm 7.2.0 validates.
    for name in ("os", "kernel", "target.count"):
        assert name in up.carried
    assert up.lock.os.origin == "host" and up.lock.os.value == frozen.os.value
    assert "ROCm 7.1.1 -> 7.2.0" in summary_lines(up.changes, up.lock)
    assert any("frozen values dropped" in n for n in up.lock.notes)


def test_upgrade_keeps_the_old_stack_changes_out_of_check(matrix: Matrix,
                                                          frozen: Lockfile) -> None:
    c = request_constraints(frozen, matrix, rocm="7.2.0", frameworks=["pytorch==2.7.*"])
    upgraded = upgrade(frozen, matrix, c).lock
    again = upgrade(upgraded, matrix, request_constraints(upgraded, matrix))
    assert again.stack_changes == [] and again.dropped == []
    assert stack_changes(diff_locks(frozen, upgraded))


def test_a_second_upgrade_changes_nothing_and_keeps_the_refreeze_note(
        matrix: Matrix, frozen: Lockfile) -> None:
    c = request_constraints(frozen, matrix, rocm="7.2.0", frameworks=["pytorch==2.7.*"])
    upgraded = upgrade(frozen, matrix, c).lock
    note = next(n for n in upgraded.notes if "frozen values dropped (re-freeze them)" in n)
    again = upgrade(upgraded, matrix, request_constraints(upgraded, matrix))
    assert again.changes == [] and again.lock == upgraded
    assert note in again.lock.notes


def test_the_refreeze_note_loses_what_was_refrozen_since(matrix: Matrix,
                                                         frozen: Lockfile) -> None:
    # A lock whose pytorch version is frozen again (as pin freeze leaves it) still carries an
    # earlier upgrade's note naming it and a value not frozen since.
    head = "Re-resolved by pin 0.0.9; frozen values dropped (re-freeze them): "
    note = (head + "frameworks.pytorch.version (host value 2.7.0: the new stack locks 2.7.1); "
            "model.revision (frozen with rocm 7.1.1; the new stack has rocm 7.2.0).")
    lock = amend(frozen, notes=[*frozen.notes, note])
    up = upgrade(lock, matrix, request_constraints(lock, matrix))
    assert head + "model.revision (frozen with rocm 7.1.1; the new stack has rocm 7.2.0)." \
        in up.lock.notes
    assert not any("frameworks.pytorch.version (host" in n for n in up.lock.notes)
    gone = amend(frozen, notes=[*frozen.notes, head + "os (x; y)."])
    assert not any(n.startswith(head) for n in
                   upgrade(gone, matrix, request_constraints(gone, matrix)).lock.notes)


# ------------------------------------------------------------------ serving and extensions
def served(lock: Lockfile, quantization: str | None, *extensions: str) -> Lockfile:
    serving, exts = serving_from_flags("amd", quantization=quantization, attention=None,
                                       head_dim=None, dtype=None, extensions=extensions)
    return with_serving(lock, serving, exts)


def test_diff_sees_serving_and_extensions_as_their_own_layers(matrix: Matrix) -> None:
    plain = lock_of(matrix, "mi300x", "pytorch==2.13.0")
    old = served(plain, "awq:triton", "flash-attn==2.8.3:source@gfx942")
    quant = served(plain, "awq", "flash-attn==2.8.3:source@gfx942")
    changes = [c for c in diff_locks(old, quant) if c.layer in STACK_LAYERS]
    assert changes == [Change(layer="serving", path="serving.quantization", old="awq:triton",
                              new="awq", source="user")]
    assert "serving:\n  serving.quantization: awq:triton -> awq  [user]" in \
        diff_text(diff_locks(old, quant))
    ext = served(plain, "awq:triton", "flash-attn==2.8.4:source@gfx942,gfx950",
                 "amd-aiter==0.1.5:wheel")
    by_path = {c.path: c for c in diff_locks(old, ext) if c.layer == "extensions"}
    assert by_path == {
        "extensions.flash-attn": Change(
            layer="extensions", path="extensions.flash-attn",
            old="flash-attn==2.8.3:source@gfx942", new="flash-attn==2.8.4:source@gfx942,gfx950",
            source="user"),
        "extensions.amd-aiter": Change(layer="extensions", path="extensions.amd-aiter",
                                       old=None, new="amd-aiter==0.1.5:wheel", source="user")}
    assert not any("{" in (c.old or "") + (c.new or "") for c in diff_locks(old, ext))


def test_a_resolve_without_serving_flags_says_it_removes_them(matrix: Matrix) -> None:
    plain = lock_of(matrix, "mi300x", "pytorch==2.13.0")
    old = served(plain, "awq:triton", "flash-attn==2.8.3:source@gfx942")
    changes = diff_locks(old, plain)
    assert {c.layer for c in stack_changes(changes)} == {"serving", "extensions"}
    lines = summary_lines(changes, plain)
    assert "serving: quantization awq:triton -> (absent)" in lines
    assert "extensions: flash-attn flash-attn==2.8.3:source@gfx942 -> (absent)" in lines
