"""``pin lock packages`` below the CLI: what is resolved for a lock (frameworks with their
wheel variant and index, requirements, [packages] pins, the target Python), the wheel chosen
per package from uv's pylock.toml, uv failures quoted, and the lock written."""

from __future__ import annotations

import http.server
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pinning.errors import BuildError, UsageError
from pinning.lockfile.io import amend, read_lock, write_lock
from pinning.lockfile.models import Lockfile
from pinning.lockfile.wheels import PythonTarget
from pinning.resolve.pylock import choose_wheels, target_tags
from pinning.resolve.pypackages import (
    PYPI_SIMPLE,
    lock_packages,
    plan_packages,
    read_requirements_file,
    with_packages,
)
from pinning.resolve.uvcompile import (
    PackagesPlan,
    clip_message,
    index_failure,
    run_uv,
    sdist_only,
    uv_pylock_command,
)
from pinning.util.proc import uv_environment
from pinning.util.text import redact
from tests.support.httpserve import serving
from tests.support.paths import ROOT
from tests.support.pyindex import serve_index

LOCKS = ROOT / "lockfiles"
TARGET: dict[str, Any] = {"python_version": "3.12", "python_platform": "x86_64-manylinux_2_28"}
SHA = "ab" * 32


def lock(name: str) -> Lockfile:
    return read_lock(LOCKS / name)


MI300X = "mi300x-pytorch-2.13.0.lock"  # build unknown, the only published build rocm7.2
H200 = "h200-pytorch-2.13.0.lock"  # build cu130 from the matrix
MI250X = "mi250x-pytorch-2.6.lock"  # the 2.6 series, rocm6.2.4
MI355X = "mi355x-vllm-0.27.0.lock"  # vllm 0.27.0, no build


def _torch(lk: Lockfile, **changes: object) -> Lockfile:
    """``lk`` with its pytorch framework's version / build changed (JSON form)."""
    fws = []
    for fw in lk.frameworks:
        data = fw.model_dump(mode="json", by_alias=True, exclude_none=True)
        if fw.name == "pytorch":
            data.update(changes)
        fws.append(data)
    return amend(lk, frameworks=fws)


# --- what is resolved --------------------------------------------------------------------

def test_rocm_lock_gets_the_variant_and_pytorch_index() -> None:
    plan = plan_packages(lock(MI300X), **TARGET)
    assert plan.requirements == ("torch==2.13.0+rocm7.2",)
    assert plan.indexes == (PYPI_SIMPLE, "https://download.pytorch.org/whl/rocm7.2")
    assert "only published build" in plan.notes[0]
    assert (plan.python_version, plan.python_platform) == ("3.12", "x86_64-manylinux_2_28")


def test_cuda_lock_gets_the_matrix_build() -> None:
    plan = plan_packages(lock(H200), **TARGET)
    assert plan.requirements == ("torch==2.13.0+cu130",)
    assert plan.indexes == (PYPI_SIMPLE, "https://download.pytorch.org/whl/cu130")


def test_a_series_takes_any_release_of_it_from_the_variant_index() -> None:
    plan = plan_packages(lock(MI250X), **TARGET)
    assert plan.requirements == ("torch==2.6.*",)
    assert plan.indexes[1] == "https://download.pytorch.org/whl/rocm6.2.4"


def test_other_frameworks_are_plain_pins_from_pypi() -> None:
    plan = plan_packages(lock(MI355X), **TARGET)
    assert plan.requirements == ("vllm==0.27.0",)
    assert plan.indexes == (PYPI_SIMPLE,)


def test_given_indexes_replace_the_default_ones() -> None:
    plan = plan_packages(lock(MI300X), indexes=["http://127.0.0.1:9/simple/",
                                                "https://mirror.example/torch"], **TARGET)
    assert plan.indexes == ("http://127.0.0.1:9/simple", "https://mirror.example/torch")
    assert plan.requirements == ("torch==2.13.0+rocm7.2",)
    assert "--index given" in plan.notes[0]


