"""The AMD importers on a reviewer's hostile inputs: each once took seconds to a minute
through a backtracking pattern; now each returns (no timing asserted) with the same result
the patterns give on ordinary cells."""

from __future__ import annotations

from pinning.matrix.importers.amd_table import clean_label, parse_footnote_texts, split_footnotes


def test_a_first_cell_of_many_unclosed_footnote_starts_is_kept_as_text() -> None:
    cell = "Zz" + "[#" * 2000
    assert clean_label(cell) == cell
    assert split_footnotes(cell) == (cell, [])


def test_footnotes_still_come_off_a_label() -> None:
    assert split_footnotes("gfx942 [#mi300_600-past-60]_") == ("gfx942", ["mi300_600"])
    assert clean_label("Ubuntu [#a]_ [#b]_") == "Ubuntu"


def test_a_page_of_unclosed_roles_and_links_is_read_as_text() -> None:
    roles = ":doc:`‹" * 10000
    links = "`‹" * 30000
    # each `:doc:`‹:doc:`` is one role whose text is "‹:doc:"
    assert parse_footnote_texts(".. [#r] " + roles) == {"r": "‹:doc:‹" * 5000}
    assert parse_footnote_texts(".. [#l] " + links) == {"l": links}
    assert clean_label(roles) == "‹:doc:‹" * 5000


def test_roles_and_links_still_give_their_text() -> None:
    page = ".. [#n] See :doc:`the guide <install/x>` and `ROCm <https://rocm.docs.amd.com>`_.\n"
    assert parse_footnote_texts(page) == {"n": "See the guide and ROCm."}


def test_a_page_of_unclosed_footnote_names_has_no_footnotes() -> None:
    assert parse_footnote_texts(".. [#x\n" * 10000) == {}
    assert parse_footnote_texts(".. [#x\n" * 10 + ".. [#y] Why.\n") == {"y": "Why."}
