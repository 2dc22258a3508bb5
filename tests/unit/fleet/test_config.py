"""pin's site configuration: where it is found, defaults, relative paths, refused keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.fleet.config import (
    DEFAULT_DEADLINE_S,
    DEFAULT_PATH,
    DEFAULT_TIMEOUT_S,
    ConfigError,
    PinConfig,
    config_path,
    key_name,
    load_config,
    read_config,
)


def test_the_file_is_the_option_then_the_variable_then_the_default_place() -> None:
    assert config_path("a.toml", {"PIN_CONFIG": "b.toml"}) == (Path("a.toml"), True)
    assert config_path(None, {"PIN_CONFIG": "b.toml"}) == (Path("b.toml"), True)
    assert config_path(None, {"PIN_CONFIG": ""}) == (DEFAULT_PATH, False)
    assert config_path(None, {}) == (DEFAULT_PATH, False)


def test_defaults_without_a_file_at_the_default_place(tmp_path: Path) -> None:
    cfg = load_config(tmp_path / "absent.toml", named=False)
    assert cfg == PinConfig()
    assert cfg.fleet.root == Path("/") and cfg.fleet.timeout_s == DEFAULT_TIMEOUT_S
    assert cfg.fleet.locks is None and cfg.fleet.default_lock is None
    assert cfg.slurm.scontrol == "scontrol" and cfg.slurm.slurm_conf is None
    assert cfg.slurm.resume is True and cfg.slurm.drain_in_prolog is True
    assert cfg.slurm.deadline_s == DEFAULT_DEADLINE_S == 50 and cfg.fleet.timeout_s < 50


def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="absent.toml") as err:
        read_config(str(tmp_path / "absent.toml"), {})
    assert err.value.hint.startswith("Create the file") and "fix the path" in err.value.hint
    assert "named key" not in err.value.hint and err.value.exit_code == 2
    with pytest.raises(UsageError, match="env.toml"):
        read_config(None, {"PIN_CONFIG": str(tmp_path / "env.toml")})


def test_relative_paths_are_resolved_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    path = tmp_path / "etc" / "config.toml"
    path.write_text('[fleet]\nlocks = "locks"\ndefault-lock = "locks/site.lock"\n'
                    'root = "../host/root"\nreplay = "/abs/commands.toml"\n'
                    'site-packages = ["/opt/venv/lib/python3.12/site-packages"]\ntimeout-s = 5\n'
                    '[slurm]\nscontrol = "bin/scontrol"\nslurm-conf = "slurm.conf"\n'
                    'node-name = "gpu01"\nresume = false\ndrain-in-prolog = false\n')
    cfg, source = read_config(str(path), {})
    base = path.resolve().parent
    assert source == path
    assert cfg.fleet.locks == base / "locks"
    assert cfg.fleet.default_lock == base / "locks" / "site.lock"
    assert cfg.fleet.root == base / ".." / "host" / "root"
    assert cfg.fleet.replay == Path("/abs/commands.toml")
    assert cfg.fleet.site_packages == ("/opt/venv/lib/python3.12/site-packages",)
    assert cfg.fleet.timeout_s == 5
    assert cfg.slurm.scontrol == str(base / "bin" / "scontrol")
    assert cfg.slurm.slurm_conf == base / "slurm.conf"
    assert cfg.slurm.node_name == "gpu01" and cfg.slurm.resume is False
    assert cfg.slurm.drain_in_prolog is False


def test_a_deadline_above_the_probe_bound_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[fleet]\ntimeout-s = 20\n[slurm]\ndeadline-s = 25.5\n")
    cfg = load_config(path)
    assert (cfg.fleet.timeout_s, cfg.slurm.deadline_s) == (20, 25.5)


def test_a_bare_scontrol_name_stays_a_name(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[slurm]\nscontrol = "scontrol"\n')
    assert load_config(path).slurm.scontrol == "scontrol"


@pytest.mark.parametrize(("text", "named"), [
    ('[fleet]\nlokcs = "x"\n', "unknown key [fleet] lokcs; did you mean locks?"),
    ('[fleet]\nlock = "x"\n', "unknown key [fleet] lock; did you mean locks?"),
    ('[flet]\nlocks = "x"\n', "unknown section [flet]; did you mean fleet?"),
    ('[servce]\nport = 1\n', "unknown section [servce]; did you mean serve?"),
    ("top = 1\n", "unknown key top outside a section"),
    ('[slurm]\nnode = "x"\n', "unknown key [slurm] node; did you mean node-name?"),
    ("[fleet]\ntimeout-s = 0\n", "[fleet] timeout-s: "),
    ("[fleet]\ntimeout-s = \"30\"\n", "[fleet] timeout-s: "),
    ('[slurm]\nresume = "yes"\n', "[slurm] resume: "),
    ('[slurm]\ndrain-in-prolog = 1\n', "[slurm] drain-in-prolog: "),
    ('[fleet]\nsite-packages = ["relative/site-packages"]\n',
     "[fleet] site-packages: 'relative/site-packages': give the path as the host sees it"),
    ('[slurm]\nnode-name = "a b"\n', "[slurm] node-name: "),
    ('[slurm]\nscontrol = ""\n', "[slurm] scontrol: "),
    ("[slurm]\ndeadline-s = 0\n", "[slurm] deadline-s: "),
    ("[slurm]\ndeadlines = 40\n", "unknown key [slurm] deadlines; did you mean deadline-s?"),
    ("[fleet]\ntimeout-s = 50\n", "[fleet] timeout-s (50) must be below [slurm] deadline-s (50)"),
    ("[fleet]\ntimeout-s = 20\n[slurm]\ndeadline-s = 15\n",
     "[fleet] timeout-s (20) must be below [slurm] deadline-s (15)"),
    ("[fleet\n", "not valid TOML"),
])
def test_bad_files_are_refused_naming_file_and_key(tmp_path: Path, text: str,
                                                   named: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in err.value.message and named in err.value.message
    assert err.value.exit_code == 2 and "--config" in err.value.hint
    assert "Extra inputs" not in err.value.message and "--site-packages" not in err.value.message
    assert err.value.short.startswith("config ") and "\n" not in err.value.short


def test_key_names_are_written_as_in_the_file() -> None:
    assert key_name(("fleet", "site-packages", 0)) == "[fleet] site-packages[0]"
    assert key_name(("slurm", "resume")) == "[slurm] resume"
    assert key_name(("serve",)) == "[serve]"
    assert key_name(()) == "(top level)"


def test_the_example_config_is_valid_and_sets_no_site_packages() -> None:
    from tests.support.paths import ROOT

    example = ROOT / "contrib" / "slurm" / "config.toml.example"
    cfg = load_config(example)
    assert cfg.fleet.site_packages == ()  # shown commented out: a missing path drains nodes
    assert "site-packages" in example.read_text()


def test_the_report_table(tmp_path: Path) -> None:
    from pinning.fleet.config import DEFAULT_REPORT_TIMEOUT_S

    assert PinConfig().report.url is None
    assert PinConfig().report.timeout_s == DEFAULT_REPORT_TIMEOUT_S
    path = tmp_path / "config.toml"
    path.write_text('[report]\nurl = "https://pin.example.org:8470"\ntoken-file = "token"\n'
                    'timeout-s = 3\ngroup = "mi300x-nodes"\n')
    cfg, _ = read_config(str(path), {})
    assert cfg.report.url == "https://pin.example.org:8470"
    assert cfg.report.token_file == path.resolve().parent / "token"
    assert (cfg.report.timeout_s, cfg.report.group) == (3, "mi300x-nodes")


@pytest.mark.parametrize(("text", "problem"), [
    ('[report]\nurl = "ftp://x"\n', "[report] url: "),
    ('[report]\nurl = "https://a b"\n', "[report] url: "),
    ("[report]\ntimeout-s = 0\n", "[report] timeout-s: "),
    ('[report]\ntimeout-s = "5"\n', "[report] timeout-s: "),
    ('[report]\ngroup = "a b"\n', "[report] group: "),
    ('[report]\ntoken = "pin_x"\n', "unknown key [report] token; did you mean token-file?"),
])
def test_a_bad_report_table_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="config.toml") as err:
        read_config(str(path), {})
    assert problem in err.value.message


def test_a_serve_table_is_left_to_pin_serve(tmp_path: Path) -> None:
    """One site file configures a node and the service: [serve] does not trouble fleet."""
    from pinning.fleet.config import read_config

    path = tmp_path / "config.toml"
    path.write_text('[serve]\nport = 8470\nreads = "token"\n\n[fleet]\ntimeout-s = 5\n')
    cfg, _ = read_config(str(path), {})
    assert cfg.serve == {"port": 8470, "reads": "token"}
    assert cfg.fleet.timeout_s == 5
