"""The project file on the command line: precedence flag > pin.toml > default on ``pin
resolve`` and ``pin cost``, ``--project``, ``--target``, ``pin init`` and ``pin config show``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from pinning.project.load import read_project
from tests.support.projectcli import pin_in as pin

ROOT = Path(__file__).parents[3]
PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
JUDGED = ROOT / "tests" / "data" / "acceptance" / "judged-c1.json"
RESULT = ROOT / "tests" / "data" / "acceptance" / "judged-c1.json"

ONE_TARGET = """\
[project]
name = "demo"
frameworks = ["pytorch==2.13.0"]

[targets.candidate]
gpu = "mi300x"
"""




def _lock_gpu(result: Result) -> str:
    return str(json.loads(result.stdout)["result"]["lock"]["target"]["gpu"]["value"])


def test_resolve_takes_the_only_target_and_a_flag_wins(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET)
    (tmp_path / "sub").mkdir()
    r = pin(tmp_path / "sub", "resolve", "-o", "-", "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "MI300X" in _lock_gpu(r)  # from the file, found by walking up
    r = pin(tmp_path / "sub", "resolve", "--gpu", "h200", "-o", "-", "--format", "json",
            monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "H200" in _lock_gpu(r)  # the flag wins


def test_resolve_default_without_a_file_still_needs_gpu(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(tmp_path, "resolve", "--framework", "pytorch==2.13.0", "-o", "-",
            monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "--gpu" in r.output


def test_several_targets_need_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET + '\n[targets.current]\ngpu = "h200"\n')
    r = pin(tmp_path, "resolve", "-o", "-", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "2 targets (candidate, current)" in r.output
    r = pin(tmp_path, "resolve", "--target", "curent", "-o", "-", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "Did you mean 'current'?" in r.output
    r = pin(tmp_path, "resolve", "--target", "current", "-o", "-", "--format", "json",
            monkeypatch=monkeypatch)
    assert r.exit_code == 0 and "H200" in _lock_gpu(r)


def test_project_option_overrides_discovery(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pin.toml").write_text(ONE_TARGET)
    (tmp_path / "else").mkdir()
    r = pin(tmp_path / "else", "--project", str(tmp_path / "proj"), "resolve", "-o", "-",
            "--format", "json", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and "MI300X" in _lock_gpu(r)


def test_unknown_key_in_the_file_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET.replace("frameworks", "framework"))
    r = pin(tmp_path, "resolve", "-o", "-", monkeypatch=monkeypatch)
    assert r.exit_code == 2
    assert "project.framework: unknown key; did you mean 'frameworks'?" in r.output


def _utilisation(r: Result) -> float:
    assert r.exit_code == 0, r.output
    rate = json.loads(r.stdout)["result"]["platforms"][0]["rate"]
    return float(rate["utilisation"])


def test_cost_prices_and_utilisation_from_the_file(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(PRICES, tmp_path / "prices.toml")
    (tmp_path / "pin.toml").write_text(
        '[project]\nname = "demo"\n\n[cost]\nprices = "prices.toml"\nutilisation = 0.5\n')
    (tmp_path / "sub").mkdir()
    args = ("cost", str(RESULT), "--gpu", "H100", "--unbound-ok", "--format", "json")
    r = pin(tmp_path / "sub", *args, monkeypatch=monkeypatch)
    assert _utilisation(r) == 0.5  # file over default (1.0); prices relative to the file
    assert json.loads(r.stdout)["result"]["prices"] == "../prices.toml"
    assert _utilisation(pin(tmp_path / "sub", *args, "--utilisation", "0.25",
                            monkeypatch=monkeypatch)) == 0.25  # flag over file
    assert _utilisation(pin(tmp_path.parent, *args, "--prices", str(PRICES),
                            monkeypatch=monkeypatch)) == 1.0  # no file: the default


def test_init_writes_a_file_that_reads_back(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(tmp_path, "init", "--name", "demo", "--gpu", "mi300x", "--os", "ubuntu-24.04",
            "--current-gpu", "h100", "--framework", "pytorch==2.13.0", "--model",
            "./model", "--prices", "prices.toml", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "targets: candidate, current" in r.output
    project = read_project(tmp_path / "pin.toml")
    assert project.model.targets["candidate"].os == "ubuntu-24.04"
    assert project.model.project.frameworks == ("pytorch==2.13.0",)
    assert project.model.cost is not None and project.model.cost.prices == "prices.toml"
    assert (tmp_path / "pin.toml").read_text().startswith("# pin project file")
    before = (tmp_path / "pin.toml").read_bytes()
    r = pin(tmp_path, "init", "--name", "other", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "--force" in r.output  # no question asked: refused
    assert (tmp_path / "pin.toml").read_bytes() == before
    r = pin(tmp_path, "init", "--name", "other", "--force", monkeypatch=monkeypatch)
    assert r.exit_code == 0 and read_project(tmp_path / "pin.toml").model.project.name == "other"


def test_init_refuses_a_bad_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = pin(tmp_path, "init", "--gpu", "mi300x", "--os", "ubuntu", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and not (tmp_path / "pin.toml").exists()


def test_init_hints_the_schema_inside_the_checkout(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    dest = ROOT / "tests" / "data" / f"pin-init-{tmp_path.name}.toml"
    try:
        r = pin(tmp_path, "init", "--name", "x", "-o", str(dest), monkeypatch=monkeypatch)
        assert r.exit_code == 0, r.output
        assert dest.read_text().startswith("#:schema ../../schemas/project.schema.json\n")
    finally:
        dest.unlink(missing_ok=True)


def test_config_show_text_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET + '\n[cost]\nutilisation = 0.5\n')
    r = pin(tmp_path, "config", "show", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert "  --gpu" in r.output and "mi300x  (pin.toml:6)" in r.output
    assert "0.5  (pin.toml:9)" in r.output and "--life-months" in r.output
    r = pin(tmp_path, "config", "show", "--format", "json", "resolve", "--", "--gpu", "h200",
            monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    values = {v["option"]: v for v in json.loads(r.stdout)["result"]["commands"][0]["values"]}
    assert values["--gpu"] == {"option": "--gpu", "value": "h200", "source": "flag"}
    assert values["--framework"]["source"] == "pin.toml:3"
    assert values["--os"] == {"option": "--os", "value": None, "source": "default"}


def test_config_show_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET + '\n[targets.current]\ngpu = "h200"\n')
    r = pin(tmp_path, "config", "show", "resolve", monkeypatch=monkeypatch)
    assert r.exit_code == 2 and "--target NAME" in r.output
    r = pin(tmp_path, "config", "show", "probe", monkeypatch=monkeypatch)
    assert r.exit_code == 2


def test_config_show_checks_the_commands_flags_as_the_command_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(ONE_TARGET)
    bad = pin(tmp_path, "config", "show", "resolve", "--", "--bogus", monkeypatch=monkeypatch)
    assert bad.exit_code == 2 and "pin resolve --bogus: No such option '--bogus'" in bad.stderr
    value = pin(tmp_path, "config", "show", "cost", "--", "--utilisation", "abc",
                monkeypatch=monkeypatch)
    assert value.exit_code == 2 and "Invalid value for '--utilisation'" in value.stderr


def test_init_refuses_what_it_would_drop_or_a_malformed_framework(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_gpu = pin(tmp_path, "init", "--os", "ubuntu-24.04", monkeypatch=monkeypatch)
    assert no_gpu.exit_code == 2 and "pin init --os: these set the candidate target, which " \
        "needs --gpu." in no_gpu.stderr
    spec = pin(tmp_path, "init", "--framework", "pytorch=>>2", monkeypatch=monkeypatch)
    assert spec.exit_code == 2 and "project.frameworks[0]: --framework 'pytorch=>>2'" \
        in spec.stderr and "Value error" not in spec.stderr
    assert not (tmp_path / "pin.toml").exists()


def test_a_project_folder_that_is_missing_or_empty_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = pin(tmp_path, "--project", "nope", "resolve", monkeypatch=monkeypatch)
    assert gone.exit_code == 2 and "The project folder nope (--project or PIN_PROJECT) does " \
        "not exist." in gone.stderr
    empty = pin(tmp_path, "--project", ".", "resolve", monkeypatch=monkeypatch)
    assert empty.exit_code == 2 and "has no pin.toml, and no pyproject.toml with [tool.pin]." \
        in empty.stderr


def test_init_names_the_project_after_the_folder_the_file_is_written_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pin init -o sub/pin.toml` from a parent folder names the project `sub`, the folder
    the file describes, not the working folder.
    """
    (tmp_path / "work" / "sub").mkdir(parents=True)
    result = pin(tmp_path / "work", "init", "-o", "sub/pin.toml", "--gpu", "mi300x",
                 monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert 'name = "sub"' in (tmp_path / "work" / "sub" / "pin.toml").read_text()


def test_an_error_about_a_value_from_the_project_file_names_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prices file pin.toml names that is missing: the error says where the value came
    from (pin.toml:LINE) instead of pointing at a --prices flag nobody gave.
    """
    (tmp_path / "pin.toml").write_text('[project]\nname = "x"\n\n[cost]\nprices = "nope.toml"\n')
    result = pin(tmp_path, "cost", str(JUDGED), monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert ("nope.toml comes from the project file (pin.toml:5): correct it there, or give "
            "--prices on the command line.") in result.output
    assert "Check the path given to --prices" not in result.output


@pytest.mark.parametrize(("args", "said"), [
    (("--gpu", "nosuchgpu"), "--gpu 'nosuchgpu': no GPU of that name"),
    (("--gpu", "mi300x", "--current-gpu", "h10"), "Did you mean 'h100'"),
    (("--gpu", "mi300x", "--cuda", "12.0"), "--gpu mi300x is AMD: --cuda does not apply"),
    (("--gpu", "h100", "--rocm", "7.2.0"), "--gpu h100 is NVIDIA: --rocm does not apply"),
])
def test_init_checks_what_it_can_before_writing(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                args: tuple[str, ...], said: str) -> None:
    """A GPU the matrix does not know or a runtime of the other vendor: exit 2 naming the
    flag, and no file written.
    """
    result = pin(tmp_path, "init", *args, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert said in result.output
    assert not (tmp_path / "pin.toml").exists()


def test_init_notes_a_prices_file_that_is_not_there_yet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = pin(tmp_path, "init", "--gpu", "mi300x", "--prices", "nofile.toml",
                 monkeypatch=monkeypatch)
    assert result.exit_code == 0
    assert "note: --prices nofile.toml: no such file yet" in result.stderr


def test_an_absolute_path_in_the_file_is_shown_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pin.toml").write_text(f'[project]\nname = "x"\n\n[cost]\nprices = "{PRICES}"\n')
    result = pin(tmp_path, "config", "show", "cost", "--format", "json",
                 monkeypatch=monkeypatch)
    assert result.exit_code == 0, result.output
    assert str(PRICES) in result.stdout and "../" not in result.stdout


def test_a_resolve_with_its_own_gpu_needs_no_target_of_a_two_target_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several targets and none named is an error only when the command would need one
    (no --gpu given): `pin resolve --gpu ...` inside such a project resolves what it says.
    """
    (tmp_path / "pin.toml").write_text(
        '[project]\nname = "x"\nframeworks = ["pytorch==2.13.0"]\n\n'
        '[targets.current]\ngpu = "h200"\n\n[targets.candidate]\ngpu = "mi300x"\n')
    given = pin(tmp_path, "resolve", "--gpu", "h200", "--dry-run", "--format", "json",
                monkeypatch=monkeypatch)
    assert given.exit_code == 0, given.output
    assert _lock_gpu(given) == "H200"
    bare = pin(tmp_path, "resolve", "--dry-run", monkeypatch=monkeypatch)
    assert bare.exit_code == 2
    assert "has 2 targets (candidate, current); name one with --target NAME" in bare.output
