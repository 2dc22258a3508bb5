"""The generated parts of the docs site (docs/development.md, "The docs site"): the CLI
reference names every command, the exit-code table every code, and README's links and
snippet markers lead somewhere.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

from mkdocs_click._extension import replace_command_docs

from pinning.errors import ALL_ERRORS, exit_codes
from tests.support.paths import ROOT

DOCS = ROOT / "docs"


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_documents_every_command() -> None:
    from pinning.cli import main

    paths = _hook("cli_commands").load_all(main)
    assert {"resolve", "lock model", "lock push", "verify-image", "serve token create"} <= \
        set(paths)
    page = (DOCS / "reference" / "cli.md").read_text()
    options = dict(re.findall(r"^\s+:(\w+): (\S+)$", page, re.M))
    assert options["module"] == "pinning.cli" and options["command"] == "main"
    rendered = "\n".join(replace_command_docs(**options))
    documented: set[str] = set()
    stack: list[str] = []  # headings: "## pin", "### lock", "#### model"
    for hashes, name in re.findall(r"^(#{3,}) ([\w-]+)$", rendered, re.M):
        del stack[len(hashes) - 3:]
        stack.append(name)
        documented.add(" ".join(stack))
    missing = set(paths) - documented
    assert not missing, f"the CLI reference leaves out {sorted(missing)}"


def test_the_exit_code_table_is_generated_with_every_code() -> None:
    page = (DOCS / "concepts" / "exit-codes.md").read_text()
    hook = _hook("exit_codes")
    assert hook.MARKER in page
    assert not re.search(r"^\| *\d+ *\|", page, re.M), "a hand-written exit-code row"
    rendered = hook.on_page_markdown(page)
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \| ([^|]+) \|", rendered, re.M)
    assert [(int(code), what.strip()) for code, what, _ in rows] == exit_codes()
    for cls in ALL_ERRORS:
        assert f"`{cls.__name__}`" in rendered


def test_readme_links_and_snippets_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme):
        assert (ROOT / target).exists(), f"README links to {target}, which is missing"
    index = (DOCS / "index.md").read_text()
    for name in re.findall(r'--8<-- "README\.md:(\w+)"', index):
        assert f"--8<-- [start:{name}]" in readme and f"--8<-- [end:{name}]" in readme
    for command in ("make demo", "make test"):
        assert command in readme
