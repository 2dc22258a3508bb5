"""Issue 32 section 2: restriction changes as the sources state them (a whole list, or an
addition to the list in effect) and, where statements disagree, the later-published source
wins for the releases it covers; the refusal or lock names the rows weighed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pinning.errors import NoValidatedCombination
from pinning.matrix.load import Matrix, load_matrix
from pinning.matrix.restrictions import in_effect, judge
from pinning.resolve.constraints import Constraints, parse_framework, parse_os, parse_runtime_spec
from pinning.resolve.resolver import resolve
from pinning.resolve.result import Resolution

ROW = """
[[os-restrictions]]
mode = "os-only-on-gpus"
gpus = ["mi355x", "mi350x", "mi300x"]
os = ["ol-10", "ol-9"]
runtimes = ">=7.0.0,<7.2.0"
source = "Team test page (an older statement: Oracle Linux only on MI355X, MI350X, MI300X)"
published = {published}
"""


def overlay(tmp_path: Path, published: str) -> Matrix:
    path = tmp_path / "older.toml"
    path.write_text('schema-version = 1\nname = "site-ol"\ndescription = "test"\n'
                    + ROW.format(published=published))
    return load_matrix([path])


def run(matrix: Matrix, gpu: str, rocm: str, os: str) -> Resolution:
    names = matrix.framework_names()
    return resolve(matrix, Constraints(
        gpu=gpu, frameworks=(parse_framework("pytorch", names),),
        rocm=parse_runtime_spec("--rocm", rocm), os=parse_os(os)))


def test_an_older_row_does_not_override_a_later_source(tmp_path: Path) -> None:
    # The older "Oracle Linux only on MI355X/MI350X/MI300X" row (published before the 7.1.x
    # footnote and the 7.1.0 notes) loses to them on 7.1.x: MI325X + OL 9 locks, and the
    # lock names the rows weighed.
    m = overlay(tmp_path, "2025-09-01")
    res = run(m, "mi325x", "==7.1.1", "ol-9")
    assert res.os_chosen == "ol-9"
    note = next(n for n in res.notes if "weighed against" in n)
    assert "Team test page" in note and "later-published source wins" in note


def test_a_later_row_wins_and_the_refusal_names_what_it_overruled(tmp_path: Path) -> None:
    m = overlay(tmp_path, "2026-02-01")
    with pytest.raises(NoValidatedCombination) as err:
        run(m, "mi325x", "==7.1.1", "ol-9")
    line = next(x for x in str(err.value).splitlines() if x.startswith("ROCm 7.1.1:"))
    assert "Team test page" in line and "weighed against" in line and "ol-710-mi300x" in line


def test_the_7_2_0_extension_keeps_the_7_1_list(matrix: Matrix) -> None:
    statements = in_effect(matrix, "7.2.0")
    mi355 = [s for s in statements if "mi355x" in s.gpus]
    assert len(mi355) == 1 and mi355[0].mode == "not-these-os"
    assert "sles-15.7" not in mi355[0].os and {"debian-12", "rocky-9"} <= set(mi355[0].os)
    assert mi355[0].rows[0][0].footnote == "mi350x-os-710"
    assert judge(statements, "mi355x", "gfx950", ("debian", "12")).allowed is False
    assert judge(statements, "mi355x", "gfx950", ("sles", "15.7")).allowed is True
    # No source states MI300A's list for 7.2.0: nothing is in effect for it there.
    assert judge(statements, "mi300a", "gfx942", ("debian", "13")).decided_by is None


def test_a_remove_row_takes_an_os_off_the_inherited_list(tmp_path: Path) -> None:
    path = tmp_path / "remove.toml"
    path.write_text('schema-version = 1\nname = "site-rm"\ndescription = "test"\n'
                    '[[os-restrictions]]\nmode = "not-these-os"\nchange = "remove"\n'
                    'gpus = ["mi355x"]\nos = ["ubuntu-22.04.5"]\nruntimes = "==7.2.0"\n'
                    'source = "Team test note"\npublished = 2026-02-01\n')
    m = load_matrix([path])
    statements = in_effect(m, "7.2.0")
    assert judge(statements, "mi355x", "gfx950", ("ubuntu", "22.04.5")).allowed is False
    assert judge(statements, "mi350x", "gfx950", ("ubuntu", "22.04.5")).allowed is True
