"""The NFD feature file: what pin writes for match / drift / unknown, NFD's rules as the
validator checks them (positive and negative), and the atomic write through a dot-file."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinning.fleet.nfd import (
    MAX_FILE_BYTES,
    NAMESPACE,
    check_feature_file,
    digest12,
    features,
    is_label_value,
    label_problems,
    render_feature_file,
    write_feature_file,
)
from pinning.lockfile.models import Lockfile
from pinning.matrix.load import Matrix
from pinning.verify.freeze import freeze
from pinning.verify.report import VerifyReport, verify
from tests.support.hosts import MI300X, recorded
from tests.support.locks import lock_for

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def frozen(matrix: Matrix) -> Lockfile:
    lock = lock_for(matrix, "mi300x", "pytorch==2.7", rocm="7.1.1")
    done, _, _ = freeze(lock, recorded("mi300x-rocm7.1"), matrix, host_label="mi300x")
    return done


@pytest.fixture(scope="module")
def match(matrix: Matrix, frozen: Lockfile) -> VerifyReport:
    return verify(frozen, recorded("mi300x-rocm7.1"), matrix, lock_name="pin.lock",
                  host_name="mi300x")


@pytest.fixture(scope="module")
def drift(matrix: Matrix, frozen: Lockfile, tmp_path_factory: pytest.TempPathFactory
          ) -> VerifyReport:
    host = tmp_path_factory.mktemp("drift") / "h"
    shutil.copytree(MI300X, host, symlinks=True)
    fw = host / "out/amd-smi-firmware.txt"
    fw.write_text(re.sub(r"FW_VERSION: 32959", "FW_VERSION: 32960", fw.read_text(), count=1))
    return verify(frozen, recorded("mi300x-rocm7.1", host), matrix, lock_name="pin.lock",
                  host_name="changed")


def body(text: str) -> dict[str, str]:
    """The feature lines of a file as name -> value."""
    return dict(line.split("=", 1) for line in text.splitlines()
                if line and not line.startswith("#"))


def test_match_file_follows_nfd_rules_and_names_the_lock(match: VerifyReport,
                                                         frozen: Lockfile) -> None:
    text = render_feature_file(match, frozen, now=NOW, ttl_s=900)
    assert check_feature_file(text, now=NOW) == []
    lines = text.splitlines()
    # The expiry comes before every feature, so all of them expire together.
    assert lines[1] == "# +expiry-time=2026-03-01T12:15:00Z"
    assert all(line.startswith("#") for line in lines[:2])
    hex64 = frozen.content_hash.removeprefix("sha256:")
    assert body(text) == {
        "pin.dev/result": "match", "pin.dev/drift-count": "0", "pin.dev/lock": hex64[:12],
        "pin.dev/lock.gpu": "mi300x", "pin.dev/lock.gfx-target": "gfx942",
        "pin.dev/lock.runtime": "rocm-7.1.1", "pin.dev/lock-sha256": hex64}
    # The whole digest is a feature only: the line before it is the no-label directive.
    assert lines[lines.index(f"pin.dev/lock-sha256={hex64}") - 1] == "# +no-label"
    assert render_feature_file(match, frozen, now=NOW, ttl_s=900) == text  # pure


def test_drift_file_says_drift_and_counts(drift: VerifyReport, frozen: Lockfile) -> None:
    text = render_feature_file(drift, frozen, now=NOW)
    assert check_feature_file(text, now=NOW) == []
    got = body(text)
    assert got["pin.dev/result"] == "drift"
    assert got["pin.dev/drift-count"] == str(len(drift.drift)) != "0"


def test_unknown_file_with_and_without_the_lock(frozen: Lockfile) -> None:
    with_lock = render_feature_file(None, frozen, now=NOW)
    assert check_feature_file(with_lock) == []
    assert body(with_lock)["pin.dev/result"] == "unknown"
    assert "pin.dev/drift-count" not in body(with_lock)
    assert body(with_lock)["pin.dev/lock"] == digest12(frozen.content_hash)
    bare = render_feature_file(None, None, now=NOW)
    assert body(bare) == {"pin.dev/result": "unknown"}
    assert [f.name for f in features(None, None)] == [f"{NAMESPACE}/result"]


def test_clock_and_ttl_are_checked() -> None:
    with pytest.raises(ValueError, match="timezone"):
        render_feature_file(None, None, now=dt.datetime(2026, 3, 1))
    with pytest.raises(ValueError, match="ttl"):
        render_feature_file(None, None, now=NOW, ttl_s=0)
    # Another zone is written in UTC.
    east = NOW.astimezone(dt.timezone(dt.timedelta(hours=2)))
    assert "# +expiry-time=2026-03-01T12:01:00Z" in render_feature_file(None, None, now=east,
                                                                      ttl_s=60)


def test_digest12() -> None:
    assert digest12("sha256:" + "ab" * 32) == "abababababab"
    for bad in ("ab" * 32, "sha256:" + "AB" * 32, "sha256:abc", "md5:" + "ab" * 32):
        with pytest.raises(ValueError):
            digest12(bad)


@pytest.mark.parametrize(("key", "value"), [
    ("pin.dev/result", "match"), ("vendor.io/my-feature.3", "456"),
    ("feature.node.kubernetes.io/my-feature.1", "true"),
    ("sub.ns.feature.node.kubernetes.io/x", "y"), ("profile.node.kubernetes.io/p", "a_b.c-d"),
    ("pin.dev/empty", ""), ("pin.dev/" + "n" * 63, "v" * 63), ("a.b/Upper_Name.1", "Z9"),
])
def test_accepted_labels(key: str, value: str) -> None:
    assert label_problems(key, value) == []


@pytest.mark.parametrize(("key", "value", "why"), [
    ("kubernetes.io/x", "y", "denied"), ("node.kubernetes.io/x", "y", "denied"),
    ("unprefixed", "y", "no namespace"), ("a/b/c", "y", "more than one"),
    ("Pin.Dev/x", "y", "DNS subdomain"), ("pin..dev/x", "y", "DNS subdomain"),
    ("-pin.dev/x", "y", "DNS subdomain"), ("/x", "y", "namespace is empty"),
    ("pin.dev/", "y", "name part is empty"), ("pin.dev/-x", "y", "start and end"),
    ("pin.dev/" + "n" * 64, "y", "more than 63"), ("pin.dev/x", "v" * 64, "more than 63"),
    ("pin.dev/x", "sha256:abc", "start and end"), ("pin.dev/x", "-a", "start and end"),
    ("pin.dev/x", "a.", "start and end"), ("pin.dev/x", "a b", "start and end"),
    ("pin.dev/x", "é", "start and end"),
])
def test_refused_labels(key: str, value: str, why: str) -> None:
    assert any(why in p for p in label_problems(key, value)), label_problems(key, value)


# apimachinery's labelValueFmt, anchored, plus its 63-character limit.
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


@given(st.text(alphabet="aZ09-_.:/ é", max_size=70))
def test_label_value_check_agrees_with_apimachinery_pattern(value: str) -> None:
    expected = len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None
    assert is_label_value(value) is expected


def test_validator_finds_each_broken_rule() -> None:
    text = "\n".join([
        "# a comment",
        "# +expiry-time=yesterday",                 # 2: not RFC 3339
        "# +frobnicate",                             # 3: unknown directive
        "kubernetes.io/bad=1",                       # 4: denied namespace
        "pin.dev/value=" + "v" * 64,                 # 5: value too long
        "# +no-label",
        "anything-goes=sha256:" + "a" * 64,          # 7: no label: fine
        "bare",                                      # 8: +no-label applied to one line only
        "=value",                                    # 9: empty name
        "# +expiry-time=2026-03-01T11:00:00Z",       # 10: expired at NOW
    ])
    problems = check_feature_file(text, now=NOW)
    lines = sorted({int(p.split(":")[0].removeprefix("line ")) for p in problems})
    assert lines == [2, 3, 4, 5, 8, 9, 10], problems


def test_validator_accepts_nfd_guide_examples() -> None:
    guide = ("# This is a comment\nfeature.node.kubernetes.io/my-feature.1\n"
             "feature.node.kubernetes.io/my-feature.2=myvalue\nvendor.io/my-feature.3=456\n"
             "# +expiry-time=2080-07-28T11:22:33Z\nvendor.io/feature2=featureValue2\n"
             "# +expiry-time=2070-07-28T11:22:33.123456789+02:00\n"
             "# +no-feature\nvendor.io/label-only=value\n# +no-label\nfoo=baz\n")
    assert check_feature_file(guide, now=NOW) == []


def test_validator_size_limit() -> None:
    line = "pin.dev/x=y\n"
    fits = line * (MAX_FILE_BYTES // len(line))
    assert check_feature_file(fits) == []
    assert any("NFD ignores files over" in p for p in check_feature_file(fits + line * 2))


def test_write_goes_through_a_dot_file_then_rename(tmp_path: Path, frozen: Lockfile,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    renamed: list[tuple[str, str]] = []
    real = os.replace

    def spy(src: str, dst: str) -> None:
        renamed.append((os.path.basename(src), os.path.basename(dst)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "features.d" / "pin"
    target.parent.mkdir()
    target.write_text("old\n")
    text = render_feature_file(None, frozen, now=NOW)
    write_feature_file(target, text)
    assert target.read_text() == text
    assert len(renamed) == 1 and renamed[0][0].startswith(".pin.") and renamed[0][1] == "pin"
    assert [p.name for p in target.parent.iterdir()] == ["pin"]  # nothing left behind
    with pytest.raises(OSError):
        write_feature_file(tmp_path / "absent-folder" / "pin", text)
