"""Tests: The tool contract (tools/list and argument checking)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mediawiki_mcp.config import Config
from mediawiki_mcp.dispatch import ToolContext, run_tool
from mediawiki_mcp.registry import REGISTRY, Arg, Preview, Registry, signature_params
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import DEFAULT_TOOLSETS, SETTINGS, TOOLSETS
from mediawiki_mcp.state import ServerState
from realwiki import (
    RealWiki,
)
from tests.support import WRITABLE_NOWHERE, call, create, list_tools, make_server, run_script, tools_list_bytes


def test_every_tool_is_described_annotated_and_closed(tmp_path: Path) -> None:
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"wikis": {"a": {"server": "http://127.0.0.1:9"}, "b": {"server": "http://127.0.0.1:8"}}}))
    tools = list_tools(create_server(Config.from_env({"CONFIG": str(two), "MCP_TOOLSETS": "all"})))
    assert {t.name for t in tools} >= {"get-page", "get-pages", "search-page",
                                       "search-page-by-prefix", "get-site-info", "whoami"}
    for t in tools:
        assert t.title and t.title[0].isupper() and t.title[1:] == t.title[1:].lower() or t.name == "whoami"
        a = t.annotations
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        assert not t.description.lower().startswith(("this tool", "you "))
        schema = t.input_schema
        assert "additionalProperties" not in schema  # 29 bytes a tool; check_arguments refuses unknown ones
        # with two wikis, every tool that acts on a wiki takes `wiki`; add-wiki and the like act on none
        assert "wiki" in schema["properties"] or not REGISTRY.tools[t.name].scoped
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
            assert "title" not in prop
        assert t.output_schema is None


def test_a_list_of_choices_lists_no_cap_and_the_server_still_holds_it() -> None:
    server = create_server(Config.from_env({**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"}))
    changes = next(t for t in list_tools(server) if t.name == "get-recent-changes").input_schema["properties"]
    assert "maxItems" not in changes["types"] and changes["types"]["items"]["enum"] == ["edit", "new", "log",
                                                                                         "categorize"]
    assert changes["namespaces"]["maxItems"] == 50  # a list of any values keeps its cap in the schema
    refused = call(server, "get-recent-changes", types=["edit"] * 5)
    assert refused.is_error and refused.text == ("invalid_input: Argument 'types' takes at most 4 items, got 5; "
                                                 "split the call.")


def test_a_parameter_hint_in_optional_as_python_3_10_gives_it_is_read() -> None:
    """Python 3.10's get_type_hints wraps Optional[] around the hint of a parameter whose
    default is None; the registry reads the Annotated inside, or the module fails to import."""
    import typing

    def fn(ctx: Any, section: Any = None) -> str:
        return ""
    fn.__annotations__ = {"ctx": Any, "section": typing.Optional[  # noqa: UP045 - as Python 3.10 builds it
        typing.Annotated[int | None, Arg("Section number.", minimum=0)]], "return": str}
    (param,) = signature_params(fn).values()
    assert (param.name, param.kind, param.arg.minimum, param.required, param.default) == ("section", int, 0,
                                                                                       False, None)


def descriptions(env: dict[str, str]) -> dict[str, str]:
    return {t.name: t.description for t in list_tools(create_server(Config.from_env({"MCP_TOOLSETS": "all",
                                                                                        **env})))}


def test_descriptions_quote_the_configured_caps() -> None:
    """A cap at its default names the setting that changes it, so that no model looks for an
    argument that would; one the operator set is quoted as set."""
    default = descriptions(WRITABLE_NOWHERE)
    assert "Truncated at 50000 bytes by default (MCP_CONTENT_MAX_BYTES); offset reads the rest." in default[
        "get-page"]
    assert "The pages share 50000 bytes by default (MCP_CONTENT_MAX_BYTES): whole pages first" in default[
        "get-pages"]
    assert "Capped at 1000000 bytes of base64 by default (MCP_FILE_DATA_MAX_BYTES)." in default["get-file-data"]
    assert "Capped at 100 MB by default (MCP_UPLOAD_MAX_BYTES)." in default["upload-file"]
    assert "Over 100 MB by default (MCP_UPLOAD_MAX_BYTES), the wiki fetches it" in default["update-file-from-url"]
    assert "Reads at most 30 revisions by default (MCP_TEXT_ORIGIN_MAX_READS)." in default["find-text-origin"]
    for name, text in default.items():  # every "by default" of a cap says whose default it is
        for quoted in re.findall(r"(?:bytes|MB|base64|revisions) by default(?: \((\w+)\))?", text):
            assert quoted in SETTINGS, (name, text)
    configured = descriptions({**WRITABLE_NOWHERE, "MCP_CONTENT_MAX_BYTES": "20000",
                               "MCP_UPLOAD_MAX_BYTES": "5000000", "MCP_FILE_DATA_MAX_BYTES": "300000"})
    assert "Truncated at 20000 bytes; offset reads the rest." in configured["get-revision"]
    assert "HTML truncated at 20000 bytes." in configured["parse-wikitext"]
    assert "Capped at 300000 bytes of base64." in configured["get-file-data"]
    assert "Capped at 5 MB." in configured["update-file"]
    assert "Reads at most 12 revisions." in descriptions({**WRITABLE_NOWHERE, "MCP_TEXT_ORIGIN_MAX_READS": "12"}
                                                         )["find-text-origin"]
    assert "Over 5 MB, the wiki fetches it" in configured["upload-file-from-url"]
    assert "Capped at 123456 bytes." in descriptions({**WRITABLE_NOWHERE, "MCP_UPLOAD_MAX_BYTES": "123456"}
                                                      )["upload-file"]
    for name, text in configured.items():
        assert not re.search(r"50000|1000000|100 MB|(bytes|MB|base64) by default|_MAX_BYTES", text), name


def test_descriptions_name_only_tools_in_the_same_list(tmp_path: Path) -> None:
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"defaultWiki": "a", "wikis": {"a": {"server": "http://127.0.0.1:9"},
                                                            "b": {"server": "http://127.0.0.1:8"}}}))
    chosen = [{**WRITABLE_NOWHERE, "MCP_TOOLSETS": toolsets}
              for toolsets in ("all", *TOOLSETS, *(f"pages,{name}" for name in TOOLSETS))]
    for env in ({}, WRITABLE_NOWHERE, {"CONFIG": str(two)}, *chosen):
        tools = list_tools(create_server(Config.from_env(env)))
        absent = set(REGISTRY.tools) - {t.name for t in tools}
        for t in tools:
            texts = [t.description, *(p["description"] for p in t.input_schema["properties"].values())]
            named = {n for n in absent for text in texts if re.search(rf"(?<![\w-]){n}(?![\w-])", text)}
            assert not named, f"{t.name} names {named}, which this list does not offer"


def test_descriptions_hold_none_of_the_phrases_fresh_models_misread(tmp_path: Path) -> None:
    """Models given only the tool list misread these: shorthand for the client ('here'), who confirms,
    what start and end are, how get-pages shares its budget, fragments without a verb."""
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"defaultWiki": "a", "wikis": {"a": {"server": "http://127.0.0.1:9", "username":
                                                                   "Bot@mcp", "password": "0" * 32},
                                                             "b": {"server": "http://127.0.0.1:8"}}}))
    misread = re.compile(r"(?<![\w-])here\b|their client may ask|until then it fails|^Oldest:|^Newest\.$|"
                         r"the rest named|tag aside|not both text|^As edit\.$|own templates always|"
                         r"\(offset continues\)")
    for env in ({}, {**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"}, {"CONFIG": str(two), "MCP_TOOLSETS": "all"}):
        for t in list_tools(create_server(Config.from_env(env)), session=True):
            for text in (t.description, *(p["description"] for p in t.input_schema["properties"].values())):
                assert not misread.search(text), (t.name, text)
    start = next(t for t in list_tools(make_server(WRITABLE_NOWHERE)) if t.name == "get-user-contributions"
                 ).input_schema["properties"]
    assert start["start"]["description"] == ("Earliest time listed: ISO 8601 (UTC unless zoned), a date, today, "
                                             "yesterday or an age (3 days ago).")
    assert start["end"]["description"] == "Latest time listed, in start's forms; a date means its end."


def test_the_default_toolsets_serve_reading_editing_and_history_within_18900_bytes() -> None:
    """Measured as a client with a session sees the list, load-toolset in it, on one wiki with a bot
    password (the README's first call; write tools listed), and at zero configuration (English
    Wikipedia, read-only, no request sent); with every toolset on, at most 840 bytes a tool."""
    for env in ({}, WRITABLE_NOWHERE):
        sizes = tools_list_bytes(list_tools(create_server(Config.from_env(env)), session=True))
        assert sum(sizes.values()) <= 18_900, (env, sorted(sizes.items(), key=lambda item: -item[1])[:5])
    tools = list_tools(create_server(Config.from_env(WRITABLE_NOWHERE)), session=True)
    assert {t.name for t in tools} == {
        "get-page", "get-page-sections", "get-pages", "search-page", "search-page-by-prefix", "find-in-page",
        "get-site-info", "whoami", "get-category-members", "get-links-here", "get-page-links", "parse-wikitext",
        "get-template-info", "get-revision", "get-page-history", "compare-pages", "undo-edit", "create-page",
        "update-page", "move-page", "update-page-categories", "replace-in-pages", "load-toolset",
        "find-text-origin", "get-category-tree"}
    sizes = tools_list_bytes(tools)
    every = tools_list_bytes(list_tools(create_server(Config.from_env(
        {**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"})), session=True))
    print(f"default toolsets: {sum(sizes.values())} bytes for {len(sizes)} tools; every toolset: "
          f"{sum(every.values())} bytes for {len(every)} tools ({sum(every.values()) / len(every):.0f} a tool)")
    for name in TOOLSETS:
        own = [size for tool, size in {**sizes, **every}.items() if REGISTRY.tools[tool].toolset == name]
        print(f"  {name}: {sum(own)} bytes for {len(own)} tools ({sum(own) / max(len(own), 1):.0f} a tool)")
    assert sum(sizes.values()) <= 18_900, sorted(sizes.items(), key=lambda item: -item[1])[:5]
    assert sum(every.values()) <= 840 * len(every), (sum(every.values()), len(every))
    # one wiki: no wiki argument; no watchlist toolset: no watch argument, though a call may pass both
    assert all("wiki" not in t.input_schema["properties"] and "watch" not in t.input_schema["properties"]
               for t in tools)
    undo = next(t for t in tools if t.name == "undo-edit")
    assert "delete-page" not in undo.description and "rollback-edits" not in undo.description
    everything = list_tools(create_server(Config.from_env({**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"})))
    # load-toolset is listed to sessions only, and with every toolset on it has nothing to load;
    # copy-page needs a second wiki to copy from
    assert {t.name for t in everything} == set(REGISTRY.tools) - {"list-wikis", "remove-wiki", "load-toolset",
                                                                    "copy-page"}
    undo = next(t for t in everything if t.name == "undo-edit")
    assert "To remove a page, use delete-page; for a user's latest edits, use rollback-edits." in undo.description
    assert "watch" in undo.input_schema["properties"]


@pytest.mark.parametrize(("toolsets", "offered"), [
    ("files", {"get-file", "get-file-data", "upload-file", "update-file", "upload-file-from-url",
               "update-file-from-url"}),
    ("Default, admin", {"delete-page", "undelete-page", "protect-page", "rollback-edits"}),
    (" talk ,changes", {"add-talk-topic", "reply-on-talk-page", "get-recent-changes", "get-user-contributions",
                        "get-log-events", "get-watchlist", "watch-page"}),
])
def test_mcp_toolsets_chooses_the_groups_of_tools_offered(tmp_path: Path, toolsets: str,
                                                          offered: set[str]) -> None:
    names = {t.name for t in list_tools(create_server(Config.from_env({**WRITABLE_NOWHERE,
                                                                             "MCP_TOOLSETS": toolsets})))}
    default = {spec.name for spec in REGISTRY.tools.values() if spec.toolset in DEFAULT_TOOLSETS} - {
        "list-wikis", "load-toolset", "copy-page"}  # load-toolset: to a session only (this client speaks without
    # one); copy-page: with two wikis only
    assert names == offered | (default if "default" in toolsets.lower() else set())
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"toolsets": [t.strip() for t in toolsets.split(",")], "wikis": {
        "a": {"server": "http://127.0.0.1:9", "username": "Bot@mcp", "password": "0" * 32}}}))
    # the file's choice stands over the environment's
    file_names = {t.name for t in list_tools(create_server(Config.from_env({"MCP_TOOLSETS": "all",
                                                                                  "CONFIG": str(config)})))}
    assert file_names == names


@pytest.mark.parametrize("toolsets", ["pages,moderation", ",", "pages;edit"])
def test_an_unknown_toolset_stops_the_server_naming_the_toolsets(toolsets: str) -> None:
    done = run_script("--check", env={**WRITABLE_NOWHERE, "MCP_TOOLSETS": toolsets})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "MCP_TOOLSETS names no toolset" in done.stderr
    assert "the toolsets are pages, edit, history, talk, changes, files, admin, wikis, all and default" in done.stderr


def test_a_tool_outside_the_toolsets_says_which_toolset_would_offer_it_and_stops() -> None:
    server = create_server(Config.from_env({**WRITABLE_NOWHERE, "MCP_TOOLSETS": "pages"}))
    result = call(server, "delete-page", title="Apple", confirm=True)
    assert result.is_error and result.blocks == [  # the toolset, not every tool offered
        ("permission_denied: The tool delete-page is not offered with this server's configuration (it is in the "
         "toolset admin, which the operator can add to MCP_TOOLSETS); no retry by the model changes it.")]


def test_an_error_naming_a_tool_outside_the_toolsets_says_it_is_not_offered(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TOOLSETS="default"))
    revid = create(server, "Toolset undo creation test", "A page to undo.")
    refused = call(server, "undo-edit", revisionId=revid)
    assert refused.is_error and refused.blocks[0].endswith(
        "To remove the page, use delete-page. delete-page is not offered by this server (it is in the toolset "
        "admin, which the operator can add to MCP_TOOLSETS)."), refused.text
    everything = call(make_server(wiki.env()), "undo-edit", revisionId=revid)
    assert everything.blocks[0].endswith("To remove the page, use delete-page."), everything.text


def test_a_tool_that_writes_must_state_its_hints() -> None:
    registry = Registry()

    def writes(ctx: ToolContext) -> str:
        """Writes (a test-only tool)."""
        return ""
    for hints in ({}, {"destructive": True}, {"idempotent": False}):
        with pytest.raises(TypeError, match="state destructive= and idempotent="):
            registry.tool("test-guess", "Test guess", toolset="pages", read_only=False, **hints)(writes)
    for flags in ({"destructive": True}, {"idempotent": False}, {"dry_run": True}, {"idempotency_key": True}):
        with pytest.raises(TypeError, match="read-only"):
            registry.tool("test-read", "Test read", toolset="pages", read_only=True, **flags)(writes)
    with pytest.raises(TypeError, match="toolset 'moderation' is not one of pages, edit"):
        registry.tool("test-group", "Test group", toolset="moderation", read_only=True)(writes)
    assert registry.tools == {}
    registry.tool("test-read", "Test read", toolset="pages", read_only=True)(writes)
    spec = registry.tools["test-read"]
    assert (spec.read_only, spec.destructive, spec.idempotent, spec.open_world) == (True, False, True, True)


def test_a_guarded_tool_previews_until_confirmed_and_routes_only_to_tools_offered() -> None:
    registry = Registry()

    @registry.tool("test-drop", "Test drop", toolset="admin", read_only=False, destructive=True, idempotent=True,
                   guarded=True, shows="what it would drop",
                   see={"to restore it": "test-restore", "for the list": "list-wikis"})
    def drop(ctx: ToolContext) -> str:
        """Drops (a test-only tool)."""
        if not ctx.confirmed:
            raise Preview("Nothing was dropped.", f"drop everything on {ctx.wiki.key}.")
        return "dropped"
    state = ServerState.from_config(Config.from_env({**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"}),
                                      registry=registry)
    assert run_tool(state, "test-drop", {}) == ([(
        "invalid_input: Nothing was dropped. test-drop would drop everything on 127.0.0.1:9. Ask the user to "
        "confirm, then call test-drop again with confirm=true.")], True)
    assert run_tool(state, "test-drop", {"confirm": True}) == (["dropped"], False)
    assert registry.tools["test-drop"].schema()["properties"]["confirm"] == {
        "type": "boolean", "description": "true once the user agreed to what a call without it showed."}
    spec = registry.tools["test-drop"]
    # the model confirms: the user's request to drop is not their yes to what the preview showed
    model = ("Without confirm=true it only shows what it would drop; confirm=true acts, once the user agreed to "
             "that (their request does not count).")
    assert spec.description(absent={"list-wikis"}) == f"Drops (a test-only tool). {model} To restore it, use " \
                                                      "test-restore."
    assert spec.description(absent={"list-wikis", "test-restore"}) == f"Drops (a test-only tool). {model}"
    assert spec.description(absent={"list-wikis", "test-restore"}, confirmer="person") == (
        "Drops (a test-only tool). It first asks the user, showing what it would drop, and acts only on their yes.")
    with pytest.raises(TypeError, match="read-only"):
        registry.tool("test-read", "Test read", toolset="pages", read_only=True, guarded=True)(drop)
    with pytest.raises(TypeError, match="says what its preview shows"):
        registry.tool("test-blind", "Test blind", toolset="admin", read_only=False, destructive=True,
                      idempotent=True, guarded=True)(drop)


def test_zero_config_offers_no_write_tools() -> None:
    tools = list_tools(create_server(Config.from_env({"MCP_TOOLSETS": "all"})))
    # add-wiki changes only the server's own list of wikis, never a wiki
    assert all(t.annotations.read_only_hint for t in tools if t.name != "add-wiki")
    assert "add-wiki" in {t.name for t in tools}
    assert all(t.annotations.read_only_hint for t in list_tools(create_server(Config.from_env({}))))


BAD_ARGUMENTS = [
    ({"title": "A", "bogus": 1}, "Unknown argument 'bogus'"),
    ({}, "Missing required argument 'title'"),
    ({"title": 5}, "'title' must be a string"),
    ({"title": "   "}, "'title' must be a non-empty page title"),
    ({"title": "A" * 300}, "a page title has at most 255"),
    ({"title": "A\ud800"}, "invalid Unicode"),
    ({"title": "A", "section": True}, "'section' must be integer or string, got a boolean"),
    ({"title": "A", "section": 2.5}, "'section' must be an integer, got a number"),
    ({"title": "A", "section": "H" * 256}, "'section' is 256 characters long; at most 255"),
    ({"title": "A", "section": -1}, "'section' must be at least 0"),
    ({"title": "A", "content": "pdf"}, "'content' must be one of source, html, text, none"),
    ({"title": "A", "metadata": "yes"}, "'metadata' must be true or false"),
    ({"title": "A", "wiki": 3}, "'wiki' must be a string"),
    ({"title": "A[b]"}, "not a valid page title"),
]


@pytest.mark.parametrize("arguments, message", BAD_ARGUMENTS)
def test_bad_arguments_are_invalid_input_before_any_request(arguments: dict[str, Any], message: str) -> None:
    server = create_server(Config.from_env({"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php"}))
    result = call(server, "get-page", **arguments)
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("invalid_input: ") and message in result.blocks[0]


def test_get_pages_refuses_more_than_fifty_titles() -> None:
    server = create_server(Config.from_env({"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php"}))
    result = call(server, "get-pages", titles=[f"T{i}" for i in range(51)])
    assert result.is_error and result.blocks[0].startswith("invalid_input: Argument 'titles' takes at most 50")


def test_unknown_tool_is_invalid_input_in_one_short_line() -> None:
    server = create_server(Config.from_env({}))
    result = call(server, "delete-everything")
    assert result.is_error and result.blocks == [
        "invalid_input: Unknown tool 'delete-everything'. tools/list names the tools offered."]
    assert call(server, "get_page", title="Apple").blocks == [
        "invalid_input: Unknown tool 'get_page'. Did you mean get-page?"]
