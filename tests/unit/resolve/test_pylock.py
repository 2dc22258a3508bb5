"""uv's pylock.toml read by :func:`choose_wheels` when it is not of PEP 751's shapes
(``packages`` and ``wheels`` arrays of tables, ``hashes`` a table, URLs that parse): a
UsageError naming the field, never an AttributeError or ValueError; and :func:`redact` on
URLs, the malformed ones included."""

from __future__ import annotations

import pytest

from pinning.errors import UsageError
from pinning.resolve.pylock import choose_wheels, target_tags
from pinning.util.text import redact

SHA = "ab" * 32
TAGS = target_tags("3.12", "x86_64-manylinux_2_28")
HEAD = 'lock-version = "1.0"\ncreated-by = "uv"\n'
WHEEL = f'url = "https://files.example/a-1.0-py3-none-any.whl", hashes = {{ sha256 = "{SHA}" }}'


def _one(wheel: str) -> str:
    return HEAD + f'[[packages]]\nname = "a"\nversion = "1.0"\nwheels = [{{ {wheel} }}]\n'


def test_a_well_formed_entry_is_read() -> None:
    (w,) = choose_wheels(_one(WHEEL), TAGS)
    assert (w.name, w.filename, w.sha256) == ("a", "a-1.0-py3-none-any.whl", SHA)


@pytest.mark.parametrize(("text", "needle"), [
    (HEAD + 'packages = "a"\n', "packages is a string, not an array"),
    (HEAD + "packages = { a = 1 }\n", "packages is a table, not an array"),
    (HEAD + "packages = [1]\n", "packages[0] is an integer, not a table"),
    (HEAD + '[[packages]]\nname = "a"\nversion = "1.0"\nwheels = "a.whl"\n',
     "packages[0].wheels is a string, not an array"),
    (HEAD + '[[packages]]\nname = "a"\nversion = "1.0"\nwheels = { url = "x" }\n',
     "packages[0].wheels is a table, not an array"),
    (HEAD + '[[packages]]\nname = "a"\nversion = "1.0"\nwheels = ["a.whl"]\n',
     "packages[0].wheels[0] is a string, not a table"),
    (_one('url = "https://files.example/a-1.0-py3-none-any.whl", hashes = "sha256:ab"'),
     "packages[0].wheels[0].hashes is a string, not a table"),
    (_one('url = "https://files.example/a-1.0-py3-none-any.whl", hashes = { sha256 = 1 }'),
     "packages[0].wheels[0].hashes.sha256 is an integer, not a string"),
    (_one(f'url = 5, hashes = {{ sha256 = "{SHA}" }}'),
     "packages[0].wheels[0].url is an integer, not a string"),
    (_one(f'url = "https://[::1/a-1.0-py3-none-any.whl", hashes = {{ sha256 = "{SHA}" }}'),
     "packages[0].wheels[0].url 'https://[::1/a-1.0-py3-none-any.whl' is not a URL"),
])
def test_malformed_shapes_name_the_field(text: str, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        choose_wheels(text, TAGS)
    assert needle in err.value.message
    assert err.value.message.startswith("uv printed a pylock.toml pin cannot read")
    assert err.value.exit_code == 2 and "uv --version" in err.value.hint


def test_a_named_wheel_with_a_broken_url_cannot_be_locked() -> None:
    # The file name comes from ``name``; the URL is then refused by the lock model, and
    # the credentials in it never reach the message.
    text = _one(f'name = "a-1.0-py3-none-any.whl", url = "https://u:SECRETPW@[::1/a.whl", '
                f'hashes = {{ sha256 = "{SHA}" }}')
    with pytest.raises(UsageError) as err:
        choose_wheels(text, TAGS)
    assert "cannot be locked" in err.value.message
    assert "packages[0].wheels[0]" in err.value.message
    assert "SECRETPW" not in err.value.render()


def test_a_bad_url_quoted_in_a_message_loses_its_credentials() -> None:
    text = _one(f'url = "https://alice:SECRETPW@[::1/a.whl", hashes = {{ sha256 = "{SHA}" }}')
    with pytest.raises(UsageError) as err:
        choose_wheels(text, TAGS)
    assert "https://***@[::1/a.whl" in err.value.message
    assert "SECRETPW" not in err.value.render()


def test_a_package_without_wheels_key_is_an_sdist_only_one() -> None:
    text = HEAD + (f'[[packages]]\nname = "a"\nversion = "1.0"\nsdist = {{ url = '
                   f'"https://files.example/a-1.0.tar.gz", hashes = {{ sha256 = "{SHA}" }} }}\n')
    with pytest.raises(UsageError, match=r"No wheel for a==1.0 \(sdist\)"):
        choose_wheels(text, TAGS)
    assert choose_wheels(HEAD, TAGS) == ()


@pytest.mark.parametrize(("url", "removed", "masked"), [
    ("https://a:b@h.example/x", "https://h.example/x", "https://***@h.example/x"),
    ("https://tok@h.example:8443/x?q=a@b#f@g", "https://h.example:8443/x?q=a@b#f@g",
     "https://***@h.example:8443/x?q=a@b#f@g"),
    ("https://a:p@ss@h.example", "https://h.example", "https://***@h.example"),
    ("https://u:p@[::1/x", "https://[::1/x", "https://***@[::1/x"),
    ("https://h.example/a@b", "https://h.example/a@b", "https://h.example/a@b"),
    ("not a url", "not a url", "not a url"),
])
def test_redact(url: str, removed: str, masked: str) -> None:
    assert redact(url) == removed
    assert redact(url, mask="***") == masked
