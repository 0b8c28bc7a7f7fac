"""Tests: Packaging: the wheel, the Claude Desktop bundle, the registry entry, the clients."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from mediawiki_mcp.settings import SETTINGS
from mediawiki_mcp.wire import __version__
from realwiki import (
    RealWiki,
)
from tests.support import HERE, StdioSession, generator, node_tool, pyproject, run_script, with_node_path

GENERATED = ("mediawiki_mcp.py", "server.json", "bundle/manifest.json", "bundle/pyproject.toml",
             ".claude-plugin/plugin.json", ".claude-plugin/marketplace.json", "README.md", "docs/configuration.md")


def test_generated_packaging_files_are_current() -> None:
    generated = generator().packaging_files()
    for path in GENERATED:
        assert (HERE / path).read_text() == generated[path], (
            f"{path} differs from what packaging/generate.py makes: run python packaging/generate.py")


def test_the_registry_entry_matches_the_package_and_the_settings() -> None:
    entry = json.loads((HERE / "server.json").read_text())
    project = pyproject()
    owner_repo = urllib.parse.urlsplit(project["urls"]["Repository"]).path.strip("/")
    assert entry["name"] == f"io.github.{owner_repo}"
    assert f"mcp-name: {entry['name']}" in (HERE / "README.md").read_text()  # the registry's ownership proof
    assert entry["version"] == __version__ and 1 <= len(entry["description"]) <= 100
    (package,) = entry["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == ("pypi", project["name"],
                                                                                    __version__)
    assert package["transport"] == {"type": "stdio"}
    assert [v["name"] for v in package["environmentVariables"]] == list(SETTINGS)
    for variable in package["environmentVariables"]:
        assert variable["description"].lower() == SETTINGS[variable["name"]].described.lower()
        assert variable["isSecret"] == SETTINGS[variable["name"]].secret
        assert variable["isRequired"] is False  # with none set, the server reads English Wikipedia
    assert {"MEDIAWIKI_PASSWORD", "MEDIAWIKI_TOKEN", "MCP_AUTH_TOKEN"} <= {n for n, row in SETTINGS.items() if row.secret}


def test_the_installed_wheel_prints_its_version_and_lists_tools_over_stdio(installed_wheel: Path) -> None:
    done = subprocess.run([str(installed_wheel / "mediawiki-mcp"), "--version"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == f"mediawiki-mcp {__version__}", done.stderr
    session = StdioSession([str(installed_wheel / "mediawiki-mcp")], env={"PATH": os.environ.get("PATH", "")})
    try:
        assert session.init["serverInfo"] == {"name": "mediawiki-mcp", "version": __version__}
        names = [t["name"] for t in session.request("tools/list")["tools"]]
    finally:
        log = session.close()
    assert "get-page" in names and "update-page" not in names, log  # zero config: read-only Wikipedia
    assert session.process.returncode == 0, log


@pytest.mark.node
def test_the_mcp_inspector_cli_drives_the_installed_wheel(installed_wheel: Path, wiki: RealWiki) -> None:
    inspector = node_tool("mcp-inspector")
    base = [inspector, "--cli", "-e", f"MEDIAWIKI_URL={wiki.api}", "-e", f"MEDIAWIKI_USERNAME={wiki.bot_user}",
            "-e", f"MEDIAWIKI_PASSWORD={wiki.bot_password}", str(installed_wheel / "mediawiki-mcp")]
    # --strict: exit 6 on a tool schema some clients cannot take
    listed = subprocess.run([*base, "--method", "tools/list", "--strict"], capture_output=True, text=True,
                            timeout=120, env=with_node_path(), check=False)
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
    assert "get-page" in names and "update-page" in names
    called = subprocess.run([*base, "--method", "tools/call", "--tool-name", "get-page", "--tool-arg",
                             "title=Long page"], capture_output=True, text=True, timeout=120, env=with_node_path(),
                            check=False)
    assert called.returncode == 0, called.stdout[-2000:] + called.stderr[-2000:]
    content = json.loads(called.stdout)["content"]
    assert content[-1]["text"].startswith("Content truncated at "), content[-1]
    assert wiki.bot_password not in called.stdout + called.stderr


def test_upload_dirs_on_the_command_line_must_exist(tmp_path: Path) -> None:
    done = run_script("--upload-dirs", str(tmp_path), str(tmp_path / "missing"), env={})
    assert done.returncode == 2
    assert f"--upload-dirs: upload directory '{tmp_path / 'missing'}' does not exist" in done.stderr


def test_the_release_workflow_passes_actionlint() -> None:
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert actionlint, "actionlint is not installed: pip install -e '.[test]'"
    workflow = HERE / ".github" / "workflows" / "release.yml"
    done = subprocess.run([actionlint, str(workflow)], capture_output=True, text=True, timeout=120, cwd=HERE,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    text = workflow.read_text()
    assert "id-token: write" in text and "pypa/gh-action-pypi-publish" in text
    assert "password:" not in text and "secrets." not in text  # trusted publishing: no stored token


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", (HERE / "README.md").read_text(), re.DOTALL | re.MULTILINE)


def uvx_env(dists: Path, home: Path) -> dict[str, str]:
    """`uvx mediawiki-mcp` as after a release, with the wheel built here standing in for PyPI's,
    the Python running the tests, and Node 22 first on PATH."""
    return with_node_path({**os.environ, "HOME": str(home), "UV_FIND_LINKS": str(dists),
                           "UV_REFRESH_PACKAGE": "mediawiki-mcp", "UV_PYTHON": sys.executable,
                           "UV_PYTHON_DOWNLOADS": "never", "UV_CACHE_DIR": os.environ.get(
                               "UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))})


@pytest.mark.node
def test_the_readmes_claude_code_line_adds_a_server_that_connects(dists: Path, wiki: RealWiki,
                                                                   tmp_path: Path) -> None:
    (line,) = {line for block in readme_blocks("sh") for line in block.splitlines()
               if line.startswith("claude mcp add ")}
    env = uvx_env(dists, tmp_path) | {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                                      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    claude = node_tool("claude")
    project = tmp_path / "project"
    project.mkdir()
    argv = shlex.split(line.replace("https://wiki.example.org/w/api.php", wiki.api))
    added = subprocess.run([claude, *argv[1:]], capture_output=True, text=True, timeout=120, env=env, cwd=project,
                           check=False)
    assert added.returncode == 0, added.stdout + added.stderr
    listed = subprocess.run([claude, "mcp", "list"], capture_output=True, text=True, timeout=300, env=env,
                            cwd=project, check=False)
    assert "wiki: uvx mediawiki-mcp - ✔ Connected" in listed.stdout, listed.stdout + listed.stderr


@pytest.mark.node
def test_the_claude_code_plugin_asks_what_the_bundle_asks_and_passes_validation() -> None:
    plugin = json.loads((HERE / ".claude-plugin" / "plugin.json").read_text())
    bundle = json.loads((HERE / "bundle" / "manifest.json").read_text())
    assert (plugin["name"], plugin["version"]) == (pyproject()["name"], __version__)
    server = plugin["mcpServers"]["mediawiki"]
    assert (server["command"], server["args"]) == ("uvx", ["mediawiki-mcp", "--empty-means-unset"])
    fields = plugin["userConfig"]
    targets = {value[len("${user_config."):-1]: name for name, value in server["env"].items()}
    assert set(targets) == set(fields) and set(targets.values()) <= set(SETTINGS)
    for key, name in targets.items():
        assert fields[key]["description"].lower() == SETTINGS[name].described.lower()
        assert fields[key].get("sensitive", False) == SETTINGS[name].secret
        assert "default" in fields[key]  # Claude Code refuses to start a server with an option unset
    # Every field of the bundle, save that the bundle's folders (a list) are one folder here.
    bundle_env = bundle["server"]["mcp_config"]["env"]
    assert {key: field for key, field in fields.items() if key != "upload_dir"} == {
        key: field for key, field in bundle["user_config"].items() if f"${{user_config.{key}}}" in bundle_env.values()}
    assert (fields["upload_dir"]["type"], targets["upload_dir"]) == ("directory", "MCP_UPLOAD_DIRS")
    for manifest in (".claude-plugin/plugin.json", "."):  # the plugin, and the marketplace listing it
        done = subprocess.run([node_tool("claude"), "plugin", "validate", "--strict", manifest], cwd=HERE,
                              check=False, capture_output=True, text=True, timeout=120, env=with_node_path())
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.node
def test_the_readmes_claude_code_plugin_line_installs_a_server_that_connects(dists: Path, tmp_path: Path) -> None:
    (line,) = {line for block in readme_blocks("sh") for line in block.splitlines()
               if line.startswith("claude plugin install ")}
    marketplace = tmp_path / "checkout"  # what the plugin needs of the repository, which Claude Code copies
    for path in (".claude-plugin/plugin.json", ".claude-plugin/marketplace.json", "README.md", "LICENSE"):
        (marketplace / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / path, marketplace / path)
    env = uvx_env(dists, tmp_path) | {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                                      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    claude = node_tool("claude")
    argv = shlex.split(line.replace("mediawiki-mcp/mediawiki-mcp", str(marketplace)))
    installed = subprocess.run([claude, *argv[1:]], check=False, capture_output=True, text=True, timeout=300, env=env,
                               cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # With every field at its default: the zero-config server, read-only English Wikipedia.
    listed = subprocess.run([claude, "mcp", "list"], check=False, capture_output=True, text=True, timeout=300,
                            env=env, cwd=tmp_path)
    assert ("plugin:mediawiki-mcp:mediawiki: uvx mediawiki-mcp --empty-means-unset - ✔ Connected"
            in listed.stdout), listed.stdout + listed.stderr


@pytest.mark.node
def test_the_readmes_mcp_servers_entry_starts_the_server(dists: Path, tmp_path: Path) -> None:
    """The Claude Desktop entry, which Cursor and Windsurf share, run by the MCP Inspector."""
    (block,) = [block for block in readme_blocks("json") if '"mcpServers"' in block and '"uvx"' in block]
    entry = json.loads(block)
    # The Inspector hands a server only PATH, HOME and a few more: uv's settings go in the entry.
    env = uvx_env(dists, tmp_path)
    entry["mcpServers"]["wiki"]["env"].update(
        (name, value) for name, value in env.items() if name.startswith("UV_") or name == "SSL_CERT_FILE")
    (tmp_path / "mcp.json").write_text(json.dumps(entry))
    done = subprocess.run([node_tool("mcp-inspector"), "--cli", "--config", str(tmp_path / "mcp.json"),
                           "--server", "wiki", "--method", "tools/list"], capture_output=True, text=True,
                          timeout=300, env=env | {"MCP_INSPECTOR_SECRET_STORE": "memory"}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    names = [t["name"] for t in json.loads(done.stdout)["tools"]]
    assert "get-page" in names and "update-page" in names  # the entry's bot password makes the wiki writable


def test_empty_means_unset_reads_blank_variables_as_not_given(wiki: RealWiki) -> None:
    """The bundle sets every variable it maps, blank when the user left a field empty; without
    the flag a blank credential stops the server (it would make the wiki anonymous unnoticed)."""
    blank = {"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_USERNAME": "", "MEDIAWIKI_PASSWORD": "", "MEDIAWIKI_TOKEN": " ",
             "MEDIAWIKI_USER_AGENT": "", "MEDIAWIKI_MCP_LOG_LEVEL": "", "CONFIG": ""}
    refused = run_script("--check", env=blank)
    assert refused.returncode == 2 and "is set but empty" in refused.stderr, refused.stderr
    checked = run_script("--check", "--empty-means-unset", env=blank)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{wiki.key} (default): Test Wiki" in checked.stdout and "as anonymous, read-only" in checked.stdout
