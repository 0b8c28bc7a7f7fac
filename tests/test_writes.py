"""Tests: Page writes on the real wiki."""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp import Client

from mediawiki_mcp.client import Credentials, MediaWikiClient, RetryPolicy
from mediawiki_mcp.config import Config, WikiConfig
from mediawiki_mcp.errors import TAGS_NEXT_STEP, ResponseLost, WikiError
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import TOOLSETS
from mediawiki_mcp.state import ServerState
from realwiki import (
    BOT_GRANTS,
    RealWiki,
    php,
)
from tests.support import (
    DroppingProxy,
    FakeWiki,
    HoldingProxy,
    Reply,
    RequestCounter,
    Result,
    as_editor,
    assert_requests_per_call,
    big_section_page,
    bot_server_for,
    call,
    content_of,
    create,
    editor_edit,
    fake_server,
    field,
    latest_revision,
    list_tools,
    make_server,
    on_every_version,
    page_exists,
    posts,
    read_whole,
    revision_ids,
    sections_page,
    sizes_on_wiki,
)

WRITE_TOOLS = ("create-page", "update-page", "move-page", "delete-page", "undelete-page")


def test_write_tools_are_annotated_by_what_they_do(bot_server: Any) -> None:
    tools = {t.name: t for t in list_tools(bot_server)}
    hints = {name: (t.annotations.read_only_hint, t.annotations.destructive_hint,
                    t.annotations.idempotent_hint) for name, t in tools.items() if name in WRITE_TOOLS}
    assert hints == {"create-page": (False, False, True), "update-page": (False, True, False),
                     "move-page": (False, True, True), "delete-page": (False, True, True),
                     "undelete-page": (False, False, True)}
    assert all("idempotencyKey" in tools[n].input_schema["properties"] for n in WRITE_TOOLS)
    assert {n for n in WRITE_TOOLS if "dryRun" in tools[n].input_schema["properties"]} == {
        "create-page", "update-page"}


