from __future__ import annotations

from collections.abc import Iterator

from pinning.errors import ALL_ERRORS, PinError, UsageError


def test_exit_codes_are_unique_and_cover_design_table() -> None:
    codes = [cls.exit_code for cls in ALL_ERRORS]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == list(range(1, 16))  # DESIGN.md §4: 1-15, 15 = an extra missing


def test_every_error_subclass_is_listed() -> None:
    def walk(cls: type[PinError]) -> Iterator[type[PinError]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    subclasses = set(walk(PinError))
    assert set(ALL_ERRORS) <= subclasses
    for extra in subclasses - set(ALL_ERRORS):
        # A refinement (e.g. FormatError under ProbeError) keeps its listed base's code.
        bases = [base for base in ALL_ERRORS if issubclass(extra, base)]
        assert bases and extra.exit_code == bases[0].exit_code


def test_render_is_message_then_hint() -> None:
    err = UsageError("bad flag --x", hint="use --y")
    assert err.render() == "bad flag --x\nuse --y"
    assert err.exit_code == 2


def test_top_level_help_lists_every_exit_code() -> None:
    """The list is generated from ALL_ERRORS: a new error class shows up in ``pin --help``."""
    import re

    from click.testing import CliRunner

    from pinning.cli import main
    from pinning.errors import exit_codes

    text = " ".join(CliRunner().invoke(main, ["--help"]).output.split())
    listed = text.split("Exit codes: ", 1)[1]
    assert [int(n) for n in re.findall(r"(?:^|, )(\d+) ", listed)] == sorted(
        {0, *(cls.exit_code for cls in ALL_ERRORS)})
    for code, what in exit_codes():
        assert f"{code} {what}" in listed
