"""Which engine images pin removes after a build (pure planning, no engine): only those the
build's log names and that were not there before, never a pulled base, an image tagged by
someone else or a final image without pin's label; children first; the tag given back."""

from __future__ import annotations

from pinning.image.engine import build_tag
from pinning.image.leftovers import EngineImage, Made, plan_removal, step_images
from pinning.oci.documents import LOCK_LABEL

INPUT = "sha256:c5c342e1899c449525b4d2de9bbf2fdb8eeb115d5973e26c1a15f1f613ec002a"
TAG = "pin-build:c5c342e1899c"

# The log of a real `pin build` of tests.support.components.small_lock() on Docker Engine
# 20.10.24 (classic builder), the pip output shortened.
LOG = """\
Step 1/8 : FROM 127.0.0.1:37853/pin/base@sha256:f4aa54a016f0fd091e0392a8cfae787cbf12a4765a6a3f2eae862ae364c85f77
 ---> fd777e19b2ce
Step 2/8 : USER root
 ---> Running in c0060f3b134a
Removing intermediate container c0060f3b134a
 ---> 635c1e0fe2ca
Step 3/8 : ENV PIN_TRIAL="1"
 ---> Using cache
 ---> d00465d12fe1
Step 4/8 : COPY wheels /tmp/pin-wheels
 ---> e4c098781bc0
Step 5/8 : COPY guard /tmp/pin-guard
 ---> 78655c80a758
Step 6/8 : RUN python3 -m pip install --no-index --no-deps --require-hashes --no-compile
 ---> Running in 51900d3b75a8
Successfully installed idna-3.10 packaging-24.2 six-1.16.0
Removing intermediate container 51900d3b75a8
 ---> 69d3c56b0b2f
Step 7/8 : RUN rm -rf /tmp/pin-wheels /tmp/pin-guard
 ---> Running in 2edca28080e6
Removing intermediate container 2edca28080e6
 ---> 96728a7b4ffe
Step 8/8 : LABEL dev.pin.lock.content-hash="sha256:c5c342e1899c449525b4d2de9bbf2fdb8eeb115d5973e26c1a15f1f613ec002a"
 ---> Running in 0855131bdecd
Removing intermediate container 0855131bdecd
 ---> f9ecf4728351
Successfully built f9ecf4728351
Successfully tagged pin-build:c5c342e1899c
""".splitlines()

SHORT = ["fd777e19b2ce", "635c1e0fe2ca", "d00465d12fe1", "e4c098781bc0", "78655c80a758",
         "69d3c56b0b2f", "96728a7b4ffe", "f9ecf4728351"]


def full(short: str) -> str:
    return "sha256:" + short + "0" * (64 - len(short))


BASE = EngineImage(full(SHORT[0]), digests=("127.0.0.1:37853/pin/base@sha256:" + "f" * 64,))
FINAL = full(SHORT[-1])


def engine(*extra: EngineImage, final_labels: dict[str, str] | None = None,
           final_tags: tuple[str, ...] = (TAG,)) -> dict[str, EngineImage]:
    """The engine after the build: base, step images, the built image, and ``extra``."""
    images = [BASE, *(EngineImage(full(s)) for s in SHORT[1:-1]),
              EngineImage(FINAL, tags=final_tags,
                          labels={LOCK_LABEL: INPUT} if final_labels is None else final_labels),
              *extra]
    return {i.id: i for i in images}


def test_step_images_are_the_arrow_lines_with_an_id() -> None:
    assert step_images(LOG) == SHORT
    assert step_images([" ---> Running in c0060f3b134a", " ---> Using cache", "--->abc",
                        " ---> 635c1e0fe2cz", "x ---> 635c1e0fe2ca"]) == []


def test_build_tag_is_the_engine_tag_pin_gives() -> None:
    assert build_tag(INPUT) == TAG


def test_what_the_build_made_goes_children_first_the_base_and_cache_hits_stay() -> None:
    cached = EngineImage(full("d00465d12fe1"))  # step 3 was a cache hit
    before = {BASE.id: BASE, cached.id: cached}
    plan = plan_removal(before, engine(), step_images(LOG), final=FINAL)
    assert plan.remove == tuple(full(s) for s in reversed(SHORT) if s not in
                                ("fd777e19b2ce", "d00465d12fe1"))
    assert plan.left == () and plan.retag == ()