@on_every_version
def test_create_page_makes_a_page_and_never_overwrites_one(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write create test"
    result = call(bot_server, "create-page", title=title, source="First text.", comment="Start it")
    assert not result.is_error and result.blocks[0].startswith("Created.\nTitle: Write create test\n")
    revid = int(field(result, "Revision ID"))
    assert field(result, "URL") == f"{wiki.url}/wiki/Write_create_test"
    assert field(result, "Diff") == f"{wiki.url}/w/index.php?oldid={revid}"
    assert wiki.wikitext(title) == "First text."
    assert latest_revision(wiki, title)["comment"] == "Start it (via mediawiki-mcp)"
    again = call(bot_server, "create-page", title=title, source="Other text.")
    assert again.is_error and again.blocks[0].startswith("conflict: ")
    assert "update-page" in again.text
    assert wiki.wikitext(title) == "First text." and revision_ids(wiki, title) == [revid]


def test_create_page_refuses_an_empty_or_blank_source_dry_run_or_not(bot_server: Any, wiki: RealWiki) -> None:
    """An empty page is what update-page refuses to leave without blank=true: create-page makes none,
    and its dry run does not call the text 'what the page already holds' of a page that is not there."""
    title = f"Write create empty test {secrets.token_hex(3)}"
    for source, said in (("", "empty"), (" \n\t\n", "blank")):
        for dry_run in (True, False):
            result = call(bot_server, "create-page", title=title, source=source, dryRun=dry_run)
            assert result.is_error and result.blocks[0] == (
                f"invalid_input: Nothing was saved{' (dry run)' if dry_run else ''}: source is {said}, so the "
                "page would be created empty. Give the page's text as source."), result.text
    assert not page_exists(wiki, title)


@on_every_version
def test_update_with_latest_id_refuses_an_overlapping_edit_by_another_account(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write conflict test"
    create(bot_server, title, "Line one.\nLine two is the one both change.\nLine three.")
    seen = call(bot_server, "get-page", title=title)
    latest = int(field(seen, "Revision ID"))
    editor_edit(wiki, title, "Line one.\nLine two, as the Editor wrote it.\nLine three.")
    result = call(bot_server, "update-page", title=title, latestId=latest,
                  source="Line one.\nLine two, as the model wrote it.\nLine three.")
    assert result.is_error and result.blocks[0].startswith("conflict: ")
    assert "get-page" in result.text
    assert "Line two, as the Editor wrote it." in wiki.wikitext(title)
    assert latest_revision(wiki, title)["user"] == "Editor"


@on_every_version
@pytest.mark.parametrize("pinned_by", ["read", "latestId"])
def test_a_conflict_names_the_revisions_made_since_their_authors_and_shows_their_change(
        wiki: RealWiki, pinned_by: str) -> None:
    server = make_server(wiki.env())
    title = f"Write conflict named by {pinned_by} test"
    create(bot_server_for(wiki), title, "Line one.\nLine two is the one both change.\nLine three.")
    latest = int(field(call(server, "get-page", title=title), "Revision ID"))
    session, token = as_editor(wiki)
    done = session.post(wiki.api, data={"action": "edit", "title": title, "token": token, "format": "json",
                                        "text": "Line one.\nLine two, as the Editor wrote it.\nLine three.",
                                        "summary": "Editor's wording"}).json()
    editor = done["edit"]["newrevid"]
    result = call(server, "update-page", title=title,
                  source="Line one.\nLine two, as the model wrote it.\nLine three.",
                  **({"latestId": latest} if pinned_by == "latestId" else {}))
    assert result.is_error and result.blocks[0].startswith("conflict: "), result.text
    assert f'The edits made since: {editor} by Editor ("Editor\'s wording").' in result.text, result.text
    assert (f"(revision {latest} to {editor}):\n@@ -2 +2 @@\n-Line two is the one both change.\n"
            "+Line two, as the Editor wrote it.\nSomeone else changed the page") in result.text, result.text
    assert wiki.wikitext(title) == "Line one.\nLine two, as the Editor wrote it.\nLine three."


def test_a_find_gone_since_this_clients_read_says_who_changed_it(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write find gone since read test"
    create(bot_server_for(wiki), title, "A port opened in 1850.\n\nThe town grew.")
    read = int(field(call(server, "get-page", title=title), "Revision ID"))
    editor_edit(wiki, title, "A harbour opened in 1850.\n\nThe town grew.")
    editor = revision_ids(wiki, title)[0]
    result = call(server, "update-page", title=title, find="A port opened", replace="A port was opened")
    assert result.is_error and result.blocks[0].startswith("invalid_input: The text to find does not occur")
    assert f"It is in revision {read}, the one last read here, and was changed since, by the revisions " \
           f"{editor} by Editor" in result.text, result.text
    assert wiki.wikitext(title) == "A harbour opened in 1850.\n\nThe town grew."


@on_every_version
def test_update_with_latest_id_keeps_a_non_overlapping_edit_by_another_account(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write merge test"
    create(bot_server, title, "Top line.\n\nMiddle paragraph.\n\nBottom line.")
    latest = int(field(call(bot_server, "get-page", title=title), "Revision ID"))
    editor_edit(wiki, title, "Top line, edited by the Editor.\n\nMiddle paragraph.\n\nBottom line.")
    result = call(bot_server, "update-page", title=title, latestId=latest,
                  source="Top line.\n\nMiddle paragraph.\n\nBottom line, edited by the model.")
    assert not result.is_error, result.text
    assert wiki.wikitext(title) == ("Top line, edited by the Editor.\n\nMiddle paragraph.\n\n"
                                    "Bottom line, edited by the model.")


@on_every_version
@pytest.mark.parametrize("section", [None, "Economy"])
def test_a_replacement_without_latest_id_from_a_new_process_does_not_revert_a_colleague(
        wiki: RealWiki, section: str | None) -> None:
    """Session 1 reads the page; a colleague adds a sentence; a new server process (the client
    restarted) writes the text read in session 1: without latestId it is refused, naming the latest
    revision and its author; with the revision read, the colleague's sentence is kept."""
    env = wiki.env()
    first, second = make_server(env), make_server(env)
    title = f"Write restart colleague test {section or 'page'}"
    text = "Lead of the town.\n\n== Economy ==\nFishing since 1720.\n\nA market since 1801.\n\n== History ==\nFounded in 1200."
    create(bot_server_for(wiki), title, text)
    read = call(first, "get-page", title=title, **({"section": section} if section else {}))
    revid = int(field(read, "Revision ID"))
    seen = content_of(read.blocks[0])
    editor_edit(wiki, title, text.replace("Founded in 1200.", "Founded in 1200.\n\nA port opened in 1850.")
                .replace("Fishing since 1720.", "Fishing since 1720, and whaling."))
    latest = revision_ids(wiki, title)[0]
    mine = seen.replace("A market since 1801.", "A market since 1802.")
    where = {"section": section} if section else {}
    refused = call(second, "update-page", title=title, source=mine, **where)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: no read of ")
    assert f"The latest is revision {latest}, by Editor" in refused.text and "latestId=" in refused.text
    assert revision_ids(wiki, title)[0] == latest
    done = call(second, "update-page", title=title, source=mine, latestId=revid, **where)
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == (
        "Lead of the town.\n\n== Economy ==\nFishing since 1720, and whaling.\n\nA market since 1802.\n\n"
        "== History ==\nFounded in 1200.\n\nA port opened in 1850.")


@on_every_version
@pytest.mark.parametrize("read", ["find-in-page", "content-none", "get-page-sections", "content-text",
                                  "get-revision-none", "get-revision-text", "find-in-page-revision",
                                  "get-pages-none"])
def test_every_read_that_shows_a_revision_pins_it_as_the_base_of_the_next_write(
        wiki: RealWiki, read: str) -> None:
    """A find, content='none', an outline, rendered text, get-revision of the latest revision: each
    shows a revision ID, and the model's next write is made on that revision, so a colleague's edit
    since is merged in, not reverted."""
    server = make_server(wiki.env())
    title = f"Write pinned by {read} test"
    text = "Top line.\n\nMiddle line.\n\nBottom line from 1900."
    revid = create(bot_server_for(wiki), title, text)
    shown = (call(server, "find-in-page", title=title, find="1900") if read == "find-in-page" else
             call(server, "find-in-page", title=title, find="1900", revisionId=revid)
             if read == "find-in-page-revision" else
             call(server, "get-pages", titles=[title], content="none") if read == "get-pages-none" else
             call(server, "get-page", title=title, content="none") if read == "content-none" else
             call(server, "get-page-sections", title=title) if read == "get-page-sections" else
             call(server, "get-revision", revisionId=revid, content=read.rpartition("-")[2])
             if read.startswith("get-revision") else
             call(server, "get-page", title=title, content="text"))
    assert not shown.is_error and field(shown, "Revision ID") == str(revision_ids(wiki, title)[0])
    editor_edit(wiki, title, text.replace("Top line.", "Top line, and the Editor's words."))
    done = call(server, "update-page", title=title, source=text.replace("1900", "1901"))
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == "Top line, and the Editor's words.\n\nMiddle line.\n\nBottom line from 1901."


@on_every_version
@pytest.mark.parametrize("read", ["find-in-page", "content-none", "get-page-sections", "content-text"])
@pytest.mark.parametrize("section", [None, 1])
def test_a_read_showing_a_newer_revision_after_the_wikitext_read_does_not_move_the_base_of_that_text(
        wiki: RealWiki, read: str, section: int | None) -> None:
    """The model reads the wikitext; a colleague edits; the model then finds a word, asks for the
    revision ID, the outline or the rendered page, which show the colleague's revision but not its
    wikitext: the text the model writes back is still made from its wikitext read, so the
    colleague's edit is merged in, not silently reverted."""
    server = make_server(wiki.env())
    title = f"Write later {read} read {section} test"
    text = "Lead line.\n\n== Part ==\nTop line.\n\nMiddle line.\n\nBottom line from 1900."
    create(bot_server_for(wiki), title, text)
    where = {} if section is None else {"section": section}
    seen = content_of(call(server, "get-page", title=title, **where).blocks[0])
    editor_edit(wiki, title, text.replace("Top line.", "Top line, and the Editor's words."))
    shown = (call(server, "find-in-page", title=title, find="1900") if read == "find-in-page" else
             call(server, "get-page", title=title, content="none") if read == "content-none" else
             call(server, "get-page-sections", title=title) if read == "get-page-sections" else
             call(server, "get-page", title=title, content="text"))
    assert not shown.is_error and field(shown, "Revision ID") == str(revision_ids(wiki, title)[0])
    done = call(server, "update-page", title=title, source=seen.replace("1900", "1901"), **where)
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == ("Lead line.\n\n== Part ==\nTop line, and the Editor's words.\n\nMiddle line.\n\n"
                                    "Bottom line from 1901.")


def test_a_history_or_a_diff_read_since_pins_nothing_so_the_edit_it_lists_is_merged_in(wiki: RealWiki) -> None:
    """get-page-history and compare-pages name the latest revision but show none of its text; a model
    looks there at a colleague's edit, then writes from the text it read before: that read stays the
    base, so the colleague's edit is merged in, not reverted."""
    server = make_server(wiki.env())
    title = "Write after history test"
    text = "Top line.\n\nMiddle line.\n\nBottom line from 1900."
    revid = create(bot_server_for(wiki), title, text)
    call(server, "get-page", title=title)
    editor_edit(wiki, title, text.replace("Top line.", "Top line, and the Editor's words."))
    latest = revision_ids(wiki, title)[0]
    history = call(server, "get-page-history", title=title)
    assert f"\n{latest} | " in history.text, history.text
    diff = call(server, "compare-pages", fromRevision=revid, toTitle=title)
    assert f"{title}, revision {latest} (" in diff.text, diff.text
    done = call(server, "update-page", title=title, source=text.replace("1900", "1901"))
    assert not done.is_error and f"merged with the edits made since revision {revid}" in done.text, done.text
    assert wiki.wikitext(title) == "Top line, and the Editor's words.\n\nMiddle line.\n\nBottom line from 1901."


def test_a_write_after_a_read_costs_no_more_requests_than_before(wiki: RealWiki) -> None:
    """The pins and checks of a write use what its one read of the page brings: after a read in the
    same session, a whole-page, section, find or append write is a read, the edit and the sizes."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    title = "Write requests after a read test"
    create(server, title, "Lead.\n== One ==\nFirst.\n== Two ==\nSecond.\n\n[[Category:Counted]]")
    call(server, "get-page", title=title)
    calls = [
        ("get-page", {"title": title}, 1),
        ("update-page", {"title": title, "source": "Lead, edited.\n== One ==\nFirst.\n== Two ==\nSecond.\n\n"
                                                   "[[Category:Counted]]"}, 3),
        ("get-page", {"title": title, "section": 2}, 1),
        ("update-page", {"title": title, "section": 2, "source": "== Two ==\nSecond, edited."}, 3),
        ("update-page", {"title": title, "find": "First.", "replace": "First, edited."}, 3),
        ("update-page", {"title": title, "mode": "append", "source": "Appended."}, 3),
        ("get-page", {"title": title, "content": "none"}, 1),
        ("update-page", {"title": title, "section": 1, "source": "== One ==\nFirst, again."}, 3),
    ]
    assert_requests_per_call(server, counter, calls)


def test_latest_id_of_another_page_is_refused(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write wrong base test"
    revid = create(bot_server, title, "Text.")
    other = revision_ids(wiki, "Apple")[0]
    result = call(bot_server, "update-page", title=title, source="New.", latestId=other)
    assert result.is_error and result.blocks[0].startswith(f"invalid_input: latestId {other} is not a revision")
    assert revision_ids(wiki, title) == [revid]


@on_every_version
def test_writing_back_a_truncated_section_is_refused_until_it_is_read_whole(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write truncated section test"
    create(server, title, big_section_page())
    first = call(server, "get-page", title=title, section=2)
    assert len(first.blocks) == 2 and first.blocks[1].startswith("Content truncated at ")
    seen = content_of(first.blocks[0])
    assert "Sentence 005" in seen and "The very last line" not in seen
    changed = seen.replace("Sentence 005 of the big section.", "Sentence five, reworded.")
    refused = call(server, "update-page", title=title, section=2, source=changed)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: Section 2 ")
    assert "find and replace" in refused.text and "offset=" in refused.text
    assert "The very last line of the big section." in wiki.wikitext(title)
    whole = read_whole(server, title=title, section=2)
    assert whole.endswith("The very last line of the big section.")
    done = call(server, "update-page", title=title, section=2,
                source=whole.replace("Sentence 005 of the big section.", "Sentence five, reworded."))
    assert not done.is_error, done.text
    text = wiki.wikitext(title)
    assert "Sentence five, reworded." in text and "The very last line of the big section." in text
    assert "Sentence 119 of the big section." in text and text.endswith("== After ==\nThe end.")


def test_a_truncated_page_read_guards_whole_writes_and_unseen_sections(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write truncated page test"
    create(server, title, big_section_page())
    first = call(server, "get-page", title=title)
    assert len(first.blocks) == 2
    seen = content_of(first.blocks[0])
    whole_page = call(server, "update-page", title=title, source=seen + "\n")
    assert whole_page.is_error and whole_page.blocks[0].startswith("invalid_input: Nothing was saved: Page ")
    unseen_section = call(server, "update-page", title=title, section=2, source="== Big ==\nShort now.")
    assert unseen_section.is_error and "get-page with section=2" in unseen_section.text
    assert "The very last line of the big section." in wiki.wikitext(title)
    # Section 1 was shown whole by that read, and find-replace needs no whole read.
    assert not call(server, "update-page", title=title, section=1,
                    source="== Small ==\nA small section, edited.").is_error
    assert not call(server, "update-page", title=title, find="The very last line",
                    replace="The final line").is_error
    text = wiki.wikitext(title)
    assert "A small section, edited." in text and "The final line of the big section." in text
    assert "Sentence 119 of the big section." in text


@on_every_version
def test_a_cut_read_written_back_whole_from_a_new_server_process_is_refused(wiki: RealWiki) -> None:
    """A client restarted with the conversation kept starts a new server process, which holds no read
    of the page: the text the model kept from a cut read would drop the sections it never saw."""
    env = wiki.env(MCP_CONTENT_MAX_BYTES="1500")
    first, second = make_server(env), make_server(env)  # two processes: no read ledger in common
    title = "Write cut read new session test"
    revid = create(bot_server_for(wiki), title, sections_page(30))
    read = call(first, "get-page", title=title)
    assert read.blocks[-1].startswith("Content truncated at ") and "offset=" in read.blocks[-1]
    cut = content_of(read.blocks[0]).replace("Intro of the page.", "Introduction of the page.")
    same_session = call(first, "update-page", title=title, source=cut)
    assert same_session.is_error and "was not read whole" in same_session.text
    unpinned = call(second, "update-page", title=title, source=cut)
    assert unpinned.is_error and unpinned.blocks[0].startswith(
        f"invalid_input: Nothing was saved: no read of {title!r} is on record for this client"), unpinned.text
    assert f"The latest is revision {revid}, by {wiki.bot_user.partition('@')[0]}" in unpinned.text
    assert f"latestId={revid}" in unpinned.text
    pinned = call(second, "update-page", title=title, source=cut, latestId=revid)
    assert pinned.is_error and pinned.blocks[0].startswith(
        "invalid_input: Nothing was saved: this text would remove sections "), pinned.text
    assert "30 (Part 30)" in pinned.text or "more" in pinned.text
    assert "has not read that revision whole" in pinned.text and "offset" in pinned.text
    assert wiki.wikitext(title) == sections_page(30).rstrip() and revision_ids(wiki, title) == [revid]
    # read whole in this process, the same write goes through
    whole = read_whole(second, title=title)
    done = call(second, "update-page", title=title, latestId=revid,
                source=whole.replace("Intro of the page.", "Introduction of the page."))
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == sections_page(30).rstrip().replace("Intro of", "Introduction of")


def test_the_latest_revision_read_through_get_revision_counts_as_get_pages_read_cut_or_whole(
        wiki: RealWiki) -> None:
    """get-revision of the latest revision is a read of the page: cut, its text is not written back
    whole; read on to the end with offset, the page is known whole and the same write goes through."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1500"))
    title = "Write cut get-revision read test"
    revid = create(bot_server_for(wiki), title, sections_page(30))
    cut = content_of(call(server, "get-revision", revisionId=revid).blocks[0])
    refused = call(server, "update-page", title=title, source=cut.replace("Intro of", "Introduction of"))
    assert refused.is_error and "was not read whole" in refused.text, refused.text
    whole = read_whole(server, "get-revision", revisionId=revid)
    shorter = whole.replace("Intro of", "Introduction of").split("== Part 21 ==")[0]
    done = call(server, "update-page", title=title, source=shorter)
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == shorter.rstrip()


def test_a_cut_read_written_back_from_a_restarted_console_script_is_refused(wiki: RealWiki) -> None:
    """The installed console script over real stdio, started twice as a desktop client restarts it:
    the second process was shown nothing, so the text the first one cut is not written back whole."""
    from mcp.client.stdio import StdioServerParameters
    script = shutil.which("mediawiki-mcp", path=str(Path(sys.executable).parent)) or shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_"))}
    process = StdioServerParameters(command=script, env={**clean, **wiki.env(MCP_CONTENT_MAX_BYTES="1500")})
    title = "Write cut read restarted script test"
    revid = create(bot_server_for(wiki), title, sections_page(20))

    def session(tool: str, **arguments: Any) -> Result:
        async def go() -> Any:
            async with Client(process) as client:
                return await client.call_tool(tool, arguments)
        result = anyio.run(go)
        return Result([block.text for block in result.content if block.type == "text"], bool(result.is_error))
    cut = content_of(session("get-page", title=title).blocks[0])
    refused = session("update-page", title=title, latestId=revid, source=cut.replace("Intro of", "Introduction of"))
    assert refused.is_error and "this text would remove sections " in refused.text, refused.text
    assert wiki.wikitext(title) == sections_page(20).rstrip() and revision_ids(wiki, title) == [revid]


@on_every_version
def test_a_whole_write_removing_sections_needs_this_clients_whole_read_whatever_latest_id_says(
        wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write removal unread test"
    revid = create(bot_server_for(wiki), title, sections_page(4))
    shorter = sections_page(2)
    refused = call(server, "update-page", title=title, source=shorter, latestId=revid, removeSections=True)
    assert refused.is_error and "remove sections 3 (Part 3), 4 (Part 4)" in refused.text, refused.text
    half = call(server, "update-page", title=title, latestId=revid,
                source="Intro of the page.\n" + "".join(f"== Part {n} ==\nShort.\n" for n in range(1, 5)))
    assert half.is_error and "bytes from" in half.text and "remove sections" not in half.text, half.text
    assert revision_ids(wiki, title) == [revid]
    call(server, "get-page", title=title)  # read whole: what goes is seen
    done = call(server, "update-page", title=title, source=shorter, removeSections=True)
    assert not done.is_error, done.text
    assert wiki.wikitext(title) == shorter.rstrip()


@on_every_version
def test_replacing_the_last_section_keeps_the_links_that_close_the_page_and_appends_go_above_them(
        wiki: RealWiki) -> None:
    """The last section, read alone, ends with the page's categories and sort key: rewritten without
    them, they stay below it, and the answer says so; appends land above them, as in the page's text
    they close it."""
    server = make_server(wiki.env())
    title = "Write closing links test"
    closing = "{{DEFAULTSORT:Three, test}}\n[[Category:Closing X|Three]]\n[[Category:Closing Y]]"
    create(server, title, f"Lead.\n== One ==\nText one.\n== Three ==\nText three.\n\n{closing}")
    seen = content_of(call(server, "get-page", title=title, section="Three").blocks[0])
    assert seen == f"== Three ==\nText three.\n\n{closing}"
    done = call(server, "update-page", title=title, section="Three", source="== Three ==\nText three rewritten.")
    assert not done.is_error and f"\nKept: {' '.join(closing.split())} (they close the page" in done.text, done.text
    assert "Removed:" not in done.text
    assert wiki.wikitext(title) == f"Lead.\n== One ==\nText one.\n== Three ==\nText three rewritten.\n\n{closing}"
    appended = call(server, "update-page", title=title, mode="append", source="Appended to the page.")
    assert not appended.is_error and "Placed: above the categories" in appended.text, appended.text
    in_section = call(server, "update-page", title=title, section=2, mode="append", source="Appended to Three.")
    assert not in_section.is_error, in_section.text
    assert wiki.wikitext(title) == ("Lead.\n== One ==\nText one.\n== Three ==\nText three rewritten.\n"
                                    f"Appended to the page.\nAppended to Three.\n\n{closing}")
    own = call(server, "update-page", title=title, section=2,
               source="== Three ==\nText three, its own category.\n\n[[Category:Closing Z]]")
    assert not own.is_error and "Kept:" not in own.text, own.text
    assert "Removed: {{DEFAULTSORT:Three, test}}, [[Category:Closing X]], [[Category:Closing Y]]" in own.text
    assert wiki.wikitext(title).endswith("== Three ==\nText three, its own category.\n\n[[Category:Closing Z]]")


@on_every_version
@pytest.mark.parametrize("section", [None, 1])
def test_an_append_above_the_closing_links_while_a_colleague_adds_there_too_still_lands_above_them(
        wiki: RealWiki, section: int | None) -> None:
    """Between the append's read and its save, a colleague adds a line at the same place, above the
    page's category: the two overlap, and the append is made again on the page as it then is, above
    the category, never below it as MediaWiki's appendtext would put it."""
    title = f"Write closing links colleague append {section} test"
    original = "Lead.\n== One ==\nText one.\n\n[[Category:Closing colleague]]"
    create(bot_server_for(wiki), title, original)
    marker = b"rvprop=ids%7Ccontent"
    proxy = HoldingProxy(wiki.url, marker)
    answer: list[Result] = []
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        where = {} if section is None else {"section": section}
        appending = threading.Thread(target=lambda: answer.append(call(
            server, "update-page", title=title, mode="append", source="Mine.", **where)))
        appending.start()
        assert proxy.arrived[marker].wait(30)
        editor_edit(wiki, title, original.replace("Text one.", "Text one.\nTheirs."))
        proxy.released[marker].set()
        appending.join(60)
    finally:
        proxy.close()
    assert answer and not answer[0].is_error, answer
    assert "Placed: above the categories" in answer[0].text, answer[0].text
    assert wiki.wikitext(title) == "Lead.\n== One ==\nText one.\nTheirs.\nMine.\n\n[[Category:Closing colleague]]"


@on_every_version
def test_an_append_above_the_closing_links_that_colleagues_keep_overlapping_says_it_went_below_them(
        wiki: RealWiki) -> None:
    """Each time the append reads the page, a colleague then adds a line above its category: every
    try overlaps, and the append lands below the category, as MediaWiki's appendtext puts it; the
    answer says so, for the model to move it."""
    title = "Write closing links colleagues keep appending test"
    create(bot_server_for(wiki), title, "Lead.\nText one.\n\n[[Category:Closing colleagues]]")
    marker = b"rvprop=ids%7Ccontent"

    class Colleagues(DroppingProxy):
        edits = 0

        def hold(self, request: bytes) -> None:
            if marker in request and self.edits < 10:
                self.edits += 1
                editor_edit(wiki, title, wiki.wikitext(title).replace(
                    "\n\n[[Category:", f"\nTheirs {self.edits}.\n\n[[Category:"))

    proxy = Colleagues(wiki.url, drops=lambda body: False)
    try:
        appended = call(make_server(wiki.env(MEDIAWIKI_URL=proxy.api)), "update-page", title=title, mode="append",
                        source="Mine.")
    finally:
        proxy.close()
    assert not appended.is_error, appended.text
    assert "\nPlaced: below the categories and links that close the page" in appended.text, appended.text
    text = wiki.wikitext(title)
    assert text.startswith("Lead.\nText one.\nTheirs 1.\n") and text.endswith("[[Category:Closing colleagues]]\nMine.")


def test_replacing_a_section_keeps_its_subsections_unless_told(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write subsections test"
    original = "Lead.\n== Parent ==\nParent text.\n=== Child ===\nChild text.\n== Next ==\nNext text."
    revid = create(bot_server, title, original)
    refused = call(bot_server, "update-page", title=title, section=1, source="== Parent ==\nNew parent text.")
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: section 1 ")
    assert "(Child)" in refused.text and "removeSubsections=true" in refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    kept = call(bot_server, "update-page", title=title, section=1,
                source="== Parent ==\nNew parent text.\n=== Child ===\nChild text.")
    assert not kept.is_error
    assert wiki.wikitext(title) == ("Lead.\n== Parent ==\nNew parent text.\n=== Child ===\nChild text.\n\n"
                                    "== Next ==\nNext text.")  # MediaWiki's splice adds the blank line
    removed = call(bot_server, "update-page", title=title, section=1, removeSubsections=True,
                   source="== Parent ==\nOnly the parent now.")
    assert not removed.is_error
    assert wiki.wikitext(title) == "Lead.\n== Parent ==\nOnly the parent now.\n\n== Next ==\nNext text."


def test_an_append_sent_twice_with_one_idempotency_key_lands_once(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write idempotency test"
    create(bot_server, title, "Log:")
    before = revision_ids(wiki, title)
    first = call(bot_server, "update-page", title=title, mode="append", source="\n* entry one",
                 idempotencyKey="req-7f3a")
    second = call(bot_server, "update-page", title=title, mode="append", source="\n* entry one",
                  idempotencyKey="req-7f3a")
    assert not first.is_error and not second.is_error
    assert second.blocks[0].startswith("Repeat: ") and second.blocks[0].endswith(first.blocks[0])
    assert wiki.wikitext(title) == "Log:\n* entry one"
    assert len(revision_ids(wiki, title)) == len(before) + 1
    other = call(bot_server, "update-page", title=title, mode="append", source="\n* entry two",
                 idempotencyKey="req-7f3a")
    assert other.is_error and other.blocks[0].startswith("conflict: idempotencyKey 'req-7f3a' was already used")
    assert wiki.wikitext(title) == "Log:\n* entry one"


#: What failing gateways answer (content type and body): their own page, or JSON without an API answer.
GATEWAY_PAGES = {"html": ("text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
                 "json": ("application/json", b'{"message": "Bad Gateway"}')}


@pytest.mark.parametrize("kind", ["append", "create"])
def test_a_write_whose_answer_is_lost_is_reported_saved_and_not_repeated(
        wiki: RealWiki, kind: str) -> None:
    proxy = DroppingProxy(wiki.url)
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        title = f"Write lost answer {kind} test"
        if kind == "append":
            create(bot_server_for(wiki), title, "Before.")
            before = revision_ids(wiki, title)
            result = call(server, "update-page", title=title, mode="append", source="\nAppended once.")
            assert wiki.wikitext(title) == "Before.\nAppended once."
        else:
            before = []
            result = call(server, "create-page", title=title, source="Created once.")
            assert wiki.wikitext(title) == "Created once."
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
        assert not result.is_error, result.text
        assert result.blocks[0].startswith("Saved (the wiki's answer was lost; its history shows the edit once).")
        after = revision_ids(wiki, title)
        assert len(after) == len(before) + 1 and int(field(result, "Revision ID")) == after[0]
    finally:
        proxy.close()


@pytest.mark.parametrize("comment", [unicodedata.normalize("NFD", "Résumé, café und Änderung"), "Long. " * 83])
def test_a_lost_answer_finds_the_edit_whatever_the_wiki_did_to_its_summary(wiki: RealWiki, comment: str) -> None:
    """MediaWiki stores a summary in NFC and cuts one over 500 characters: the history check
    still recognises the edit, rather than call a saved edit unsaved (and invite a second one)."""
    title = f"Write lost summary {len(comment)} test"
    create(bot_server_for(wiki), title, "Before.")
    before = revision_ids(wiki, title)
    proxy = DroppingProxy(wiki.url)
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        result = call(server, "update-page", title=title, source="After.", comment=comment, latestId=before[0])
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
    finally:
        proxy.close()
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("Saved (the wiki's answer was lost; its history shows the edit once).")
    assert wiki.wikitext(title) == "After." and revision_ids(wiki, title)[1:] == before


@pytest.mark.parametrize("page", list(GATEWAY_PAGES))
def test_a_gateway_error_page_after_a_write_is_a_lost_answer(wiki: RealWiki, page: str) -> None:
    """A gateway in front of the wiki answers the edit with its own error page: the wiki has
    saved, so the history decides, and the edit is not sent again."""
    title = f"Write gateway {page} page test"
    create(bot_server_for(wiki), title, "Before.")
    before = revision_ids(wiki, title)
    proxy = DroppingProxy(wiki.url, gateway_page=GATEWAY_PAGES[page])
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        result = call(server, "update-page", title=title, mode="append", source="\nAfter the gateway.")
        assert proxy.drops_left == 0, "the proxy never answered with its page"
    finally:
        proxy.close()
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("Saved (the wiki's answer was lost; its history shows the edit once).")
    assert wiki.wikitext(title).count("After the gateway.") == 1
    assert revision_ids(wiki, title) == [int(field(result, "Revision ID")), *before]


LOST_ACTIONS = {  # tool: (the API action whose answer is lost, arguments for the title)
    "move-page": ("move", lambda title: {"fromTitle": title, "toTitle": f"{title} moved"}),
    "delete-page": ("delete", lambda title: {"title": title, "confirm": True}),
    "undelete-page": ("undelete", lambda title: {"title": title}),
}


@pytest.mark.parametrize("tool", list(LOST_ACTIONS))
def test_a_lost_answer_to_a_move_delete_or_undelete_reports_what_the_wiki_did(wiki: RealWiki, tool: str) -> None:
    title = f"Write lost {tool} test"
    setup = bot_server_for(wiki)
    create(setup, title, "Text of the page.")
    if tool == "undelete-page":
        assert not call(setup, "delete-page", title=title, confirm=True).is_error
    action, arguments = LOST_ACTIONS[tool]
    proxy = DroppingProxy(wiki.url, drops=posts(action))
    try:
        result = call(make_server(wiki.env(MEDIAWIKI_URL=proxy.api)), tool, **arguments(title))
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
    finally:
        proxy.close()
    assert not result.is_error, result.text
    assert "(the wiki's answer was lost; " in result.blocks[0].split("\n")[0]
    if tool == "move-page":
        assert field(result, "To") == f"{title} moved" and field(result, "Redirect left") == "yes"
        assert wiki.wikitext(f"{title} moved") == "Text of the page."
        assert wiki.wikitext(title).startswith("#REDIRECT")
    elif tool == "delete-page":
        assert revision_ids(wiki, title) == []
    else:
        assert wiki.wikitext(title) == "Text of the page." and len(revision_ids(wiki, title)) == 1


def test_a_lost_answer_to_a_refused_move_says_the_page_was_not_moved(wiki: RealWiki) -> None:
    """The wiki refused the move (the new title exists) and the refusal was lost: the page is
    where it was, and the answer says so without calling the existing page missing."""
    title = "Write lost refused move test"
    create(bot_server_for(wiki), title, "Stays here.")
    proxy = DroppingProxy(wiki.url, drops=posts("move"))
    try:
        result = call(make_server(wiki.env(MEDIAWIKI_URL=proxy.api)), "move-page", fromTitle=title, toTitle="Apple")
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
    finally:
        proxy.close()
    assert result.is_error and result.blocks[0].startswith("upstream_failure: ")
    assert f"{title!r}" in result.text and "not moved" in result.text and "does not exist" not in result.text
    assert wiki.wikitext(title) == "Stays here." and wiki.wikitext("Apple").startswith("An apple is a fruit.")


@pytest.mark.parametrize("tool", list(LOST_ACTIONS))
def test_a_lost_answer_whose_check_fails_says_so_and_is_not_resent(fake: FakeWiki, tool: str) -> None:
    """The wiki drops the answer to a move, deletion or restoration, then fails the read that
    would tell what it did: the error says the outcome is unknown, never the read's error alone."""
    action, arguments = LOST_ACTIONS[tool]
    fake.replies = [Reply(body={"query": {"tokens": {"csrftoken": "+\\"}}}), Reply(0),
                    Reply(body={"errors": [{"code": "internal_api_error_DBQueryError",
                                            "text": "Database error."}]})]
    result = call(fake_server(fake, MEDIAWIKI_READ_ONLY="false"), tool, **arguments("Main Page"))
    what = {"move-page": "moved", "delete-page": "deleted", "undelete-page": "restored"}[tool]
    assert result.is_error and result.blocks[0].startswith(
        f"upstream_failure: The wiki at 127.0.0.1:{fake.port} dropped the connection (ConnectionError) while "
        f"writing. Whether the page was {what} could not be checked (MediaWiki error "
        f"internal_api_error_DBQueryError (127.0.0.1:{fake.port}): Database error."), result.text
    assert result.text.endswith(" before calling again.")
    assert [s["params"].get("action") for s in fake.requests_to_api()].count(action) == 1


def test_a_lost_write_not_in_the_history_is_reported_unconfirmed_and_not_resent(fake: FakeWiki) -> None:
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
                                 "revisions": [{"revid": 7, "parentid": 0}]}]}}
    history = {"query": {"userinfo": {"id": 0, "name": "127.0.0.1", "anon": True},
                         "pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
                                    "revisions": [{"revid": 7, "parentid": 0, "user": "Someone",
                                                   "comment": "older"}]}]}}
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    fake.replies = [Reply(body=page), Reply(body=tokens), Reply(delay=5.0), Reply(body=history)]
    server = fake_server(fake, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "update-page", title="Main Page", mode="append", source="x")
    assert result.is_error and result.blocks[0].startswith(
        f"upstream_failure: The wiki at 127.0.0.1:{fake.port} timed out after 0.5 s while writing. "
        "The page's history shows no edit by this account after revision 7 yet. A slow wiki may "
        "still save it: check with get-page-history before calling again.")
    edits = [s for s in fake.requests_to_api() if s["params"].get("action") == "edit"]
    # an append is sent unpinned (MediaWiki adds it to the page as it is), the check still
    # looks for it after the revision read before it
    assert len(edits) == 1 and "baserevid" not in edits[0]["params"]
    assert edits[0]["params"]["maxlag"] == "5" and edits[0]["params"]["nocreate"] == "1"


