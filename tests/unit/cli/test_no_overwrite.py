"""No command writes over what it read: for every command that takes ``-o`` and any input,
``-o`` naming one of its inputs (as given, through a symbolic link, through a hard link) is
exit 2 with one paragraph naming the option and the input, before any work, and every
input's bytes stay as they were.

The table is checked against the command tree: a command with an output option that has
no row (or a row that leaves an input out) fails here, so a new command cannot skip the
rule (it lives in ``pinning.util.samefile`` and ``pinning.cli.options.guard_outputs``).
Commands run in-process (click's runner, the same ``main`` and exit codes).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pinning.cli import main
from pinning.cli.options import file_params, output_path, param_label, refuse_writing_over_inputs
from pinning.errors import UsageError
from tests.support.hosts import MI300X
from tests.support.paths import DATA, ROOT

ACCEPTANCE = DATA / "acceptance"
AMD = DATA / "amd-sources"
PASSWORD = "correct horse"

#: Every command that takes -o and reads files: its arguments (without -o), each "{name}"
#: an input file or folder of the ``inputs`` fixture. Each input of the command appears.
ROWS: dict[str, list[str]] = {
    "accept judge": ["{gates}", "{bench_c4}", "--from", "{bench_c1}", "--lock", "{lock}"],
    "accept reference": ["{gates}", "--prompts", "{prompts}"],
    "accept run": ["{gates}", "--lock", "{lock}", "--snapshot", "{snap}", "--sign", "{key}",
                   "--token-file", "{token}", "--ca-cert", "{ca}"],
    "audit": ["{requirements}", "{project}", "--host", "{snap}", "--site-packages",
              "{folder_a}", "--effort", "{effort}", "--token-file", "{token}", "--ca-cert",
              "{ca}", "--report-to", "https://pin.invalid", "--report-lock", "{lock_h200}"],
    "build": ["{lock}", "--wheelhouse", "{folder_a}", "--sign", "{key}", "--ca-cert", "{ca}"],
    "cost": ["{judged_c1}", "{judged_c4}", "--unbound-ok", "--prices", "{prices}",
             "--lock", "{lock_h200}",
             "--lock", "{lock}", "--migration", "{audit_json}", "--effort", "{effort}",
             "--waivers", "{waivers}", "--labour-usd-per-hour", "100", "--key", "{pub}", "--token-file", "{token}",
             "--ca-cert", "{ca}", "--report-to", "https://pin.invalid", "--report-lock",
             "{lock_mi250x}"],
    "freeze": ["{lock}", "--host", "{snap}", "--root", "{folder_a}", "--replay",
               "{commands}", "--site-packages", "{folder_b}", "--matrix", "{overlay}"],
    "lock export": ["{lock}", "--format", "pylock"],
    "lock model": ["{lock}", "--cache", "{folder_a}", "--path", "{folder_b}"],
    "lock migrate": ["{lock}", "{lock_h200}"],
    "lock packages": ["{lock}", "-r", "{requirements}"],
    "lock pull": ["sha256:" + "ab" * 32, "--from", "https://pin.invalid", "--token-file",
                  "{token}", "--ca-cert", "{ca}"],
    "lock upgrade": ["{lock}", "--rocm", "7.2.0"],
    "matrix import-amd": ["{csv}", "--page", "{page}", "--release-notes", "{notes}",
                          "--published", "2026-01-21"],
    "matrix import-pytorch": ["{markdown}", "--checked", "2026-01-21"],
    "probe": ["--host", "{snap}", "--root", "{folder_a}", "--replay", "{commands}",
              "--site-packages", "{folder_b}", "--matrix", "{overlay}", "--lock", "{lock}"],
    "report": ["--lock", "{lock}", "--verify", "{verify_json}", "--audit", "{audit_json}",
               "--accept", "{judged_c1}", "--key", "{pub}", "--cost", "{cost_json}"],
    "resolve": ["--gpu", "mi300x", "--framework", "pytorch==2.13.0", "--matrix", "{overlay}"],
    "serve token create": ["--scope", "report", "--config", "{serve_config}"],
    "trial": ["--sign", "{key}"],
    "verify": ["{lock}", "--host", "{snap}", "--root", "{folder_a}", "--replay", "{commands}",
               "--site-packages", "{folder_b}", "--matrix", "{overlay}", "--audit",
               "{audit_json}", "--token-file", "{token}", "--ca-cert", "{ca}", "--emit",
               "nfd"],
}

#: Commands with an output option and no input at all: nothing to write over.
NO_INPUTS = {"accept init", "init", "keygen"}

#: Commands that rewrite their LOCK in place by design: -o naming LOCK's own path is that.
AMENDS = {"freeze", "build", "lock model", "lock packages", "lock upgrade"}

#: Parameters of commands with -o that look like paths but are not files pin reads here.
NOT_READ = {
    ("accept run", "python"): "an interpreter pin runs (in --image mode a path in the image)",
    ("resolve", "model"): "a Hugging Face reference or a model folder, never a file -o names",
    ("init", "model"): "written into pin.toml as given; pin init reads nothing",
    ("init", "prices"): "a path written into pin.toml as given; pin init reads nothing",
}


def _flag(command: str) -> str:
    """The output flag of ``command``: ``-o``, or ``--out`` where that is its only name."""
    (out,) = file_params(COMMANDS[command])[0]
    return "-o" if "-o" in out.opts else max(out.opts, key=len)

FOLDERS = {"folder_a", "folder_b", "project"}
PLACEHOLDER = re.compile(r"^\{(\w+)\}$")


def _commands(group: click.Group, words: tuple[str, ...] = ()) -> Iterator[
        tuple[str, click.Command]]:
    """Every leaf command under ``group`` as ("accept run", command), lazy ones loaded."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*words, name))
        else:
            yield " ".join((*words, name)), cmd


