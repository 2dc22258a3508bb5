"""The project file: discovery, reading, unknown keys with "did you mean", key lines, schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.project.load import discover, key_lines, load_project, read_project
from pinning.project.model import ProjectFile
from pinning.schemas import generate

PIN_TOML = """\
[project]
name = "demo"
frameworks = ["pytorch==2.13.0"]

[targets.current]
gpu = "h100"

[targets.candidate]
gpu = "mi300x"
os = "ubuntu-24.04"

[cost]
prices = "prices.toml"
utilisation = 0.6
"""


def test_discovery_walks_up_to_the_nearest_pin_toml(tmp_path: Path) -> None:
    (tmp_path / "pin.toml").write_text(PIN_TOML)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert discover(deep) == tmp_path / "pin.toml"
    found = load_project(None, deep)
    assert found is not None and found.model.project.name == "demo"


def test_discovery_reads_tool_pin_in_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.pin.project]\nname = "from-pyproject"\n'
        '\n[tool.pin.targets.only]\ngpu = "h200"\n')
    found = load_project(None, tmp_path)
    assert found is not None and found.model.project.name == "from-pyproject"
    assert found.where("targets", "only", "gpu") == "pyproject.toml:8"


def test_a_pyproject_without_tool_pin_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pin.toml").write_text(PIN_TOML)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover(tmp_path / "sub") == tmp_path / "pin.toml"


def test_no_project_file_is_none(tmp_path: Path) -> None:
    assert discover(tmp_path) is None  # no folder from tmp_path up to / holds one
    assert load_project(None, tmp_path) is None


def test_project_dir_overrides_discovery(tmp_path: Path) -> None:
    (tmp_path / "pin.toml").write_text(PIN_TOML)
    other = tmp_path / "other"
    other.mkdir()
    (other / "pin.toml").write_text('[project]\nname = "other"\n')
    found = load_project(str(other), tmp_path)
    assert found is not None and found.model.project.name == "other"
    with pytest.raises(UsageError, match="does not exist"):
        load_project(str(tmp_path / "missing"), tmp_path)


def test_unknown_key_names_path_and_nearest(tmp_path: Path) -> None:
    path = tmp_path / "pin.toml"
    path.write_text(PIN_TOML.replace('gpu = "mi300x"', 'gpuu = "mi300x"'))
    with pytest.raises(UsageError) as err:
        read_project(path)
    assert err.value.exit_code == 2
    assert str(path) in err.value.message
    assert "targets.candidate.gpuu: unknown key; did you mean 'gpu'?" in err.value.message


def test_a_bad_value_is_checked_with_the_flag_parser(tmp_path: Path) -> None:
    path = tmp_path / "pin.toml"
    path.write_text(PIN_TOML.replace('os = "ubuntu-24.04"', 'os = "ubuntu"'))
    with pytest.raises(UsageError, match=r"targets\.candidate\.os"):
        read_project(path)


def test_results_must_name_a_target(tmp_path: Path) -> None:
    path = tmp_path / "pin.toml"
    path.write_text(PIN_TOML + '\n[results.candidat]\nfiles = ["r.json"]\n')
    with pytest.raises(UsageError, match="no target 'candidat'"):
        read_project(path)


def test_toml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "pin.toml"
    path.write_text('[project]\nname = "demo\n')
    with pytest.raises(UsageError, match=r"line 2, column"):
        read_project(path)


def test_key_lines_and_relative_paths(tmp_path: Path) -> None:
    lines = key_lines(PIN_TOML)
    assert lines[("targets", "candidate", "os")] == 10
    assert lines[("cost",)] == 12
    path = tmp_path / "pin.toml"
    path.write_text(PIN_TOML)
    found = read_project(path)
    assert found.resolve_path("prices.toml") == tmp_path / "prices.toml"
    assert found.where("cost", "prices") == "pin.toml:13"


def test_committed_schema_is_the_models() -> None:
    schema = json.loads(generate()["project.schema.json"])
    assert schema == json.loads(json.dumps(ProjectFile.model_json_schema(
        by_alias=True, mode="validation") | {"$schema": schema["$schema"],
                                            "$id": schema["$id"]}))
    assert {"project", "targets", "accept", "cost", "results"} <= set(schema["properties"])


@pytest.mark.parametrize(("table", "wrong", "said"), [
    ("targets.current", "require_validated = true",
     "targets.current.require_validated: unknown key; did you mean 'require-validated'?"),
    ("targets.current", 'require-validated = "yes"',
     "targets.current.require-validated: Input should be a valid boolean"),
    ("cost", 'gpus = "8"', "cost.gpus: Input should be a valid integer"),
])
def test_a_key_or_value_the_schema_refuses_is_refused(tmp_path: Path, table: str,
                                                      wrong: str, said: str) -> None:
    """The file is read as strictly as its JSON Schema says: a key in its Python spelling
    (`require_validated`) and a string where a bool or number belongs are errors.
    """
    path = tmp_path / "pin.toml"
    text = PIN_TOML.replace(f"[{table}]\n", f"[{table}]\n{wrong}\n", 1)
    path.write_text(text)
    with pytest.raises(UsageError) as info:
        read_project(path)
    assert said in info.value.message


def test_a_validator_message_has_no_pydantic_prefix(tmp_path: Path) -> None:
    path = tmp_path / "pin.toml"
    path.write_text(PIN_TOML + '\n[results.candidat]\nfiles = ["r.json"]\n')
    with pytest.raises(UsageError) as info:
        read_project(path)
    assert "Value error" not in info.value.message