def test_a_write_that_never_reached_the_wiki_is_no_lost_answer(fake: FakeWiki) -> None:
    """A refused connection proves the wiki never saw the write: a plain failure, not a lost answer."""
    client = MediaWikiClient(fake.api, Credentials(token="tok-never-sent"), retry=RetryPolicy(sleep=lambda s: None))
    assert client.site.name == "Fake"
    client._tokens = {"csrf": "+\\"}
    fake.close()  # nothing listens there any more
    with pytest.raises(WikiError) as refused:
        client.write({"action": "edit", "title": "Main Page", "appendtext": "x"})
    assert not isinstance(refused.value, ResponseLost)
    assert str(refused.value) == (f"upstream_failure: The wiki at 127.0.0.1:{fake.port} could not be reached "
                                  "(ConnectionError). Retry later; tell the user if it persists.")


def test_a_lost_append_is_not_taken_for_another_append_by_the_same_account(fake: FakeWiki) -> None:
    """Parallel appends by one account share its name, and often their summary: the one whose
    answer was lost is known by its text, not by who saved it with what summary."""
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
                                 "revisions": [{"revid": 7, "slots": {"main": {"content": "Log:"}}}]}]}}
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    history = {"query": {"userinfo": {"id": 0, "name": "127.0.0.1", "anon": True},
                         "pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [
                             {"revid": 7, "user": "Someone", "comment": ""},
                             {"revid": 8, "parentid": 7, "user": "127.0.0.1",
                              "comment": "Log entry (via mediawiki-mcp)"}]}]}}
    other = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [
        {"revid": 8, "slots": {"main": {"content": "Log:\nLine 2."}}}]}]}}
    fake.replies = [Reply(body=page), Reply(body=tokens), Reply(delay=5.0), Reply(body=history), Reply(body=other)]
    server = fake_server(fake, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "update-page", title="Main Page", mode="append", source="\nLine 1.", comment="Log entry")
    assert result.is_error and "The page's history shows no edit by this account after revision 7" in result.text
    assert [s["params"].get("action") for s in fake.requests_to_api()].count("edit") == 1


