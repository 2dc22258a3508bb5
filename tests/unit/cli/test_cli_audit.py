"""pin audit as a user runs it: the bill in three formats, --fail-on, -o, effort, and what it
cannot scan."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

from tests.support.cli import json_result, pin
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "cuda-project"


def test_device_strings_and_unparsed_files(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / ".venv").mkdir(parents=True)
    (src / "train.py").write_text("import torch\nm = m.to('hip')\n")
    (src / "ok.py").write_text("import torch\nm = m.to('cuda')\n")
    (src / ".venv" / "skip.py").write_text("torch.device('rocm')\n")
    (src / "broken.py").write_text("import pynvml\ndef (:\n")
    r = pin("audit", str(src))
    assert r.returncode == 0, r.stderr  # a device string is "port", below --fail-on blocked
    assert f"{src}/train.py:2  [device-string]" in r.stdout and "skip.py" not in r.stdout
    assert f"{src}/broken.py: not valid Python (line 2)" in r.stdout
    assert "Traceback" not in r.stderr
    failed = pin("audit", str(src), "--fail-on", "port")
    assert failed.returncode == 11 and "at or above --fail-on port" in failed.stderr
    (src / "train.py").write_text("m = m.to('cuda')\n")
    ok = pin("audit", str(src / "train.py"), "--fail-on", "swap")
    assert ok.returncode == 0 and "0 blocked, 0 port, 0 swap" in ok.stdout


def test_audit_lists_what_it_cannot_scan(tmp_path: Path) -> None:
    src = tmp_path / "p"
    src.mkdir()
    os.mkfifo(src / "fifo.py")
    (src / "dangling.py").symlink_to(src / "absent")
    (src / "dir.py").mkdir()
    (src / "loop").symlink_to(src)
    (src / "big.py").write_bytes(b"#" * (10 * 1024 * 1024 + 1))
    (src / "blob.cu").write_bytes(b"\x00\x01binary")
    (src / "ok.py").write_text("x = 1\n")
    r = pin("audit", str(src), "--format", "json")
    assert r.returncode == 0, r.stderr
    skipped = {s["path"].removeprefix(f"{src}/"): s["reason"]
               for s in json_result(r)["skipped"]}
    assert skipped["fifo.py"].startswith("not a regular file")
    assert skipped["dangling.py"].startswith("cannot be read")
    assert skipped["big.py"] == "larger than 10 MiB"
    assert skipped["blob.cu"].startswith("binary file")
    assert skipped["loop"] == "a link to a folder; not followed"


def test_the_example_project_bill_has_every_category(tmp_path: Path) -> None:
    r = pin("audit", str(EXAMPLE), "--gpu", "mi300x", "--format", "json")
    assert r.returncode == 11, r.stderr  # inline PTX is blocked
    report = json_result(r)
    schema = json.loads((ROOT / "schemas" / "audit-report.schema.json").read_text())
    jsonschema.validate(report, schema)
    kinds = {f["kind"] for f in report["findings"]}
    assert {"package", "index", "base-image", "arch-list", "cuda-api", "inline-ptx",
            "warp-size", "arch-macro", "library", "build-hook", "nvml", "nvidia-smi",
            "tf32"} <= kinds
    assert all(report["totals"][v] > 0 for v in ("ready", "swap", "port", "blocked",
                                                  "no-data"))
    ptx = next(f for f in report["findings"] if f["kind"] == "inline-ptx")
    assert (ptx["path"], ptx["line"], ptx["verdict"]) == (
        f"{EXAMPLE}/csrc/reduce.cu", 15, "blocked")
    assert report["gfx-targets"] == ["gfx942"]
    assert report["kernel-lines"] > 0


def test_sarif_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "bill.sarif"
    r = pin("audit", str(EXAMPLE), "--format", "sarif", "-o", str(out), "--fail-on", "swap")
    assert r.returncode == 11
    log = json.loads(out.read_text())
    assert log["version"] == "2.1.0"
    levels = {res["level"] for res in log["runs"][0]["results"]}
    assert {"error", "warning", "note"} <= levels
    assert "Wrote" in r.stdout and str(out) in r.stdout


def test_effort_file_adds_the_teams_hours(tmp_path: Path) -> None:
    effort = tmp_path / "effort.toml"
    effort.write_text("[hours]\ninline-ptx = 16\nwarp-size = 2\n")
    r = pin("audit", str(EXAMPLE), "--effort", str(effort), "--format", "json")
    e = json_result(r)["effort"]
    lines = {(x["kind"], x["verdict"]): x for x in e["lines"]}
    assert lines[("inline-ptx", "blocked")]["hours"] == 16.0
    assert lines[("warp-size", "port")]["count"] >= 3
    assert e["total-hours"] == 16.0 + 2.0 * lines[("warp-size", "port")]["count"]
    assert "package (swap)" in e["unpriced"]
    bad = tmp_path / "bad.toml"
    bad.write_text("[hours]\nptx = 1\n")
    b = pin("audit", str(EXAMPLE), "--effort", str(bad))
    assert b.returncode == 2 and "'ptx' is not a finding kind" in b.stderr


def test_flags_that_do_not_fit_together(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    snap.write_text("{}")
    both = pin("audit", "--site-packages", str(tmp_path), "--host", str(snap))
    assert both.returncode == 2 and "give one" in both.stderr
    idx = pin("audit", str(tmp_path), "--index-url", "http://127.0.0.1:1/simple")
    assert idx.returncode == 2 and "--index-url is for --requirement" in idx.stderr
    gpu = pin("audit", str(tmp_path), "--gpu", "mi999")
    assert gpu.returncode == 2
    missing = pin("audit", str(tmp_path / "absent"), "--format", "json")
    assert missing.returncode == 2  # a mistyped PATH must not pass as a clean audit
    assert json_result(missing) is None
    assert "does not exist" in json.loads(missing.stdout)["error"]["message"]


def test_requirement_closure_is_judged_package_by_package(tmp_path: Path) -> None:
    """`pin audit -r` through uv against a local index: every package of the closure gets a
    verdict from pin's package data, with `closure` as its origin."""
    from tests.support.pyindex import serve_index

    graph = {"myapp==1.0": ["torch==2.5.1+cu121", "pynvml==11.5.3", "tinydep>=1"],
             "torch==2.5.1+cu121": [], "pynvml==11.5.3": [], "tinydep==1.1": []}
    with serve_index(tmp_path, graph) as (url, log):
        r = pin("audit", "-r", "myapp==1.0", "--index-url", url, "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json_result(r)
    verdicts = {f["package"]: f["verdict"] for f in report["findings"]
                if f["kind"] == "package"}
    # pin's data speaks for torch and pynvml; the others' pure-Python wheels are read.
    assert verdicts == {"myapp": "ready", "torch": "swap", "pynvml": "port",
                        "tinydep": "ready"}
    assert report["requirements"] == ["myapp==1.0"]
    assert sorted(p for p in log if p.endswith(".whl")) == [
        "/files/myapp-1.0-py3-none-any.whl", "/files/tinydep-1.1-py3-none-any.whl"]
    bad = pin("audit", "-r", "--index-url=http://evil/simple")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_output_never_replaces_an_input(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    req = proj / "requirements.txt"
    req.write_text("numpy==1.26.4\n")
    same = pin("audit", str(req), "-o", str(req))
    assert same.returncode == 2 and "one of the inputs" in same.stderr
    inside = pin("audit", str(proj), "-o", str(proj / "dev-requirements.txt"))
    assert inside.returncode == 2 and "a file of a kind pin audits" in inside.stderr
    assert req.read_text() == "numpy==1.26.4\n"
    ok = pin("audit", str(proj), "-o", str(proj / "audit.txt"))
    assert ok.returncode == 0 and (proj / "audit.txt").read_text().startswith("pin audit:")


def test_environments_that_cannot_be_read_are_refused(tmp_path: Path) -> None:
    """An unreadable --host snapshot is exit 7, as pin verify and pin freeze say it; a
    --site-packages folder that is not there is a usage error (2).
    """
    snap = tmp_path / "x.json"
    snap.write_text('{"a": 1}')
    r = pin("audit", "--host", str(snap))
    assert r.returncode == 7 and f"--host {snap}" in r.stderr and "Traceback" not in r.stderr
    s = pin("audit", "--site-packages", str(tmp_path / "absent"))
    assert s.returncode == 2 and "does not exist" in s.stderr


def test_a_link_to_a_file_outside_the_tree_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "credentials"
    secret.write_text("ghp_R3allySecretT0ken123\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "dev-requirements.txt").symlink_to(secret)
    (proj / "requirements.txt").write_text("-r ../credentials\nnumpy==1.26.4\n")
    r = pin("audit", str(proj), "--format", "sarif")
    assert r.returncode == 0, r.stderr
    assert "ghp_R3allySecretT0ken123" not in r.stdout
    t = pin("audit", str(proj))
    assert "dev-requirements.txt: a link to a file outside the audited folders" in t.stdout
    assert "ghp_" not in t.stdout


def test_text_lists_ready_code_findings_as_notes_and_sarif_uris(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    r = pin("audit", str(tmp_path))
    assert "READY, WITH A NOTE (1)" in r.stdout and "[tf32]" in r.stdout
    (tmp_path / "k.cu").write_text("void f(float** p) { cudaMalloc(p, 4); }\n")
    s = pin("audit", str(tmp_path), "--format", "sarif")
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in json.loads(s.stdout)["runs"][0]["results"] if "locations" in res}
    assert f"file://{tmp_path}/k.cu" in uris
    rel = pin("audit", ".", "--format", "sarif", cwd=tmp_path)
    art = [res["locations"][0]["physicalLocation"]["artifactLocation"]
           for res in json.loads(rel.stdout)["runs"][0]["results"] if "locations" in res]
    assert {"uri": "k.cu", "uriBaseId": "%SRCROOT%"} in art


def test_a_huge_subject_is_cut(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("a" * 5000 + "==1.0\n")
    r = pin("audit", str(tmp_path), "--format", "json")
    subjects = [f["subject"] for f in json_result(r)["findings"]]
    assert subjects and all(len(s) <= 203 for s in subjects)


def test_exclude_only_and_limit_as_a_user_types_them(tmp_path: Path) -> None:
    full = json_result(pin("audit", str(EXAMPLE), "--format", "json"))
    cut = json_result(pin("audit", str(EXAMPLE), "--format", "json", "--exclude", "csrc",
                          "--exclude", "app/*.py"))
    assert not any(f["path"] and "/csrc/" in f["path"] for f in cut["findings"])
    assert not any(f["path"] and "/app/" in f["path"] for f in cut["findings"])
    assert 0 < len(cut["findings"]) < len(full["findings"])
    assert sum(cut["totals"].values()) == len(cut["findings"])
    only = pin("audit", str(EXAMPLE), "--format", "sarif", "--only", "warp-size")
    kinds = {r["properties"]["kind"] for r in json.loads(only.stdout)["runs"][0]["results"]}
    assert kinds == {"warp-size"} and only.returncode == 0  # no inline PTX left: passes
    text = pin("audit", str(EXAMPLE), "--limit", "1").stdout
    assert text.splitlines()[2].startswith("SUMMARY")
    assert "more groups (--limit 1; --format json lists all)" in text
    bad = pin("audit", str(EXAMPLE), "--only", "warp")
    assert bad.returncode == 2 and "warp-size" in bad.stderr


def test_only_offers_every_finding_kind() -> None:
    from pinning.audit.model import Kind
    from pinning.cli.audit import _KINDS

    assert set(_KINDS) == {k.value for k in Kind}


def test_a_kernel_shipped_twice_is_counted_once(tmp_path: Path) -> None:
    kernel = "__global__ void k(float* x) { asm volatile(\"membar.gl;\"); }\n"
    for folder in ("csrc", "deepspeed/ops/csrc"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "k.cu").write_text(kernel)
    report = json_result(pin("audit", str(tmp_path), "--format", "json"))
    ptx = [f for f in report["findings"] if f["kind"] == "inline-ptx"]
    assert len(ptx) == 1 and report["totals"]["blocked"] == 1
    assert ptx[0]["path"] == f"{tmp_path}/csrc/k.cu"
    assert ptx[0]["copies"] == [f"{tmp_path}/deepspeed/ops/csrc/k.cu"]
    text = pin("audit", str(tmp_path)).stdout
    assert f"(also at {tmp_path}/deepspeed/ops/csrc/k.cu)" in text
