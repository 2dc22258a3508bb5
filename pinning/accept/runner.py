"""Run the gates of a gates file (``pin accept run``) or judge results a team already has
(``pin accept judge``), and record both as one :class:`~pinning.accept.result.AcceptanceResult`
with what was tested (:class:`~pinning.accept.result.Subject`).

The import and training gates run on this host (``python`` of the environment under test)
or inside an image (the Docker shim of :mod:`pinning.accept.container`, GPU access per
vendor); the serving gate's load generator always runs here, against the endpoint the
gates file names (the server may run anywhere, in the image included).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pinning.accept.binding import judge_binding, run_binding
from pinning.accept.config import AcceptConfig, read_config
from pinning.accept.result import (
    AcceptanceResult,
    ImportResult,
    ServeResult,
    Subject,
    gate_verdicts,
)
from pinning.accept.train import TrainResult
from pinning.errors import PinError, UsageError
from pinning.lockfile.models import Lockfile, model_content_hash
from pinning.probe.models import HostFacts, snapshot_hash
from pinning.util.files import sha256_hex

__all__ = ["RunRequest", "detect_vendor", "judge_files", "run_gates", "subject_for"]

Vendor = Literal["auto", "amd", "nvidia", "cpu"]


@dataclass(frozen=True)
class RunRequest:
    """What ``pin accept run`` was asked: the gates file, the gates to run (empty: every
    gate the file has), the lock, the image (``None``: this host), the GPU ``vendor`` for
    the image, the ``python`` of the environment under test, a host ``snapshot`` file (else
    this host is probed), the per-process ``timeout_s``, a ``progress`` callback and
    ``unbound-ok`` (recorded in the binding: the user accepts a result that is unbound);
    ``target`` the target of a multi-target ``lock`` (its view is the lock tested).
    """

    config: Path
    gates: Sequence[str] = ()
    lock: str | None = None
    image: str | None = None
    vendor: str = "auto"
    python: str | None = None
    snapshot: str | None = None
    engine: str | None = None
    timeout_s: float = 600.0
    progress: Callable[[str], None] | None = None
    unbound_ok: bool = False
    target: str | None = None


def _now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _selected(cfg: AcceptConfig, wanted: Sequence[str], config: Path) -> list[str]:
    """The gates to run: ``wanted`` (each must be in the file) or every gate present."""
    present = [g for g, v in (("import", cfg.import_), ("train", cfg.train),
                              ("serve", cfg.serve)) if v is not None]
    if not wanted:
        return present
    missing = [g for g in wanted if g not in present]
    if missing:
        raise UsageError(f"Gates file {config}: no [{missing[0]}] section for --gate "
                         f"{missing[0]}.", hint="Add the section (see `pin accept init`) "
                                                "or drop the --gate.")
    return [g for g in present if g in wanted]


def run_gates(request: RunRequest) -> AcceptanceResult:
    """Run the selected gates and return the result (never raises for a failed gate).

    Raises ``UsageError`` (exit 2) for a bad gates file, a missing ``python`` on the host,
    an endpoint that refuses connections, an image that is not there; ``LockError``
    (exit 5) for a bad lock; the engine's error when Docker cannot be reached.
    """
    from pinning import __version__

    raw, cfg = read_config(request.config)
    gates = _selected(cfg, request.gates, request.config)
    python = _python(request, cfg, gates)
    started = _now()
    say = request.progress or (lambda _line: None)
    subject, lock, facts, why_host = _subject_and_host(request)
    imports, train = _process_gates(request, cfg, gates, python, say)
    serve = None
    if "serve" in gates and cfg.serve is not None:
        from pinning.accept.endpoint import redact_endpoint
        from pinning.accept.serve import run_serve_gate

        say(f"serve: {redact_endpoint(cfg.serve.endpoint)} "
            f"({cfg.serve.model or 'model not named'})")
        serve = run_serve_gate(cfg.serve, request.config.parent, pin_version=__version__,
                               progress=say)
    verdicts, failed = gate_verdicts(imports, train, serve)
    return AcceptanceResult(
        pin_version=__version__, mode="image" if request.image else "host",
        config_sha256=sha256_hex(raw), started_at=started, finished_at=_now(),
        subject=subject, import_=imports, train=train, serve=serve, gates=verdicts,
        passed=bool(verdicts) and all(verdicts.values()), failed=failed,
        binding=run_binding(lock, facts, why_host, subject, imports,
                            in_image=request.image is not None,
                            allowed_unbound=request.unbound_ok))


def _python(request: RunRequest, cfg: AcceptConfig, gates: list[str]) -> str | None:
    """The Python that runs the import probe and the builtin trainer: ``--python``, else
    ``python3`` inside an image; ``UsageError`` (exit 2) when a host run needs one and has
    none, or it is not an executable.
    """
    needs_python = ("import" in gates or (
        "train" in gates and cfg.train is not None and cfg.train.builtin is not None))
    python = request.python
    if needs_python and python is None:
        if request.image is None:
            raise UsageError("The import gate and the builtin tiny-lm trainer need --python: "
                             "the Python of the environment under test, with torch.",
                             hint="e.g. pin accept run accept.toml --python .venv/bin/python")
        python = "python3"
    if needs_python and request.image is None and python is not None:
        _check_python(python)
    return python


def _process_gates(request: RunRequest, cfg: AcceptConfig, gates: list[str],
                   python: str | None, say: Callable[[str], None]
                   ) -> tuple[ImportResult | None, TrainResult | None]:
    """Run the import and training gates that were selected (in ``request.image`` when
    given) in a temporary work folder; their results (``None`` for a gate not run).
    """
    imports = train = None
    config_dir = request.config.parent
    with tempfile.TemporaryDirectory(prefix="pin-accept-") as work:
        workdir = Path(work).resolve()
        for_gate: Callable[[str], Callable[[list[str]], list[str]]] | None = None
        cleanup: Callable[[], None] = lambda: None  # noqa: E731
        if request.image is not None and {"import", "train"} & set(gates):
            for_gate, cleanup = _image_wrap(request, workdir, config_dir)
        try:
            if "import" in gates and cfg.import_ is not None:
                from pinning.accept.imports import run_import_gate

                say("import: importing " + ", ".join(cfg.import_.modules))
                argv = [python or "python3"]
                (workdir / "import").mkdir()
                imports = run_import_gate(
                    cfg.import_, for_gate("import")(argv) if for_gate else argv[0],
                    workdir / "import", timeout_s=request.timeout_s)
                if for_gate is not None:
                    # Record the Python run inside the image, not the host-side shim that
                    # started it (its argv names this host's interpreter and a temporary
                    # spec file, neither of which says what was tested).
                    imports = imports.model_copy(update={"python": argv[0]})
            if "train" in gates and cfg.train is not None:
                from pinning.accept.train import run_train_gate

                say(f"train: {cfg.train.builtin or ' '.join(cfg.train.command or [])}, "
                    f"{cfg.train.steps} steps")
                (workdir / "train").mkdir()
                train = run_train_gate(cfg.train, python, workdir / "train",
                                       timeout_s=request.timeout_s, config_dir=config_dir,
                                       wrap=for_gate("train") if for_gate else None)
        finally:
            cleanup()
    return imports, train


def _check_python(python: str) -> None:
    """Raise ``UsageError`` (exit 2) unless ``python`` is an executable file (a path) or a
    command found on ``PATH``.
    """
    import shutil

    path = Path(python)
    found = (path.is_file() and os.access(path, os.X_OK)) if os.sep in python else (
        shutil.which(python) is not None)
    if not found:
        raise UsageError(f"--python {python}: not an executable file"
                         + ("" if os.sep in python else " on PATH") + ".",
                         hint="Give the Python of the environment under test, e.g. "
                              "--python .venv/bin/python.")


def detect_vendor(root: Path = Path("/")) -> Literal["amd", "nvidia", "cpu"]:
    """The GPU vendor whose device nodes this host has: ``/dev/kfd`` (the amdgpu KFD) means
    AMD, ``/dev/nvidiactl`` NVIDIA, neither the CPU.
    """
    if (root / "dev" / "kfd").exists():
        return "amd"
    if (root / "dev" / "nvidiactl").exists():
        return "nvidia"
    return "cpu"


def _image_wrap(request: RunRequest, workdir: Path, config_dir: Path
                ) -> tuple[Callable[[str], Callable[[list[str]], list[str]]],
                           Callable[[], None]]:
    """A factory of argv wrappers (one container name per gate, so a shim killed on a
    timeout leaves a container the gate's next process removes) that run a gate process
    inside ``request.image``, and the clean-up of what a killed shim left behind.
    """
    from pinning.accept import container as ctr
    from pinning.accept.engine import connect, remove_leftovers
    from pinning.accept.harness import HARNESS_DIR

    assert request.image is not None
    client = connect(request.engine)
    vendor = request.vendor if request.vendor != "auto" else detect_vendor()
    mounts = [ctr.Mount(path=str(workdir), read_only=False),
              ctr.Mount(path=str(HARNESS_DIR), read_only=True)]
    if config_dir.resolve() != workdir:
        mounts.append(ctr.Mount(path=str(config_dir.resolve()), read_only=True))
    names: list[str] = []

    def for_gate(gate: str) -> Callable[[list[str]], list[str]]:
        name = ctr.new_name()
        names.append(name)
        spec = ctr.ContainerSpec.model_validate({
            "image": request.image, "name": name, "vendor": vendor, "mounts": mounts,
            "workdir": str(config_dir.resolve()), "engine": request.engine})
        spec_path = workdir / f"{gate}-container.json"
        ctr.write_spec(spec, spec_path)
        return lambda argv: ctr.wrap_argv(spec_path, argv)

    def cleanup() -> None:
        remove_leftovers(client, names)

    return for_gate, cleanup


def subject_for(request: RunRequest) -> Subject:
    """What the gates run against: the lock's and its model's content hashes, the image's
    digest, this host's snapshot hash; each unknown one ``None`` with its reason.
    """
    return _subject_and_host(request)[0]


def _subject_and_host(request: RunRequest
                      ) -> tuple[Subject, Lockfile | None, HostFacts | None, str]:
    """:func:`subject_for`, with the lock read, the host's facts as probed (``None`` when
    the probe failed) and the reason it failed. The model's content hash is only ever the
    one read on this host: pin never records the lock's hash as if it had checked it.
    """
    fields: dict[str, object] = {}
    unknown: dict[str, str] = {}
    lock = None
    tested = read_tested_lock(request.lock, request.target)
    if tested is not None:
        name, lock = tested
        fields.update(lock=name, lock_content_hash=lock.content_hash)
    else:
        unknown["lock-content-hash"] = "no --lock given"
    if request.image is not None:
        from pinning.accept.engine import connect, image_identity

        digest, kind, why = image_identity(connect(request.engine), request.image)
        fields.update(image=request.image, image_digest=digest, image_digest_kind=kind)
        if digest is None:
            unknown["image-digest"] = why or "the engine gave no digest"
    else:
        unknown["image-digest"] = "no --image: the gates ran on this host"
    facts, why_host = _host_facts(request, lock)
    if facts is None:
        unknown["host-snapshot-hash"] = why_host
    else:
        fields["host_snapshot_hash"] = snapshot_hash(facts)
    model_hash = None
    if facts is not None and facts.model is not None and facts.model.files:
        model_hash = model_content_hash(facts.model.files)
        fields.update(model_content_hash=model_hash, model_hash_basis="read-on-host")
    elif lock is None or lock.model is None:
        unknown["model-content-hash"] = ("no --lock naming a model" if lock is None
                                         else "the lock names no model")
    else:
        reason = (facts.model.reason if facts is not None and facts.model is not None
                  else None) or why_host or "its files were not found on this host"
        unknown["model-content-hash"] = f"not verified: {reason}"
    return (Subject.model_validate({**fields, "unknown": unknown}), lock, facts, why_host)


def _host_facts(request: RunRequest, lock: Lockfile | None) -> tuple[HostFacts | None, str]:
    """The facts of this host from ``--snapshot FILE`` or a probe (with the lock's model,
    hashing its files), or ``None`` and why the probe failed; never raises.
    """
    model = lock.model if lock is not None else None
    try:
        if request.snapshot is not None:
            from pinning.probe.snapshot import read_snapshot

            return read_snapshot(Path(request.snapshot)), ""
        from pinning.probe.hasher import Hasher, default_cache_file
        from pinning.probe.host import probe_host
        from pinning.util.proc import SystemRunner

        hasher = Hasher(default_cache_file()) if model is not None else None
        return probe_host(Path("/"), SystemRunner(), model=model, hasher=hasher,
                          lock_path=request.lock), ""
    except PinError as exc:
        return None, f"this host could not be probed: {exc.message}"


def read_tested_lock(lock: str | None, target: str | None) -> tuple[str, Lockfile] | None:
    """The lock a result is for, as its ``subject.lock`` names it (the path as given; for a
    target of a multi-target lock `` [targets.NAME]`` after it), and the lock (that
    target's view, whose content hash the result records); ``None`` without a lock.
    Raises ``UsageError`` (exit 2) for ``target`` without ``lock``, and as
    :func:`pinning.lockfile.io.read_lock`: ``LockfileError`` (exit 5), ``UsageError``
    (exit 2) for several targets and none named, an unknown one, or ``target`` with a
    single-target lock.
    """
    from pinning.lockfile.io import read_lock_at

    if lock is None:
        if target is not None:
            raise UsageError(f"--target {target!r} chooses a target of --lock LOCK; give "
                             "--lock too.")
        return None
    read = read_lock_at(Path(lock), target)
    return (lock if read.target is None else f"{lock} [targets.{read.target}]"), read.lock


def judge_files(config: Path, sources: Sequence[Path], *, lock: str | None,
                unbound_ok: bool = False, target: str | None = None) -> AcceptanceResult:
    """Judge result files another harness wrote against ``[serve.slo]`` of ``config``.
    The result names ``lock`` but never copies its model's content hash: a result file
    names the model, not its files, so a lock that pins them leaves the result unbound
    (:func:`~pinning.accept.binding.judge_binding`; ``unbound_ok`` is recorded there).
    ``target``: of a multi-target ``lock`` (:func:`read_tested_lock`).

    Raises ``UsageError`` (exit 2) for a gates file without ``[serve]`` or SLOs, or a bad
    result file; ``LockError`` (exit 5) for a bad lock.
    """
    from pinning import __version__
    from pinning.accept.judge import failed_lines, judge_point
    from pinning.accept.results import read_results

    raw, cfg = read_config(config)
    if cfg.serve is None:
        raise UsageError(f"Gates file {config}: no [serve] section; judge needs its "
                         "[serve.slo].", hint="Add [serve.slo] (see `pin accept init`).")
    if not cfg.serve.slo.model_dump(exclude_none=True):
        raise UsageError(f"Gates file {config}: [serve.slo] sets no limit; nothing to "
                         "judge.", hint="Set e.g. ttft-p99-ms, tpot-p99-ms, failed-max.")
    unknown = {"image-digest": "judged results: pin did not run them",
               "host-snapshot-hash": "judged results: pin did not run them",
               "model-content-hash": "not verified: a result file names the model, not its "
                                     "files"}
    subject, lf = Subject(unknown={**unknown, "lock-content-hash": "no --lock given"}), None
    tested = read_tested_lock(lock, target)
    if tested is not None:
        name, lf = tested
        subject = Subject(lock=name, lock_content_hash=lf.content_hash, unknown=unknown)
    reads = [r for src in sources for r in read_results(src)]
    points = [judge_point(r, cfg.serve.slo) for r in reads]
    failed = failed_lines(points)
    harnesses = sorted({p.summary.harness for p in points})
    versions = sorted({p.summary.harness_version for p in points
                       if p.summary.harness_version})
    serve = ServeResult(harness=", ".join(harnesses),
                        harness_version=", ".join(versions) or None,
                        slo=cfg.serve.slo.model_dump(mode="json", by_alias=True,
                                                     exclude_none=True),
                        points=points, passed=bool(points) and not failed,
                        failed_checks=failed)
    verdicts, all_failed = gate_verdicts(None, None, serve)
    now = _now()
    return AcceptanceResult(pin_version=__version__, mode="judged",
                            config_sha256=sha256_hex(raw), started_at=now, finished_at=now,
                            subject=subject, serve=serve, gates=verdicts,
                            passed=serve.passed, failed=all_failed,
                            binding=judge_binding(lf, harnesses, allowed_unbound=unbound_ok,
                                                 runs=[p.summary for p in points]))