COMMANDS = dict(_commands(main))


def _has_output(cmd: click.Command) -> bool:
    """Whether ``cmd`` takes an output option, found by its flags (not by the guard's own
    test), so an output option the guard would not see is caught too.
    """
    return any(isinstance(p, click.Option) and (
        {"-o", "--output", "--out"} & {*p.opts, *p.secondary_opts} or p.callback is output_path)
        for p in cmd.params)


def run(*args: str) -> tuple[int, str]:
    """``pin ARGS`` in-process: the exit code and what it wrote to stderr."""
    result = CliRunner(env={"PIN_KEY_PASSWORD": PASSWORD, "PIN_MATRIX": None}).invoke(
        main, list(args))
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real inputs in one folder (copies of the shipped data, a probed snapshot, a key
    pair): name -> path; none of them is ever written by these tests.
    """
    d = tmp_path_factory.mktemp("inputs")
    copies = {
        "lock": ROOT / "lockfiles" / "mi300x-pytorch-2.13.0.lock",
        "lock_h200": ROOT / "lockfiles" / "h200-pytorch-2.13.0.lock",
        "lock_mi250x": ROOT / "lockfiles" / "mi250x-pytorch-2.6.lock",
        "commands": MI300X / "commands.toml",
        "gates": ROOT / "pinning" / "accept" / "template.toml",
        "bench_c1": ACCEPTANCE / "vllm-bench-serve-smollm2-c1.json",
        "bench_c4": ACCEPTANCE / "vllm-bench-serve-smollm2-c4.json",
        "judged_c1": ACCEPTANCE / "judged-c1.json",
        "judged_c4": ACCEPTANCE / "judged-c4.json",
        "prices": ROOT / "pinning" / "cost" / "data" / "article-prices-2026-09-28.toml",
        "overlay": ROOT / "pinning" / "matrix" / "data" / "amd-rocm-2026-01-21.toml",
        "csv": AMD / "rocm-compat-historical-2026-01-21.csv",
        "page": AMD / "rocm-compat-matrix-2026-01-21.rst",
        "notes": AMD / "rocm-7.1.1-RELEASE.md",
        "markdown": DATA / "release-compatibility-matrix.md",
    }
    files = {name: d / f"{name}-{src.name}" for name, src in copies.items()}
    for name, src in copies.items():
        shutil.copyfile(src, files[name])
    texts = {"prompts": ('{"prompt": "one two three"}\n', "prompts.jsonl"),
             "token": ("pin_token_for_tests\n", "token"),
             "ca": ("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "ca.pem"),
             "requirements": ("numpy==1.26.4\n", "requirements.txt"),
             "effort": ("[hours]\n", "effort.toml"),
             "waivers": ("", "waivers.toml"),
             "audit_json": ("{}\n", "audit.json"), "verify_json": ("{}\n", "verify.json"),
             "cost_json": ("{}\n", "cost.json"),
             "serve_config": ("[serve]\n", "config.toml")}
    for name, (text, filename) in texts.items():
        files[name] = d / filename
        files[name].write_text(text)
    for name in FOLDERS:
        files[name] = d / name
        files[name].mkdir()
    files["snap"] = d / "host.json"
    code, err = run("probe", "--root", str(MI300X / "root"), "--replay",
                    str(MI300X / "commands.toml"), "-o", str(files["snap"]))
    assert code == 0, err
    code, err = run("keygen", "-o", str(d / "k"))
    assert code == 0, err
    files["key"], files["pub"] = d / "k.key", d / "k.pub"
    return files


def _args(command: str, inputs: dict[str, Path]) -> list[str]:
    """The row of ``command`` with its inputs' paths filled in."""
    out = []
    for arg in ROWS[command]:
        m = PLACEHOLDER.match(arg)
        out.append(str(inputs[m.group(1)]) if m else arg)
    return out


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: a file's bytes, ``None`` for a folder."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


