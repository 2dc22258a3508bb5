"""A hostile host snapshot (or recorded host) never puts a value into a lock that an image
build would run: ``read_snapshot`` and ``pin freeze --host`` refuse it (exit 7) naming the
field, JSON with a key named twice is refused, and values are not coerced."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.errors import ProbeError
from pinning.probe.models import HostFacts
from pinning.probe.snapshot import read_snapshot, snapshot_text
from pinning.util.text import control_chars
from tests.support.cli import pin
from tests.support.hosts import MI300X, SITE, HostCopy, recorded

Edit = Callable[[dict[str, Any]], None]

_FACTS: list[HostFacts] = []


def facts() -> HostFacts:
    if not _FACTS:
        _FACTS.append(recorded(MI300X.name))
    return _FACTS[0]


def snapshot(path: Path, edit: Edit | None = None) -> Path:
    data = json.loads(snapshot_text(facts()))
    if edit is not None:
        edit(data)
    path.write_text(json.dumps(data, indent=2))
    return path


def _env(env: dict[str, str]) -> Edit:
    return lambda data: data.update(environment=env)


def _dist(**fields: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        data["python"]["distributions"][0].update(fields)
    return edit


def _set(path: tuple[str | int, ...], value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


HOSTILE = ["x\nRUN touch /pwned", "x\rRUN touch /pwned", "x\x00y", "x\x1b[2K\x1b[1A", "x\x9by"]

CASES: list[tuple[str, Edit, str]] = [
    *[(f"env name {v!r}", _env({v: "1"}), "environment.")
      for v in [*HOSTILE, 'A"B', "$(id)", "`id`", "A B", "A=B"]],
    *[(f"env value {v!r}", _env({"HSA_OVERRIDE_GFX_VERSION": v}),
       "environment.HSA_OVERRIDE_GFX_VERSION") for v in HOSTILE],
    *[(f"distribution name {v!r}", _dist(name=v), "python.distributions[0].name")
      for v in [*HOSTILE, "six==1 -e .", "$(id)"]],
    *[(f"distribution version {v!r}", _dist(version=v), "python.distributions[0].version")
      for v in [*HOSTILE, "1.0 --hash=sha256:00"]],
    ("live as a string", _set(("probe", "live"), "true"), "probe.live"),
    ("gpu index as a string", _set(("gpus", 0, "index"), "0"), "gpus[0].index"),
    ("host-version true", _set(("host-version",), True), "host-version"),
    ("absent as 1", _set(("amd", "driver", "absent"), 1), "amd.driver.absent"),
]


@pytest.mark.parametrize("edit,field", [(e, f) for _, e, f in CASES],
                         ids=[i for i, _, _ in CASES])
def test_read_snapshot_refuses_naming_the_field(tmp_path: Path, edit: Edit, field: str) -> None:
    path = snapshot(tmp_path / "host.json", edit)
    with pytest.raises(ProbeError) as info:
        read_snapshot(path)
    assert info.value.exit_code == 7
    assert field in info.value.message, info.value.message
    assert control_chars(info.value.message) == []


def test_the_unedited_snapshot_reads_back(tmp_path: Path) -> None:
    assert read_snapshot(snapshot(tmp_path / "host.json")) == facts()


@pytest.mark.parametrize("text,key", [
    ('{"vendor": "nvidia", ', "vendor"),
    ('{"environment": {"HSA_OVERRIDE_GFX_VERSION": "9.4.2", '
     '"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}, ', "HSA_OVERRIDE_GFX_VERSION"),
], ids=["top level", "nested"])
def test_a_key_named_twice_is_refused(tmp_path: Path, text: str, key: str) -> None:
    """Plain ``json`` keeps the last of two values, so an edit could hide behind the first
    copy that a reader sees; pin refuses the file instead."""
    path = snapshot(tmp_path / "host.json")
    raw = path.read_text()
    assert raw.startswith("{")
    if key == "vendor":
        dup = text + raw[1:]
    else:
        data = json.loads(raw)
        data.pop("environment", None)
        dup = text + json.dumps(data)[1:]
    path.write_text(dup)
    with pytest.raises(ProbeError) as info:
        read_snapshot(path)
    assert info.value.exit_code == 7
    assert f"key '{key}' appears twice" in info.value.message


@pytest.mark.parametrize("edit,field", [
    (_env({"A\nRUN touch /pwned\n#": "1"}), "environment.A\\x0aRUN"),
    (_env({"HSA_OVERRIDE_GFX_VERSION": "9.4.2\nRUN touch /pwned"}),
     "environment.HSA_OVERRIDE_GFX_VERSION"),
    (_dist(version="2.1.2\n--index-url=http://x"), "python.distributions[0].version"),
], ids=["env name", "env value", "distribution version"])
def test_pin_freeze_refuses_a_hostile_snapshot(tmp_path: Path, edit: Edit, field: str) -> None:
    lock = tmp_path / "pin.lock"
    assert pin("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm", "7.1.1",
               "-o", str(lock)).returncode == 0
    before = lock.read_bytes()
    host = snapshot(tmp_path / "host.json", edit)
    r = pin("freeze", str(lock), "--host", str(host))
    assert r.returncode == 7, r.stdout + r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr
    assert control_chars(r.stderr, allow="\n") == []
    assert lock.read_bytes() == before


def test_a_recorded_host_keeps_hostile_values_out(host_copy: HostCopy) -> None:
    """A recorded tree is read, not trusted: an environment value with a line break is left
    out (with a note) and a distribution whose folded metadata name spans lines is skipped."""
    root = host_copy(MI300X.name)
    commands = root / "commands.toml"
    text = commands.read_text()
    assert text.rstrip().splitlines()[-4] == "[environment]"  # the last table: append to it
    commands.write_text(text + 'HSA_OVERRIDE_GFX_VERSION = "9.4.2\\nRUN touch /pwned"\n'
                               'HIPBLASLT_ALLOW_TF32 = "1"\n')
    evil = root / SITE / "evil-1.0.dist-info"
    evil.mkdir()
    (evil / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\n --index-url=http://x\n"
                                   "Version: 1.0\n")
    got = recorded(MI300X.name, root)
    assert got.environment == {"HIPBLASLT_ALLOW_TF32": "1"}
    assert any("HSA_OVERRIDE_GFX_VERSION not recorded" in n for n in got.notes)
    assert got.python.version_of("evil") is None
    assert any("evil-1.0.dist-info" in n for n in got.notes)
    assert got.python.version_of("numpy") == "2.1.2"


@settings(max_examples=150, deadline=None)
@given(name=st.text(max_size=10), value=st.text(max_size=10))
def test_any_environment_reads_or_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                             name: str, value: str) -> None:
    path = snapshot(tmp_path_factory.mktemp("h") / "host.json", _env({name: value}))
    try:
        got = read_snapshot(path)
    except ProbeError as exc:
        assert exc.exit_code == 7
        assert "environment" in exc.message or "not valid Unicode" in exc.message
    else:
        assert got.environment == {name: value}
        assert not control_chars(value) and name.isascii() and name.isidentifier()
