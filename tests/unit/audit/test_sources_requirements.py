"""pin audit sources: requirements files (includes, options, markers, CUDA indexes)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.audit.indexes import RULE_INDEX, index_findings
from pinning.audit.model import Context, FileScan, Kind, Skip, Verdict
from pinning.audit.sources.pep508 import parse_requirement
from pinning.audit.sources.requirements import logical_lines, scan_requirements

CTX = Context()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_requirements_with_cuda_index_hashes_markers_and_includes(tmp_path: Path) -> None:
    top = _write(tmp_path / "requirements.txt", (
        "--extra-index-url https://download.pytorch.org/whl/cu121\n"
        "# pinned for the cluster\n"
        "torch==2.3.1+cu121 \\\n"
        "    --hash=sha256:0123abcd\n"
        'numpy>=1.24,<2 ; python_version >= "3.10"  # numerics\n'
        "-r extra/dev.txt\n"
        "-c constraints.txt\n"
        "accelerate[deepspeed]===0.30.0\n"
    ))
    _write(tmp_path / "extra" / "dev.txt", "flash-attn==2.5.8\n-i https://pypi.org/simple\n")
    _write(tmp_path / "constraints.txt", "triton==2.3.1\n")
    scan = scan_requirements(top, "requirements.txt", CTX)
    got = [(p.name, p.version, p.local, p.specifier, p.path, p.line) for p in scan.packages]
    assert got == [
        ("torch", "2.3.1+cu121", "cu121", "", "requirements.txt", 3),
        ("numpy", None, None, "<2,>=1.24", "requirements.txt", 5),
        ("accelerate", "0.30.0", None, "", "requirements.txt", 8),
        ("flash-attn", "2.5.8", None, "", "extra/dev.txt", 1),
        ("triton", "2.3.1", None, "", "constraints.txt", 1),
    ]
    assert scan.packages[1].raw == 'numpy>=1.24,<2 ; python_version >= "3.10"'
    assert scan.packages[2].extras == ("deepspeed",)
    urls = ("https://download.pytorch.org/whl/cu121", "https://pypi.org/simple")
    assert all(p.index_urls == urls for p in scan.packages)
    assert scan.skipped == []
    [finding] = scan.findings
    assert (finding.kind, finding.rule, finding.verdict, finding.subject, finding.path,
            finding.line) == (Kind.INDEX, RULE_INDEX, Verdict.SWAP,
                              "https://download.pytorch.org/whl/cu121", "requirements.txt", 1)
    assert finding.replacement == "https://download.pytorch.org/whl/rocmX.Y"
    assert finding.citation.source.endswith("_get_started/previous-versions.md")


def test_rocm_and_plain_indexes_are_not_findings(tmp_path: Path) -> None:
    top = _write(tmp_path / "r.txt", "--index-url=https://download.pytorch.org/whl/rocm6.0\n"
                                     "-f https://download.pytorch.org/whl/cpu\ntorch==2.3.1\n")
    scan = scan_requirements(top, "r.txt", CTX)
    assert scan.findings == []
    assert scan.packages[0].index_urls == ("https://download.pytorch.org/whl/rocm6.0",
                                           "https://download.pytorch.org/whl/cpu")


def test_nvidia_index_on_two_lines_is_one_finding_with_both_lines(tmp_path: Path) -> None:
    top = _write(tmp_path / "r.txt", "--extra-index-url https://pypi.nvidia.com\n"
                                     "tensorrt==10.0.1\n"
                                     "--extra-index-url https://pypi.nvidia.com\n")
    [finding] = scan_requirements(top, "r.txt", CTX).findings
    assert (finding.subject, finding.line, finding.lines) == ("https://pypi.nvidia.com", 1,
                                                              [1, 3])
    assert "NVIDIA's package index" in finding.why


def test_include_loop_missing_include_and_remote_include_are_skipped(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.txt", "-r b.txt\n-r missing.txt\n-r https://x.org/r.txt\nsix\n")
    _write(tmp_path / "b.txt", "-r a.txt\nidna==3.7\n")
    scan = scan_requirements(a, "a.txt", CTX)
    assert [(p.name, p.path, p.line) for p in scan.packages] == [
        ("six", "a.txt", 4), ("idna", "b.txt", 2)]
    reasons = {s.path: s.reason for s in scan.skipped}
    assert set(reasons) == {"a.txt:1", "b.txt:1", "a.txt:2", "a.txt:3"}
    assert reasons["a.txt:1"] == ("include 'b.txt' is part of an include loop; each file is "
                                  "read once")
    assert reasons["b.txt:1"] == ("include 'a.txt' is part of an include loop; each file is "
                                  "read once")
    assert reasons["a.txt:2"].startswith("include 'missing.txt': ")
    assert "remote" in reasons["a.txt:3"]


def test_a_file_included_twice_is_read_once(tmp_path: Path) -> None:
    top = _write(tmp_path / "r.txt", "-r common.txt\n-c common.txt\n")
    _write(tmp_path / "common.txt", "requests==2.32.3\n")
    scan = scan_requirements(top, "r.txt", CTX)
    assert [(p.name, p.path) for p in scan.packages] == [("requests", "common.txt")]
    assert scan.skipped == []


def test_include_depth_is_limited(tmp_path: Path) -> None:
    for i in range(13):
        _write(tmp_path / f"r{i}.txt", f"-r r{i + 1}.txt\npkg{i}\n")
    _write(tmp_path / "r13.txt", "last\n")
    scan = scan_requirements(tmp_path / "r0.txt", "r0.txt", CTX)
    assert [p.name for p in scan.packages][-1] == "pkg10"
    assert [s.path for s in scan.skipped] == ["r10.txt:1"]
    assert "deeper than 10" in scan.skipped[0].reason


def test_editable_url_and_bad_lines(tmp_path: Path) -> None:
    top = _write(tmp_path / "r.txt", (
        "-e git+https://github.com/org/kernels.git@v1#egg=my_kernels\n"
        "-e ./vendored/apex\n"
        "https://download.pytorch.org/whl/cu121/torch-2.3.1%2Bcu121-cp311-cp311-linux_x86_64.whl\n"
        "xformers @ https://example.org/xformers-0.0.26.tar.gz\n"
        "bad line ===\n"
        "--no-such-option\n"
        "--pre\n"
    ))
    scan = scan_requirements(top, "r.txt", CTX)
    assert [(p.name, p.version, p.local, p.line) for p in scan.packages] == [
        ("my-kernels", None, None, 1), ("torch", "2.3.1+cu121", "cu121", 3),
        ("xformers", None, None, 4)]
    assert [s.path for s in scan.skipped] == ["r.txt:2", "r.txt:5", "r.txt:6"]
    assert "#egg=NAME" in scan.skipped[0].reason
    assert scan.skipped[1].reason == ("not a requirement (Expected semicolon (after name "
                                      "with no version specifier) or end)")
    assert scan.skipped[2].reason == "unknown option --no-such-option"


def test_logical_lines_join_continuations_and_drop_comments() -> None:
    text = "# c\na \\\n  b  # x\n\nurl#egg=y\n"
    assert logical_lines(text) == [(2, "a    b"), (5, "url#egg=y")]


def test_parse_requirement_exactness() -> None:
    one = parse_requirement("Torch==2.5.1+rocm6.2", "requirements")
    assert not isinstance(one, str)
    assert (one.name, one.version, one.local) == ("torch", "2.5.1+rocm6.2", "rocm6.2")
    wild = parse_requirement("torch==2.5.*", "requirements")
    assert not isinstance(wild, str) and wild.version is None and wild.specifier == "==2.5.*"
    assert isinstance(parse_requirement("torch >>> 2", "requirements"), str)


def test_index_findings_ignore_non_cuda() -> None:
    assert index_findings([("https://pypi.org/simple", "r.txt", 1)]) == []
    assert [f.subject for f in index_findings(
        [("https://download.pytorch.org/whl/cu118/", "r.txt", 2)])] == [
        "https://download.pytorch.org/whl/cu118"]


def test_binary_file_is_skip(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_bytes(b"torch\x00\x01\x02")
    with pytest.raises(Skip, match="binary"):
        scan_requirements(path, "requirements.txt", CTX)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises_but_skip(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "requirements.txt"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            result = scan_requirements(path, "requirements.txt", CTX)
        except Skip:
            return
        assert isinstance(result, FileScan)


# -- includes stay inside the audited folders; no line text is copied (review item 6) ----------


def test_include_outside_the_audited_folders_is_not_read(tmp_path: Path) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    _write(outside / "secret.txt", "ghp_R3allySecretT0ken123\n")
    (project / "linked.txt").parent.mkdir(parents=True)
    (project / "linked.txt").symlink_to(outside / "secret.txt")
    _write(project / "dev.txt", "pytest==8.2.0\n")
    top = _write(project / "requirements.txt", (
        f"-r {outside / 'secret.txt'}\n-c ../outside/secret.txt\n-r linked.txt\n"
        "-r dev.txt\n"))
    ctx = Context(roots=(project.resolve(),))
    scan = scan_requirements(top, "requirements.txt", ctx)
    assert [(p.name, p.path, p.line) for p in scan.packages] == [("pytest", "dev.txt", 1)]
    assert [(s.path, s.reason) for s in scan.skipped] == [
        (f"requirements.txt:{n}", "include outside the audited folders; not read")
        for n in (1, 2, 3)]
    # Without roots (a scanner called on its own) the same includes are read.
    alone = scan_requirements(top, "requirements.txt", CTX)
    assert [(p.name, p.line) for p in alone.packages] == [
        ("ghp-r3allysecrett0ken123", 1), ("pytest", 1)]


def test_a_line_that_is_no_requirement_is_not_copied_into_the_report(tmp_path: Path) -> None:
    top = _write(tmp_path / "requirements.txt", (
        "[default]\n"
        "aws_secret_access_key = hunter2SECRET\n"
        "root:$6$SECRETSALT$SECRETHASH:19000:0:99999:7:::\n"
        "torch>=SECRET.TOKEN\n"
        "-\x1b]0;SECRET\x07\n"
        "-r https://user:SECRETPASS@example.org/r.txt\n"
        "--extra-index-url https://tok:SECRETPASS@download.pytorch.org/whl/cu121\n"
        "-e git+https://example.org/k.git#egg=bad_\n"
        "six==1.16.0\n"
    ))
    scan = scan_requirements(top, "requirements.txt", CTX)
    reasons = [(s.path, s.reason) for s in scan.skipped]
    assert reasons[:4] == [
        ("requirements.txt:1", "not a requirement (Expected package name at the start of "
                               "dependency specifier)"),
        ("requirements.txt:2", "not a requirement (Expected semicolon (after name with no "
                               "version specifier) or end)"),
        ("requirements.txt:3", "not a requirement (Expected semicolon (after name with no "
                               "version specifier) or end)"),
        ("requirements.txt:4", "not a requirement (Expected semicolon (after name with no "
                               "version specifier) or end)"),
    ]
    assert reasons[4] == ("requirements.txt:5", "unknown option (not shown)")
    assert reasons[5][0] == "requirements.txt:8"
    assert reasons[5][1].endswith("#egg= names no valid distribution name")
    assert reasons[6] == ("requirements.txt:6", "include 'https://example.org/r.txt' is "
                          "remote; pin does not fetch it")
    assert [p.name for p in scan.packages] == ["six"]
    assert scan.packages[0].index_urls == ("https://download.pytorch.org/whl/cu121",)
    [finding] = scan.findings
    assert (finding.subject, finding.line) == ("https://download.pytorch.org/whl/cu121", 7)
    report = repr(scan)
    assert "hunter2" not in report and "SECRETHASH" not in report
    assert "SECRETPASS" not in report and "\x1b" not in report


def test_a_long_line_is_shown_cut_short() -> None:
    from pinning.audit.sources.pep508 import shown
    assert shown("x" * 500) == "x" * 80 + "..."
    assert shown("short") == "short"
    assert shown("a\u202eb\nc") == "a\\u202eb\\x0ac"


# -- one entry per problem, whichever route reached it (review item 13a) ------------------------


def test_a_file_met_directly_and_through_an_include_gives_identical_entries(
        tmp_path: Path) -> None:
    dev = _write(tmp_path / "reqs" / "dev-requirements.txt", "pytest==8.2.0\nnot valid ===\n")
    top = _write(tmp_path / "requirements.txt",
                 f"-r reqs/dev-requirements.txt\n-r {dev}\n-c ./reqs/../reqs/dev-requirements.txt\n")
    other = _write(tmp_path / "reqs" / "other-requirements.txt", "-r dev-requirements.txt\n")
    ctx = Context(roots=(tmp_path.resolve(),))
    direct = scan_requirements(dev, "reqs/dev-requirements.txt", ctx).skipped
    assert [(s.path, s.reason[:17]) for s in direct] == [
        ("reqs/dev-requirements.txt:2", "not a requirement")]
    assert scan_requirements(top, "requirements.txt", ctx).skipped == direct
    assert scan_requirements(other, "reqs/other-requirements.txt", ctx).skipped == direct
    packages = scan_requirements(top, "requirements.txt", ctx).packages
    assert [(p.name, p.path, p.line) for p in packages] == [
        ("pytest", "reqs/dev-requirements.txt", 1)]


def test_an_include_loop_gives_the_same_entries_from_every_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a-requirements.txt", "-r b-requirements.txt\ntorch==2.3.1\n")
    b = _write(tmp_path / "b-requirements.txt", "-r a-requirements.txt\nflash-attn\n")
    c = _write(tmp_path / "c-requirements.txt", "-r a-requirements.txt\n")
    loop = {
        ("a-requirements.txt:1",
         "include 'b-requirements.txt' is part of an include loop; each file is read once"),
        ("b-requirements.txt:1",
         "include 'a-requirements.txt' is part of an include loop; each file is read once"),
    }
    for path in (a, b, c):
        skipped = scan_requirements(path, path.name, CTX).skipped
        assert len(skipped) == 2
        assert {(s.path, s.reason) for s in skipped} == loop
    # A chain without a loop reports nothing.
    _write(tmp_path / "d.txt", "-r e.txt\n")
    _write(tmp_path / "e.txt", "six\n")
    assert scan_requirements(tmp_path / "d.txt", "d.txt", CTX).skipped == []