def test_unknown_build_among_several_needs_an_index() -> None:
    lk = _torch(lock(MI300X), build={"origin": "unknown", "allowed": ["rocm6.4", "rocm7.0"],
                                     "reason": "two builds"})
    with pytest.raises(UsageError, match="no wheel variant") as err:
        plan_packages(lk, **TARGET)
    assert "rocm6.4, rocm7.0" in err.value.message and "--index" in err.value.hint
    plan = plan_packages(lk, indexes=["https://mirror.example/simple"], **TARGET)
    assert plan.requirements == ("torch==2.13.0",)


def test_a_frozen_torch_pin_names_the_variant() -> None:
    lk = _torch(lock(MI300X), build={"origin": "unknown", "allowed": ["rocm6.4", "rocm7.1"],
                                     "reason": "two builds"})
    lk = amend(lk, packages={"torch": "2.13.0+rocm7.1", "numpy": "2.3.5"})
    plan = plan_packages(lk, **TARGET)
    # The framework's requirement and the same pin from [packages] appear once.
    assert plan.requirements == ("torch==2.13.0+rocm7.1", "numpy==2.3.5")
    assert plan.indexes[1] == "https://download.pytorch.org/whl/rocm7.1"
    assert "[packages] pins it" in plan.notes[0]


def test_unknown_framework_version_is_an_error_unless_given() -> None:
    lk = _torch(lock(H200), version={"origin": "unknown", "reason": "not in the matrix"})
    with pytest.raises(UsageError, match="version of pytorch") as err:
        plan_packages(lk, **TARGET)
    assert "--requirement 'torch==VERSION'" in err.value.hint
    plan = plan_packages(lk, requirements=["torch==2.12.0"],
                         indexes=["https://download.pytorch.org/whl/cu130"], **TARGET)
    assert plan.requirements == ("torch==2.12.0",)
    assert plan.recorded == ("torch==2.12.0",)
    assert "--requirement for torch is used" in plan.notes[0]


def test_recorded_requirements_and_pins_come_back_unless_fresh() -> None:
    lk = amend(lock(MI355X), packages={"vllm": "0.27.0", "Numpy": "2.3.5"},
               python=PythonTarget(version="3.11", platform="aarch64-manylinux_2_28",
                                   indexes=[PYPI_SIMPLE], requirements=["rich>=13"]))
    plan = plan_packages(lk, requirements=["rich>=13", "click==8.1.8"])
    assert (plan.python_version, plan.python_platform) == ("3.11", "aarch64-manylinux_2_28")
    assert plan.requirements == ("vllm==0.27.0", "rich>=13", "click==8.1.8", "numpy==2.3.5")
    assert plan.recorded == ("rich>=13", "click==8.1.8")
    fresh = plan_packages(lk, requirements=["click==8.1.8"], fresh=True, **TARGET)
    assert fresh.requirements == ("vllm==0.27.0", "click==8.1.8")
    assert fresh.recorded == ("click==8.1.8",)