def test_write_retries_only_on_answers_that_prove_nothing_was_written(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [{"revid": 7}]}]}}
    saved = {"edit": {"result": "Success", "title": "Main Page", "pageid": 1, "oldrevid": 7, "newrevid": 8}}
    maxlag = Reply(body={"errors": [{"code": "maxlag", "text": "Waiting for a database server."}]},
                   headers={"Retry-After": "2"})
    fake.replies = [Reply(body=page), Reply(body=tokens), maxlag, Reply(body=saved)]
    server = fake_server(fake, sleeps, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "update-page", title="Main Page", source="new", latestId=7)
    assert not result.is_error and field(result, "Revision ID") == "8" and sleeps == [2.0]
    page["query"]["pages"][0]["revisions"][0]["revid"] = 8  # the page as the wiki now has it
    # ratelimited without a short Retry-After: refused at once, never resent
    limited = Reply(body={"errors": [{"code": "ratelimited", "text": "You've exceeded your rate limit."}]})
    fake.replies = [Reply(body=page), limited]
    result = call(server, "update-page", title="Main Page", source="new")
    assert result.is_error and result.blocks[0].startswith("rate_limited: You've exceeded your rate limit.")
    # badtoken: one fresh token, one resend, then the error
    bad = Reply(body={"errors": [{"code": "badtoken", "text": "Invalid CSRF token."}]})
    fake.seen.clear()
    fake.replies = [Reply(body=page), bad, Reply(body=tokens), dataclasses.replace(bad)]
    result = call(server, "update-page", title="Main Page", source="new")
    assert result.is_error and result.blocks[0].startswith("authentication: Invalid CSRF token.")
    actions = [s["params"].get("action") or s["params"].get("meta") for s in fake.requests_to_api()]
    assert actions == ["query", "edit", "query", "edit"]


