"""pin's site configuration: where it is found, defaults, relative paths, refused keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.fleet.config import (
    DEFAULT_PATH,
    DEFAULT_TIMEOUT_S,
    PinConfig,
    config_path,
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
    assert cfg.slurm.resume is True


def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="absent.toml"):
        read_config(str(tmp_path / "absent.toml"), {})
    with pytest.raises(UsageError, match="env.toml"):
        read_config(None, {"PIN_CONFIG": str(tmp_path / "env.toml")})


def test_relative_paths_are_resolved_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    path = tmp_path / "etc" / "config.toml"
    path.write_text('[fleet]\nlocks = "locks"\ndefault-lock = "locks/site.lock"\n'
                    'root = "../host/root"\nreplay = "/abs/commands.toml"\n'
                    'site-packages = ["/opt/venv/lib/python3.12/site-packages"]\ntimeout-s = 5\n'
                    '[slurm]\nscontrol = "bin/scontrol"\nslurm-conf = "slurm.conf"\n'
                    'node-name = "gpu01"\nresume = false\n')
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


def test_a_bare_scontrol_name_stays_a_name(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[slurm]\nscontrol = "scontrol"\n')
    assert load_config(path).slurm.scontrol == "scontrol"


@pytest.mark.parametrize(("text", "named"), [
    ('[fleet]\nlokcs = "x"\n', "fleet.lokcs"),
    ('[serve]\nport = 1\n', "serve"),
    ("top = 1\n", "top"),
    ('[slurm]\nnode = "x"\n', "slurm.node"),
    ("[fleet]\ntimeout-s = 0\n", "fleet.timeout-s"),
    ("[fleet]\ntimeout-s = \"30\"\n", "fleet.timeout-s"),
    ('[slurm]\nresume = "yes"\n', "slurm.resume"),
    ('[fleet]\nsite-packages = ["relative/site-packages"]\n', "fleet.site-packages"),
    ('[slurm]\nnode-name = "a b"\n', "slurm.node-name"),
    ('[slurm]\nscontrol = ""\n', "slurm.scontrol"),
    ("[fleet\n", "not valid TOML"),
])
def test_bad_files_are_refused_naming_file_and_key(tmp_path: Path, text: str,
                                                   named: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        load_config(path)
    assert str(path) in err.value.message and named in err.value.message
    assert err.value.exit_code == 2 and "--config" in err.value.hint
