"""The resolve-phase guards: the guard rules run on a freshly resolved lock.

A refusal stops the resolve (nothing written); a ``set-env`` remedy is recorded in the lock's
``[environment]`` with a note; a warning becomes a note.
"""

from __future__ import annotations

from pinning.errors import GuardRefused
from pinning.guards.conditions import GuardContext
from pinning.guards.engine import load_rules, run_rules
from pinning.guards.models import Rule
from pinning.guards.serving import with_lock_serving
from pinning.guards.view import EnvView, GpuView, PackageView
from pinning.lockfile.io import amend
from pinning.lockfile.models import Lockfile
from pinning.matrix.names import FRAMEWORK_DISTRIBUTIONS


def lock_view(lock: Lockfile) -> GuardContext:
    """What a resolved lock tells the rules: its GPU vendor and gfx target, its frameworks
    as installed packages (the locked version, else the first allowed), its environment,
    runtime release and serving choices (``[serving]``, ``[[extensions]]``).
    """
    target = lock.target
    gfx = target.gfx_target.value if target.gfx_target is not None else None
    packages = []
    for fw in lock.frameworks:
        version = fw.version.value or (fw.version.allowed or [""])[0]
        packages.append(PackageView(FRAMEWORK_DISTRIBUTIONS.get(fw.name, fw.name), version))
    view = EnvView(gpus=[GpuView(vendor=target.vendor, gfx=gfx)], packages=packages,
                   environment=dict(lock.environment))
    return with_lock_serving(GuardContext(view=view, runtime_version=lock.runtime.version.value,
                                          gpu_ids=[lock.request.gpu]), lock)


def apply_at_resolve(lock: Lockfile, rules: list[Rule] | None = None
                     ) -> tuple[Lockfile, list[str]]:
    """Run the resolve-phase rules on ``lock``. Returns the lock (amended and re-sealed when
    a rule recorded something) and the messages for the user.

    Raises :class:`~pinning.errors.GuardRefused` (exit 10) when a rule refuses the stack.
    """
    env = dict(lock.environment)
    messages: list[str] = []
    for res in run_rules(rules if rules is not None else load_rules(), lock_view(lock),
                         "resolve"):
        if res.status != "failed":
            continue
        rule = res.rule
        if rule.remedy.kind == "refuse":
            raise GuardRefused(f"Guard {rule.id} refuses this stack: {rule.title} ({res.reason})."
                               f" {rule.why} Source: {rule.source} ({rule.date}).",
                               hint=rule.remedy.text)
        if rule.remedy.kind == "set-env" and rule.remedy.name:
            env[rule.remedy.name] = str(rule.remedy.value)
        messages.append(f"Guard {rule.id}: {rule.remedy.text} ({rule.source}, {rule.date})")
    if not messages:
        return lock, []
    return amend(lock, environment=env, notes=[*lock.notes, *messages]), messages
