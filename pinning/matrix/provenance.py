"""Where every matrix row comes from and when: :class:`Provenance` (source, ``published`` or
``checked`` date, and what ``--as-of`` sees), and the PEP 440 check the row models share.
"""

from __future__ import annotations

import datetime as dt

from pydantic import Field, model_validator

from pinning.util.models import Reason, Strict


def pep440(value: str, prefix: str = "") -> str:
    """``value`` when it is a PEP 440 version, else ``ValueError`` (its message starts with
    ``prefix``); pydantic reports it as an error of the field, which the loader's
    ``MatrixError`` (exit 3) names with the file.
    """
    from packaging.version import Version

    try:
        Version(value)
    except ValueError as exc:  # InvalidVersion, or a number too long for int()
        raise ValueError(f"{prefix}{value!r} is not a PEP 440 version (e.g. 7.0.0)") from exc
    return value


class Provenance(Strict):
    """Where a row comes from: a named public source, when it was published and when read.

    ``published`` is when the fact became public (the page's own date, the release's date,
    or the commit date of the copy read); ``checked`` the day a live page was read, which
    says nothing about when its facts became true. At least one is required.
    ``published_unknown`` says why a row has no ``published`` date (the two exclude each
    other); a row with only ``checked`` has an unknown publication date too.

    ``read_from`` names the copy actually read when it is not the cited source itself (a
    fork at a commit, an article quoting the vendor's page): ``source`` and ``url`` say what
    the vendor published, ``read_from`` what pin's values were taken from, so a reader can
    open both and compare.

    ``--as-of DATE`` goes by ``published`` only (:meth:`visible_on`): a row published after
    DATE is left out; a row whose publication date is unknown is kept at every date (it
    cannot be dated, and dropping it would hide data that existed), and whatever rests on
    it says so (:attr:`undated`).
    """

    source: str = Field(min_length=3, description="Publisher and document the row was taken from.")
    url: str | None = Field(default=None, description="Where the source can be read.")
    published: dt.date | None = Field(default=None, description="Date the source carries.")
    published_unknown: Reason | None = Field(
        default=None, description="Why the publication date is unknown (no `published`).")
    checked: dt.date | None = Field(default=None, description="Date the source was read.")
    read_from: str | None = Field(
        default=None, min_length=3,
        description="The copy the values were read from when it is not the cited source "
        "(`owner/repo@<commit>:path`, a URL, or a named document), e.g. a fork or an article "
        "quoting the vendor's page.")

    @model_validator(mode="after")
    def _dated(self) -> Provenance:
        if self.published is None and self.checked is None:
            raise ValueError("every row needs a `published` or a `checked` date")
        if self.published is not None and self.published_unknown is not None:
            raise ValueError("`published` and `published-unknown` exclude each other")
        if self.read_from is not None and self.read_from.strip() in (self.source.strip(),
                                                                     (self.url or "").strip()):
            raise ValueError("`read-from` names the copy read when it is not the cited source; "
                             "leave it out when the source itself was read")
        return self

    @property
    def date(self) -> dt.date:
        """The row's date for display and for ordering revisions: ``published`` if known,
        else ``checked``. Not the date ``--as-of`` compares (see :meth:`visible_on`).
        """
        d = self.published or self.checked
        assert d is not None
        return d

    @property
    def undated(self) -> str | None:
        """Why the publication date is unknown (``None`` when ``published`` is set)."""
        if self.published is not None:
            return None
        return self.published_unknown or (
            f"the source states no publication date (read {self.checked})")

    def visible_on(self, as_of: dt.date | None) -> bool:
        """True when ``--as-of as_of`` sees this row: no date asked, published on or before
        ``as_of``, or publication date unknown (kept at every date; see the class).
        """
        return as_of is None or self.published is None or self.published <= as_of
