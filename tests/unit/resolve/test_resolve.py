"""The resolver: choices, near misses, determinism."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from pinning.errors import NoValidatedCombination, UsageError
from pinning.matrix.load import Matrix
from pinning.matrix.names import os_matches
from pinning.resolve.constraints import (
    Constraints,
    parse_framework,
    parse_model,
    parse_os,
    parse_runtime_spec,
)
from pinning.resolve.resolver import resolve
from pinning.resolve.result import Resolution
from pinning.util.versions import match_entry


def run(matrix: Matrix, gpu: str, *fws: str, **kw: Any) -> Resolution:
    names = matrix.framework_names()
    return resolve(matrix, Constraints(gpu=gpu, frameworks=tuple(parse_framework(f, names)
                                                                 for f in fws), **kw))


def test_mi300x_pytorch_2_13_resolves_to_rocm_10_gfx942(matrix: Matrix) -> None:
    r = run(matrix, "mi300x", "pytorch==2.13.0")
    assert (r.runtime, r.runtime_version, r.target) == ("rocm", "10.0.0", "gfx942")
    assert r.frameworks[0].version == "2.13.0"
    assert r.kmd_unknown is not None and r.firmware_unknown is not None
    assert r.kmd_allowed is None and "does not state" in r.kmd_unknown
    assert r.firmware == [] and "PLDM" in r.firmware_unknown


def test_h200_pytorch_2_13_resolves_to_stable_cuda_13_0(matrix: Matrix) -> None:
    r = run(matrix, "h200", "pytorch==2.13.0")
    assert (r.runtime, r.runtime_version, r.target) == ("cuda", "13.0.2", "9.0")
    assert r.frameworks[0].variant == "cu130"
    assert r.driver_constraint == ">=580"
    assert r.toolkit_driver == "580.95.05"


def test_cuda_flag_can_pick_the_experimental_build(matrix: Matrix) -> None:
    r = run(matrix, "h200", "pytorch==2.13.0", cuda=parse_runtime_spec("--cuda", "13.2"))
    assert r.runtime_version == "13.2.1"
    assert any("experimental" in n for n in r.notes)


def test_b200_needs_a_build_with_compute_capability_10(matrix: Matrix) -> None:
    assert run(matrix, "b200", "pytorch==2.13.0").runtime_version == "13.0.2"
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "b200", "pytorch==2.13.0", cuda=parse_runtime_spec("--cuda", "12.6"))
    assert "no runtime in --cuda ==12.6.* validates it" in str(info.value)
    assert "with CUDA 12.6" not in str(info.value).split("\n")[1]


def test_specs_pick_the_newest_allowed(matrix: Matrix) -> None:
    assert run(matrix, "mi300x", "pytorch>=2.12").frameworks[0].version == "2.13.0"
    assert run(matrix, "MI300X", "jax~=0.10.0").frameworks[0].version == "0.10.2"
    r = run(matrix, "mi300x", "pytorch<2.10")
    assert (r.runtime_version, r.frameworks[0].version) == ("7.2.0", "2.9.1")


def test_series_entries_lock_the_exact_request(matrix: Matrix) -> None:
    r = run(matrix, "mi250x", "pytorch==2.6", rocm=parse_runtime_spec("--rocm", "<7"))
    assert r.runtime_version == "6.4.3"
    assert r.frameworks[0].version == "2.6" and r.frameworks[0].series
    r = run(matrix, "mi300x", "pytorch==2.8.1", rocm=parse_runtime_spec("--rocm", "7.1.1"))
    assert r.frameworks[0].version == "2.8.1" and not r.frameworks[0].series


def test_several_frameworks_share_one_runtime(matrix: Matrix) -> None:
    r = run(matrix, "mi300x", "pytorch==2.13.0", "jax==0.11.0")
    assert r.runtime_version == "10.0.0"
    r = run(matrix, "mi300x", "pytorch", "jax==0.8.0")
    versions = {f.name: f.version for f in r.frameworks}  # frameworks are kept by name
    assert r.runtime_version == "7.2.0" and versions["pytorch"] == "2.9.1"
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "mi300x", "pytorch==2.13.0", "jax==0.8.0")
    # Frameworks are kept in name order, so the message reads the same for either flag order.
    assert "pytorch==2.13.0 is not validated with the same runtime as jax==0.8.0" in str(info.value)


def test_vllm_restricted_to_gfx942_and_gfx950(matrix: Matrix) -> None:
    assert run(matrix, "mi355x", "vllm==0.27.0").target == "gfx950"
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "mi250x", "vllm==0.27.0")
    assert "ROCm 10.0.0" in str(info.value)


def test_no_combination_names_failing_constraint_and_alternatives(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination) as info:
        run(matrix, "mi100", "pytorch==2.13.0")
    msg = str(info.value)
    assert info.value.exit_code == 4
    assert "pytorch==2.13.0 is not validated for this GPU" in msg
    assert "pytorch versions validated for Instinct MI100: 2.9.1, 2.8.0, 2.7.1 with ROCm 7.2.0" in msg
    assert "Runtimes that validate pytorch==2.13.0: ROCm 10.0.0 (amd-rocm-10, published 2026-08-25" in msg


def test_runtime_flag_failure_is_named(matrix: Matrix) -> None:
    with pytest.raises(NoValidatedCombination, match="no runtime in --rocm ==7.2.0 validates it"):
        run(matrix, "mi300x", "pytorch==2.13.0", rocm=parse_runtime_spec("--rocm", "7.2.0"))


def test_os_filter_and_gpu_restrictions(matrix: Matrix) -> None:
    r = run(matrix, "mi300x", "pytorch==2.9.1", os=parse_os("ubuntu-24.04"))
    assert r.os_chosen == "ubuntu-24.04.3"
    # Oracle Linux 8 is listed for ROCm 7.2.0 but only for MI300X.
    assert run(matrix, "mi300x", "pytorch==2.9.1", os=parse_os("ol-8")).runtime_version == "7.2.0"
    # The 7.1.x footnote keeps Oracle Linux 8 off MI355X; the 7.2.0 notes extend that list
    # (SLES 15 SP7 added), so it still applies on 7.2.0.
    for rocm in ("==7.1.1", "==7.2.0"):
        with pytest.raises(NoValidatedCombination, match="--os ol-8 is not validated"):
            run(matrix, "mi355x", "pytorch", rocm=parse_runtime_spec("--rocm", rocm),
                os=parse_os("ol-8"))
    r = run(matrix, "mi355x", "pytorch==2.9.1")
    assert r.os_allowed is not None and "sles-15.7" in r.os_allowed
    # ROCm 10.0.0 states no OS list: an OS constraint cannot be validated there.
    r = run(matrix, "mi300x", "pytorch", os=parse_os("ubuntu-24.04"))
    assert r.runtime_version == "7.2.0"


def test_as_of_resolves_against_older_matrix(matrix: Matrix) -> None:
    r = run(matrix, "mi300x", "pytorch", as_of=dt.date(2026, 3, 1))
    assert r.runtime_version == "7.2.0"
    r = run(matrix, "mi300x", "pytorch", as_of=dt.date(2025, 6, 1))
    assert r.release is not None
    assert r.runtime_version == "6.3.3" and r.release.file.name == "amd-rocm-2025-03-21"


def test_firmware_comes_from_release_notes(matrix: Matrix) -> None:
    r = run(matrix, "mi355x", "pytorch==2.9.1")
    assert r.runtime_version == "7.2.0"
    assert [f.value for f in r.firmware[0].firmware] == ["01.25.17.07", "01.25.16.03"]
    assert r.kmd_allowed is not None
    assert r.kmd_allowed[0] == "30.30.0"


@pytest.mark.parametrize("text", ["pytorch=2.13", "pytorch==", "pytorch>>2", "==2.1", "pytorch@2"])
def test_malformed_specs_are_usage_errors(matrix: Matrix, text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_framework(text, matrix.framework_names())
    assert info.value.exit_code == 2


def test_unknown_framework_did_you_mean(matrix: Matrix) -> None:
    with pytest.raises(UsageError, match="Did you mean 'pytorch'"):
        parse_framework("pytorh==2.13.0", matrix.framework_names())
    assert parse_framework("torch==2.13.0", matrix.framework_names()).name == "pytorch"


def test_vendor_flag_mismatch(matrix: Matrix) -> None:
    with pytest.raises(UsageError, match="AMD GPU"):
        run(matrix, "mi300x", "pytorch", cuda=parse_runtime_spec("--cuda", "13.0"))


def test_model_and_os_parsing() -> None:
    m = parse_model("meta-llama/Llama-3.1-8B@" + "a" * 40)
    assert m.id == "meta-llama/Llama-3.1-8B"
    for bad in ["meta-llama/Llama-3.1-8B", "x@main", "a/b@" + "g" * 40]:
        with pytest.raises(UsageError):
            parse_model(bad)
    assert parse_os("Ubuntu-24.04") == ("ubuntu", "24.04")
    with pytest.raises(UsageError):
        parse_os("ubuntu")
    assert os_matches(("ol", "9.4"), "ol-9") and not os_matches(("ol", "9.4"), "ol-8")


def test_match_entry_series_semantics() -> None:
    assert match_entry("2.9", SpecifierSet("==2.9.1")) == "2.9.1"
    assert match_entry("2.9", SpecifierSet(">=2.8")) == "2.9"
    assert match_entry("2.9", SpecifierSet("<2.9")) is None
    assert match_entry("2.9.1", SpecifierSet("==2.9")) is None
    assert match_entry("2.13.0", SpecifierSet("")) == "2.13.0"


SPECS = st.sampled_from(["", "==2.13.0", ">=2.12", "<2.10", "~=2.8", ">=2.0,<2.7", "==2.6",
                         "!=2.9.1", ">=3"])
GPUS = st.sampled_from(["mi300x", "mi355x", "mi250x", "mi100", "h200", "b200", "gfx942",
                        "w7900"])


@settings(max_examples=60, deadline=None)
@given(gpu=GPUS, spec=SPECS)
def test_resolver_is_deterministic_and_respects_the_spec(matrix: Matrix, gpu: str,
                                                         spec: str) -> None:
    def attempt() -> tuple[str | None, ...]:
        try:
            r = run(matrix, gpu, f"pytorch{spec}")
            return ("ok", r.runtime, r.runtime_version, r.frameworks[0].version)
        except NoValidatedCombination as exc:
            return ("none", str(exc))

    first, second = attempt(), attempt()
    assert first == second
    if first[0] == "ok" and spec:
        assert first[3] is not None
        assert match_entry(first[3], SpecifierSet(spec)) is not None
