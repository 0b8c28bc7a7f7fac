"""The files installers and registries read, and the generated tables of the documentation,
built from the package's settings (SETTINGS), tool registry and toolsets:

- mediawiki_mcp.py, the single file users copy, made from the package (packaging/single_file.py);
- server.json, the MCP registry's entry;
- bundle/, the Claude Desktop bundle's sources (mcpb packs the directory);
- .claude-plugin/, the Claude Code plugin's manifest and marketplace;
- the table of toolsets in README.md and the table of settings in docs/configuration.md.

    python packaging/generate.py [DIR]

writes them under DIR (default: the checkout this script is in). Run from a checkout, with
Python 3.11 or later; the server, the wheel and a bare copy of the module never need this file.
test_generated_packaging_files_are_current checks that the committed files are what it makes.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomllib

CHECKOUT = Path(__file__).resolve().parent.parent
for folder in (CHECKOUT, CHECKOUT / "packaging"):  # the package, and single_file.py beside this script
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
from single_file import single_file

from mediawiki_mcp.cli import argument_parser
from mediawiki_mcp.registry import REGISTRY
from mediawiki_mcp.settings import DEFAULT_TOOLSETS, DEFAULT_WIKI_URL, SETTINGS, TOOLSETS
from mediawiki_mcp.wire import __version__

#: The MCP registry's schema for server.json.
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
#: What the Claude Desktop bundle asks: its user_config key, input type, title and default,
#: and the variable (or command-line flag) that receives the answer; the description is that
#: setting's own help. Every field has a default, as MCPB passes an unset one on as the literal
#: "${user_config.KEY}"; MCPB sets every variable it maps, so the server runs with
#: --empty-means-unset and an empty field reads as not given. Read-only stays on until the
#: user turns it off, so no bundle edits anonymously. A list of directories cannot fill one
#: variable (MCPB expands lists only into arguments), so upload folders go to --upload-dirs.
BUNDLE_SETTINGS: tuple[tuple[str, str, str, Any, str], ...] = (
    ("wiki_url", "string", "Wiki address", DEFAULT_WIKI_URL, "MEDIAWIKI_URL"),
    ("username", "string", "Bot password user name", "", "MEDIAWIKI_USERNAME"),
    ("password", "string", "Bot password", "", "MEDIAWIKI_PASSWORD"),
    ("token", "string", "OAuth 2 access token", "", "MEDIAWIKI_TOKEN"),
    ("read_only", "boolean", "Read-only", True, "MEDIAWIKI_READ_ONLY"),
    ("user_agent", "string", "Your contact, for the User-Agent", "", "MEDIAWIKI_USER_AGENT"),
    ("upload_dirs", "directory", "Folders uploads may read from", [], "--upload-dirs"),
    ("toolsets", "string", "Toolsets", "default", "MCP_TOOLSETS"),
)
#: The Claude Code plugin asks the same, save that it fills ${user_config.KEY} with the value as
#: one string (a list joined by commas, which no list of directories survives): it asks for one
#: upload folder and passes it in the variable.
PLUGIN_UPLOAD_DIR = ("upload_dir", "directory", "Folder uploads may read from", "", "MCP_UPLOAD_DIRS")


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def settings_table() -> str:
    """The table of the settings, one row each."""
    rows = [f"| {', '.join(f'`{name}`' for name in (s.variable, *s.also))} | "
            f"{f'`{s.field}`' if s.field else ''} | {capitalised(s.help)}. |" for s in SETTINGS.values()]
    return "\n".join(["| variable | config file | meaning |", "|---|---|---|", *rows]) + "\n"


def toolsets_table() -> str:
    """The table of the toolsets (TOOLSETS), each with its tools."""
    rows = [f"| `{name}` | {'by default' if name in DEFAULT_TOOLSETS else ''} | {capitalised(about)}: "
            + ", ".join(f"`{spec.name}`" for spec in REGISTRY.tools.values() if spec.toolset == name) + ". |"
            for name, about in TOOLSETS.items()]
    return "\n".join(["| toolset | offered | tools |", "|---|---|---|", *rows]) + "\n"


#: Where each generated table lives, the table already there that it replaces, and its maker.
TABLES: tuple[tuple[str, re.Pattern[str], Callable[[], str]], ...] = (
    ("README.md", re.compile(r"^\| toolset \| offered \|.*\n(?:\|.*\n)*", re.MULTILINE), toolsets_table),
    ("docs/configuration.md", re.compile(r"^\| variable \| config file \|.*\n(?:\|.*\n)*", re.MULTILINE),
     settings_table),
)


def packaging_files(checkout: Path = CHECKOUT) -> dict[str, str]:
    """Every generated file's text by path: built from the tool registry, the settings, the module,
    and the checkout's pyproject.toml (name, description, links, dependencies), LICENSE and the
    documents that hold the tables."""
    project = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    single = single_file(checkout / "mediawiki_mcp")
    urls = project["urls"]
    helps = {row.variable: row.described for row in SETTINGS.values()}
    helps.update((flag, action.help or "") for action in argument_parser()._actions
                 for flag in action.option_strings)

    def config_field(kind: str, title: str, default: Any, target: str) -> dict[str, Any]:
        """A field for the user to fill in, as MCPB's user_config and Claude Code's userConfig share."""
        field = {"type": kind, "title": title, "description": capitalised(helps[target]), "default": default}
        return field | ({"multiple": True} if isinstance(default, list) else {}) | (
            {"sensitive": True} if target in SETTINGS and SETTINGS[target].secret else {})

    user_config: dict[str, Any] = {}
    env: dict[str, str] = {}
    args = ["run", "--script", "${__dirname}/mediawiki_mcp.py", "--empty-means-unset"]
    for key, kind, title, default, target in BUNDLE_SETTINGS:
        user_config[key] = config_field(kind, title, default, target)
        if target.startswith("--"):
            args += [target, f"${{user_config.{key}}}"]
        else:
            env[target] = f"${{user_config.{key}}}"
    manifest = {
        "manifest_version": "0.4", "name": project["name"], "display_name": "MediaWiki",
        "version": __version__, "description": project["description"], "author": project["authors"][0],
        "repository": {"type": "git", "url": urls["Repository"]}, "homepage": urls["Homepage"],
        "support": urls["Issues"], "license": project["license"], "keywords": project["keywords"],
        # uv runs the module with its PEP 723 dependencies, on any platform: a bundle shipping
        # them would need one build per platform (pydantic-core and others are compiled).
        "server": {"type": "uv", "entry_point": "mediawiki_mcp.py",
                   "mcp_config": {"command": "uv", "args": args, "env": env}},
        "tools": [{"name": spec.name, "description": spec.description()} for spec in REGISTRY.tools.values()],
        "compatibility": {"platforms": ["darwin", "linux", "win32"],
                          "runtimes": {"python": project["requires-python"]}},
        "user_config": user_config,
    }
    registry_entry = {
        "$schema": REGISTRY_SCHEMA,
        # The registry's rule for a project on GitHub: io.github.<owner>/<repository>.
        "name": "io.github." + urllib.parse.urlsplit(urls["Repository"]).path.strip("/"),
        "title": "MediaWiki", "description": project["description"], "version": __version__,
        "repository": {"url": urls["Repository"], "source": "github"}, "websiteUrl": urls["Homepage"],
        "packages": [{
            "registryType": "pypi", "registryBaseUrl": "https://pypi.org", "identifier": project["name"],
            "version": __version__, "runtimeHint": "uvx", "transport": {"type": "stdio"},
            "environmentVariables": [{"name": row.variable, "description": capitalised(row.described),
                                      "isRequired": False, "isSecret": row.secret}
                                     for row in SETTINGS.values()]}],
    }
    plugin_rows = [PLUGIN_UPLOAD_DIR if row[4].startswith("--") else row for row in BUNDLE_SETTINGS]
    plugin = {
        "name": project["name"], "version": __version__, "description": project["description"],
        "author": project["authors"][0], "homepage": urls["Homepage"], "repository": urls["Repository"],
        "license": project["license"], "keywords": project["keywords"],
        "userConfig": {key: config_field(*rest) for key, *rest in plugin_rows},
        # The same command as the README's client lines; --empty-means-unset as in the bundle, since
        # Claude Code also sets every variable it maps, blank for a field left empty.
        "mcpServers": {"mediawiki": {"command": "uvx", "args": [project["name"], "--empty-means-unset"],
                                     "env": {target: f"${{user_config.{key}}}" for key, *_, target in plugin_rows}}},
    }
    # The repository is its own marketplace: /plugin install mediawiki-mcp --marketplace OWNER/REPO.
    marketplace = {"name": project["name"], "owner": project["authors"][0],
                   "description": f"{plugin['name']}, the Claude Code plugin",
                   "plugins": [{"name": plugin["name"], "source": "./", "description": project["description"]}]}
    bundle_project = "".join(f"{field} = {json.dumps(value)}\n" for field, value in (
        ("name", project["name"]), ("version", __version__), ("description", project["description"]),
        ("requires-python", project["requires-python"]), ("dependencies", project["dependencies"])))
    documents: dict[str, str] = {}
    for path, table, make in TABLES:
        text = documents.get(path) or (checkout / path).read_text(encoding="utf-8")
        found = table.search(text)
        if not found:
            raise SystemExit(f"{path} has no table for {make.__name__}() to replace")
        documents[path] = text[:found.start()] + make() + text[found.end():]
    return {**documents,
            "server.json": as_json(registry_entry),
            "bundle/manifest.json": as_json(manifest),
            ".claude-plugin/plugin.json": as_json(plugin),
            ".claude-plugin/marketplace.json": as_json(marketplace),
            "bundle/pyproject.toml": "[project]\n" + bundle_project,
            "mediawiki_mcp.py": single,
            "bundle/mediawiki_mcp.py": single,
            "bundle/LICENSE": (checkout / "LICENSE").read_text(encoding="utf-8")}


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    """Writes packaging_files() under the directory argv names (default: the checkout)."""
    parser = argparse.ArgumentParser(description="Writes server.json, bundle/, .claude-plugin/ and the "
                                     "generated tables of README.md and docs/ from the module.")
    parser.add_argument("directory", nargs="?", type=Path, default=CHECKOUT,
                        help="the checkout to write into (default: this one)")
    directory = parser.parse_args(argv).directory
    for path, text in packaging_files().items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