def _labels(command: str, inputs: dict[str, Path]) -> dict[str, str]:
    """Input name -> how the refusal names it (``--host``, ``LOCK``), from click's parse of
    the row: which parameter got the path.
    """
    cmd = COMMANDS[command]
    ctx = cmd.make_context(command, _args(command, inputs), resilient_parsing=True)
    labels = {}
    for param in file_params(cmd)[1]:
        value = ctx.params.get(param.name or "")
        for item in value if isinstance(value, tuple) else (value,):
            for name, path in inputs.items():
                if item == str(path):
                    labels[name] = param_label(param)
    return labels


CASES = [(command, m.group(1), how) for command in ROWS for arg in ROWS[command]
         if (m := PLACEHOLDER.match(arg))
         for how in ("as-given", "symlink", "hardlink")
         if not (how == "hardlink" and m.group(1) in FOLDERS)]


@pytest.mark.parametrize(("command", "name", "how"), CASES,
                         ids=[f"{c}:{n}:{h}" for c, n, h in CASES])
def test_o_naming_an_input_is_refused_and_the_input_kept(
        tmp_path: Path, inputs: dict[str, Path], command: str, name: str, how: str) -> None:
    target = inputs[name]
    out = target
    if how == "symlink":
        out = tmp_path / "via-symlink"
        out.symlink_to(target)
    elif how == "hardlink":
        out = tmp_path / "via-hardlink"
        os.link(target, out)
    label = _labels(command, inputs)[name]
    flag = _flag(command)
    args = [*command.split(), *_args(command, inputs), flag, str(out)]
    if command in AMENDS and label == "LOCK" and how != "hardlink":
        # Rewriting LOCK in place is what these commands do without -o: allowed.
        values = COMMANDS[command].make_context(command, args[len(command.split()):]).params
        refuse_writing_over_inputs(COMMANDS[command], values)
        return
    before = _tree(target.parent)
    code, err = run(*args)
    assert code == 2, err
    assert f"{flag} {out} is one of the inputs of pin {command}: {label} {target}" in err, err
    assert ("another name or through a link" in err) is (how != "as-given"), err
    assert "Traceback" not in err
    assert _tree(target.parent) == before
    assert os.path.islink(out) is (how == "symlink")


def test_every_command_with_an_output_has_a_row() -> None:
    writers = {name for name, cmd in COMMANDS.items() if _has_output(cmd)}
    assert writers == set(ROWS) | NO_INPUTS
    for name in NO_INPUTS:
        assert file_params(COMMANDS[name])[1] == [], name
    for name in writers:  # the guard sees the output and runs before the command
        cmd = COMMANDS[name]
        assert file_params(cmd)[0], name
        assert getattr(cmd.callback, "pin_guarded", False), name


@pytest.mark.parametrize("command", sorted(ROWS))
def test_each_row_gives_every_input_of_its_command(inputs: dict[str, Path],
                                                   command: str) -> None:
    cmd = COMMANDS[command]
    ctx = cmd.make_context(command, _args(command, inputs), resilient_parsing=True)
    missing = [p.name for p in file_params(cmd)[1] if not ctx.params.get(p.name or "")]
    assert missing == []
    named = {m.group(1) for a in ROWS[command] if (m := PLACEHOLDER.match(a))}
    assert set(_labels(command, inputs)) == named  # no placeholder outside the inputs


FILEISH = re.compile(r"FILE|LOCK|DIR|PATH|KEY|PUB|SNAPSHOT|REPORT|RESULT|CSV|MARKDOWN|TOML|"
                     r"JSON|PYTHON|CERT|TOKEN|\.[a-z]+$")


def test_every_path_parameter_of_a_writer_is_guarded() -> None:
    """A file option added to a command with -o without ``path_given`` (or ``click.Path``)
    would escape the rule: every parameter whose metavar (else its name, in capitals) says
    "file" is an input the guard compares, or is listed in NOT_READ with why.
    """
    escaped = []
    for name, cmd in COMMANDS.items():
        if not _has_output(cmd):
            continue
        outputs, inputs = file_params(cmd)
        for p in cmd.params:
            if p in outputs or p in inputs or getattr(p, "is_flag", False):
                continue
            shown = p.metavar or (p.name or "").upper()
            if FILEISH.search(shown) and (name, p.name) not in NOT_READ:
                escaped.append((name, p.name))
    assert escaped == []
    for (name, param), _why in NOT_READ.items():
        assert param in {p.name for p in COMMANDS[name].params}


