"""Remove the images a build made on the Docker Engine once pin is done with them.

``pin build`` exports the engine's image, normalises its layers and pushes them itself, so
the image it built on the engine (tagged :func:`build_tag`) and the intermediate images of
the engine's classic builder (one per Dockerfile step, which are also its only build cache)
are of no use once the build is recorded. :func:`engine_leftovers` wraps one build: it lists
the engine's images before it, :meth:`Made.watch` reads the build log for the IDs of the step
images, and on the way out :func:`remove_made` removes what this build made, child first.

What this build made (:func:`plan_removal`, pure): an image named in its build log (a
`` ---> ID`` line: a step's result) or the image it returned, that was not on the engine
before the build and carries no registry digest (a pulled base, pin's or a vendor's such as
``docker.io/rocm/...@sha256:...``, has one: it stays, as do cache hits, which were there
before). Each is removed by ID, children first, without pruning its parents (``noprune``: the
engine's pruning would also take an untagged parent that was there before) and never forced.
One tagged by someone else, or tagged ``pin-build:`` without the matching
``dev.pin.lock.content-hash`` label, stays with its parents and is reported. When a build
moved its ``pin-build:`` tag away from an image that held it before (one kept with
``--keep-image``), the tag is given back to that image.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pinning.errors import BuildError
from pinning.image.engine import build_tag, engine_errors
from pinning.oci.documents import LOCK_LABEL
from pinning.oci.text import clip_text

if TYPE_CHECKING:
    from concurrent.futures import Future

_STEP = re.compile(r"^ ---> ([0-9a-f]{12,64})$")
BUILD_TAG_PREFIX = "pin-build:"


@dataclass(frozen=True)
class EngineImage:
    """One image as the engine lists it: ``id`` (``sha256:<hex>``), its ``tags``
    (``REPO:TAG``), registry ``digests`` (``REPO@sha256:...``) and ``labels``.
    """

    id: str
    tags: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Removal:
    """What to do after a build: ``remove`` (image IDs, children first), ``left`` (``(ID,
    why)`` for images of the build that stay) and ``retag`` (``(ID, tag)``: an image that
    held the build's ``pin-build:`` tag before it, to get it back once the built image is
    gone).
    """

    remove: tuple[str, ...]
    left: tuple[tuple[str, str], ...] = ()
    retag: tuple[tuple[str, str], ...] = ()


def step_images(lines: Iterable[str]) -> list[str]:
    """The image IDs (12 to 64 hex digits, as printed) of the `` ---> ID`` lines of a
    classic-builder log, in order; the ``Running in`` and ``Using cache`` lines are not IDs.
    """
    return [m.group(1) for line in lines if (m := _STEP.match(line.rstrip()))]


def _resolve(short: str, present: Mapping[str, EngineImage]) -> str | None:
    """The one ``sha256:`` ID in ``present`` that starts with ``short``, else ``None``."""
    full = short if short.startswith("sha256:") else "sha256:" + short
    found = [i for i in present if i.startswith(full)]
    return found[0] if len(found) == 1 else None


def _why_kept(image: EngineImage) -> str | None:
    """Why an image the build made is not pin's to remove, else ``None``: a tag other than
    ``pin-build:``, or a ``pin-build:`` tag its label does not match (:func:`build_tag` of
    the :data:`~pinning.oci.documents.LOCK_LABEL` the Dockerfile gives the built image).
    """
    other = [t for t in image.tags if not t.startswith(BUILD_TAG_PREFIX)]
    if other:
        return f"it is tagged {', '.join(sorted(other))}"
    label = image.labels.get(LOCK_LABEL)
    mine = build_tag(label) if label else None
    if any(t != mine for t in image.tags):
        return f"it is tagged {', '.join(sorted(image.tags))} without pin's label {LOCK_LABEL}"
    return None


def plan_removal(before: Mapping[str, EngineImage], after: Mapping[str, EngineImage],
                 steps: Sequence[str], *, final: str | None = None) -> Removal:
    """The images a build made and pin removes (see the module text), from the engine's
    images ``before`` and ``after`` it (ID -> :class:`EngineImage`; the labels of those
    tagged ``pin-build:`` are needed), the ``steps`` of its log (:func:`step_images`) and
    the ``final`` image ID it returned (``None`` when it failed). The log's images below one
    that stays are its parents (one stage: a chain) and stay too. Pure; raises nothing.
    """
    ids = [final] if final else []
    ids += [i for s in reversed(steps) if (i := _resolve(s, after)) is not None]
    remove: list[str] = []
    left: list[tuple[str, str]] = []
    stays: str | None = None  # the first image kept: the ones below it are its parents
    for image_id in dict.fromkeys(ids):
        image = after.get(image_id)
        if image is None or image_id in before or image.digests:
            continue  # gone already, there before the build, or pulled: not made by it
        why = _why_kept(image)
        if why is None and stays is not None:
            why = f"its child {stays[:19]} stays"
        if why is None:
            remove.append(image_id)
        else:
            left.append((image_id, why))
            stays = stays or image_id
    return Removal(remove=tuple(remove), left=tuple(left),
                   retag=_retag(before, after, remove))


def _retag(before: Mapping[str, EngineImage], after: Mapping[str, EngineImage],
           remove: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(ID, tag)`` for each ``pin-build:`` tag an image to remove took from one that held
    it before and is still on the engine without it.
    """
    moved = {t for i in remove for t in after[i].tags}
    return tuple((i, t) for i, image in before.items() for t in image.tags
                 if t in moved and i in after and i not in remove and t not in after[i].tags)


