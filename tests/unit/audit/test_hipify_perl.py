"""``hipify-perl -examine``: the statistics parser and the runner.

The recorded outputs below were written from the strings of the code that prints them: the
generator of the script, ``src/CUDA2HIP_Perl.cpp`` (ROCm/HIPIFY@a97a7c15 and
vjelic/HIPIFY-glog-fork@00918ed3), whose ``printStats`` emits::

    printf STDERR "\\n[HIPIFY] info: file '$fileName' statistics:\\n";
    printf STDERR "  CONVERTED refs count: $total\\n";
    printf STDERR "  TOTAL lines of code: $loc\\n";
    printf STDERR "  WARNINGS: $warnings\\n";
    printf STDERR "[HIPIFY] info: CONVERTED refs by names:\\n";
    printf STDERR "  %s => %s: %d\\n", $key, $tagsToConvertedTags{$key}, ...;

and ``printStats(\\%tt, $Twarnings, $TlineCount, "GLOBAL", 1)`` for several files. Warnings
(``warning = "$fileName:$line_num: warning: "`` at 00918ed3) are printed as
``print STDERR "  " . warning . "unsupported HIP identifier: $func\\n"`` and likewise
``"deprecated CUDA identifier: $func since $cuda $val"``, ``"removed CUDA identifier: $func
since $cuda $val"``, ``"experimental ROCm HIP identifier: $func $val"``, ``"unsupported device
function \\"$func\\": $_"``; the leftover-name warning is ``"  warning: $fileName:#$line_num :
$_"``. Older scripts (ROCm/HIPIFY@0050fa27:bin/hipify-perl) print
``"  warning: $fileName:$line_num: unsupported identifier \\"$func\\""`` and
``"deprecated identifier \\"$func\\" since $cuda $val"``; some tutorials show the header
misspelt ``statisitics``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinning.audit.hipify_perl import (
    HipifyPerlStats,
    HipifyWarning,
    parse_stats,
    run_hipify_perl,
)

# Two files and the GLOBAL block, as current hipify-perl prints them for `-examine k.cu util/m.cu`.
CURRENT = """\
  k.cu:7: warning: unsupported HIP identifier: cublasGetStatusString
  k.cu:12: warning: deprecated CUDA identifier: cudaThreadSynchronize since CUDA 10.0
  k.cu:15: warning: unsupported device function "__shfl_down_sync":     v += __shfl_down_sync(0xffffffff, v, 16);
  k.cu:19: warning: experimental ROCm HIP identifier: cudaMemPrefetchBatchAsync 7.14.0
  warning: k.cu:#21 : cudaFooBar(x);

[HIPIFY] info: file 'k.cu' statistics:
  CONVERTED refs count: 3
  TOTAL lines of code: 40
  WARNINGS: 5
[HIPIFY] info: CONVERTED refs by names:
  cudaFree => hipFree: 1
  cudaMalloc => hipMalloc: 2

[HIPIFY] info: file 'util/m.cu' statistics:
  CONVERTED refs count: 2
  TOTAL lines of code: 12
  WARNINGS: 0
[HIPIFY] info: CONVERTED refs by names:
  cuda_runtime.h => hip/hip_runtime.h: 1
  cudaMalloc => hipMalloc: 1

[HIPIFY] info: file 'GLOBAL' statistics:
  CONVERTED refs count: 5
  TOTAL lines of code: 52
  WARNINGS: 5
[HIPIFY] info: CONVERTED refs by names:
  cudaFree => hipFree: 1
  cudaMalloc => hipMalloc: 3
  cuda_runtime.h => hip/hip_runtime.h: 1

"""

OLDER = """\
  warning: old.cu:4: unsupported identifier "cudaGraphInstantiateWithParams"
  warning: old.cu:9: deprecated identifier "cudaThreadExit" since CUDA 10.0
  warning: old.cu:11: removed identifier "cudaBindTexture" since CUDA 12.0
  warning: old.cu:13: unsupported device function "__nanosleep": __nanosleep(100);
