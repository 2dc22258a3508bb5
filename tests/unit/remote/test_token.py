"""Where the bearer token comes from (flag, $PIN_TOKEN, $PIN_TOKEN_FILE, [report]
token-file), what a token file must be, and the warning for a file others may read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pinning.errors import UsageError
from pinning.remote.token import Token, read_token_file, resolve_token

SECRET = "pin_s3cret"


def _secret(token: Token | None) -> str:
    assert token is not None
    return token.secret


def _file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_flag_then_the_variable_then_the_file_variable_then_the_config(
        tmp_path: Path) -> None:
    flag = _file(tmp_path / "flag", "pin_flag\n")
    env_file = _file(tmp_path / "env", "pin_envfile\n")
    conf = _file(tmp_path / "conf", "pin_conf\n")
    asked: list[bool] = []

    def config() -> Path:
        asked.append(True)
        return conf

    env = {"PIN_TOKEN": "pin_env", "PIN_TOKEN_FILE": str(env_file)}
    assert _secret(resolve_token(str(flag), env, config)) == "pin_flag"
    assert _secret(resolve_token(None, env, config)) == "pin_env"
    assert _secret(resolve_token(None, {**env, "PIN_TOKEN": ""}, config)) == "pin_envfile"
    assert asked == []  # the site configuration is read only when nothing else gives one
    got = resolve_token(None, {}, config)
    assert got is not None and got.secret == "pin_conf" and asked == [True]
    assert got.source == f"[report] token-file {conf}"
    assert resolve_token(None, {}, lambda: None) is None
    assert resolve_token(None, {}) is None


def test_the_first_line_is_the_token(tmp_path: Path) -> None:
    token = read_token_file(_file(tmp_path / "t", f"  {SECRET}  \nsecond line\n"), "t")
    assert token == Token(SECRET, "t")
    assert SECRET not in repr(token)


@pytest.mark.parametrize(("text", "problem"), [
    ("", "is empty"), ("\nx\n", "is empty"), ("pin_a b\n", "blank"),
    ("pin_\x1b[31m\n", "control"), ("pin_é\n", "non-ASCII"), ("x" * 2000, "longer than")])
def test_a_first_line_that_is_not_a_token_is_refused_without_quoting_it(
        tmp_path: Path, text: str, problem: str) -> None:
    path = _file(tmp_path / "t", text)
    with pytest.raises(UsageError, match=problem) as err:
        read_token_file(path, f"--token-file {path}")
    assert err.value.exit_code == 2 and f"--token-file {path}" in err.value.message
    assert text.strip() not in err.value.message or not text.strip()


def test_an_unusable_pin_token_is_refused_naming_the_variable() -> None:
    with pytest.raises(UsageError, match=r"\$PIN_TOKEN holds a blank") as err:
        resolve_token(None, {"PIN_TOKEN": "pin_a pin_b"})
    assert "pin_a" not in err.value.message


def test_a_token_file_must_be_a_readable_regular_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot be read"):
        resolve_token(str(tmp_path / "absent"), {})
    with pytest.raises(UsageError, match="not a regular file"):
        resolve_token(str(tmp_path), {})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        resolve_token(None, {"PIN_TOKEN_FILE": str(fifo)})
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\xfe\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_token_file(binary, "x")


@pytest.mark.parametrize(("mode", "warned"), [(0o600, False), (0o400, False), (0o640, True),
                                              (0o604, True), (0o644, True)])
def test_a_file_others_may_read_is_warned_about(tmp_path: Path, mode: int,
                                                warned: bool) -> None:
    path = _file(tmp_path / "token", SECRET + "\n", mode)
    lines: list[str] = []
    assert _secret(resolve_token(str(path), {}, warn=lines.append)) == SECRET
    assert bool(lines) is warned
    if warned:
        assert lines == [f"pin: warning: token file {path} is accessible by others (mode "
                         f"{mode:04o}); chmod 600 {path}"]


def test_a_config_token_names_the_configuration_file_it_came_from(tmp_path: Path) -> None:
    conf = _file(tmp_path / "tok", "pin_conf\n")
    got = resolve_token(None, {}, lambda: conf, config="/etc/pin/config.toml")
    assert got is not None
    assert got.source == f"[report] token-file {conf} in /etc/pin/config.toml"
    assert "pin_conf" not in repr(got)
    with pytest.raises(UsageError, match=r"in /x\.toml: cannot be read"):
        resolve_token(None, {}, lambda: tmp_path / "missing", config="/x.toml")
