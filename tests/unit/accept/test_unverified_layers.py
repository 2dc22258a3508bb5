"""What pin could not see is said first: a judged file's GPU, driver and runtime are "not
verified" caveats beside the verdict (not differences), and a difference is not said twice."""

from __future__ import annotations

from pinning.accept.result import Binding, unverified_layers
from tests.unit.accept.test_attest import result

JUDGED = "judged results: pin did not run them and the files do not record it"


def test_judged_layers_are_grouped_by_reason() -> None:
    binding = Binding(checked="judge", ran_on_unknown={
        "gpu": JUDGED, "runtime": JUDGED,
        "model-content-hash": "not verified (a result file names the model, not its files)"})
    r = result().model_copy(update={"binding": binding})
    assert unverified_layers(r) == [
        f"gpu, runtime: not verified ({JUDGED})",
        "model-content-hash: not verified (a result file names the model, not its files)"]


def test_a_layer_that_differs_is_a_binding_problem_not_a_caveat() -> None:
    binding = Binding(checked="run", ran_on_unknown={"gpu": "no GPU found", "runtime": "x"},
                      differences=["gpu: ran on the CPU (no GPU found), the lock pins H200"])
    r = result().model_copy(update={"binding": binding})
    assert unverified_layers(r) == ["runtime: not verified (x)"]


def test_no_binding_says_nothing_here() -> None:
    """An older result's missing binding is a binding problem (binding_problems), not this."""
    assert unverified_layers(result().model_copy(update={"binding": None})) == []