def test_freeze_o_naming_the_snapshot_it_read_is_refused(inputs: dict[str, Path]) -> None:
    """The case the issue reported: it wrote the lock over the snapshot and exited 0."""
    snap = inputs["snap"]
    before = snap.read_bytes()
    code, err = run("freeze", str(inputs["lock"]), "--host", str(snap), "-o", str(snap))
    assert code == 2
    assert f"-o {snap} is one of the inputs of pin freeze: --host {snap}" in err
    assert "leave -o out to rewrite LOCK in place" in err
    assert snap.read_bytes() == before


def test_freeze_o_naming_lock_rewrites_it_in_place(tmp_path: Path,
                                                   inputs: dict[str, Path]) -> None:
    """-o naming LOCK itself (or a symbolic link to it) is the documented in-place update."""
    lock = tmp_path / "pin.lock"
    code, err = run("resolve", "--gpu", "mi300x", "--framework", "pytorch==2.7", "--rocm",
                    "7.1.1", "-o", str(lock))
    assert code == 0, err
    link = tmp_path / "link.lock"
    link.symlink_to(lock)
    code, err = run("freeze", str(lock), "--host", str(inputs["snap"]), "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and "[frozen]" in lock.read_text()
    unfrozen = lock.read_bytes()
    code, err = run("freeze", str(lock), "--host", str(inputs["snap"]), "-o", str(lock))
    assert code == 0, err
    assert lock.read_bytes() == unfrozen  # frozen again from the same host: same bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.lock", "pin.lock"]


def test_o_dash_and_streams_are_never_an_input(inputs: dict[str, Path]) -> None:
    """Standard output (``-o -``) and a character device replace nothing: not refused."""
    cmd = COMMANDS["report"]
    values = cmd.make_context("report", ["--lock", str(inputs["lock"]), "-o", "-"]).params
    refuse_writing_over_inputs(cmd, values)
    values = cmd.make_context("report", ["--lock", os.devnull, "-o", os.devnull]).params
    refuse_writing_over_inputs(cmd, values)
    values = cmd.make_context("report", ["--lock", str(inputs["lock"]), "-o",
                                         str(inputs["lock"])]).params
    with pytest.raises(UsageError, match="is one of the inputs of pin: --lock"):
        refuse_writing_over_inputs(cmd, values)


def test_stdout_twice_is_still_refused(inputs: dict[str, Path]) -> None:
    code, err = run("accept", "judge", str(inputs["gates"]), "--from", str(inputs["bench_c1"]),
                    "-o", "-", "--format", "json")
    assert code == 2 and "--format json" in err


def test_o_naming_the_file_standard_input_reads_is_refused(inputs: dict[str, Path]) -> None:
    """``--host -`` with ``< snap`` and ``-o /dev/stdin``: /dev/stdin is that file."""
    import subprocess
    import sys

    snap = inputs["snap"]
    before = snap.read_bytes()
    with snap.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "pinning", "freeze", str(inputs["lock"]),
                               "--host", "-", "-o", "/dev/stdin"], stdin=stdin,
                              capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert "--host (standard input)" in done.stderr and "Traceback" not in done.stderr
    assert snap.read_bytes() == before


def test_lock_model_o_inside_the_model_folder_is_refused(tmp_path: Path) -> None:
    """The model folder comes from LOCK's [model], not from a flag: its weights are inputs."""
    import subprocess
    import sys

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    weights = ckpt / "model.safetensors"
    weights.write_bytes(b"\x00weights" * 100)
    resolve = subprocess.run([sys.executable, "-m", "pinning", "resolve", "--gpu", "mi300x",
                              "--framework", "pytorch==2.7", "--rocm", "7.1.1", "--model",
                              "./ckpt", "--no-model-files", "-o", "pin.lock"],
                             cwd=tmp_path, capture_output=True, text=True)
    assert resolve.returncode == 0, resolve.stderr
    code, err = run("lock", "model", str(tmp_path / "pin.lock"), "-o", str(weights))
    assert code == 2 and "the model's files" in err, err
    assert weights.read_bytes() == b"\x00weights" * 100
    code, err = run("lock", "model", str(tmp_path / "pin.lock"), "-o",
                    str(tmp_path / "pinned.lock"))
    assert code == 0, err
