"""pin doctor reports every fact it parsed (under the committed schema), says "nothing to
judge" (exit 14) when no rule had an input, and no longer reports the two false positives:
conda's `<pip>` copy of torch and "CUDA used to build PyTorch: Could not collect"."""

from __future__ import annotations

import json

import jsonschema

from pinning.doctor.report import doctor
from pinning.guards.checks import check_distributions
from pinning.guards.view import EnvView, PackageView
from pinning.matrix.load import Matrix
from tests.support.cli import json_result, pin
from tests.support.paths import DUMPS, ROOT


def _schema() -> dict[str, object]:
    schema: dict[str, object] = json.loads(
        (ROOT / "schemas" / "doctor-report.schema.json").read_text())
    return schema


def test_json_carries_every_fact_and_validates(tmp_path: object) -> None:
    dump = DUMPS / "collect-env-vllm-rocm.txt"
    out = pin("doctor", "--format", "json", str(dump))
    report = json_result(out)
    jsonschema.validate(report, _schema())
    facts = report["facts"]
    assert facts["os"] and facts["python"] and facts["compilers"]["gcc"]
    assert facts["torch"]["version"] == "2.9.1+rocm7.2.0.lw.git7e1940d4"
    assert facts["torch"]["build"] == "rocm"
    torch = next(p for p in facts["packages"] if p["name"] == "torch")
    assert torch["build-tag"] == "rocm7.2.0.lw.git7e1940d4" and torch["source"] == "pip"
    assert facts["vllm"]["rocm"] == "7.2.53211-c2d9476115"


def test_json_carries_gpus_with_telemetry_and_smi_versions(matrix: Matrix) -> None:
    text = (DUMPS / "ROCm-ROCm-5231.txt").read_text()
    report = doctor([("d", text)], matrix)
    jsonschema.validate(json.loads(report.model_dump_json(by_alias=True, exclude_none=True)),
                        _schema())
    f = report.facts
    assert f.gpu_count == 1 and f.gpus[0].device_id == "0x74b5"
    assert f.gpus[0].telemetry["power_cap"] == "750.0W"
    assert f.rocm_smi == {"smi": "3.0.0+e68c0d1", "lib": "7.5.0"}


def test_nothing_to_judge_exits_14(tmp_path: object) -> None:
    dump = DUMPS / "ROCm-legacy-rocm-build-4740.txt"  # rocm-smi --showtoponuma only
    out = pin("doctor", str(dump))
    assert out.returncode == 14, out.stderr
    assert "Nothing to judge" in out.stdout
    assert "No problems found" not in out.stdout


def test_conda_list_alone_is_judged(matrix: Matrix) -> None:
    text = (DUMPS / "conda-list-pytorch-32369.txt").read_text()
    report = doctor([("d", text)], matrix)
    assert report.judged and report.findings == []
    assert len(report.facts.conda) == 14


def test_conda_pip_copy_is_not_a_second_torch(matrix: Matrix) -> None:
    # The `<pip>` build column of conda < 4.6 lists pip's copy (pytorch/pytorch#12470).
    text = ("PyTorch version: 1.6.0\nCUDA used to build PyTorch: 10.2\n"
            "Versions of relevant libraries:\n[pip3] torch==1.6.0\n"
            "[conda] torch                     1.6.0                     <pip>\n")
    report = doctor([("d", text)], matrix)
    assert "multiple-torch-distributions" not in {f.code for f in report.findings}
    [conda] = report.facts.conda
    assert conda.pip_copy and conda.build == "<pip>"


def test_two_real_torch_copies_still_found(matrix: Matrix) -> None:
    report = doctor([("d", (DUMPS / "pytorch-pytorch-28321.txt").read_text())], matrix)
    assert "multiple-torch-distributions" in {f.code for f in report.findings}


def test_could_not_collect_is_unknown_not_cpu(matrix: Matrix) -> None:
    # vllm-project/vllm#11978: "Is CUDA available: True", build "Could not collect".
    report = doctor([("d", (DUMPS / "vllm-project-vllm-11978.txt").read_text())], matrix)
    codes = {f.code: f for f in report.findings}
    assert "cpu-only-torch-build" not in codes
    assert codes["torch-build-unknown"].severity == "info"
    assert report.facts.torch["build"] == "unknown"


def test_rocm_from_wheel_tag(matrix: Matrix) -> None:
    report = doctor([("d", "torch 2.4.0+rocm6.1\nnumpy 1.26.4\n")], matrix)
    assert report.environment["torch-build"] == "rocm"
    assert report.environment["rocm"] == "6.1"


def test_rocm60_plugin_on_rocm_62_host() -> None:
    view = EnvView(rocm_version="6.2.4", packages=[
        PackageView(n, "0.4.35", "pip") for n in ("jax", "jaxlib", "jax-rocm60-plugin",
                                                  "jax-rocm60-pjrt")])
    found = {f.code: f for f in check_distributions(view)}
    assert "jax-plugin-rocm-smi-soname" in found
    assert "github.com/ROCm/jax/issues/268" in (found["jax-plugin-rocm-smi-soname"].source or "")
    older = EnvView(rocm_version="6.1.3", packages=view.packages)
    assert not check_distributions(older)


def test_new_listings_through_the_cli() -> None:
    for name in ("uv-tree.txt", "pipdeptree.txt", "pip-inspect-output.txt",
                 "conda-list-json-conda-8708.txt", "uv-pip-freeze.txt"):
        out = pin("doctor", "--format", "json", str(DUMPS / name))
        assert out.returncode == 0, (name, out.stderr)
        report = json_result(out)
        jsonschema.validate(report, _schema())
        assert report["facts"]["packages"] or report["facts"]["conda"], name
