"""pin audit --requirement: the closure resolved by uv from a local PEP 503 index (metadata only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.audit.closure import parse_compile_output, resolve_closure
from pinning.audit.model import DeclaredPackage, Skipped
from pinning.errors import MissingExtra, UsageError
from tests.support.pyindex import serve_index
from tests.support.uvenv import isolate_uv

GRAPH: dict[str, list[str]] = {
    "app==1.0": ["torchx==2.0", "nvidia-fake-cu12==12.1", "helper>=1"],
    "app==0.5": ["helper<1"],
    "torchx==2.0+cu121": ["helper", "Nvidia_Fake_CU12"],
    "torchx==1.0": [],
    "nvidia-fake-cu12==12.1": [],
    "nvidia-fake-cu12==11.8": [],
    "helper==0.9": [],
    "helper==1.2": [],
    "unrelated==1.0": [],
}


@pytest.fixture(autouse=True)
def _isolated_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private uv cache (so every test reads the index) and no proxy for 127.0.0.1."""
    isolate_uv(tmp_path, monkeypatch)


def _pkg(name: str, version: str, url: str, local: str | None = None) -> DeclaredPackage:
    raw = f"{name}=={version}" + (f"+{local}" if local else "")
    return DeclaredPackage(name=name, raw=raw, origin="closure", version=version, local=local,
                           index_urls=(url,))


def test_closure_is_exact_and_reads_metadata_only(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, log):
        packages, skipped = resolve_closure(["app==1.0"], index_urls=[url])
    assert skipped == []
    assert packages == [
        _pkg("app", "1.0", url),
        _pkg("helper", "1.2", url),
        _pkg("nvidia-fake-cu12", "12.1", url),
        _pkg("torchx", "2.0", url, local="cu121"),
    ]
    # Simple pages and PEP 658 metadata only: no wheel was downloaded.
    assert [p for p in log if p.endswith(".whl")] == []
    assert all(p.startswith("/simple/") or p.endswith(".whl.metadata") for p in log)
    assert {p for p in log if p.endswith(".metadata")} == {
        "/files/app-1.0-py3-none-any.whl.metadata",
        "/files/helper-1.2-py3-none-any.whl.metadata",
        "/files/nvidia_fake_cu12-12.1-py3-none-any.whl.metadata",
        "/files/torchx-2.0+cu121-py3-none-any.whl.metadata",
    }
    assert "/simple/unrelated/" not in log


def test_closure_of_an_older_version_differs(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, _log):
        packages, _ = resolve_closure(["app<1"], index_urls=[url])
    assert [(p.name, p.version) for p in packages] == [("app", "0.5"), ("helper", "0.9")]


