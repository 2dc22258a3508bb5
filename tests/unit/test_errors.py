from pinning.errors import ALL_ERRORS, PinError, UsageError


def test_exit_codes_are_unique_and_cover_design_table():
    codes = [cls.exit_code for cls in ALL_ERRORS]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == list(range(1, 11))


def test_every_error_subclass_is_listed():
    def walk(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from walk(sub)

    assert set(walk(PinError)) == set(ALL_ERRORS)


def test_render_is_message_then_hint():
    err = UsageError("bad flag --x", hint="use --y")
    assert err.render() == "bad flag --x\nuse --y"
    assert err.exit_code == 2