[HIPIFY] info: file 'old.cu' statisitics:
  CONVERTED refs count: 1
  TOTAL lines of code: 20
  WARNINGS: 4
[HIPIFY] info: CONVERTED refs by names:
  cudaMalloc => hipMalloc: 1
"""


def test_current_format_per_file_blocks_and_global() -> None:
    stats = parse_stats(CURRENT)
    assert [f.file for f in stats.files] == ["k.cu", "util/m.cu"]
    k, m = stats.files
    assert (k.converted, k.lines, k.warnings) == (3, 40, 5)
    assert k.converted_by_name == {"cudaFree": 1, "cudaMalloc": 2}
    assert k.hip_names == {"cudaFree": "hipFree", "cudaMalloc": "hipMalloc"}
    assert (m.converted, m.lines, m.warnings) == (2, 12, 0)
    assert m.converted_by_name == {"cuda_runtime.h": 1, "cudaMalloc": 1}
    assert m.hip_names["cuda_runtime.h"] == "hip/hip_runtime.h"
    assert m.warning_list == []
    assert stats.total is not None
    assert (stats.total.converted, stats.total.lines, stats.total.warnings) == (5, 52, 5)
    assert stats.total.converted_by_name["cudaMalloc"] == 3
    assert stats.error is None


def test_current_format_warnings() -> None:
    stats = parse_stats(CURRENT)
    got = [(w.file, w.line, w.kind, w.name, w.since) for w in stats.warnings]
    assert got == [
        ("k.cu", 7, "unsupported", "cublasGetStatusString", None),
        ("k.cu", 12, "deprecated", "cudaThreadSynchronize", "CUDA 10.0"),
        ("k.cu", 15, "unsupported-device-function", "__shfl_down_sync", None),
        ("k.cu", 19, "experimental", "cudaMemPrefetchBatchAsync", "HIP 7.14.0"),
        ("k.cu", 21, "unconverted", "cudaFooBar", None),
    ]
    assert stats.files[0].warning_list == stats.warnings
    assert stats.warnings[2].text.startswith('unsupported device function "__shfl_down_sync"')
    assert stats.warnings[4].text == "cudaFooBar(x);"


def test_older_format_and_misspelt_header() -> None:
    stats = parse_stats(OLDER)
    assert [(f.file, f.converted, f.lines, f.warnings) for f in stats.files] == [
        ("old.cu", 1, 20, 4)]
    assert stats.total is None
    got = [(w.file, w.line, w.kind, w.name, w.since) for w in stats.warnings]
    assert got == [
        ("old.cu", 4, "unsupported", "cudaGraphInstantiateWithParams", None),
        ("old.cu", 9, "deprecated", "cudaThreadExit", "CUDA 10.0"),
        ("old.cu", 11, "removed", "cudaBindTexture", "CUDA 12.0"),
        ("old.cu", 13, "unsupported-device-function", "__nanosleep", None),
    ]


def test_file_names_with_colons_and_spaces() -> None:
    text = ("  src/a b:c.cu:3: warning: removed CUDA identifier: cudaUnbindTexture since CUDA 12.0\n"
            "[HIPIFY] info: file 'src/a b:c.cu' statistics:\n  CONVERTED refs count: 0\n"
            "  TOTAL lines of code: 5\n  WARNINGS: 1\n[HIPIFY] info: CONVERTED refs by names:\n")
    stats = parse_stats(text)
    assert [(w.file, w.line, w.kind, w.name, w.since) for w in stats.warnings] == [
        ("src/a b:c.cu", 3, "removed", "cudaUnbindTexture", "CUDA 12.0")]
    assert stats.files[0].file == "src/a b:c.cu"
    assert stats.files[0].warning_list == stats.warnings


def test_text_that_is_not_hipify_output_gives_nothing() -> None:
    stats = parse_stats("Skipping the excluded file: x.cu \nerror: could not open y.cu\n"
                        "cudaMalloc => hipMalloc: 1\nWARNINGS: 3\nk.cu:x: warning: odd\n")
    assert stats == HipifyPerlStats()


FRAGMENTS = st.sampled_from([
    "[HIPIFY] info: file 'k.cu' statistics:", "[HIPIFY] info: file '' statistics:",
    "[HIPIFY] info: file 'GLOBAL' statistics:", "  CONVERTED refs count: 3",
    "  CONVERTED refs count: 99999999999999999999999", "  TOTAL lines of code: -1",
    "  WARNINGS: ²", "[HIPIFY] info: CONVERTED refs by names:", "  a => b: 1", " => : 1",
    "  k.cu:0: warning: unsupported HIP identifier: ", "  k.cu:7: warning: ",
    '  k.cu:1: warning: unsupported device function "', "  warning: k.cu:#0 : x",
    "  warning: :#1 : ", '  warning: a:1: unsupported identifier "', "  warning: a:1: ",
    "k.cu:2: warning: experimental ROCm HIP identifier: ",
    "k.cu:2: warning: deprecated CUDA identifier: x since ",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAGMENTS | st.text(max_size=80), max_size=30))
def test_parser_never_raises_on_arbitrary_text(parts: list[str]) -> None:
    stats = parse_stats("\n".join(parts))
    assert isinstance(stats, HipifyPerlStats)
    for w in stats.warnings:
        assert isinstance(w, HipifyWarning) and (w.line is None or w.line >= 1)


# -- the runner, with a fake hipify-perl on PATH ----------------------------------------------

def _fake_tool(tmp_path: Path, body: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "hipify-perl"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_runner_returns_none_without_hipify_perl(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run_hipify_perl(["k.cu"]) is None


def test_runner_parses_the_tools_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = tmp_path / "stderr.txt"
    recorded.write_text(CURRENT)
    argv = tmp_path / "argv.txt"
    bin_dir = _fake_tool(tmp_path, f'printf "%s\\n" "$@" > "{argv}"\n'
                                   f'echo "translated" \ncat "{recorded}" >&2\nexit 0\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stats = run_hipify_perl(["k.cu", Path("util/m.cu"), "-odd.cu"], cwd=tmp_path)
    assert stats is not None
    assert argv.read_text().splitlines() == ["-examine", "k.cu", "util/m.cu", "./-odd.cu"]
    assert [f.file for f in stats.files] == ["k.cu", "util/m.cu"]
    assert stats.total is not None
    assert (stats.total.converted, stats.total.lines, stats.total.warnings) == (5, 52, 5)
    assert stats.total.converted_by_name == {"cudaFree": 1, "cudaMalloc": 3,
                                             "cuda_runtime.h": 1}
    assert [w.name for w in stats.warnings][:2] == ["cublasGetStatusString",
                                                    "cudaThreadSynchronize"]
    assert stats.error is None


def test_runner_reports_a_failing_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _fake_tool(tmp_path, 'echo "error: could not open $2" >&2\nexit 2\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stats = run_hipify_perl(["missing.cu"])
    assert stats is not None
    assert stats.files == [] and stats.total is None
    assert stats.error == "hipify-perl exited 2: error: could not open missing.cu"


def test_runner_stops_a_tool_that_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _fake_tool(tmp_path, "echo '  k.cu:1: warning: unsupported HIP identifier: "
                                   "cublasFoo' >&2\nexec sleep 30\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    stats = run_hipify_perl(["k.cu"], timeout=0.5)
    assert stats is not None
    assert stats.error == "hipify-perl timed out after 0.5 s; its report is partial"
    assert [(w.file, w.line, w.name) for w in stats.warnings] == [("k.cu", 1, "cublasFoo")]
