"""mediawiki_mcp.py, the one file users copy, made from the package mediawiki_mcp/.

The package's modules are laid in LAYERS order, each importing only modules before it; their
module-level names are unique across the package, so the modules can share one namespace. The
single file is their bodies in that order, under one header of imports, with the imports between
modules left out. The optional modules (OPTIONAL) are not in it: they need packages a bare copy
does not have, and the single file says to install the package for what they do.

    python packaging/single_file.py [FILE]   # writes FILE (default: mediawiki_mcp.py beside the package)

packaging/generate.py writes it with the other generated files, and its test checks it is current.
"""
from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomllib

PACKAGE = Path(__file__).resolve().parent.parent / "mediawiki_mcp"

#: The modules, bottom layer first: each imports only modules listed before it (at run time; a
#: type-only import may look up), so the client, the address guard and the text modules never import
#: the server or the tools. tests/test_layers.py checks it.
LAYERS = (
    "errors", "wire", "siteinfo", "guard", "client", "settings", "config",
    "render", "sections", "merge", "diff", "plaintext",
    "registry", "store", "ledger", "calls", "identity", "state", "dispatch", "prompts", "confirm",
    "pages", "read_pages", "read_search", "read_history", "read_origin", "read_links", "read_users",
    "saving", "edit", "write_pages", "write_admin", "write_files", "write_everyday", "write_replace",
    "write_copy", "wikis", "stdio", "server", "http_ops", "http", "cli",
)
#: Modules only some users need, with the packages they import: the wheel has them, the single file not.
OPTIONAL = {"redis_store": "redis", "login_forms": "cryptography", "login": "cryptography"}
FIRST_LINE = "# Generated from mediawiki_mcp/ by packaging/single_file.py; do not edit: run python packaging/generate.py\n"
DOCSTRING = '''"""mediawiki-mcp: a Model Context Protocol server for any MediaWiki wiki, in one file.

Made from the package mediawiki_mcp/, one section a module, bottom layer first. Run it with
``python mediawiki_mcp.py`` or ``uv run mediawiki_mcp.py`` (stdio), or embed it::

    from mediawiki_mcp import Config, create_server
    server = create_server(Config.from_env())

Importing this module does no I/O and starts nothing. Sign-in over HTTP (MCP_AUTH=login) and the
shared state store (MCP_STATE_URL) need the package: pip install 'mediawiki-mcp[login,redis]'.
"""
'''
MAX_LINE = 120


def is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def preamble(tree: ast.Module) -> Iterator[ast.stmt]:
    """The docstring, imports and type-checking block a module starts with."""
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (docstring or isinstance(node, (ast.Import, ast.ImportFrom)) or is_type_checking(node)):
            return
        yield node


class Imports:
    """The imports of other packages the modules make, merged: ``import x`` and ``from x import y``."""

    def __init__(self) -> None:
        self.plain: set[str] = set()
        self.names: dict[str, set[str]] = {}

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        spelled = {alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in node.names}
        if isinstance(node, ast.Import):
            self.plain.update(spelled)
        elif not node.level and node.module != "__future__":
            self.names.setdefault(node.module or "", set()).update(spelled)

    def lines(self, indent: str = "") -> list[str]:
        """Sorted as isort sorts them: the standard library, then the rest; ``import`` before ``from``."""
        def section(name: str) -> int:
            return 0 if name.split(".")[0] in sys.stdlib_module_names else 1
        out = []
        for part in (0, 1):
            block = [f"{indent}import {name}" for name in sorted(self.plain, key=str.lower)
                     if section(name) == part]
            for module in sorted((m for m in self.names if section(m) == part), key=str.lower):
                names = sorted(self.names[module], key=lambda n: (not n.isupper(), not n[:1].isupper(), n.lower()))
                one = f"{indent}from {module} import {', '.join(names)}"
                block.append(one if len(one) <= MAX_LINE else
                             f"{indent}from {module} import (\n" + "".join(f"{indent}    {n},\n" for n in names)
                             + f"{indent})")
            if block:
                out += block + [""]
        return out[:-1]


def script_header(project: dict[str, Any]) -> str:
    """What runs the single file (uv run, pipx run), as PEP 723 writes it: the package's own Python
    and dependencies, from pyproject.toml."""
    return (f"# /// script\n# requires-python = {json.dumps(project['requires-python'])}\n"
            f"# dependencies = {json.dumps(project['dependencies'])}\n# ///\n")


def single_file(package: Path = PACKAGE) -> str:
    """The text of mediawiki_mcp.py made from the package's LAYERS."""
    project = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    imports, checking, checking_code, bodies = Imports(), Imports(), [], []
    for name in LAYERS:
        source = (package / f"{name}.py").read_text(encoding="utf-8")
        tree = ast.parse(source)
        lines = source.splitlines(keepends=True)
        head = list(preamble(tree))
        for node in head:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.add(node)
            elif isinstance(node, ast.If):  # the type-checking block
                for inner in node.body:
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        checking.add(inner)
                    else:
                        first = min([inner.lineno, *(d.lineno for d in getattr(inner, "decorator_list", []))])
                        checking_code.append("".join(lines[first - 1:inner.end_lineno or inner.lineno]))
        body = "".join(lines[head[-1].end_lineno or 0:]).strip("\n") if head else source
        doc = ast.get_docstring(tree) or ""
        banner = "\n".join(f"# {line}".rstrip() for line in doc.splitlines())
        bodies.append(f"# {'-' * 75}\n# {name}.py: {banner[2:]}\n# {'-' * 75}\n\n{body}\n")
    checking_block = ["if TYPE_CHECKING:", *checking.lines("    ")]
    if checking_code:
        checking_block += ["", *(code.rstrip("\n") for code in checking_code)]
    return (FIRST_LINE + script_header(project) + DOCSTRING + "from __future__ import annotations\n\n"
            + "\n".join(imports.lines()) + "\n\n" + "\n".join(checking_block) + "\n\n\n"
            + "\n\n".join(bodies) + '\n\nif __name__ == "__main__":\n    raise SystemExit(main())\n')


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else PACKAGE.parent / "mediawiki_mcp.py"
    target.write_text(single_file(), encoding="utf-8", newline="\n")
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
