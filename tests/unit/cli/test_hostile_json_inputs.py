"""Every JSON reader behind a command, fed a 5,000-digit integer and 100,000-deep nesting,
exits with its own code (2 for result, audit and cost inputs, 7 for a host snapshot) naming
the file and what is wrong, never 1 and never a traceback. Each input starts from a real
file (a vLLM benchmark result, a judged acceptance result, a probe snapshot, an audit
report) with one value replaced.

Also: a snapshot without its ``gpus`` field (or with one of the wrong type) is unreadable
(7); ``"gpus": []`` is a host with no GPU visible, which drifts from a GPU lock (6).
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import pin
from tests.support.paths import DATA, HOSTS, ROOT

ACC = DATA / "acceptance"
TEMPLATE = ROOT / "pinning" / "accept" / "template.toml"
PRICES = ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml"
LOCK = ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock"
HOST = HOSTS / "mi300x-rocm7.1"
MARK = "__POISON__"
POISONS = {
    "huge-int": ("7" * 5_000, "a number too long to read (5000 digits"),
    "deep": ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The recorded mi300x host's snapshot as ``pin probe -o`` writes it, parsed."""
    path = tmp_path_factory.mktemp("snap") / "host.json"
    done = pin("probe", "--root", str(HOST / "root"), "--replay", str(HOST / "commands.toml"),
               "-o", str(path))
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


