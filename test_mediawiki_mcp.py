"""Tests of the single file users copy (mediawiki_mcp.py, generated from the package) end to end,
and of the package's shape it is made from; the package's own tests are in tests/.

Run: python -m pytest (the whole suite), or python -m pytest -m "not wiki" (no real wiki)
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from mediawiki_mcp.cli import main
from mediawiki_mcp.registry import REGISTRY
from mediawiki_mcp.settings import SETTINGS
from mediawiki_mcp.wire import __version__
from realwiki import (
    RIVER_ARTICLE,
    RealWiki,
)
from tests.support import HERE, NODE_BIN, StdioSession, generator, node_tool, pyproject, with_node_path


def test_help_lists_every_environment_variable() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    for name in SETTINGS:
        assert name in done.stdout


@pytest.mark.parametrize("env, message", [
    ({"MEDIAWIKI_MCP_LOG_LEVEL": "FOO"},
     "MEDIAWIKI_MCP_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, not 'FOO'"),
    ({"MEDIAWIKI_MCP_LOG_LEVEL": "", "MEDIAWIKI_READ_ONLY": "maybe"},  # empty: the default level, no crash
     "MEDIAWIKI_READ_ONLY must be true or false, not 'maybe'"),
    ({"MEDIAWIKI_USER_AGENT": "Bötli/1.0 (bo@example.org)"}, "MEDIAWIKI_USER_AGENT must be printable ASCII"),
    ({"MCP_TRANSPORT": "http", "MCP_AUTH_TOKEN": " "}, "MCP_AUTH_TOKEN is set but empty"),
    ({"MCP_TRANSPORT": "http", "MCP_BIND": "not a host"},
     "The address to listen on (--host or MCP_BIND) must be an IP address or a host name, not 'not a host'"),
    ({"MCP_TRANSPORT": "http", "MCP_ALLOWED_HOSTS": "*"}, "MCP_ALLOWED_HOSTS takes hosts such as"),
])
def test_bad_settings_stop_the_console_script_with_exit_status_2_naming_them(env: dict[str, str],
                                                                            message: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_")) and k != "PORT"}
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py")], env={**clean, **env}, text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr)
    assert f"mediawiki-mcp: {message}" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_version() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--version"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == f"mediawiki-mcp {__version__}"


def test_a_bad_http_setting_stops_the_console_script_with_its_name() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--transport", "http"], check=False,
                          env=dict(os.environ, PORT="eighty"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "PORT must be a port number, not 'eighty'" in done.stderr


@pytest.mark.parametrize("single_file", [False, True], ids=["package", "single file"])
def test_without_the_login_extra_the_server_stops_naming_it(single_file: bool, tmp_path: Path) -> None:
    """Without cryptography the package names the extra; the single file, which does not carry the
    sign-in, names the package (the extra with it) even where cryptography is installed."""
    from cryptography.fernet import Fernet
    env = {"MCP_AUTH": "login", "MCP_AUTH_SECRET": Fernet.generate_key().decode()}
    if single_file:
        shutil.copy(HERE / "mediawiki_mcp.py", tmp_path)
        command, named = [str(tmp_path / "mediawiki_mcp.py")], "needs the package, which the single file"
    else:
        command = ["-c", ("import sys; sys.modules['cryptography'] = None; import mediawiki_mcp; "
                          "raise SystemExit(mediawiki_mcp.main(sys.argv[1:]))")]
        named = "needs the cryptography"
    done = subprocess.run([sys.executable, *command, "--transport", "http"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env}, cwd=tmp_path if single_file else HERE, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert named in done.stderr and "pip install 'mediawiki-mcp[login]'" in done.stderr
    assert env["MCP_AUTH_SECRET"] not in done.stderr


def test_the_state_store_without_its_client_stops_the_server_naming_the_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if it were not installed
    for name in [n for n in os.environ if n.startswith(("MEDIAWIKI_", "MCP_")) or n == "CONFIG"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MCP_STATE_URL", "redis://:pw@127.0.0.1:1/0")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "pip install 'mediawiki-mcp[redis]'" in err and "pw" not in err
    header = (HERE / "mediawiki_mcp.py").read_text().split("# ///", 2)[1]
    assert 'dependencies = ["mcp>=2.3,<3", "requests"]' in header  # the single file needs nothing more


def test_the_bundle_manifest_lists_every_tool_and_maps_each_setting() -> None:
    manifest = json.loads((HERE / "bundle" / "manifest.json").read_text())
    assert manifest["version"] == __version__ and manifest["name"] == pyproject()["name"]
    assert manifest["tools"] == [{"name": spec.name, "description": spec.description()}
                                 for spec in REGISTRY.tools.values()]
    server = manifest["server"]
    assert server["type"] == "uv" and server["entry_point"] == "mediawiki_mcp.py"
    config = server["mcp_config"]
    assert config["command"] == "uv" and "${__dirname}/mediawiki_mcp.py" in config["args"]
    fields = manifest["user_config"]
    targets = {value[len("${user_config."):-1]: name for name, value in config["env"].items()}
    assert set(targets.values()) <= set(SETTINGS)
    assert {"MEDIAWIKI_URL", "MEDIAWIKI_USERNAME", "MEDIAWIKI_PASSWORD", "MEDIAWIKI_TOKEN",
            "MEDIAWIKI_READ_ONLY", "MEDIAWIKI_USER_AGENT"} <= set(targets.values())
    for key, name in targets.items():
        assert fields[key]["description"].lower() == SETTINGS[name].described.lower()
        assert fields[key].get("sensitive", False) == SETTINGS[name].secret
    assert {key for key, field in fields.items() if field.get("sensitive")} == {
        key for key, name in targets.items()
        if name in ("MEDIAWIKI_USERNAME", "MEDIAWIKI_PASSWORD", "MEDIAWIKI_TOKEN")}
    # A list of directories cannot go into one environment variable: it becomes arguments.
    uploads = config["args"][config["args"].index("--upload-dirs") + 1]
    field = fields[uploads[len("${user_config."):-1]]
    assert (field["type"], field["multiple"], field["default"]) == ("directory", True, [])
    # Read-only until the user turns it off: anonymous editing is never the default.
    assert fields[targets.keys() and next(k for k, n in targets.items() if n == "MEDIAWIKI_READ_ONLY")][
        "default"] is True


def test_the_script_header_and_pyproject_name_the_same_dependencies() -> None:
    import tomllib
    source = (HERE / "mediawiki_mcp.py").read_text()
    block = re.search(r"^# /// script\n((?:#.*\n)*?)# ///$", source, re.MULTILINE)
    assert block, "the PEP 723 block is missing"
    header = tomllib.loads("".join(line[2:] + "\n" for line in block.group(1).splitlines()))
    project = pyproject()
    assert header["dependencies"] == project["dependencies"]
    assert header["requires-python"] == project["requires-python"]


def test_the_sdist_and_wheel_pass_twine_and_carry_complete_metadata(dists: Path) -> None:
    files = sorted(str(path) for path in dists.iterdir())
    assert sorted(Path(f).suffix for f in files) == [".gz", ".whl"], files
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *files],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    import zipfile
    with zipfile.ZipFile(next(dists.glob("*.whl"))) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    package = {f"mediawiki_mcp/{p.name}" for p in (HERE / "mediawiki_mcp").glob("*.py")}
    assert package <= set(names) and "mediawiki_mcp.py" not in names  # the package; the single file is for copying
    assert not any(n.startswith(("test_", "benchmarks/", "bundle/", "packaging/", "generate")) for n in names)
    headers = [line.split(": ", 1) for line in metadata.split("\n\n", 1)[0].splitlines() if ": " in line]
    assert ["Version", __version__] in headers
    project = pyproject()
    assert ["Requires-Python", project["requires-python"]] in headers
    from packaging.requirements import Requirement  # comes with build

    def requirements(texts: list[str]) -> set[tuple[str, Any]]:
        return {(r.name, r.specifier) for r in map(Requirement, texts)}
    assert requirements([v for k, v in headers if k == "Requires-Dist" and "extra ==" not in v]) == requirements(
        project["dependencies"])
    urls = {v.split(", ", 1)[0] for k, v in headers if k == "Project-URL"}
    assert {"Homepage", "Repository", "Issues"} <= urls
    versions = {v.rsplit(" :: ", 1)[1] for k, v in headers if k == "Classifier" and v.startswith(
        "Programming Language :: Python :: 3.")}
    minimum = int(project["requires-python"].removeprefix(">=3."))
    assert f"3.{minimum}" in versions and all(int(v[2:]) >= minimum for v in versions)
    assert "mcp-name: " in metadata  # the README, with the registry's ownership line, is the long description


@pytest.mark.node
def test_the_bundle_validates_packs_and_serves_the_wiki_as_its_manifest_says(
        wiki: RealWiki, tmp_path: Path) -> None:
    mcpb = node_tool("mcpb")
    sources = tmp_path / "bundle"
    for path, text in generator().packaging_files().items():
        if path.startswith("bundle/"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
    for args in (["validate", str(sources / "manifest.json")], ["pack", str(sources), str(tmp_path / "wiki.mcpb")],
                 ["unpack", str(tmp_path / "wiki.mcpb"), str(tmp_path / "unpacked")]):
        done = subprocess.run([mcpb, *args], capture_output=True, text=True, timeout=120, env=with_node_path(),
                              check=False)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    unpacked = tmp_path / "unpacked"
    assert sorted(p.name for p in unpacked.iterdir()) == ["LICENSE", "manifest.json", "mediawiki_mcp.py",
                                                          "pyproject.toml"]
    uploads = [tmp_path / "uploads-a", tmp_path / "uploads-b"]
    for directory in uploads:
        directory.mkdir()
    user_config = {"wiki_url": wiki.api, "username": wiki.bot_user, "password": wiki.bot_password,
                   "read_only": False, "user_agent": "BundleTest/1.0 (bundle@example.org)",
                   "upload_dirs": [str(d) for d in uploads], "toolsets": "default, files"}
    # The command, arguments and environment as Claude Desktop makes them: MCPB's own function.
    script = ("const {getMcpConfigForManifest} = await import(process.argv[1]);"
              "const fs = await import('node:fs');"
              "const manifest = JSON.parse(fs.readFileSync(process.argv[2] + '/manifest.json', 'utf8'));"
              "const config = await getMcpConfigForManifest({manifest, extensionPath: process.argv[2],"
              " systemDirs: {}, userConfig: JSON.parse(process.argv[3]), pathSeparator: '/'});"
              "console.log(JSON.stringify(config));")
    library = NODE_BIN.parent / "@anthropic-ai" / "mcpb" / "dist" / "index.js"
    done = subprocess.run([str(NODE_BIN / "node"), "--input-type=module", "-e", script, library.as_uri(),
                           str(unpacked), json.dumps(user_config)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    assert "${" not in json.dumps(config), config
    assert shutil.which(config["command"]), f"{config['command']} is not installed: pip install -e '.[test]'"
    # The host runs uv with what it finds; here, the Python running the tests, never a download.
    env = {**os.environ, "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never", **config["env"]}
    session = StdioSession([config["command"], *config["args"]], env=env, cwd=tmp_path)
    try:
        page = session.call("get-page", title="Long page")
        me = session.call("whoami")
        outside = session.call("upload-file", filepath="/etc/hostname", title="File:Bundle.txt")
        tools = {t["name"] for t in session.request("tools/list")["tools"]}
    finally:
        log = session.close()
    assert page["content"][-1]["text"].startswith("Content truncated at "), (page, log)
    assert wiki.bot_user.split("@")[0] in me["content"][0]["text"], me
    assert "update-page" in tools and "upload-file" in tools and "delete-page" not in tools  # as configured
    refusal = outside["content"][0]["text"]
    assert refusal.startswith("permission_denied: ") and all(str(d.resolve()) in refusal for d in uploads), refusal
    assert wiki.bot_password not in log


def single_file_maker() -> ModuleType:
    """packaging/single_file.py, which holds the layers and makes the single file."""
    spec = importlib.util.spec_from_file_location("single_file", HERE / "packaging" / "single_file.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package_modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text(), str(path)) for path in sorted((HERE / "mediawiki_mcp").glob("*.py"))
            if not path.stem.startswith("__")}


def relative_imports(tree: ast.Module, optional: Iterable[str]) -> list[tuple[str, str]]:
    """The package's modules a module imports, each with how: "type" (only the type checker sees it),
    "lazy" (importlib, where a setting asks for it: a name made at run time may be any of the
    ``optional`` modules) or "run"."""
    checking = {id(node) for top in tree.body if isinstance(top, ast.If) and ast.unparse(top.test) == "TYPE_CHECKING"
                for node in ast.walk(top)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            targets = [node.module] if node.module else [alias.name for alias in node.names]
            found += [(target, "type" if id(node) in checking else "run") for target in targets if target]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "importlib.import_module":
            name = node.args[0]
            if isinstance(name, ast.Constant):
                found.append((name.value.lstrip("."), "lazy"))
            else:  # optional_module's f".{name}"
                found += [(module, "lazy") for module in optional]
    return found


def test_each_module_imports_only_the_layers_below_it() -> None:
    """The client, the address guard and the text modules never import the server or the tools: each
    module imports at run time only modules before it in LAYERS, and no module of LAYERS imports an
    optional one by name (they are loaded by importlib where a setting asks, and named in OPTIONAL)."""
    maker, modules = single_file_maker(), package_modules()
    layers, optional = list(maker.LAYERS), maker.OPTIONAL
    assert sorted(modules) == sorted(layers + list(optional)), "every module is in LAYERS or OPTIONAL"
    upward = []
    for name, tree in modules.items():
        for target, how in relative_imports(tree, optional):
            assert target in modules, f"{name} imports {target}, which is not a module of the package"
            if name in optional or how == "type":
                continue  # an optional module sits above every layer; a type may be named from anywhere
            if target in optional and how != "lazy":
                upward.append(f"{name} imports the optional {target} by name")
            elif target not in optional and layers.index(target) >= layers.index(name):
                upward.append(f"{name} imports {target}, a layer above it")
    assert not upward, upward
    for lower in ("errors", "wire", "client", "guard", "render", "sections", "merge", "diff", "plaintext"):
        reached, todo = set(), [lower]
        while todo:
            for target, how in relative_imports(modules[todo.pop()], optional):
                if how != "type" and target not in reached:
                    reached.add(target)
                    todo.append(target)
        assert not reached & {"server", "dispatch", "registry", "http", "cli", "edit", "pages"}, (lower, reached)


def test_the_packages_modules_each_do_one_job_in_few_lines_and_share_no_name() -> None:
    """A docstring saying its job, at most 700 lines, module-level names unique across the package (the
    single file puts them in one namespace), and no module writing sys.modules."""
    seen: dict[str, str] = {}
    for name, tree in package_modules().items():
        lines = len((HERE / "mediawiki_mcp" / f"{name}.py").read_text().splitlines())
        assert ast.get_docstring(tree), f"{name}.py has no docstring saying its job"
        assert lines <= 700, f"{name}.py has {lines} lines"
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            else:
                continue
            for defined_name in defined:
                assert seen.setdefault(defined_name, name) == name, (
                    f"{defined_name} is defined in {seen[defined_name]}.py and {name}.py")
        assert "sys.modules" not in ast.unparse(tree), f"{name}.py touches sys.modules"


def test_a_bare_copy_of_the_single_file_serves_stdio_with_only_its_two_dependencies(
        wiki: RealWiki, tmp_path: Path) -> None:
    """The single file alone in an empty folder, run by uv from its PEP 723 header (an environment
    with mcp and requests and nothing else): initialize, then get-page on the real wiki."""
    from mcp.client.stdio import StdioServerParameters
    shutil.copy(HERE / "mediawiki_mcp.py", tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_", "VIRTUAL_ENV"))}
    env.update(wiki.env(), UV_PYTHON=sys.executable, UV_PYTHON_DOWNLOADS="never", UV_NO_CONFIG="1",
               UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")))
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is not installed: pip install -e '.[test]'"
    probe = subprocess.run([uv, "run", "--script", "mediawiki_mcp.py", "--version"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600, check=False)
    assert probe.returncode == 0 and probe.stdout.startswith("mediawiki-mcp "), probe.stderr[-2000:]
    freeze = subprocess.run([uv, "run", "--script", "mediawiki_mcp.py", "--check"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert freeze.returncode == 0, freeze.stdout + freeze.stderr
    process = StdioServerParameters(command=uv, args=["run", "--script", "mediawiki_mcp.py"], env=env,
                                    cwd=str(tmp_path))

    async def go() -> tuple[Any, Any]:
        async with Client(process) as client:
            return client.server_info, await client.call_tool("get-page", {"title": RIVER_ARTICLE})
    server_info, page = anyio.run(go)
    assert server_info.name == "mediawiki-mcp"
    texts = [block.text for block in page.content if block.type == "text"]
    assert not page.is_error and texts[0].startswith(f"Title: {RIVER_ARTICLE}\n"), texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mediawiki_mcp.py"]  # it wrote nothing beside itself