def test_user_uv_settings_do_not_change_the_resolution(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    constraints = tmp_path / "c.txt"
    constraints.write_text("helper==0.9\n")
    monkeypatch.setenv("UV_CONSTRAINT", str(constraints))
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_EXTRA_INDEX_URL", "http://127.0.0.1:9/simple")
    (tmp_path / "uv.toml").write_text('index-url = "http://127.0.0.1:9/simple"\n')
    monkeypatch.chdir(tmp_path)
    with serve_index(tmp_path, GRAPH) as (url, _log):
        packages, _ = resolve_closure(["helper"], index_urls=[url])
    assert packages == [_pkg("helper", "1.2", url)]


def test_credentials_in_an_index_url_never_reach_the_packages(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, _log):
        secret_url = url.replace("http://", "http://user:s3cret@")
        packages, _ = resolve_closure(["helper==1.2"], index_urls=[secret_url])
    assert [p.raw for p in packages] == ["helper==1.2"]
    assert packages[0].index_urls == (url,)


def test_unresolvable_requirement_quotes_uvs_reason(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, _log), pytest.raises(UsageError) as err:
        resolve_closure(["app==3.0"], index_urls=[url])
    assert err.value.exit_code == 2
    assert err.value.message.startswith("uv could not resolve app==3.0:\n")
    assert "there is no version of app==3.0" in err.value.message
    assert err.value.hint.startswith("Check the name and version on the index")


def test_sdist_only_package_is_never_built_or_downloaded(tmp_path: Path) -> None:
    graph = {"app==1.0": ["srconly==1.0"], "srconly==1.0": []}
    with (serve_index(tmp_path, graph, sdist_only=frozenset({"srconly"})) as (url, log),
          pytest.raises(UsageError) as err):
        resolve_closure(["app==1.0"], index_urls=[url])
    assert "srconly==1.0 has no usable wheels" in err.value.message
    assert "pin never builds one" in err.value.hint
    assert "pin an older version that has wheels" in err.value.hint
    assert [p for p in log if p.endswith((".tar.gz", ".whl"))] == []


def test_unreachable_index_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # a transport setting pin passes on to uv
    with serve_index(tmp_path, {}) as (url, _log):
        pass  # the server is closed now: its port refuses connections
    with pytest.raises(UsageError) as err:
        resolve_closure(["app==1.0"], index_urls=[url])
    assert err.value.message.startswith("uv could not resolve app==1.0:\n")
    assert f"Failed to fetch: {url}/app/" in err.value.message
    assert err.value.hint.startswith("The index could not be read")


def test_timeout_is_a_usage_error(tmp_path: Path) -> None:
    with serve_index(tmp_path, GRAPH) as (url, _log), pytest.raises(UsageError) as err:
        resolve_closure(["app==1.0"], index_urls=[url], timeout=0.000001)
    assert "within 1e-06 s" in err.value.message


@pytest.mark.parametrize(("text", "says"), [
    ("app==", "is not a valid requirement"),
    ("app = = 1.0", "is not a valid requirement"),
    ("app @ https://example.invalid/app-1.0.tar.gz", "names a direct URL"),
    ("app==1.0\n-e .", "control character or line break"),
    ("  ", "empty value"),
])
def test_bad_requirement_is_refused_before_uv_runs(
        text: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import uv

    def no_uv() -> str:
        raise AssertionError("uv must not be looked up for a bad requirement")

    monkeypatch.setattr(uv, "find_uv_bin", no_uv)
    with pytest.raises(UsageError) as err:
        resolve_closure([text])
    assert err.value.exit_code == 2
    assert says in err.value.message
    assert "\n" not in err.value.message


def test_good_requirement_passes_validation(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    import uv

    def no_uv() -> str:
        raise FileNotFoundError("probe")

    monkeypatch.setattr(uv, "find_uv_bin", no_uv)
    monkeypatch.setenv("PATH", str(tmp_path))  # no uv on PATH either
    with pytest.raises(MissingExtra) as err:  # validation passed: it reached the uv lookup
        resolve_closure(["flash-attn[x]>=2.6,<3; sys_platform == 'linux'"])
    assert "no uv executable was found" in err.value.message


def test_bad_index_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError) as err:
        resolve_closure(["app==1.0"], index_urls=["--no-deps"])
    assert "not an http(s) or file URL" in err.value.message


def test_missing_uv_names_the_extra_that_ships_it(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    import uv

    def gone() -> str:
        raise FileNotFoundError("uv binary not found")

    monkeypatch.setattr(uv, "find_uv_bin", gone)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingExtra) as err:
        resolve_closure(["app==1.0"])
    assert err.value.exit_code == 15
    assert "pin audit --requirement resolves with uv" in err.value.message
    assert "pip install 'pin[image]'" in err.value.hint


def test_uv_on_path_serves_without_the_package(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """Without the uv package, a uv on PATH is the one pin runs."""
    import uv

    from pinning.util.proc import find_uv

    def gone() -> str:
        raise FileNotFoundError("uv binary not found")

    fake = tmp_path / "uv"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setattr(uv, "find_uv_bin", gone)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_uv("pin lock packages") == str(fake)


def test_uv_path_that_does_not_run_says_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uv

    monkeypatch.setattr(uv, "find_uv_bin", lambda: str(tmp_path / "absent-uv"))
    with pytest.raises(UsageError) as err:
        resolve_closure(["app==1.0"])
    assert f"{tmp_path / 'absent-uv'}: No such file or directory" in err.value.message
    assert "pip install uv" in err.value.hint


def test_empty_requirements_run_nothing() -> None:
    assert resolve_closure([]) == ([], [])


def test_output_parser_reads_packages_and_skips_odd_lines() -> None:
    text = ("# a comment\n"
            "Torch==2.4.0+cu121\n"
            "    # from https://u:p@download.pytorch.org/whl/cu121\n"
            "    # from https://second.example/simple\n"
            "app[x]==1.0\n"
            "-e ./local\n"
            "helper==not a version\n"
            "\x1b[31mevil==1\n"
            "nvidia-cudnn-cu12==9.1.0.70\n")
    packages, skipped = parse_compile_output(text, "--requirement torch==2.4.0",
                                             ["https://pypi.org/simple"])
    assert packages == [
        DeclaredPackage(name="torch", raw="Torch==2.4.0+cu121", origin="closure",
                        version="2.4.0", local="cu121",
                        index_urls=("https://download.pytorch.org/whl/cu121",)),
        DeclaredPackage(name="nvidia-cudnn-cu12", raw="nvidia-cudnn-cu12==9.1.0.70",
                        origin="closure", version="9.1.0.70",
                        index_urls=("https://pypi.org/simple",)),
    ]
    label = "--requirement torch==2.4.0"
    assert skipped == [
        Skipped(path=label, reason="uv output line 5 is not NAME==VERSION: app[x]==1.0"),
        Skipped(path=label, reason="uv output line 6 is not NAME==VERSION: -e ./local"),
        Skipped(path=label,
                reason="uv output line 7 is not NAME==VERSION: helper==not a version"),
        Skipped(path=label, reason="uv output line 8 is not NAME==VERSION: \\x1b[31mevil==1"),
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_output_parser_never_raises(text: str) -> None:
    packages, skipped = parse_compile_output(text, "x", [])
    assert all(p.origin == "closure" and p.version for p in packages)
    assert all("\n" not in s.reason for s in skipped)