def test_a_write_throttled_with_a_short_retry_after_is_sent_again_after_that_wait(fake: FakeWiki) -> None:
    """ratelimited proves nothing was written; with a Retry-After short enough to wait out,
    the write goes again once that time has passed."""
    sleeps: list[float] = []
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [{"revid": 7}]}]}}
    saved = {"edit": {"result": "Success", "title": "Main Page", "pageid": 1, "oldrevid": 7, "newrevid": 8}}
    limited = Reply(body={"errors": [{"code": "ratelimited", "text": "You've exceeded your rate limit."}]},
                    headers={"Retry-After": "3"})
    fake.replies = [Reply(body=page), Reply(body=tokens), limited, Reply(body=saved)]
    result = call(fake_server(fake, sleeps, MEDIAWIKI_READ_ONLY="false"), "update-page", title="Main Page",
                  source="new", latestId=7)
    assert not result.is_error and field(result, "Revision ID") == "8", result.text
    assert sleeps == [3.0]
    assert [s["params"].get("action") for s in fake.requests_to_api()].count("edit") == 2


@on_every_version
def test_an_expired_edit_token_is_refreshed_once_on_the_real_wiki(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write token refresh test"
    create(server, title, "Text.")
    server.state.clients[wiki.key]._tokens = {"csrf": "0123456789abcdef+\\"}  # as if the session had renewed
    result = call(server, "update-page", title=title, source="Text, after a token refresh.")
    assert not result.is_error, result.text
    assert wiki.wikitext(title) == "Text, after a token refresh."


@on_every_version
def test_find_replace_changes_one_passage_and_refuses_absent_or_ambiguous_text(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write find replace test"
    original = "The cat sat on the mat.\nThe dog sat on the log.\nA cat again."
    revid = create(bot_server, title, original)
    absent = call(bot_server, "update-page", title=title, find="The bird", replace="The fish")
    assert absent.is_error and absent.blocks[0].startswith("invalid_input: The text to find does not occur")
    twice = call(bot_server, "update-page", title=title, find="cat", replace="lynx")
    assert twice.is_error and twice.blocks[0].startswith("invalid_input: The text to find occurs 2 times")
    assert "replaceAll=true" in twice.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    once = call(bot_server, "update-page", title=title, find="dog sat on the log", replace="dog slept")
    assert not once.is_error and field(once, "Previous revision ID") == str(revid)
    assert field(once, "Diff") == f"{wiki.url}/w/index.php?diff={field(once, 'Revision ID')}&oldid={revid}"
    everywhere = call(bot_server, "update-page", title=title, find="cat", replace="lynx", replaceAll=True)
    assert not everywhere.is_error
    assert wiki.wikitext(title) == "The lynx sat on the mat.\nThe dog slept.\nA lynx again."


def test_a_find_with_windows_line_ends_matches_the_lines_the_wiki_keeps(bot_server: Any, wiki: RealWiki) -> None:
    """The wiki keeps \\n alone; a client on Windows sends \\r\\n."""
    title = f"Write find line ends {secrets.token_hex(4)}"
    create(bot_server, title, "First line.\nSecond line.\nThird line.")
    once = call(bot_server, "update-page", title=title, find="First line.\r\nSecond", replace="One.\r\nTwo")
    assert not once.is_error, once.text
    assert wiki.wikitext(title) == "One.\nTwo line.\nThird line."
    across = call(bot_server, "replace-in-pages", titles=[title], find="line.\r\nThird", replace="l.\r\n3",
                  dryRun=False)
    assert not across.is_error and f"{title} | saved | " in across.text, across.text
    assert wiki.wikitext(title) == "One.\nTwo l.\n3 line."


def test_a_find_that_differs_from_the_page_only_in_its_spaces_is_told_them(bot_server: Any, wiki: RealWiki) -> None:
    """get-page shows a no-break space as a space does; the refusal names it, and the find it
    suggests, taken as written, matches."""
    title = f"Write find spacing {secrets.token_hex(4)}"
    revid = create(bot_server, title, "Price: 10\u00a0€ each.\nTwo  spaces.")
    refused = call(bot_server, "update-page", title=title, find="10 € each", replace="12 € each")
    assert refused.is_error and refused.text.endswith(
        'It occurs with other spacing (U+00A0 NO-BREAK SPACE): "10\\u00a0€ each"; give find so.'), refused.text
    assert revision_ids(wiki, title) == [revid]
    suggested = json.loads(refused.text.rsplit(": ", 1)[1].removesuffix("; give find so."))
    saved = call(bot_server, "update-page", title=title, find=suggested, replace="12\u00a0€ each")
    assert not saved.is_error and wiki.wikitext(title) == "Price: 12\u00a0€ each.\nTwo  spaces.", saved.text
    doubled = call(bot_server, "update-page", title=title, find="Two spaces", replace="x")
    assert doubled.text.endswith('It occurs with other spacing: "Two  spaces"; give find so.'), doubled.text


def test_prepend_puts_the_text_before_the_first_line(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write prepend test"
    revid = create(bot_server, title, "First line.\nSecond line.")
    result = call(bot_server, "update-page", title=title, mode="prepend", source="Prepended line.")
    assert not result.is_error, result.text
    text = wiki.wikitext(title)
    assert text.startswith("Prepended line.") and text.index("Prepended line.") < text.index("First line.")
    assert text.endswith("First line.\nSecond line.") and text.count("Prepended line.") == 1
    assert revision_ids(wiki, title)[1:] == [revid]


def revision_flags(wiki: RealWiki, title: str) -> list[bool]:
    """Whether each revision of a page is minor, newest first."""
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="flags",
                        rvlimit="max")["query"]["pages"][0]
    return [bool(r.get("minor")) for r in page.get("revisions", [])]


def test_a_minor_edit_is_minor_in_the_history(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write minor test"
    create(bot_server, title, "Text with a typo: teh.")
    assert not call(bot_server, "update-page", title=title, find="teh", replace="the", minor=True).is_error
    assert not call(bot_server, "update-page", title=title, mode="append", source="\nMore text.").is_error
    assert revision_flags(wiki, title) == [False, True, False]


def test_saving_the_text_the_page_holds_says_no_change_and_adds_no_revision(bot_server: Any,
                                                                              wiki: RealWiki) -> None:
    title = "Write no change test"
    revid = create(bot_server, title, "Unchanged text.")
    result = call(bot_server, "update-page", title=title, source="Unchanged text.")
    assert not result.is_error, result.text
    assert result.blocks[0].startswith("No change") and str(revid) in result.text
    assert revision_ids(wiki, title) == [revid] and wiki.wikitext(title) == "Unchanged text."


def test_update_of_a_missing_page_creates_nothing(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write no such page test"
    for arguments in ({"source": "x"}, {"source": "x", "mode": "append"}, {"find": "a", "replace": "b"}):
        result = call(bot_server, "update-page", title=title, **arguments)
        assert result.is_error and result.blocks[0].startswith(f"not_found: Page {title!r} does not exist")
        assert "create-page" in result.text
    assert revision_ids(wiki, title) == []


@on_every_version
def test_dry_run_saves_nothing_and_shows_the_diff(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write dry run test"
    revid = create(bot_server, title, "Alpha.\nBeta.\nGamma.\nDelta.")
    result = call(bot_server, "update-page", title=title, find="Gamma.", replace="Gamma, changed.",
                  dryRun=True)
    assert not result.is_error
    assert result.blocks[0] == ("Dry run: nothing was saved. The diff that would be saved:\n"
                                f"Title: {title}\nBase revision ID: {revid}\n\n"
                                "@@ -3 +3 @@\n~Gamma{+, changed+}.")
    appended = call(bot_server, "update-page", title=title, mode="append", source="\nEpsilon.", dryRun=True)
    assert appended.blocks[0].endswith("@@ -4,0 +5 @@\n+Epsilon.")
    new = call(bot_server, "create-page", title="Write dry run new page", source="Hello.", dryRun=True)
    assert not new.is_error and new.blocks[0].endswith("@@ -0,0 +1 @@\n+Hello.")
    existing = call(bot_server, "create-page", title=title, source="Hello.", dryRun=True)
    assert existing.is_error and existing.blocks[0].startswith("conflict: ")
    assert revision_ids(wiki, title) == [revid] and revision_ids(wiki, "Write dry run new page") == []


@on_every_version
def test_delete_needs_confirmation_and_undelete_restores(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write delete test"
    create(bot_server, title, "To be deleted.")
    call(bot_server, "update-page", title=title, source="To be deleted, second revision.")
    latest = revision_ids(wiki, title)[0]
    asked = call(bot_server, "delete-page", title=title)
    assert asked.is_error and len(asked.blocks) == 1
    assert asked.blocks[0] == (f"invalid_input: Nothing was deleted. delete-page would delete {title!r} "
                               f"(latest revision {latest}, 31 bytes, 2 revisions) from {wiki.key}. "
                               "Ask the user to confirm, then call delete-page again with confirm=true.")
    assert revision_ids(wiki, title)[0] == latest
    deleted = call(bot_server, "delete-page", title=title, confirm=True, comment="Test")
    assert not deleted.is_error and deleted.blocks[0].startswith(f"Deleted.\nTitle: {title}\nLog ID: ")
    assert revision_ids(wiki, title) == []
    restored = call(bot_server, "undelete-page", title=title)
    assert not restored.is_error, restored.text
    assert field(restored, "Revisions restored") == "2" and field(restored, "Revision ID") == str(latest)
    assert wiki.wikitext(title) == "To be deleted, second revision."
    again = call(bot_server, "undelete-page", title=title)
    assert again.is_error and again.blocks[0].startswith("not_found: ")


@on_every_version
def test_move_with_and_without_a_redirect(bot_server: Any, wiki: RealWiki) -> None:
    create(bot_server, "Write move source", "Moving text.")
    create(bot_server, "Talk:Write move source", "Talk text.")
    moved = call(bot_server, "move-page", fromTitle="Write move source", toTitle="Write move target")
    assert not moved.is_error, moved.text
    assert moved.blocks[0] == ("Moved.\nFrom: Write move source\nTo: Write move target\nRedirect left: yes\n"
                               "Talk page moved: Talk:Write move source -> Talk:Write move target\n"
                               f"URL: {wiki.url}/wiki/Write_move_target")
    assert wiki.wikitext("Write move target") == "Moving text."
    assert wiki.wikitext("Write move source").startswith("#REDIRECT [[Write move target]]")
    assert wiki.wikitext("Talk:Write move target") == "Talk text."
    plain = call(bot_server, "move-page", fromTitle="Write move target", toTitle="Write move final",
                 leaveRedirect=False, moveTalk=False)
    assert not plain.is_error and "Redirect left: no" in plain.text and "Talk page" not in plain.text
    assert revision_ids(wiki, "Write move target") == [] and wiki.wikitext("Write move final") == "Moving text."
    onto = call(bot_server, "move-page", fromTitle="Write move final", toTitle="Apple")
    assert onto.is_error and onto.blocks[0].startswith("conflict: ")
    assert wiki.wikitext("Apple").startswith("An apple is a fruit.")


def test_a_move_into_a_talk_namespace_says_why_the_talk_page_stayed(bot_server: Any, wiki: RealWiki) -> None:
    """A page moved into a talk namespace has no talk page of its own for its old one to go to;
    MediaWiki's words ('A page already exists at ...') would send the model looking for a page
    in the way."""
    create(bot_server, "Write move to talk source", "Moving text.")
    create(bot_server, "Talk:Write move to talk source", "Talk text.")
    moved = call(bot_server, "move-page", fromTitle="Write move to talk source",
                 toTitle="User talk:Write move to talk target")
    assert not moved.is_error, moved.text
    assert "\nTalk page not moved: Talk:Write move to talk source stays where it is: User talk:Write move to " \
           "talk target is itself a talk page, which has none of its own\n" in moved.blocks[0], moved.text
    assert wiki.wikitext("Talk:Write move to talk source") == "Talk text."


def test_move_with_subpages_takes_them_along_and_without_leaves_them(bot_server: Any, wiki: RealWiki) -> None:
    """The Help namespace has subpages (Debian's MediaWiki, as MediaWiki's defaults)."""
    for name in ("Help:Write subpages one", "Help:Write subpages two"):
        create(bot_server, name, "Parent.")
        create(bot_server, f"{name}/Child", "Child.")
    along = call(bot_server, "move-page", fromTitle="Help:Write subpages one",
                 toTitle="Help:Write subpages one moved", moveSubpages=True)
    assert not along.is_error, along.text
    assert wiki.wikitext("Help:Write subpages one moved/Child") == "Child."
    assert wiki.wikitext("Help:Write subpages one/Child").startswith("#REDIRECT")
    alone = call(bot_server, "move-page", fromTitle="Help:Write subpages two", toTitle="Help:Write subpages two moved")
    assert not alone.is_error, alone.text
    assert wiki.wikitext("Help:Write subpages two moved") == "Parent."
    assert wiki.wikitext("Help:Write subpages two/Child") == "Child."
    assert revision_ids(wiki, "Help:Write subpages two moved/Child") == []


def test_a_write_to_a_read_only_wiki_is_permission_denied(wiki: RealWiki) -> None:
    writable = WikiConfig(key=wiki.key, url=wiki.api, username=wiki.bot_user,
                            password=wiki.bot_password, read_only=False)
    locked = dataclasses.replace(writable, key="locked.example", read_only=True)
    state = ServerState.from_config(Config(wikis={wiki.key: writable, "locked.example": locked},
                                               toolsets=frozenset(TOOLSETS),
                                               default_wiki=wiki.key))
    server = create_server(state=state)
    assert "create-page" in {t.name for t in list_tools(server)}
    for tool, arguments in [("create-page", {"title": "Write read-only test", "source": "x"}),
                            ("update-page", {"title": "Apple", "source": "x"}),
                            ("delete-page", {"title": "Apple", "confirm": True})]:
        result = call(server, tool, wiki="locked.example", **arguments)
        assert result.is_error and result.blocks[0].startswith("permission_denied: The wiki locked.example "
                                                               "is configured read-only")
    assert revision_ids(wiki, "Write read-only test") == []
    assert wiki.wikitext("Apple").startswith("An apple is a fruit.")


def test_tags_and_attribution_follow_the_wiki_configuration(wiki: RealWiki) -> None:
    session = requests.Session()  # the tag must exist: create it as Admin with the main password
    token = session.get(wiki.api, params={"action": "query", "meta": "tokens", "type": "login",
                                          "format": "json"}).json()["query"]["tokens"]["logintoken"]
    session.post(wiki.api, data={"action": "login", "lgname": "Admin", "lgpassword": wiki.admin_password,
                                 "lgtoken": token, "format": "json"})
    csrf = session.get(wiki.api, params={"action": "query", "meta": "tokens", "format": "json"}
                       ).json()["query"]["tokens"]["csrftoken"]
    made = session.post(wiki.api, data={"action": "managetags", "operation": "create", "tag": "mcp-edit",
                                        "token": csrf, "format": "json"}).json()
    assert "error" not in made, made
    config = WikiConfig(key=wiki.key, url=wiki.api, username=wiki.bot_user, password=wiki.bot_password,
                          read_only=False, tags=("mcp-edit",), attribute_edits=False)
    server = create_server(state=ServerState.from_config(Config({wiki.key: config}, wiki.key)))
    title = "Write tags test"
    assert not call(server, "create-page", title=title, source="Tagged.", comment="Plain summary").is_error
    revision = latest_revision(wiki, title)
    assert revision["tags"] == ["mcp-edit"] and revision["comment"] == "Plain summary"
    untagged = dataclasses.replace(config, tags=("no-such-tag",))
    server = create_server(state=ServerState.from_config(Config({wiki.key: untagged}, wiki.key)))
    call(server, "get-page", title=title)  # another process: it reads the page first
    result = call(server, "update-page", title=title, source="Untagged?")
    assert result.is_error and result.blocks[0].startswith("permission_denied: ")  # the operator's to fix
    assert result.text.endswith(TAGS_NEXT_STEP)
    assert wiki.wikitext(title) == "Tagged."


@pytest.mark.wiki
def test_bot_flag_needs_the_bot_right(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write bot flag test"
    revid = create(bot_server, title, "Text.")
    refused = call(bot_server, "update-page", title=title, source="Bot text.", bot=True)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: The account Admin lacks the bot right")
    assert revision_ids(wiki, title) == [revid]
    password = secrets.token_hex(16)
    php(wiki.directory, "maintenance/createAndPromote.php", "--bot", "Robot", "Robot-" + secrets.token_hex(12))
    php(wiki.directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Robot", password)
    robot = make_server(wiki.env(MEDIAWIKI_USERNAME="Robot@mcp", MEDIAWIKI_PASSWORD=password))
    call(robot, "get-page", title=title)
    assert not call(robot, "update-page", title=title, source="Bot text.", bot=True).is_error
    change = wiki.raw_get(action="query", list="recentchanges", rctitle=title, rcprop="flags|user",
                          rclimit=1)["query"]["recentchanges"][0]
    assert change["user"] == "Robot" and change["bot"] is True


@on_every_version
def test_a_protected_page_is_permission_denied(wiki: RealWiki) -> None:
    title = "Write protected test"
    create(bot_server_for(wiki), title, "Protected text.")
    client = MediaWikiClient(wiki.api, Credentials(wiki.bot_user, wiki.bot_password))
    client.write({"action": "protect", "title": title, "protections": "edit=sysop"})
    anonymous = make_server({"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_READ_ONLY": "false"})
    call(anonymous, "get-page", title=title)
    result = call(anonymous, "update-page", title=title, source="Vandalism.")
    assert result.is_error and result.blocks[0].startswith("permission_denied: ")
    assert "[protectedpage]" in result.text and "administrator" in result.text
    dry = call(anonymous, "update-page", title=title, source="Vandalism.", dryRun=True)  # the same refusal
    assert dry.is_error and dry.blocks[0].startswith("permission_denied: Nothing was saved (dry run)")
    assert wiki.wikitext(title) == "Protected text."


BAD_WRITE_ARGUMENTS = [
    ("update-page", {"source": "x"}, "Missing required argument 'title'"),
    ("update-page", {"title": "{t}"}, "Give source (the new text), or find and replace."),
    ("update-page", {"title": "{t}", "source": "x", "find": "a", "replace": "b"}, "without source and mode"),
    ("update-page", {"title": "{t}", "find": "a", "replace": "b", "mode": "append"}, "without source and mode"),
    ("update-page", {"title": "{t}", "find": "Text"}, "find needs replace"),
    ("update-page", {"title": "{t}", "find": "", "replace": "b"}, "'find' must not be empty"),
    ("update-page", {"title": "{t}", "source": "x", "replace": "b"}, "replace and replaceAll go with find"),
    ("update-page", {"title": "{t}", "source": "x", "removeSubsections": True}, "removeSubsections applies only"),
    ("update-page", {"title": "{t}", "source": "x", "mode": "insert"}, "'mode' must be one of replace, append, prepend"),
    ("update-page", {"title": "{t}", "source": "x", "section": -1}, "'section' must be at least 0"),
    ("update-page", {"title": "{t}", "source": "x", "latestId": 0}, "'latestId' must be at least 1"),
    ("update-page", {"title": "{t}", "source": "x", "latestId": "12"}, "'latestId' must be an integer"),
    ("update-page", {"title": "{t}", "source": 5}, "'source' must be a string"),
    ("update-page", {"title": "{t}", "source": "x\ud800"}, "invalid Unicode"),
    ("update-page", {"title": "{t}", "source": "x", "sumary": "typo"}, "Unknown argument 'sumary'"),
    ("update-page", {"title": "{t}", "source": "x", "minor": "yes"}, "'minor' must be true or false"),
    ("create-page", {"title": "A|B", "source": "x"}, "not a valid page title"),
    ("create-page", {"title": "{t}"}, "Missing required argument 'source'"),
    ("create-page", {"title": "{t}", "source": "x", "contentModel": "x" * 100}, "at most 64"),
    ("create-page", {"title": "{t}", "source": "x", "idempotencyKey": "k" * 300}, "at most 200"),
    ("delete-page", {"title": "{t}", "confirm": "yes"}, "'confirm' must be true or false"),
    ("move-page", {"fromTitle": "{t}", "toTitle": " "}, "'toTitle' must be a non-empty page title"),
    ("move-page", {"fromTitle": "{t}"}, "Missing required argument 'toTitle'"),
]


def test_bad_write_arguments_change_nothing_and_send_nothing(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write bad arguments test"
    revid = create(server, title, "Text stays.")
    counter = RequestCounter(server)
    for tool, arguments, message in BAD_WRITE_ARGUMENTS:
        arguments = {k: v.replace("{t}", title) if isinstance(v, str) else v for k, v in arguments.items()}
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert result.is_error and len(result.blocks) == 1, (tool, arguments)
        assert result.blocks[0].startswith("invalid_input: ") and message in result.blocks[0], result.text
        assert n[0] == 0, (tool, arguments)
    assert revision_ids(wiki, title) == [revid] and wiki.wikitext(title) == "Text stays."


@on_every_version
def test_steady_state_requests_per_write_tool(wiki: RealWiki) -> None:
    """HTTP requests per write call once login, site info and the edit token are cached
    (the closing notes quote this table). A save's last request reads the sizes of the new
    revision and its parent, for the size change it answers with."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    create(server, "Write requests warm-up", "Warm.")  # caches the token
    calls = [
        ("create-page", {"title": "Write requests test", "source": "One.\n"}, 2),
        ("create-page", {"title": "Write requests test 2", "source": "x", "dryRun": True}, 1),
        ("update-page", {"title": "Write requests test", "source": "Two.\n"}, 3),
        ("update-page", {"title": "Write requests test", "mode": "append", "source": "Three.\n"}, 3),
        ("update-page", {"title": "Write requests test", "find": "Two.", "replace": "2."}, 3),
        ("update-page", {"title": "Write requests test", "section": 0, "source": "Lead.\n"}, 3),
        ("update-page", {"title": "Write requests test", "source": "Lead.\n2.\nThree, all.", "dryRun": True}, 1),
        ("move-page", {"fromTitle": "Write requests test", "toTitle": "Write requests moved"}, 1),
        ("delete-page", {"title": "Write requests moved"}, 1),
        ("delete-page", {"title": "Write requests moved", "confirm": True}, 1),
        ("undelete-page", {"title": "Write requests moved"}, 2),
    ]
    assert_requests_per_call(server, counter, calls,
                             lambda tool, arguments, _: tool == "delete-page" and "confirm" not in arguments)


def test_a_read_of_section_0_says_so_wherever_a_section_was_asked_for(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write section zero label test"
    revid = create(bot_server, title, "The lead.\n== One ==\nFirst.")
    for tool, arguments in [("get-page", {"title": title}), ("get-revision", {"revisionId": revid}),
                            ("update-page", {"title": title, "source": "The lead, edited.", "dryRun": True})]:
        result = call(bot_server, tool, section=0, **arguments)
        assert not result.is_error, result.text
        assert field(result, "Section") == "0", (tool, result.text)
    first = call(bot_server, "get-revision", revisionId=revid, content="none")
    assert "Parent revision ID" not in first.text  # a first revision has no parent, not parent 0


def long_article() -> str:
    def body(part: str) -> str:
        return "".join(f"Sentence {n} of the part about {part}.\n" for n in range(30))
    return ("'''Article''' is the lead of a long page, with its first paragraph.\n\n"
            + "".join(f"== {name} ==\n{body(name)}\n" for name in ("History", "Geography", "Economy"))
            + "=== Trade ===\n" + body("trade") + "\n"
            + "".join(f"== {name} ==\n{body(name)}\n" for name in ("Politics", "Culture"))
            + "== References ==\n<references />")


def test_a_whole_page_write_of_one_sections_text_is_refused_unless_asked(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write shrink test"
    text = long_article()
    revid = create(bot_server, title, text)
    lead = content_of(call(bot_server, "get-page", title=title, section=0).blocks[0])
    edited = lead.replace("first paragraph.", "first paragraph, with a comma added.")
    refused = call(bot_server, "update-page", title=title, source=edited, latestId=revid)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: the new text (")
    assert "section=0" in refused.text and "removeSections=true" in refused.text
    assert ("1 (History), 2 (Geography), 3 (Economy), 4 (Trade), 5 (Politics), 6 (Culture), 7 (References)"
            in refused.text)
    economy = content_of(call(bot_server, "get-page", title=title, section=3).blocks[0])
    as_page = call(bot_server, "update-page", title=title, source=economy.replace("Sentence 1 ", "Sentence one "))
    assert as_page.is_error and "the headings of section 3" in as_page.text and "section=3" in as_page.text
    assert wiki.wikitext(title) == text and revision_ids(wiki, title) == [revid]
    done = call(bot_server, "update-page", title=title, section=0, source=edited)
    assert not done.is_error and wiki.wikitext(title).startswith(edited + "\n\n== History ==")
    shrunk = call(bot_server, "update-page", title=title, source=edited, removeSections=True)
    assert not shrunk.is_error and wiki.wikitext(title) == edited
    before, after = int(field(shrunk, "Previous revision ID")), int(field(shrunk, "Revision ID"))
    sizes = sizes_on_wiki(wiki, before, after)
    change = sizes[after] - sizes[before]
    assert field(shrunk, "Size change") == f"{change} bytes ({sizes[before]} to {sizes[after]})"


@on_every_version
def test_a_section_read_alone_and_written_back_as_the_page_is_named_so_not_as_unread(wiki: RealWiki) -> None:
    """The model read one section and writes it back without section=N: the answer says so and
    names section=N, the call that then saves; it does not call the page unread here and send the
    model to latestId, with which the write is refused again for the sections it would drop."""
    server = make_server(wiki.env())
    title = "Write section as page test"
    text = sections_page(4)
    revid = create(bot_server_for(wiki), title, text)
    read = content_of(call(server, "get-page", title=title, section=2).blocks[0])
    edited = read.replace("Sentence 2 of", "Sentence two of", 1)
    refused = call(server, "update-page", title=title, source=edited)
    assert refused.is_error and "the headings of section 2" in refused.text, refused.text
    assert "call update-page with section=2 and this source" in refused.text and "no read of" not in refused.text
    forced = call(server, "update-page", title=title, source=edited, removeSections=True)  # the page as said
    assert forced.is_error and "no read of" in forced.text and f"latestId={revid}" in forced.text, forced.text
    assert revision_ids(wiki, title) == [revid]
    done = call(server, "update-page", title=title, section=2, source=edited)
    assert not done.is_error, done.text
    saved = wiki.wikitext(title)
    assert "== Part 2 ==\nSentence two of the page." in saved and saved.count("== Part ") == 4, saved