def engine_images(client: Any) -> dict[str, EngineImage]:
    """Every image on the engine (intermediate ones included), ID -> :class:`EngineImage`.
    Raises the Docker SDK's errors (the caller decides what a failure means).
    """
    out: dict[str, EngineImage] = {}
    for image in client.images.list(all=True):
        attrs = getattr(image, "attrs", None) or {}
        out[str(image.id)] = EngineImage(
            id=str(image.id),
            tags=tuple(str(t) for t in attrs.get("RepoTags") or () if t != "<none>:<none>"),
            digests=tuple(str(d) for d in attrs.get("RepoDigests") or ()
                          if d != "<none>@<none>"),
            labels={str(k): str(v) for k, v in (attrs.get("Labels") or {}).items()})
    return out


@dataclass
class Made:
    """What one build made on the engine, filled while it runs: the engine's images
    ``before`` it, the ``lines`` of its log, and once it returned its ``image_id``.
    ``keep`` (``--keep-image``) leaves everything on the engine. ``early``: the removal
    :func:`clean_early` started.
    """

    before: dict[str, EngineImage]
    keep: bool = False
    lines: list[str] = field(default_factory=list)
    image_id: str | None = None
    early: Future[Cleanup] | None = None

    def watch(self, log: Callable[[str], None] | None) -> Callable[[str], None]:
        """A build log callback that records each line, then passes it on to ``log``."""
        def record(line: str) -> None:
            self.lines.append(line)
            if log is not None:
                log(line)
        return record


@dataclass(frozen=True)
class Cleanup:
    """What :func:`remove_made` did: ``removed`` image IDs, ``left`` ``(ID, why)`` for those
    of the build still on the engine, ``kept`` the build's tag when ``--keep-image`` kept it.
    """

    removed: tuple[str, ...] = ()
    left: tuple[tuple[str, str], ...] = ()
    kept: str | None = None


def _with_labels(client: Any, images: dict[str, EngineImage], new: Iterable[str]) -> None:
    """Fill in the labels of the ``new`` images tagged ``pin-build:`` (the engine's list
    gives none on 20.10), by inspecting them; one gone meanwhile is dropped.
    """
    import docker

    for image_id in new:
        image = images[image_id]
        if not any(t.startswith(BUILD_TAG_PREFIX) for t in image.tags):
            continue
        try:
            config = (client.api.inspect_image(image_id) or {}).get("Config") or {}
        except docker.errors.ImageNotFound:
            del images[image_id]
            continue
        images[image_id] = replace(image, labels={str(k): str(v) for k, v in
                                                  (config.get("Labels") or {}).items()})


