"""Tests: Answers that must not mislead: warnings, error codes, titles, rows, moves, rights."""
from __future__ import annotations

import logging
import secrets
import unicodedata
import urllib.parse
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from mediawiki_mcp.client import MediaWikiClient
from mediawiki_mcp.errors import MW_ERROR_CATEGORIES, WikiError, error_from_api
from mediawiki_mcp.sections import section_list
from mediawiki_mcp.write_files import explain_warnings
from realwiki import (
    SEARCH_WORD,
    RealWiki,
    long_page_text,
)
from tests.support import (
    HISTORY_TITLE,
    Accounts,
    History,
    RequestCounter,
    Result,
    bare_login,
    call,
    config_env,
    content_of,
    create,
    field,
    file_versions,
    make_server,
    on_every_version,
    revision_ids,
    rows_of,
    run_script,
    two_wiki_config,
    unique_png,
    uploads_dir,
)

NAMESPACES_OF_THE_TEST_WIKI = "0 (Main), 1 Talk, 2 User, 3 User talk, 4 Test Wiki"


@pytest.mark.parametrize("tool, arguments, namespace", [
    ("search-page-by-prefix", {"prefix": "Fru", "namespace": 9999}, "9999"),
    ("get-recent-changes", {"namespaces": [9999]}, "9999"),
    ("get-category-members", {"category": "Fruits", "namespaces": [0, 9999]}, "9999"),
    ("get-links-here", {"title": "Apple", "namespaces": [9999]}, "9999"),
    ("search-page", {"query": "fruit", "namespaces": [-1]}, "-1"),
])
@on_every_version
def test_an_unknown_namespace_is_refused_naming_the_wikis_namespaces(
        bot_server: Any, wiki: RealWiki, tool: str, arguments: dict[str, Any], namespace: str) -> None:
    """MediaWiki drops a namespace it does not know with a warning and answers unfiltered."""
    result = call(bot_server, tool, **arguments)
    assert result.is_error and len(result.blocks) == 1, result.text
    assert result.blocks[0].startswith(f"invalid_input: {wiki.key} has no namespace {namespace} to use here. "
                                       f"Its namespaces: {NAMESPACES_OF_THE_TEST_WIKI}"), result.text
    assert "14 Category, 15 Category talk" in result.text


def test_a_prefix_in_one_namespace_and_a_namespace_argument_naming_another_are_refused(bot_server: Any) -> None:
    """With a namespace prefix in the text, MediaWiki's prefix search ignores its namespace parameter."""
    result = call(bot_server, "search-page-by-prefix", prefix="Category:Fru", namespace=10)
    assert result.is_error and result.blocks == [
        ("invalid_input: The prefix 'Category:Fru' is in namespace 14 (Category), but namespace is 10 "
         "(Template). Give the namespace once: in the prefix or as namespace.")]
    agreeing = call(bot_server, "search-page-by-prefix", prefix="Category:Fru", namespace=14)
    assert not agreeing.is_error and agreeing.blocks == ["Category:Fruits"]


