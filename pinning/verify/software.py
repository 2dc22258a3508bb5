"""Verify the software facts of a lock: framework versions and builds, the Python packages
(Triton first), the container image and behaviour-changing variables (the model is
:mod:`pinning.verify.model`'s).
"""

from __future__ import annotations

from pinning.guards.checks import SOURCE_NUMERICS
from pinning.guards.view import package_key
from pinning.lockfile.models import Pinned
from pinning.matrix.names import FRAMEWORK_DISTRIBUTIONS, TRITON_DISTRIBUTIONS
from pinning.probe.models import NOT_JUDGED_ENV, Reading
from pinning.verify.compare import Comparer, allowed_text, torch_build_label


class SoftwareFacts(Comparer):
    """The software fact groups; each method adds its findings."""

    _last_versions: dict[str, str] | None = None
    _first_versions: dict[str, str] | None = None

    def installed(self) -> dict[str, str]:
        """The host's installed distributions, PEP 503 name -> version (the last listed
        wins), built once per host: the package comparison and :meth:`version_of` read it.
        """
        if self._last_versions is None:
            self._last_versions = {package_key(d.name): d.version
                                   for d in self.facts.python.distributions}
        return self._last_versions

    def version_of(self, name: str) -> str | None:
        """The host's installed version of distribution ``name`` (PEP 503-normalised; the
        first listed, as :meth:`~pinning.probe.models.PythonFacts.version_of` answers), or
        ``None``; the names are normalised once per host, not once per question.
        """
        index = self._first_versions
        if index is None:
            index = self.installed()
            if len(index) != len(self.facts.python.distributions):  # a name listed twice
                index = {}
                for d in self.facts.python.distributions:
                    index.setdefault(package_key(d.name), d.version)
            self._first_versions = index
        return index.get(package_key(name))

    def runtime_components(self) -> None:
        """The ROCm libraries and tools the lock records (``runtime.components``) that the
        host shows: the AMD SMI tool version (``amd-smi version``, its ``+build`` suffix
        dropped), when the host runs the locked ROCm release (on another one the
        ``runtime.version`` finding already says so). The others (hipBLASLt, rocBLAS,
        MIOpen, RCCL, Composable Kernel, ROCm SMI) are not probed, so they are not judged.
        """
        amd = self.facts.amd
        pinned = self.lock.runtime.components.get("amd-smi")
        if pinned is None or amd is None or not amd.amd_smi.known or not amd.amd_smi.value:
            return
        if amd.rocm.value != self.lock.runtime.version.value:
            return  # another ROCm release: runtime.version already says so
        public = amd.amd_smi.value.partition("+")[0]
        self.compare("runtime.components.amd-smi", "AMD SMI", pinned,
                     Reading.of(public, amd.amd_smi.source or "amd-smi version"))

    def frameworks(self) -> None:
        """Each locked framework: its installed version and build."""
        python = self.facts.python
        for fw in self.lock.frameworks:
            dist = FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name)
            installed = self.version_of(dist)
            fact = f"frameworks.{fw.name}.version"
            if installed is None and (python.reason or not python.distributions):
                why = python.reason or "no Python distributions found in " + (
                    ", ".join(python.site_packages) or "any Python environment")
                self.add("framework-missing", fact, "missing",
                         f"{fw.name} ({dist}) is locked but no Python environment with it was "
                         f"found: {why}.", expected=fw.version.value or allowed_text(fw.version))
                continue
            if installed is None:
                self.add("framework-missing", fact, "missing",
                         f"{fw.name} ({dist}) is locked but not installed in "
                         f"{', '.join(python.site_packages)}.",
                         expected=fw.version.value or allowed_text(fw.version))
                continue
            public, _, local = installed.partition("+")
            pinned = fw.version
            if pinned.origin != "host" and pinned.value and len(pinned.value.split(".")) < 3:
                # A matrix series such as "2.7": any 2.7.x release is inside it.
                pinned = pinned.model_copy(update={"value": None,
                                                   "allowed": [pinned.value + ".x"]})
            self.compare(fact, fw.name, pinned, Reading.of(public, "dist-info"))
            self._build(fw.name, dist, installed, local, fw.build)

    def _build(self, name: str, dist: str, installed: str, local: str, build: Pinned) -> None:
        """The framework build: the local version label (``rocm6.3``, ``cu130``), or for torch
        without one, its kind from ``torch/version.py`` (``cpu``, ``rocm``, ``cuda``).
        """
        fact = f"frameworks.{name}.build"
        if build.origin == "unknown" and build.value is None:
            # The lock only lists what upstream publishes: a hint, not a validated set.
            shown = local or "no local version label"
            self.add("not-locked", fact, "not-locked",
                     f"{name} build is {shown}; the lock leaves it open "
                     f"({build.reason or 'unknown'}).", actual=local or None)
            return
        torch = self.facts.python.torch
        if local:
            reading = Reading.of(local, "dist-info local version")
        elif dist == "torch" and torch is not None and torch.kind != "unknown":
            # No local label (PyPI's default wheel, a source build): name the build the way
            # the wheel indexes do, from torch.version.cuda / .hip.
            reading = Reading.of(torch_build_label(torch.kind, torch.cuda, torch.hip),
                                 f"{torch.source} (no local version label)")
        else:
            reading = Reading.missing(f"{dist} {installed} has no local version label")
        self.compare(fact, f"{name} build", build, reading)

    def packages(self) -> None:
        """The frozen Python packages: Triton first, then changed, missing and extra ones."""
        locked = self.lock.packages
        if locked is None:
            return
        python = self.facts.python
        if not python.distributions:
            self.add("packages-missing", "packages", "missing",
                     f"{len(locked)} Python packages are locked but none were found: "
                     f"{python.reason or 'empty site-packages'}.",
                     source=self.plan.host_source)
            return
        installed = self.installed()
        src = self.plan.host_source
        self._tritons(locked, installed, src)
        changed, gone, extra = _package_changes(locked, installed)
        for name, version, have in changed:
            self.add("package-changed", f"packages.{name}", "mismatch",
                     f"{name} is {have}, the lock has {version}.", expected=version, actual=have,
                     source=src)
        for item in gone:
            self.add("package-missing", f"packages.{item.split('==')[0]}", "missing",
                     f"{item} is locked but not installed.", expected=item, source=src)
        if extra:
            self.add("package-extra", "packages", "mismatch",
                     f"Installed but not in the lock: {', '.join(extra[:10])}"
                     + (f" and {len(extra) - 10} more" if len(extra) > 10 else "") + ".",
                     actual=", ".join(extra), source=src, severity="warning")
        if not (changed or gone or extra):
            self.add("packages", "packages", "match",
                     f"All {len(locked)} locked Python packages match.")

    def extensions(self) -> None:
        """Each locked extension (``[[extensions]]``) with a version: installed at that
        version (a lock version without a local label matches any local label of it), else
        missing or changed. Their targets are judged by the guard rules, not here.
        """
        python = self.facts.python
        locked = [e for e in self.lock.extensions or [] if e.version]
        if not locked:
            return
        if not python.distributions:
            why = python.reason or "no Python distributions found"
            for ext in locked:
                self.add("extension-not-probed", f"extensions.{ext.name}", "not-probed",
                         f"{ext.name} {ext.version} is locked but the host's Python "
                         f"distributions could not be read: {why}.", expected=ext.version)
            return
        for ext in locked:
            assert ext.version is not None
            fact = f"extensions.{ext.name}"
            src = "pin freeze (host)" if ext.origin == "host" else "pin resolve --extension"
            have = self.version_of(ext.name)
            if have is None:
                self.add("extension-missing", fact, "missing",
                         f"{ext.name} {ext.version} is locked ([[extensions]]) but not "
                         "installed.", expected=ext.version, source=src)
            elif have == ext.version or ("+" not in ext.version
                                         and have.partition("+")[0] == ext.version):
                self.add("extension", fact, "match", f"{ext.name} {have}.",
                         expected=ext.version, actual=have)
            else:
                self.add("extension-changed", fact, "mismatch",
                         f"{ext.name} is {have}, the lock has {ext.version}: the serving "
                         "combination that was tested is not the one installed.",
                         expected=ext.version, actual=have, source=src)

    def _tritons(self, locked: dict[str, str], installed: dict[str, str], src: str | None
                 ) -> None:
        """Triton first: which distribution provides ``import triton`` is the fact (AITER or
        a dependency swaps it), not each name on its own.
        """
        locked_tritons = {n: locked[n] for n in TRITON_DISTRIBUTIONS if n in locked}
        host_tritons = {n: installed[n] for n in TRITON_DISTRIBUTIONS if n in installed}
        if locked_tritons and not host_tritons:
            exp = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items()))
            self.add("triton-missing", "packages.triton", "missing",
                     f"Triton ({exp}) is locked but no Triton distribution is installed.",
                     expected=exp, source=src)
        elif locked_tritons != host_tritons:
            exp = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items())) or "none"
            act = ", ".join(f"{n}=={v}" for n, v in sorted(host_tritons.items())) or "none"
            self.add("triton-swapped", "packages.triton", "mismatch",
                     f"Triton is {act}, the lock has {exp}: the distribution that provides "
                     "`import triton` was replaced (AMD's AITER does this unless "
                     "AITER_USE_SYSTEM_TRITON=1; a dependency can pull CUDA Triton).",
                     expected=exp, actual=act, source=src)
        elif locked_tritons:
            text = ", ".join(f"{n}=={v}" for n, v in sorted(locked_tritons.items()))
            self.add("triton", "packages.triton", "match", f"Triton is {text}.",
                     expected=text, actual=text)

    def image(self) -> None:
        """The container image digest, when the host is a container."""
        image = self.lock.image
        container = self.facts.container
        if image.digest.value is None or not container.inside:
            return
        self.compare("image.digest", "container image", image.digest, container.image_digest)

    def environment(self) -> None:
        """Behaviour-changing variables: locked ones set as locked, no others set."""
        host_env = self.facts.environment
        for name, value in sorted(self.lock.environment.items()):
            have = host_env.get(name)
            if have == value:
                self.add("env", f"environment.{name}", "match", f"{name}={value}.",
                         expected=value, actual=have)
            else:
                now = f"is {have!r}" if have is not None else "is not set"
                self.add("env-mismatch", f"environment.{name}", "mismatch" if have else "missing",
                         f"{name} {now} on the host, the lock has {value!r}.",
                         expected=value, actual=have)
        if self.lock.frozen is None:
            return
        for name, value in sorted(host_env.items()):
            if name in self.lock.environment or name in NOT_JUDGED_ENV:
                continue
            self.add("env-extra", f"environment.{name}", "mismatch",
                     f"{name}={value} is set on the host but not in the lock; it changes kernels "
                     "or numerics.", actual=value, source=SOURCE_NUMERICS)


def _package_changes(locked: dict[str, str], installed: dict[str, str]
                     ) -> tuple[list[tuple[str, str, str]], list[str], list[str]]:
    """Locked packages (Triton aside) that changed version ``(name, locked, installed)``,
    are gone (``name==version``), and installed ones the lock does not have.
    """
    changed, gone = [], []
    # Set operations over the (name, version) pairs: a host of hundreds of packages
    # differs from its lock in few, and only those are looked at one by one.
    for name, version in sorted(locked.items() - installed.items()):
        if name in TRITON_DISTRIBUTIONS:
            continue
        have = installed.get(name)
        if have is None:
            gone.append(f"{name}=={version}")
        else:
            changed.append((name, version, have))
    extra = [f"{name}=={installed[name]}" for name in sorted(installed.keys() - locked.keys())
             if name not in TRITON_DISTRIBUTIONS]
    return changed, gone, extra
