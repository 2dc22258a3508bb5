"""Files pin reads at run time that live at the top of the repository (``images/``,
``schemas/``): linked here so that the wheel carries them and :mod:`importlib.resources`
finds them the same way in a checkout and in an installed wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def asset_path(*parts: str) -> Path:
    """The path of a shipped file, e.g. ``asset_path("images", "Dockerfile.tmpl")``.

    Works in a checkout (the links to ``images/`` and ``schemas/``) and in an installed
    wheel (copies). Raises nothing itself; a missing file shows when it is opened.
    """
    return Path(str(resources.files(__name__).joinpath(*parts)))