def test_a_request_the_wiki_answers_only_in_part_fails_and_a_deprecation_is_only_logged(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    client = MediaWikiClient(wiki.api)
    with pytest.raises(WikiError) as ignored:
        client.get({"action": "query", "titles": "Apple", "prop": "info", "bogusparam": "1"})
    assert ignored.value.category == "upstream_failure" and ignored.value.code == "unrecognizedparams"
    assert "bogusparam" in ignored.value.message and "retry" not in ignored.value.message.lower()
    with pytest.raises(WikiError) as value:
        client.get({"action": "query", "list": "recentchanges", "rcprop": "title|bogusvalue"})
    assert value.value.category == "invalid_input" and "bogusvalue" in value.value.message
    with caplog.at_level(logging.DEBUG, logger="mediawiki_mcp"):
        found = client.get({"action": "query", "list": "search", "srsearch": "fruit", "srprop": "score"})
    assert found["query"]["search"]  # a deprecated value still works: the warning is only logged
    assert any("deprecation" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("code, category", [
    ("pagecannotexist", "invalid_input"), ("invalid-json-data", "invalid_input"),
    ("mycustomjsprotected", "permission_denied"), ("customjsprotected", "permission_denied"),
    ("nonfile-cannot-move-to-file", "invalid_input"), ("filetypemismatch", "invalid_input"),
    ("nosuchsection", "not_found"), ("immobile-target-namespace", "invalid_input"),
    ("cantchangecontentmodel", "permission_denied"), ("concurrency-limit", "rate_limited"),
    ("verification-error", "invalid_input"), ("missingcommenttext", "invalid_input"),
    ("hookaborted", "permission_denied"), ("spamdetected", "permission_denied"),
    ("fileexists-forbidden", "conflict"), ("mustbeloggedin", "authentication"),
])
def test_mediawiki_error_codes_get_their_true_category(code: str, category: str) -> None:
    error = error_from_api(code, "MediaWiki's own words.", "wiki.example.org")
    assert error.category == category and error.code == code
    assert "retry later" not in str(error).lower()


def test_only_failures_a_later_retry_can_fix_say_retry_later() -> None:
    for code, category in MW_ERROR_CATEGORIES.items():
        text = str(error_from_api(code, "Words.")).lower()
        assert "retry later" not in text and ("before retrying" in text) == (category == "rate_limited"), code
    for code in ("readonly", "internal_api_error_DBQueryError", "backend-fail-internal"):
        assert "retry later" in str(error_from_api(code, "Words.")).lower(), code
    unknown = str(error_from_api("weird-new-code", "Something odd happened."))
    assert unknown.startswith("upstream_failure: MediaWiki error weird-new-code") and "retry" not in unknown.lower()


def no_retry(result: Result) -> bool:
    return result.is_error and len(result.blocks) == 1 and "retry later" not in result.text.lower()


def test_permanent_failures_on_the_real_wiki_say_what_they_are(bot_server: Any, wiki: RealWiki) -> None:
    special = call(bot_server, "create-page", title="Special:Mcp test", source="x")
    assert no_retry(special) and special.text.startswith("invalid_input: Namespace doesn't allow actual pages.")
    for tool, arguments in (("update-page", {"source": "x"}), ("get-page", {})):
        special = call(bot_server, tool, title="Special:Random", **arguments)
        assert special.text == ("invalid_input: 'Special:Random' is a special page, which the wiki makes when "
                                "asked; it has no text to read or change.") and special.is_error
    json_page = call(bot_server, "create-page", title="Errors test data", source="{not json", contentModel="json")
    assert no_retry(json_page) and json_page.text.startswith("invalid_input: Invalid JSON")
    assert revision_ids(wiki, "Errors test data") == []
    own_js = call(bot_server, "create-page", title="User:Admin/common.js", source="var a;")
    assert no_retry(own_js) and own_js.text.startswith("permission_denied: ")
    create(bot_server, "Errors test move source", "Stays.")
    to_file = call(bot_server, "move-page", fromTitle="Errors test move source", toTitle="File:Errors test.png")
    assert no_retry(to_file) and to_file.text.startswith("invalid_input: Cannot move non-file to file namespace.")
    retyped = call(bot_server, "move-page", fromTitle="File:Red square.png", toTitle="File:Red square.jpg")
    assert no_retry(retyped) and retyped.text.startswith("invalid_input: The new file extension does not match")
    assert "give the new title the file's extension" in retyped.text
    assert wiki.wikitext("Errors test move source") == "Stays." and file_versions(wiki, "File:Red square.png")


def test_a_missing_section_lists_the_pages_sections_with_levels(bot_server: Any, wiki: RealWiki) -> None:
    title = "Errors test sections"
    create(bot_server, title, "Lead.\n== One ==\nA.\n=== One and a half ===\nB.\n== Two ==\nC.\n")
    listed = "Its sections: 0 (Lead), 1 (== One ==), 2 (=== One and a half ===), 3 (== Two ==)."
    for tool, arguments in (("get-page", {}), ("get-page", {"content": "html"}),
                            ("update-page", {"source": "New."})):
        result = call(bot_server, tool, title=title, section=99, **arguments)
        assert result.is_error and result.blocks[0].startswith(
            f"not_found: There is no section 99 in {title} on {wiki.key}. {listed}"), (tool, result.text)
        assert "search-page" not in result.text
    assert wiki.wikitext(title).startswith("Lead.")


def test_an_address_that_is_no_api_is_not_called_a_passing_failure(wiki: RealWiki) -> None:
    """What a page URL with a scriptpath builds: an address that answers HTML."""
    server = make_server({"MEDIAWIKI_URL": f"{wiki.url}/wiki/Main_Page/w/api.php"})
    result = call(server, "get-page", title="Apple")
    assert no_retry(result) and result.text.startswith(
        f"upstream_failure: {wiki.url}/wiki/Main_Page/w/api.php answered HTTP 404 with text/html, not "
        "MediaWiki API JSON: it is not the wiki's api.php."), result.text


def test_add_wiki_of_no_url_or_an_unknown_host_says_so_once(wiki: RealWiki) -> None:
    def unknown(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")
    server = make_server(wiki.env(), resolve=unknown)
    words = call(server, "add-wiki", wikiUrl="not a url at all")
    assert words.is_error and words.blocks == ["invalid_input: 'not a url at all' is not an http(s) URL of a wiki."]
    nowhere = call(server, "add-wiki", wikiUrl="https://wiki.nowhere.example/wiki/Main_Page")
    assert nowhere.is_error and nowhere.blocks == [
        ("invalid_input: The host wiki.nowhere.example of https://wiki.nowhere.example/w/api.php could not be "
         "resolved; check the URL.")]


def test_a_wrong_password_is_authentication_in_list_wikis_and_the_resource(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    server = make_server(config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki,
                                    B_PASS="0" * 32))
    listed = call(server, "list-wikis").text.splitlines()
    assert listed[1].startswith("other: Other Wiki, ") and "(read-only; private; no access: Login to " in listed[1]
    assert "unreachable" not in listed[1]

    async def read() -> str:
        async with Client(server) as client:
            return (await client.read_resource("mcp://wikis/other")).contents[0].text
    text = anyio.run(read)
    assert "No access: Login to " in text and "Unreachable" not in text and "0" * 32 not in text


@pytest.mark.wiki
def test_the_wikis_own_messages_come_in_english_with_a_next_step(accounts: Accounts) -> None:
    """Plain's language is German: the wiki would answer in German unless asked for English."""
    server = make_server(accounts.plain)
    result = call(server, "create-page", title="Special:Mcp test", source="x")
    assert result.is_error and result.text.startswith("invalid_input: Namespace doesn't allow actual pages.")
    assert "[pagecannotexist] Pages in this namespace (such as Special:) cannot be created" in result.text


# -- titles -----------------------------------------------------------------------------

def test_markers_write_titles_as_the_wiki_does(bot_server: Any) -> None:
    title = "Überlänge Ünïcödé"
    create(bot_server, title, long_page_text())
    marker = call(bot_server, "get-pages", titles=[title, "Apple"]).blocks[-1]
    assert f'call get-page with title="{title}" and section=N' in marker
    assert f'call get-page with title="{title}" and offset=' in marker and "\\u" not in marker
    html = call(bot_server, "get-page", title=title, content="html").blocks[-1]
    assert 'To read a specific section, call get-page again with content="html" and section=N.' in html


def test_the_title_length_limit_leaves_out_the_namespace_prefix(bot_server: Any, wiki: RealWiki) -> None:
    name = "Ä" * 127 + "x"  # 255 bytes, MediaWiki's limit for the title without its namespace
    created = call(bot_server, "create-page", title=f"Talk:{name}", source="At the limit.")
    assert not created.is_error, created.text
    assert content_of(call(bot_server, "get-page", title=f"Talk:{name}").blocks[0]) == "At the limit."
    over = call(bot_server, "get-page", title=f"Talk:{name}x")
    assert over.is_error and over.text.startswith("invalid_input: Argument 'title' is 256 bytes long after its "
                                                  "namespace prefix; a page title has at most 255.")


def test_a_percent_encoded_title_is_explained(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="Fruit%20salad")
    assert result.is_error and result.blocks == [
        ("invalid_input: Argument 'title' is percent-encoded (%20); page titles are written as the wiki shows "
         "them: 'Fruit salad'.")]


def test_a_fragment_in_a_title_is_explained(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="Target page#Details")
    assert result.is_error and result.blocks == [
        ("invalid_input: Argument 'title' ends in a fragment (#Details), which names a part of a page, not "
         "a page. Give the title alone ('Target page'); to read one section, get-page takes section=N.")]


def test_a_title_copied_from_an_address_is_explained_however_long_its_escapes(bot_server: Any) -> None:
    """A title is measured as the wiki would take it: a Cyrillic title copied from an address (three
    characters an escape, 304 in all) or one with a long fragment is explained, not called too long."""
    title = "Москва — столица Российской Федерации и крупнейший город"  # 104 bytes
    result = call(bot_server, "get-page", title=urllib.parse.quote(title.replace(" ", "_")))
    assert result.blocks == [(f"invalid_input: Argument 'title' is percent-encoded (%D0); page titles are "
                              f"written as the wiki shows them: {title!r}.")]
    heading = "Geschichte der Stadt und ihrer Vororte seit der Gründung im Mittelalter " * 3
    result = call(bot_server, "get-page", title=f"{title}#{heading}")
    assert result.text.startswith("invalid_input: Argument 'title' ends in a fragment"), result.text
    assert f"Give the title alone ({title!r})" in result.text


def test_no_answer_quotes_a_huge_argument_back_and_control_characters_are_named(bot_server: Any) -> None:
    """A megabyte where a title, name, time or continuation goes is invalid_input saying how long it is,
    before anything is sent, never quoted back whole (in the server's words or the wiki's); a title
    with a control character names it, where MediaWiki would speak of an invalid UTF-8 sequence."""
    big = "x" * 1_000_000
    counter = RequestCounter(bot_server)
    for tool, arguments, name, most in (
            ("get-page", {"title": "%20" + big}, "title", "1000003 bytes long"),
            ("get-page", {"title": "A#" + big}, "title", "1000002 bytes long"),
            ("get-page", {"title": big + ":A"}, "title", "1000002 bytes long"),
            ("get-page", {"title": "Apple", "wiki": big}, "wiki", "1000000 characters long"),
            ("get-recent-changes", {"start": big}, "start", "1000000 characters long"),
            ("get-recent-changes", {"continueFrom": big}, "continueFrom", "1000000 characters long"),
            ("get-user-contributions", {"user": "a|" + big}, "user", "1000002 characters long"),
            ("get-page-history", {"title": "Apple", "tag": big}, "tag", "1000000 characters long"),
            ("get-page-history", {"title": "Apple", "user": big}, "user", "1000000 characters long"),
            ("get-log-events", {"type": big}, "type", "1000000 characters long")):
        with counter.counting() as sent:
            refused = call(bot_server, tool, **arguments)
        assert refused.is_error and len(refused.blocks) == 1 and sent == [0], (tool, name, refused.text[:300])
        assert refused.text.startswith(f"invalid_input: Argument {name!r} is {most}"), (tool, refused.text[:300])
        assert len(refused.text) < 200, (tool, name, refused.text[:300])
    # a value outside a closed set, and numbers past a bound, are quoted in part
    head = "invalid_input: Argument "
    for arguments, start in (
            ({"content": big}, head + "'content' must be one of source, html, text, none; got 'xxxx"),
            ({"offset": -1e300}, head + "'offset' must be at least 0, got an integer of about 301 digits."),
            ({"offset": -10**120}, head + "'offset' must be at least 0, got an integer of about 121 digits.")):
        refused = call(bot_server, "get-page", title="Apple", **arguments)
        assert refused.is_error and refused.text.startswith(start) and len(refused.text) < 250, refused.text[:300]
    for title, shown in (("Apple\x01", "'\\x01'"), ("Ap\x1fple", "'\\x1f'"), ("Apple\x7f", "'\\x7f'")):
        refused = call(bot_server, "get-page", title=title)
        assert refused.blocks == [f"invalid_input: Argument 'title' is not a valid page title: it contains {shown}."]


# -- rows of history and recent changes ---------------------------------------------------

def test_flags_and_summaries_read_one_way_in_history_and_recent_changes(wiki: RealWiki) -> None:
    title = "Rows test page"
    session, token = bare_login(wiki, wiki.bot_user, wiki.bot_password)
    edits = [("First.", "", False), ("Second.", "minor", False), ("Third.", "", True),
             ("Fourth.", 'a | b "quoted" | c', True)]
    for text, summary, minor in edits:
        done = session.post(wiki.api, timeout=30, data={
            "action": "edit", "title": title, "text": text, "summary": summary, "token": token,
            "minor" if minor else "notminor": "1", "format": "json", "formatversion": "2"}).json()
        assert done["edit"]["result"] == "Success", done
    server = make_server(wiki.env())
    history = call(server, "get-page-history", title=title)
    assert history.blocks[0].startswith(f"Revisions of {title}, newest first (revision ID | timestamp | user | "
                                        "size change | minor (only when minor) | tags (only when any) | edit "
                                        "summary (quoted, only when any)):\n")
    rows = rows_of(history.blocks[0])
    created = ['"Created page with \\"First.\\""']  # MediaWiki's own summary of a new page
    assert [row.split(" | ", 4)[4:] for row in rows] == [
        ['minor | "a | b \\"quoted\\" | c"'], ["minor"], ['"minor"'], created]
    assert [row.split(" | ")[3] for row in rows] == ["+1", "-1", "+1", "+6"]
    recent = call(server, "get-recent-changes", limit=20).blocks[0]
    assert recent.startswith("Recent changes, newest first (time | page | change | user | size change | flags "
                             "(minor, bot; only when any) | tags (only when any) | edit summary (quoted, only "
                             "when any)):\n")
    mine = [row.split(" | ", 5)[5:] for row in rows_of(recent) if row.split(" | ")[1] == title]
    assert mine == [['minor | "a | b \\"quoted\\" | c"'], ["minor"], ['"minor"'], created]


# -- moves ----------------------------------------------------------------------------------

def test_a_move_reports_each_subpage_moved_or_not_and_why(bot_server: Any, wiki: RealWiki) -> None:
    for title in ("Help:Move report", "Help:Move report/A", "Help:Move report/B", "Help talk:Move report/A",
                  "Help:Move report 2/B"):
        create(bot_server, title, f"Text of {title}.")
    moved = call(bot_server, "move-page", fromTitle="Help:Move report", toTitle="Help:Move report 2",
                 moveSubpages=True)
    assert not moved.is_error, moved.text
    assert field(moved, "Subpages moved") == ("Help:Move report/A -> Help:Move report 2/A, "
                                              "Help talk:Move report/A -> Help talk:Move report 2/A")
    assert field(moved, "Subpages not moved") == (
        "Help:Move report/B (A page already exists at Help:Move report 2/B, or the page name you have "
        "chosen is not valid. Please choose another name.)")
    assert wiki.wikitext("Help:Move report/B") == "Text of Help:Move report/B."
    # the main namespace has no subpages: the talk subpage moves, the others stay, each named
    into_main = call(bot_server, "move-page", fromTitle="Help:Move report 2", toTitle="Move report main",
                     moveSubpages=True)
    assert not into_main.is_error, into_main.text
    assert field(into_main, "Subpages moved") == "Help talk:Move report 2/A -> Talk:Move report main/A"
    assert field(into_main, "Subpages not moved") == (
        "Help:Move report 2/A, Help:Move report 2/B (the namespace of Move report main has no subpages)")
    assert wiki.wikitext("Help:Move report 2/A") == "Text of Help:Move report/A."


@pytest.mark.wiki
def test_a_move_the_account_cannot_make_as_asked_is_refused_before_anything_moves(
        accounts: Accounts, bot_server: Any, wiki: RealWiki) -> None:
    create(bot_server, "Move refused source", "Stays here.")
    server = make_server(accounts.plain)
    result = call(server, "move-page", fromTitle="Move refused source", toTitle="Move refused target",
                  leaveRedirect=False)
    assert result.is_error and result.blocks == [
        (f"invalid_input: The account Plain cannot move pages without leaving a redirect on {wiki.key}: it "
         "lacks the 'suppressredirect' right, which the wiki gives to: bot, sysop. Nothing was moved. Call "
         "again without leaveRedirect=false to leave a redirect.")]
    assert wiki.wikitext("Move refused source") == "Stays here."
    assert revision_ids(wiki, "Move refused target") == []


# -- rights, uploads, deletions and other smaller statements -------------------------------

@pytest.mark.wiki
def test_delete_page_refuses_an_account_that_cannot_delete_before_asking_to_confirm(
        accounts: Accounts, bot_server: Any, wiki: RealWiki) -> None:
    create(bot_server, "Delete refused page", "Stays.")
    plain = call(make_server(accounts.plain), "delete-page", title="Delete refused page")
    assert plain.is_error and plain.blocks == [
        (f"permission_denied: The account Plain cannot delete pages on {wiki.key}: it lacks the 'delete' "
         "right, which the wiki gives to: sysop. Nothing was changed. Tell the user; retrying as the same "
         "account changes nothing.")]
    limited = call(make_server(accounts.limited), "delete-page", title="Delete refused page", confirm=True)
    assert limited.is_error and limited.blocks == [
        (f"permission_denied: The account Admin cannot delete pages on {wiki.key}: the bot password "
         "Admin@limited lacks the grant 'Delete pages, revisions, and log entries', which the user can add "
         "at Special:BotPasswords (the account itself has the 'delete' right). Nothing was changed. Tell the "
         "user; retrying as the same account changes nothing.")]
    assert wiki.wikitext("Delete refused page") == "Stays."


@pytest.mark.wiki
def test_an_upload_refused_for_a_missing_grant_names_the_grant(
        accounts: Accounts, wiki: RealWiki, tmp_path: Path) -> None:
    directory = uploads_dir(tmp_path)
    (directory / "granted.png").write_bytes(unique_png("granted"))
    server = make_server({**accounts.limited, "MCP_UPLOAD_DIRS": str(directory)})
    result = call(server, "upload-file", filepath=str(directory / "granted.png"), title="Grant test.png")
    assert result.is_error and result.text.startswith(
        f"permission_denied: The account Admin cannot upload files on {wiki.key}: the bot password "
        "Admin@limited lacks the grant 'Upload new files', which the user can add at Special:BotPasswords")
    assert "group" not in result.text and file_versions(wiki, "File:Grant test.png") == []


@pytest.mark.wiki
def test_check_lists_only_the_tools_the_account_can_use(accounts: Accounts) -> None:
    done = run_script("--check", env={k: v for k, v in accounts.plain.items()} | {"MCP_UPLOAD_DIRS": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    tools = done.stdout.splitlines()[2].removeprefix("  Tools: ").split(", ")
    assert {"get-page", "create-page", "update-page", "move-page", "upload-file-from-url"} <= set(tools)
    assert not {"delete-page", "undelete-page", "upload-file", "update-file"} & set(tools)


def test_upload_warnings_name_files_in_the_wikis_own_file_namespace() -> None:
    said = explain_warnings({"duplicate": ["Rot.png"], "exists-normalized": "Rot.PNG",
                               "badfilename": "Rot_quadrat.png"}, file_namespace="Datei")
    assert said == ["the same content is already on the wiki as Datei:Rot.png",
                    "a file with a similar name exists: Datei:Rot.PNG",
                    "the title is not a valid file name; the wiki would save it as Datei:Rot quadrat.png"]


def test_a_deleted_page_is_named_as_such(bot_server: Any, wiki: RealWiki) -> None:
    title = "Deleted page test"
    create(bot_server, title, "Soon gone.")
    assert not call(bot_server, "delete-page", title=title, confirm=True, comment="Test").is_error
    for tool, arguments in (("get-page", {}), ("get-page", {"content": "html"}),
                            ("delete-page", {}), ("delete-page", {"confirm": True}),
                            ("get-page-history", {}), ("update-page", {"source": "x"})):
        result = call(bot_server, tool, title=title, **arguments)
        assert result.is_error and result.blocks[0].startswith(f"not_found: Page '{title}' "), (tool, result.text)
        assert "was deleted" in result.text and "undelete-page restores it" in result.text, (tool, result.text)
        assert "create-page" not in result.text and "search" not in result.text, (tool, result.text)
    never = call(bot_server, "get-page", title="Never existed here")
    assert "search-page-by-prefix" in never.text and "deleted" not in never.text


def test_a_bad_revision_id_points_to_the_history(bot_server: Any) -> None:
    result = call(bot_server, "compare-pages", fromRevision=987654321, toTitle="Apple")
    assert result.is_error and result.text.startswith("not_found: ") and "get-page-history" in result.text


@on_every_version
def test_get_pages_says_why_a_title_has_no_page(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "get-pages", titles=["Apple", "Special:Version", "Talk:", "Nope Nope"])
    # MediaWiki's own reason, which 1.43 words otherwise ("... contains only a namespace prefix.")
    reason = wiki.raw_get(action="query", titles="Talk:")["query"]["pages"][0]["invalidreason"]
    assert reason.startswith("The requested page title is empty or contains only ")
    assert result.blocks[:3] == [
        "Missing pages: Nope Nope", f"Not valid page titles: Talk: ({reason})",
        "Special pages, which have no content: Special:Version"]
    assert result.blocks[3].startswith("Title: Apple\n") and len(result.blocks) == 4


def test_get_pages_reads_a_title_written_decomposed_as_get_page_does(bot_server: Any) -> None:
    """MediaWiki composes what it is sent (NFC) before it normalizes a title, so its answer never names
    the decomposed title asked: get-pages called such a page missing, where get-page read it."""
    title = f"Café Ünïcödé {secrets.token_hex(3)}"
    revision = create(bot_server, title, "Composed.")
    decomposed = unicodedata.normalize("NFD", title)
    page = f"Title: {title}\nRevision ID: {revision}\n\nComposed."
    assert call(bot_server, "get-page", title=decomposed).blocks == [page]
    result = call(bot_server, "get-pages", titles=[decomposed, decomposed.replace(" ", "_"), title])
    assert not result.is_error and result.blocks == [page], result.text


def test_counts_read_as_english(bot_server: Any, history: History) -> None:
    assert call(bot_server, "search-page", query=SEARCH_WORD).blocks[0].startswith("1 page matches.\n")
    marker = call(bot_server, "get-page-history", title=HISTORY_TITLE, limit=1).blocks[1]
    assert marker.startswith("More results available. Returned 1 revision. ")


def test_a_marker_names_every_section() -> None:
    sections = [(n, f"Part {n}") for n in range(1, 81)]
    listed = section_list(sections)
    assert listed.endswith("79 (Part 79), 80 (Part 80)") and "more" not in listed