def test_recorded_indexes_come_back_unless_given_or_fresh() -> None:
    mirror = "https://mirror.example/simple"
    lk = amend(lock(MI355X), packages={"vllm": "0.27.0"},
               python=PythonTarget(version="3.11", platform="x86_64-manylinux_2_28",
                                   indexes=[mirror]))
    assert plan_packages(lk).indexes == (mirror,)
    other = "https://other.example/simple"
    assert plan_packages(lk, indexes=[other]).indexes == (other,)
    assert mirror not in plan_packages(lk, fresh=True, **TARGET).indexes


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({}, "--python-version X.Y and --python-platform PLATFORM"),
    ({"python_version": "3.12"}, "--python-platform PLATFORM"),
    ({"python_version": "3", "python_platform": "x86_64-manylinux_2_28"}, "3.MINOR"),
    ({"python_version": "3.12", "python_platform": "macos"}, "manylinux"),
    ({"python_version": "3.12", "python_platform": "x86_64-unknown-linux-gnu"}, "manylinux"),
    ({"indexes": ["http://pypi.example/simple"], **TARGET}, "not an https URL"),
    ({"indexes": ["file:///srv/simple"], **TARGET}, "not an https URL"),
    ({"indexes": [" "], **TARGET}, "empty value"),
    ({"requirements": ["torch @ https://x.example/t.whl"], **TARGET}, "direct URL"),
    ({"requirements": ["torch==="], **TARGET}, "not a PEP 508"),
    ({"requirements": ["a\x1b[31m"], **TARGET}, "control character"),
])
def test_bad_input_is_a_usage_error(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(UsageError) as err:
        plan_packages(lock(MI355X), **kwargs)
    assert needle in err.value.message
    assert err.value.exit_code == 2


def test_platform_pattern_matches_the_lock_model() -> None:
    from pinning.lockfile.wheels import PYTHON_PLATFORM_PATTERN
    from pinning.resolve import pypackages

    assert f"^{pypackages._PLATFORM.pattern}$" == PYTHON_PLATFORM_PATTERN


def test_nothing_to_resolve() -> None:
    with pytest.raises(UsageError, match="Nothing to resolve"):
        plan_packages(amend(lock(MI355X), frameworks=[]), **TARGET)


def test_requirements_file(tmp_path: Path) -> None:
    f = tmp_path / "req.txt"
    f.write_text("# top\n\nrequests==2.32.3  # pinned\nidna>=3 ; python_version >= '3.8'\n")
    assert read_requirements_file(f) == ["requests==2.32.3", "idna>=3 ; python_version >= '3.8'"]
    f.write_text("requests\n--index-url https://x.example/simple\n")
    with pytest.raises(UsageError, match=r"req\.txt:2: options \(--index-url\)"):
        read_requirements_file(f)
    with pytest.raises(UsageError, match="cannot read"):
        read_requirements_file(tmp_path / "absent.txt")


# --- the wheel chosen --------------------------------------------------------------------

def _pylock(*packages: str) -> str:
    return 'lock-version = "1.0"\ncreated-by = "uv"\n\n' + "\n".join(packages)


def _pkg(name: str, version: str, files: list[str], *, base: str = "https://files.example/p/",
         sdist: bool = False) -> str:
    wheels = ", ".join(f'{{ url = "{base}{f}", size = {100 + i}, hashes = {{ sha256 = "{SHA}" }} }}'
                       for i, f in enumerate(files))
    text = f'[[packages]]\nname = "{name}"\nversion = "{version}"\n'
    if sdist:
        text += f'sdist = {{ url = "{base}{name}-{version}.tar.gz", hashes = {{ sha256 = "{SHA}" }} }}\n'
    return text + (f"wheels = [{wheels}]\n" if files else "")


def test_the_most_specific_wheel_for_the_target_is_chosen() -> None:
    files = ["cn-3.5.3-py3-none-any.whl",
             "cn-3.5.3-cp37-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
             "cn-3.5.3-cp312-cp312-manylinux_2_28_x86_64.whl",
             "cn-3.5.3-cp312-cp312-manylinux_2_31_x86_64.whl",  # newer glibc than the target
             "cn-3.5.3-cp311-cp311-manylinux_2_28_x86_64.whl",
             "cn-3.5.3-cp312-cp312-manylinux_2_28_aarch64.whl"]
    tags = target_tags("3.12", "x86_64-manylinux_2_28")
    (w,) = choose_wheels(_pylock(_pkg("cn", "3.5.3", files)), tags)
    assert w.filename == "cn-3.5.3-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert (w.url, w.size, w.sha256) == ("https://files.example/p/" + w.filename, 102, SHA)
    # Without the exact CPython wheel, abi3 beats pure Python; on aarch64 its own wheel.
    (w,) = choose_wheels(_pylock(_pkg("cn", "3.5.3", [files[0], files[1]])), tags)
    assert "abi3" in w.filename
    (w,) = choose_wheels(_pylock(_pkg("cn", "3.5.3", files)),
                         target_tags("3.12", "aarch64-manylinux_2_28"))
    assert w.filename.endswith("aarch64.whl")


def test_tag_order_prefers_newer_glibc_and_ends_with_linux() -> None:
    tags = [str(t) for t in target_tags("3.11", "x86_64-manylinux_2_28")]
    assert tags[0] == "cp311-cp311-manylinux_2_28_x86_64"
    assert tags.index("cp311-cp311-manylinux_2_17_x86_64") + 1 == tags.index(
        "cp311-cp311-manylinux2014_x86_64")
    assert tags.index("cp311-cp311-manylinux1_x86_64") < tags.index("cp311-cp311-linux_x86_64")
    assert tags[-1] == "py30-none-any" and "cp312-cp312-manylinux_2_28_x86_64" not in tags
    arm = [str(t) for t in target_tags("3.11", "aarch64-manylinux2014")]
    assert arm[0] == "cp311-cp311-manylinux_2_17_aarch64"
    assert not any("manylinux_2_16" in t or "manylinux1" in t for t in arm)


def test_quoted_file_names_and_credentials() -> None:
    text = _pylock(_pkg("torch", "2.13.0+rocm7.2",
                        ["torch-2.13.0%2Brocm7.2-cp312-cp312-manylinux_2_28_x86_64.whl"],
                        base="https://user:secret@download.example/whl/rocm7.2/"))
    (w,) = choose_wheels(text, target_tags("3.12", "x86_64-manylinux_2_28"))
    assert w.filename == "torch-2.13.0+rocm7.2-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert w.url == ("https://download.example/whl/rocm7.2/"
                     "torch-2.13.0%2Brocm7.2-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert w.version == "2.13.0+rocm7.2"
    assert redact("https://a:b@h.example/x") == "https://h.example/x"


def test_sdist_only_and_off_target_packages_are_named() -> None:
    tags = target_tags("3.12", "x86_64-manylinux_2_28")
    text = _pylock(_pkg("ok", "1.0", ["ok-1.0-py3-none-any.whl"]),
                   _pkg("srconly", "0.1", [], sdist=True),
                   _pkg("gitdep", "0.2", []))
    with pytest.raises(UsageError) as err:
        choose_wheels(text, tags)
    assert "srconly==0.1 (sdist)" in err.value.message and "gitdep==0.2 (no file)" in err.value.message
    assert "wheels only" in err.value.message
    text = _pylock(_pkg("win", "1.0", ["win-1.0-cp312-cp312-win_amd64.whl", "win-1.0.bogus"]))
    with pytest.raises(UsageError, match=r"win==1.0 \(win-1.0-cp312-cp312-win_amd64.whl"):
        choose_wheels(text, tags)


def test_unlockable_entries_are_refused() -> None:
    tags = target_tags("3.12", "x86_64-manylinux_2_28")
    plain = _pylock(_pkg("a", "1.0", ["a-1.0-py3-none-any.whl"], base="http://evil.example/"))
    with pytest.raises(UsageError, match="cannot be locked"):
        choose_wheels(plain, tags)
    nohash = _pylock('[[packages]]\nname = "a"\nversion = "1.0"\n'
                     'wheels = [{ url = "https://x.example/a-1.0-py3-none-any.whl" }]\n')
    with pytest.raises(UsageError, match="cannot be locked"):
        choose_wheels(nohash, tags)
    with pytest.raises(UsageError, match="cannot read"):
        choose_wheels("lock-version = ", tags)
    assert choose_wheels(_pylock(), tags) == ()


# --- uv ----------------------------------------------------------------------------------

def _plan(**changes: Any) -> PackagesPlan:
    base: dict[str, Any] = {"requirements": ("app==1.0",), "indexes": ("http://127.0.0.1:9/simple",),
            "python_version": "3.12", "python_platform": "x86_64-manylinux_2_28",
            "recorded": (), "notes": ()}
    return PackagesPlan(**{**base, **changes})


def test_uv_command_and_environment() -> None:
    cmd = uv_pylock_command("uv", _plan(indexes=("https://a.example/simple",
                                                 "https://b.example/simple")))
    assert cmd[:6] == ["uv", "--no-config", "pip", "compile", "-", "--format"]
    assert cmd[6] == "pylock.toml"
    assert {"--generate-hashes", "--no-build", "--python-version=3.12",
            "--python-platform=x86_64-manylinux_2_28"} <= set(cmd)
    assert cmd[-2:] == ["--index-url=https://a.example/simple",
                        "--extra-index-url=https://b.example/simple"]
    env = uv_environment({"UV_INDEX_URL": "x", "UV_CONSTRAINT": "c", "UV_CACHE_DIR": "/c",
                          "PATH": "/bin"})
    assert env["UV_CACHE_DIR"] == "/c" and "UV_INDEX_URL" not in env
    assert "UV_CONSTRAINT" not in env and env["UV_NO_CONFIG"] == "1"


def _fake_uv(tmp_path: Path, body: str) -> str:
    script = tmp_path / "uv"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_uv_failure_is_quoted_clipped_and_escaped(tmp_path: Path) -> None:
    uv = _fake_uv(tmp_path, 'i=0; while [ $i -lt 100 ]; do echo "line $i \\033[31m" >&2; '
                            'i=$((i+1)); done; exit 1\n')
    with pytest.raises(UsageError) as err:
        run_uv(_plan(), uv=uv)
    msg = err.value.message
    assert msg.startswith("uv could not resolve the Python environment (app==1.0):")
    assert "line 29" in msg and "line 30 " not in msg and "(70 more lines)" in msg
    assert "\x1b" not in msg
    assert clip_message("x" * 5000).endswith(" ...") and len(clip_message("x" * 5000)) < 4100


def test_uv_timeout_and_missing_executable(tmp_path: Path) -> None:
    # An index that does not answer in time is a registry failure (8), not a usage error.
    with pytest.raises(BuildError, match="within 0.2 s") as err:
        run_uv(_plan(), uv=_fake_uv(tmp_path, "sleep 5\n"), timeout=0.2)
    assert err.value.exit_code == 8
    with pytest.raises(UsageError, match="could not be run"):
        run_uv(_plan(), uv=str(tmp_path / "no-uv"))


def test_index_failures_are_told_from_resolution_failures() -> None:
    # uv 0.13.9's messages against the stub indexes below (a closed port, an unknown
    # host, HTTP 500 / 401 / 403), and a 404 / no-match / no-wheel resolution failure.
    assert index_failure("error: Failed to fetch: http://127.0.0.1:9/simple/app/\n"
                         "  cause: error sending request for url (http://127.0.0.1:9/)")
    assert index_failure("  cause: dns error\n  cause: failed to lookup address information")
    assert index_failure("hint: An index URL\n      (https://x.example/simple) could not be "
                         "queried due to a lack of valid\n      authentication credentials "
                         "(401 Unauthorized).")  # wrapped as uv wraps on a narrow terminal
    assert index_failure("hint: An index (http://h/simple) returned a 403 Forbidden error.")
    assert not index_failure("error: No solution found when resolving dependencies\n  cause: "
                             "Because app was not found in the package registry")
    assert not index_failure("Because only app<2 is available and you require app==9.9")
    assert not index_failure("Because tls-client==1.0 has no usable wheels")


def test_uv_index_failure_is_a_build_error_without_credentials(tmp_path: Path) -> None:
    uv = _fake_uv(tmp_path, "echo 'error: Failed to fetch: "
                            "http://alice:SECRETPW@127.0.0.1:9/simple/app/' >&2\n"
                            "echo '  cause: token SECRETPW refused' >&2; exit 2\n")
    with pytest.raises(BuildError) as err:
        run_uv(_plan(indexes=("http://alice:SECRETPW@127.0.0.1:9/simple",)), uv=uv)
    assert err.value.exit_code == 8
    assert err.value.message.startswith("uv could not read an index while resolving (app==1.0)")
    assert "http://***@127.0.0.1:9/simple/app/" in err.value.message
    assert "token *** refused" in err.value.message
    assert "SECRETPW" not in err.value.render()
    assert "network" in err.value.hint


def test_index_credentials_are_not_echoed() -> None:
    for url, needle in [("http://alice:SECRETPW@example.com/simple",
                         "--index 'http://***@example.com/simple': not an https URL"),
                        ("https://alice:SECRETPW@example.com/simple\x1b[31m",
                         "--index 'https://***@example.com/simple\\x1b[31m': longer than"),
                        ("https://alice:SECRETPW@" + "x" * 1000 + ".example/simple",
                         "--index 'https://***@xxx")]:
        with pytest.raises(UsageError) as err:
            plan_packages(lock(MI355X), indexes=[url], **TARGET)
        assert needle in err.value.message
        assert "SECRETPW" not in err.value.render() and "alice" not in err.value.render()


@pytest.fixture
def isolated_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # a failing index fails at once
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.mark.usefixtures("isolated_uv")
def test_sdist_only_package_fails_naming_it(tmp_path: Path) -> None:
    graph = {"app==1.0": ["srconly"], "srconly==0.1": []}
    with (serve_index(tmp_path, graph, sdist_only=frozenset({"srconly"})) as (url, _log),
          pytest.raises(UsageError) as err):
        run_uv(_plan(indexes=(url,)))
    assert "srconly==0.1 has no usable wheels" in err.value.message
    assert err.value.hint.startswith("No wheel for the target: srconly==0.1.")
    assert sdist_only("Because `a==1` has no usable wheels and b==2 has no usable wheels") == [
        "a==1", "b==2"]


@pytest.mark.usefixtures("isolated_uv")
def test_lock_packages_records_wheels_packages_and_target(tmp_path: Path) -> None:
    tags = {"torch==2.13.0+rocm7.2": ["cp311-cp311-manylinux_2_28_x86_64",
                                      "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64",
                                      "py3-none-any"]}
    graph = {"torch==2.13.0+rocm7.2": ["filelock>=3"], "filelock==3.0": [],
             "rich==13.0": []}
    old = lock(MI300X)
    with serve_index(tmp_path, graph, tags=tags) as (url, log):
        plan = plan_packages(old, indexes=[url], requirements=["rich==13.0"], **TARGET)
        new, wheels = lock_packages(old, plan)
    assert [p for p in log if p.endswith(".whl")] == []  # metadata only
    assert new.packages == {"filelock": "3.0", "rich": "13.0", "torch": "2.13.0+rocm7.2"}
    torch = next(w for w in wheels if w.name == "torch")
    assert torch.filename == ("torch-2.13.0+rocm7.2-cp312-cp312-manylinux_2_17_x86_64."
                              "manylinux2014_x86_64.whl")
    assert torch.url is not None and torch.url.startswith(url.removesuffix("/simple"))
    assert "%2B" in torch.url
    assert new.wheels == list(wheels)
    assert new.python == PythonTarget(version="3.12", platform="x86_64-manylinux_2_28",
                                      indexes=[url], requirements=["rich==13.0"])
    # Written and read back through the lock path, byte-identical on a second write.
    path = tmp_path / "pin.lock"
    first = write_lock(new, path)
    assert read_lock(path) == new and write_lock(read_lock(path), path) == first
    assert with_packages(new, plan, wheels) == new


def _closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def _status_index(status: int) -> Iterator[str]:
    """An index on 127.0.0.1 answering every request with HTTP ``status``; yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}/simple"


@pytest.mark.usefixtures("isolated_uv")
def test_an_unreachable_index_is_a_build_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/simple"
    with pytest.raises(BuildError) as err:
        run_uv(_plan(indexes=(url,)))
    assert err.value.exit_code == 8
    assert "uv could not read an index" in err.value.message
    assert f"Failed to fetch: {url}/app/" in err.value.message
    assert "An index could not be read" in err.value.hint


@pytest.mark.usefixtures("isolated_uv")
@pytest.mark.parametrize(("status", "code", "needle"), [
    (500, 8, "500 Internal Server Error"),
    (401, 8, "401 Unauthorized"),
    (403, 8, "403 Forbidden"),
    (404, 2, "not found in the package registry"),  # the requirement's fault
])
def test_index_http_errors(status: int, code: int, needle: str) -> None:
    with _status_index(status) as url, pytest.raises((BuildError, UsageError)) as err:
        run_uv(_plan(indexes=(url,)))
    assert err.value.exit_code == code
    assert needle in err.value.message


@pytest.mark.usefixtures("isolated_uv")
def test_no_matching_version_is_a_usage_error(tmp_path: Path) -> None:
    with (serve_index(tmp_path, {"app==1.0": []}) as (url, _log),
          pytest.raises(UsageError) as err):
        run_uv(_plan(indexes=(url,), requirements=("app==9.9",)))
    assert err.value.exit_code == 2
    assert err.value.message.startswith("uv could not resolve the Python environment (app==9.9)")
    assert "Check the names and versions" in err.value.hint