@pytest.fixture(scope="module")
def audit_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``pin audit --format json`` of a one-line project, parsed (the bare report)."""
    project = tmp_path_factory.mktemp("project")
    (project / "requirements.txt").write_text("torch==2.7.0\n")
    out = project / "audit.json"
    done = pin("audit", str(project / "requirements.txt"), "--format", "json", "-o", str(out))
    assert out.exists(), done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _poisoned(doc: Any, poison: str) -> str:
    """``doc`` as JSON with one more top-level field whose value is ``poison`` (raw text)."""
    return json.dumps({**doc, "x-poison": MARK}).replace(f'"{MARK}"', poison)


def _envelope(body: str) -> str:
    """A DSSE envelope around ``body`` (read without a key, so no signature is checked)."""
    return json.dumps({"payloadType": "application/vnd.in-toto+json",
                       "payload": base64.b64encode(body.encode()).decode(),
                       "signatures": [{"keyid": "", "sig": "AAAA"}]})


def _statement(poison: str) -> str:
    result = json.loads((ACC / "judged-c1.json").read_text())
    return json.dumps({"_type": "https://in-toto.io/Statement/v1", "subject": [],
                       "predicateType": "https://pin.dev/acceptance/v1",
                       "predicate": MARK, "x": MARK}).replace(f'"{MARK}"', poison, 1) \
        .replace(f'"{MARK}"', json.dumps(result))


Reader = tuple[str, Callable[[dict[str, Any], dict[str, Any], str], str],
               Callable[[Path, Path], list[str]], int]

# (name, the poisoned file's text from (snapshot, audit, poison), argv for the file and the
# folder it is in, the reader's own exit code)
READERS: list[Reader] = [
    ("accept judge --from a vLLM result",
     lambda s, a, p: _poisoned(json.loads((ACC / "vllm-bench-serve-smollm2-c1.json")
                                          .read_text()), p),
     lambda f, d: ["accept", "judge", str(TEMPLATE), "--from", str(f)], 2),
    ("accept show a plain result",
     lambda s, a, p: _poisoned(json.loads((ACC / "judged-c1.json").read_text()), p),
     lambda f, d: ["accept", "show", str(f)], 2),
    ("accept show a signed result (the envelope)",
     lambda s, a, p: _poisoned(json.loads(_envelope("{}")), p),
     lambda f, d: ["accept", "show", str(f)], 2),
    ("accept show a signed result (its statement)",
     lambda s, a, p: _envelope(_statement(p)),
     lambda f, d: ["accept", "show", str(f)], 2),
    ("cost RESULT",
     lambda s, a, p: _poisoned(json.loads((ACC / "judged-c1.json").read_text()), p),
     lambda f, d: ["cost", str(f), "--prices", str(PRICES), "--gpu", "MI300X"], 2),
    ("cost --migration AUDIT",
     lambda s, a, p: _poisoned(a, p),
     lambda f, d: ["cost", str(ACC / "judged-c1.json"), "--prices", str(PRICES), "--gpu",
                   "MI300X", "--migration", str(f)], 2),
    ("report --audit",
     lambda s, a, p: _poisoned(a, p),
     lambda f, d: ["report", "--audit", str(f), "-o", str(d / "r.html")], 2),
    ("report --accept (signed)",
     lambda s, a, p: _envelope(_statement(p)),
     lambda f, d: ["report", "--accept", str(f), "-o", str(d / "r.html")], 2),
    ("verify --host",
     lambda s, a, p: _poisoned(s, p),
     lambda f, d: ["verify", str(LOCK), "--host", str(f)], 7),
    ("freeze --host",
     lambda s, a, p: _poisoned(s, p),
     lambda f, d: ["freeze", str(LOCK), "--host", str(f), "-o", str(d / "frozen.lock")], 7),
    ("fleet verify SNAPSHOT_DIR",
     lambda s, a, p: _poisoned(s, p),
     lambda f, d: ["fleet", "verify", str(LOCK), str(f.parent)], 7),
]


def _checked(done: subprocess.CompletedProcess[str], code: int) -> str:
    text = done.stdout + done.stderr
    assert done.returncode == code, text[-2000:]
    assert "Traceback" not in text and "This is a bug in pin" not in text
    return text


@pytest.mark.parametrize("poison", sorted(POISONS))
@pytest.mark.parametrize("reader", READERS, ids=[r[0] for r in READERS])
def test_each_reader_refuses_with_its_own_code(reader: Reader, poison: str,
                                               snapshot: dict[str, Any],
                                               audit_report: dict[str, Any],
                                               tmp_path: Path) -> None:
    _, text, argv, code = reader
    value, needle = POISONS[poison]
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "input.json"
    path.write_text(text(snapshot, audit_report, value))
    out = _checked(pin(*argv(path, tmp_path)), code)
    assert needle in out and "input.json" in out
    assert len(out) < 20_000  # the input is never echoed


def test_verify_audit_says_it_is_not_an_audit_report(tmp_path: Path,
                                                     audit_report: dict[str, Any]) -> None:
    path = tmp_path / "audit.json"
    for value, _ in POISONS.values():
        path.write_text(_poisoned(audit_report, value))
        out = _checked(pin("verify", str(LOCK), "--root", str(HOST / "root"), "--replay",
                           str(HOST / "commands.toml"), "--audit", str(path)), 2)
        assert f"--audit {path}: not a pin audit JSON report" in out


@pytest.mark.parametrize("gpus", [None, "MISSING", "gpu0", {"index": 0}])
def test_a_snapshot_without_a_gpu_list_is_unreadable(gpus: Any, snapshot: dict[str, Any],
                                                     tmp_path: Path) -> None:
    doc = {k: v for k, v in snapshot.items() if k != "gpus"}
    if gpus != "MISSING":
        doc["gpus"] = gpus
    folder = tmp_path / "hosts"
    folder.mkdir()
    path = folder / "n1.json"
    path.write_text(json.dumps(doc))
    for argv in (["verify", str(LOCK), "--host", str(path)],
                 ["freeze", str(LOCK), "--host", str(path), "-o", str(tmp_path / "f.lock")],
                 ["fleet", "verify", str(LOCK), str(folder)]):
        out = _checked(pin(*argv), 7)
        assert "n1.json" in out and "gpus" in out
    assert not (tmp_path / "f.lock").exists()


def test_an_empty_gpu_list_is_a_host_without_gpus(snapshot: dict[str, Any],
                                                  tmp_path: Path) -> None:
    path = tmp_path / "n1.json"
    path.write_text(json.dumps({**snapshot, "gpus": []}))
    out = _checked(pin("verify", str(LOCK), "--host", str(path)), 6)
    assert "has drifted" in out and "target.gpu" in out


def _vllm_with(key: str, value: int) -> str:
    """vLLM's c1 result with ``key`` (or its list's first element) set to ``value``."""
    doc = json.loads((ACC / "vllm-bench-serve-smollm2-c1.json").read_text())
    if isinstance(doc[key], list):
        doc[key][0] = value
    else:
        doc[key] = value
    return json.dumps(doc)


@pytest.mark.parametrize("key", ["p99_ttft_ms", "completed", "duration", "request_rate",
                                 "max_concurrency", "ttfts", "output_lens"])
def test_an_integer_too_large_for_a_float_is_a_bad_number_not_a_crash(
        key: str, tmp_path: Path) -> None:
    """Below the 4,300-digit parse limit, 10**400 still has no float (OverflowError)."""
    path = tmp_path / "m.json"
    path.write_text(_vllm_with(key, 10**400))
    done = pin("accept", "judge", str(TEMPLATE), "--from", str(path))
    assert done.returncode == 2, (done.returncode, done.stderr[-600:])
    assert "Traceback" not in done.stderr and "m.json" in done.stderr
    assert "finite number" in done.stderr and "0" * 100 not in done.stderr