def test_a_base_pulled_during_the_build_is_kept_by_its_digest() -> None:
    plan = plan_removal({}, engine(), SHORT, final=FINAL)
    assert BASE.id not in plan.remove and FINAL in plan.remove
    assert plan.left == ()  # pulled, not made: nothing to warn about


def test_an_image_someone_else_tagged_or_without_pins_label_stays() -> None:
    after = engine(final_tags=(TAG, "mine:latest"))
    plan = plan_removal({BASE.id: BASE}, after, SHORT, final=FINAL)
    assert plan.remove == ()  # the others are its parents: the engine needs them
    assert plan.left[0] == (FINAL, "it is tagged mine:latest")
    assert plan.left[1] == (full(SHORT[-2]), f"its child {FINAL[:19]} stays")
    assert [i for i, _ in plan.left] == [full(s) for s in reversed(SHORT[1:])]
    unlabelled = plan_removal({BASE.id: BASE}, engine(final_labels={}), SHORT, final=FINAL)
    assert FINAL not in unlabelled.remove
    assert unlabelled.left[0][0] == FINAL and LOCK_LABEL in unlabelled.left[0][1]


def test_a_pin_build_tag_must_match_the_images_label() -> None:
    other = "sha256:" + "9" * 64  # another lock's input hash
    plan = plan_removal({BASE.id: BASE}, engine(final_labels={LOCK_LABEL: other}), SHORT,
                        final=FINAL)
    assert plan.remove == () and plan.left[0][0] == FINAL
    assert plan.left[0][1] == f"it is tagged {TAG} without pin's label {LOCK_LABEL}"
    untagged = plan_removal({BASE.id: BASE}, engine(final_tags=(), final_labels={}), SHORT,
                            final=FINAL)
    assert FINAL in untagged.remove and untagged.left == ()


def test_an_export_failure_after_the_build_still_finds_the_image_in_the_log() -> None:
    plan = plan_removal({BASE.id: BASE}, engine(), step_images(LOG), final=None)
    assert plan.remove == tuple(full(s) for s in reversed(SHORT[1:]))


def test_a_failed_build_removes_the_step_images_it_committed() -> None:
    after = engine()
    del after[FINAL]
    plan = plan_removal({BASE.id: BASE}, after, SHORT[:-1], final=None)
    assert plan.remove == tuple(full(s) for s in reversed(SHORT[1:-1]))


def test_images_gone_ambiguous_or_unrelated_are_not_touched() -> None:
    unrelated = EngineImage(full("abcdefabcdef"))
    twin = EngineImage("sha256:69d3c56b0b2f" + "1" * 52)  # two IDs share the short one
    after = engine(unrelated, twin)
    del after[full("e4c098781bc0")]  # gone meanwhile
    plan = plan_removal({BASE.id: BASE}, after, SHORT, final=FINAL)
    assert unrelated.id not in plan.remove and twin.id not in plan.remove
    assert full("69d3c56b0b2f") not in plan.remove
    assert full("e4c098781bc0") not in plan.remove and FINAL in plan.remove


def test_the_tag_goes_back_to_the_image_that_held_it_before() -> None:
    kept = EngineImage(full("0123456789ab"), tags=(TAG,), labels={LOCK_LABEL: INPUT})
    after = engine(EngineImage(kept.id, labels=kept.labels))  # the tag moved to the new image
    plan = plan_removal({BASE.id: BASE, kept.id: kept}, after, SHORT, final=FINAL)
    assert plan.retag == ((kept.id, TAG),) and kept.id not in plan.remove
    # A build that gave the same image (a cache hit) removes nothing of it.
    same = plan_removal({BASE.id: BASE, FINAL: after[FINAL]}, after, SHORT[-1:], final=FINAL)
    assert same.remove == () and same.retag == ()


def test_made_records_the_log_and_passes_it_on() -> None:
    seen: list[str] = []
    made = Made(before={})
    log = made.watch(seen.append)
    for line in LOG[:3]:
        log(line)
    made.watch(None)(LOG[3])
    assert made.lines == LOG[:4] and seen == LOG[:3]