def remove_made(client: Any, made: Made) -> Cleanup:
    """Remove what ``made`` records (:func:`plan_removal`), each image by ID, children
    first, never forced nor pruned; give a ``pin-build:`` tag the build took back to the
    image that held it. An image the engine refuses to remove (a container uses it, it
    gained a child) is reported in ``left`` with the engine's words; nothing is raised for
    it. Raises the Docker SDK's errors only when the engine cannot list or inspect images.
    """
    if made.keep:
        if made.image_id is None:
            return Cleanup()
        tags = client.images.get(made.image_id).tags
        return Cleanup(kept=", ".join(tags) or made.image_id)
    import docker

    after = engine_images(client)
    _with_labels(client, after, [i for i in after if i not in made.before])
    plan = plan_removal(made.before, after, step_images(made.lines), final=made.image_id)
    removed: list[str] = []
    left = list(plan.left)
    for image_id in plan.remove:
        try:
            client.api.remove_image(image_id, force=False, noprune=True)
        except docker.errors.ImageNotFound:
            continue
        except engine_errors() as exc:
            left.append((image_id, clip_text(str(exc), 300)))
            continue
        removed.append(image_id)
    for image_id, tag in plan.retag:
        try:
            client.api.tag(image_id, *tag.split(":"))
        except engine_errors() as exc:
            left.append((image_id, f"could not tag it {tag} again: {clip_text(str(exc), 300)}"))
    return Cleanup(removed=tuple(removed), left=tuple(left))


def _clean(client: Any, made: Made) -> Cleanup:
    """:func:`remove_made`, with an engine that cannot list its images reported in ``left``
    (as ``("of this build", why)``) instead of raised.
    """
    try:
        return remove_made(client, made)
    except engine_errors() as exc:
        return Cleanup(left=(("of this build", "the engine could not list them: "
                                               + clip_text(str(exc), 300)),))


def clean_early(client: Any, made: Made) -> None:
    """Start removing what ``made`` records in a background thread, now that the build's
    layers were read (the push needs nothing more of the engine);
    :func:`engine_leftovers` waits for it on the way out instead of removing again. A
    second call does nothing.
    """
    if made.early is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pin-cleanup")
        made.early = pool.submit(_clean, client, made)
        pool.shutdown(wait=False)


def _finish(client: Any, made: Made) -> Cleanup:
    """The removal :func:`clean_early` started, waited for, else :func:`_clean` now."""
    return made.early.result() if made.early is not None else _clean(client, made)


@contextmanager
def engine_leftovers(client: Any, *, keep: bool = False,
                     report: Callable[[Cleanup], None] | None = None) -> Iterator[Made]:
    """Wrap one build on ``client``: yield a :class:`Made` (pass ``made.watch(log)`` as the
    build's log and set ``image_id`` once it returned), then remove what
    the build made (:func:`remove_made`) and give the :class:`Cleanup` to ``report``, also
    when the build failed (an ``Exception``; an interrupt leaves everything): the build's
    own error is then raised unchanged. A failure to clean up is only reported (in
    ``left``), never raised. Raises :class:`~pinning.errors.BuildError` (exit 8) when the
    engine cannot list its images before the build.
    """
    try:
        made = Made(before=engine_images(client), keep=keep)
    except engine_errors() as exc:
        raise BuildError(f"Docker Engine: cannot list its images: {clip_text(str(exc))}",
                         hint="Check the engine is running (DOCKER_HOST / --engine).") from exc
    try:
        yield made
    except Exception:
        if report is not None:
            report(_finish(client, made))
        raise
    if report is not None:
        report(_finish(client, made))
    else:
        _finish(client, made)
