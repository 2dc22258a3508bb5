"""Install what you use: the optional parts of pin (pyproject's extras) and exit 15.

A command that imports a module of a part that is not installed exits 15 naming the extra
to install, never 1 with a traceback; the map from module to extra agrees with
pyproject.toml; and the core installs none of the parts' distributions.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pinning.errors import EXTRA_OF, MissingExtra, missing_extra
from tests.support.paths import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: Modules that come with another distribution of the same extra.
VIA = {"starlette": "fastapi"}
#: Module name -> distribution name, where they differ.
DIST = {"prometheus_client": "prometheus-client", "sqlalchemy": "sqlalchemy"}


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


@pytest.mark.parametrize(("module", "extra"), sorted(EXTRA_OF.items()))
def test_each_optional_module_comes_with_its_extra(module: str, extra: str) -> None:
    dist = canonicalize_name(DIST.get(module, VIA.get(module, module)))
    assert dist in _names(PROJECT["optional-dependencies"][extra])
    assert dist not in _names(PROJECT["dependencies"])  # the core never pulls it in
    assert "pin[image,serve,report,accept]" in PROJECT["optional-dependencies"]["all"]


def test_missing_extra_names_the_part_and_what_to_run() -> None:
    err = missing_extra(ModuleNotFoundError("No module named 'fastapi.routing'",
                                            name="fastapi.routing"), "pin serve")
    assert isinstance(err, MissingExtra) and err.exit_code == 15
    assert "pin serve needs pin's optional part 'serve'" in err.message
    assert "pip install 'pin[serve]'" in err.hint
    assert missing_extra(ModuleNotFoundError("x", name="no_such_module")) is None


def _run_without(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pin ARGS`` in a process where importing ``module`` fails as when it is absent."""
    code = (f"import sys; sys.modules[{module!r}] = None; "
            f"from pinning.cli import main; main({list(args)!r})")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.mark.parametrize(("module", "args", "extra"), [
    ("sqlalchemy", ["serve", "token", "list", "--db", "sqlite:////nonexistent/pin.db"],
     "serve"),
    ("cryptography", ["keygen", "-o", "/nonexistent/k"], "image"),
])
def test_a_command_whose_part_is_missing_exits_15(module: str, args: list[str],
                                                  extra: str) -> None:
    done = _run_without(module, *args)
    assert done.returncode == 15, done.stderr
    assert f"pip install 'pin[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_core_commands_import_no_optional_module() -> None:
    """pin --help, resolve and doctor run with every optional module blocked."""
    block = "; ".join(f"sys.modules[{m!r}] = None" for m in sorted(EXTRA_OF))
    code = (f"import sys; {block}; from pinning.cli import main; "
            "main(['resolve', '--gpu', 'mi300x', '--framework', 'pytorch==2.13.0', '-o', '-'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "lock-version = 1" in done.stdout
