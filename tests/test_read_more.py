"""Tests: Read tools on the real wiki: revisions, history, diffs, categories, links, recent changes, parsing, files."""
from __future__ import annotations

import base64
import datetime
import json
import re
import secrets
from collections.abc import Callable
from typing import Any

import pytest

from mediawiki_mcp.client import RetryPolicy
from mediawiki_mcp.config import Config
from mediawiki_mcp.diff import ESCAPE_NOTE, compact_diff, diff_cell_text, parse_diff_table
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.guard import AddressGuard
from mediawiki_mcp.read_links import CATEGORY_TREE_REQUESTS, PAGE_USES_CAP
from mediawiki_mcp.read_origin import adding_lines
from mediawiki_mcp.render import raster_type, signed, title_in_namespace, utf8_len, wiki_timestamp
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import ConfigError
from mediawiki_mcp.siteinfo import SiteInfo
from realwiki import (
    BATCH_TITLES,
    SEED_FILES,
    RealWiki,
    WikiFarm,
    import_page,
    import_pages,
    imported_at,
    png_bytes,
)
from tests.support import (
    DIFF_ENGINES,
    HISTORY_TITLE,
    LONG_PARAGRAPH,
    ONE_WORD_DIFF,
    WRITABLE_NOWHERE,
    FakeWiki,
    History,
    Reply,
    RequestCounter,
    Result,
    bare_login,
    big_section_page,
    bot_server_for,
    call,
    content_of,
    create,
    fake_server,
    field,
    follow_markers,
    latest_revision,
    list_tools,
    make_server,
    on_every_version,
    prompt_error,
    revision_ids,
    rows_of,
    shared_bot_server,
)

# -- pure helpers of these tools ----------------------------------------------

def diff_row(old: str | None, new: str | None) -> str:
    """One row of MediaWiki 1.39's diff table: a changed, removed, added or context line."""
    if old is not None and old == new:
        return (f'<tr><td class="diff-marker"></td><td class="diff-context diff-side-deleted"><div>{old}</div></td>'
                f'<td class="diff-marker"></td><td class="diff-context diff-side-added"><div>{new}</div></td></tr>\n')
    left = (f'<td class="diff-marker" data-marker="−"></td><td class="diff-deletedline diff-side-deleted">'
            f'<div>{old}</div></td>' if old is not None else '<td colspan="2" class="diff-side-deleted"></td>')
    right = (f'<td class="diff-marker" data-marker="+"></td><td class="diff-addedline diff-side-added">'
             f'<div>{new}</div></td>' if new is not None else '<td colspan="2" class="diff-side-added"></td>')
    return f"<tr>{left}{right}</tr>\n"


def lineno_row(left: int, right_text: str, left_text: str = "Line {}:") -> str:
    return (f'<tr><td colspan="2" class="diff-lineno" id="mw-diff-left-l{left}">{left_text.format(left)}</td>\n'
            f'<td colspan="2" class="diff-lineno">{right_text}</td></tr>\n')


def test_diff_table_becomes_changed_lines_under_line_number_headers() -> None:
    body = (lineno_row(1, "Line 1:") + diff_row("Intro", "Intro")
            + diff_row('Old <del class="diffchange diffchange-inline">word</del> here',
                       'Old <ins class="diffchange diffchange-inline">term</ins> here')
            + diff_row("Same", "Same")
            + lineno_row(40, "Line 41:") + diff_row("Ctx", "Ctx")
            + diff_row(None, '<ins class="diffchange">Brand &amp; new &lt;b&gt;</ins>')
            + diff_row(None, '<ins class="diffchange"></ins>')
            + diff_row("Ctx 2", "Ctx 2")
            + diff_row('<del class="diffchange">Gone</del>', None))
    lines = parse_diff_table(body)
    assert [(d.kind, d.old, d.new) for d in lines] == [
        (" ", 1, 1), ("-", 2, 2), ("+", 3, 2), (" ", 3, 3),
        (" ", 40, 41), ("+", 41, 42), ("+", 41, 43), (" ", 41, 44), ("-", 42, 45)]
    assert compact_diff(lines) == (
        "@@ -2 +2 @@\n~Old [-word-]{+term+} here\n"
        "@@ -40,0 +42,2 @@\n+Brand & new <b>\n+\n"
        "@@ -42 +44,0 @@\n-Gone")


def test_diff_line_numbers_are_read_from_structure_not_words() -> None:
    # German groups thousands with a dot; Persian writes its own digits.
    german = lineno_row(1234, "Zeile 1.236:", "Zeile {}:") + diff_row("a", "b")
    assert compact_diff(parse_diff_table(german)) == "@@ -1234 +1236 @@\n-a\n+b"
    persian = (lineno_row(7, "خط ۱۲:", "خط {}:").replace('id="mw-diff-left-l7"', "")
               + diff_row("x", None))
    assert compact_diff(parse_diff_table(persian)) == "@@ -7 +11,0 @@\n-x"  # none left, after new line 11


def test_diff_cells_give_back_the_spaces_mediawiki_made_visible() -> None:
    nbsp = "\u00a0"
    cases = {  # MediaWiki's escapeWhiteSpace output -> the line it came from
        f"{nbsp} lead": " lead", f"{nbsp}{nbsp} two": "  two", f"trail {nbsp}": "trail ",
        f"mid{nbsp} gap": "mid  gap", f"10{nbsp}km": f"10{nbsp}km", nbsp: "",
        f'a{nbsp} <ins class="diffchange diffchange-inline">{nbsp} b</ins>': "a    b",
    }
    for cell, line in cases.items():
        assert diff_cell_text(f"<div>{cell}</div>") == line, cell
    assert diff_cell_text("<br/>") == ""


def test_times_a_person_says_are_read_as_utc_timestamps() -> None:
    assert wiki_timestamp("2026-11-29T15:00:00Z", "start") == "2026-11-29T15:00:00Z"
    assert wiki_timestamp("2026-11-29T16:30:00+01:30", "start") == "2026-11-29T15:00:00Z"
    assert wiki_timestamp("2026-11-29T15:00", "start") == "2026-11-29T15:00:00Z"  # no zone: UTC
    assert wiki_timestamp("2026-11-29", "start") == "2026-11-29T00:00:00Z"
    day = datetime.timedelta(days=1)
    for said, ago in (("24 hours ago", day), ("3 days ago", 3 * day), ("1 week ago", 7 * day),
                      ("an hour ago", day / 24), (" 2  Minutes  ago ", datetime.timedelta(minutes=2))):
        before = datetime.datetime.now(datetime.timezone.utc) - ago
        moment = datetime.datetime.fromisoformat(wiki_timestamp(said, "start").replace("Z", "+00:00"))
        assert abs(moment - before) < datetime.timedelta(seconds=5), said
    today = datetime.datetime.now(datetime.timezone.utc).date()
    assert wiki_timestamp("today", "start") == f"{today}T00:00:00Z"
    assert wiki_timestamp("Yesterday", "start") == f"{today - day}T00:00:00Z"
    # a day as an end is the whole day: its last second
    assert wiki_timestamp("yesterday", "end", day_end=True) == f"{today - day}T23:59:59Z"
    assert wiki_timestamp("2026-11-29", "end", day_end=True) == "2026-11-29T23:59:59Z"
    assert wiki_timestamp("2026-11-29T15:00", "end", day_end=True) == "2026-11-29T15:00:00Z"
    for bad in ("last tuesday", "2026-13-01", "", "29/11/2026", "3 months ago", "99999 weeks ago", "-1 days ago"):
        with pytest.raises(WikiError) as refused:
            wiki_timestamp(bad, "start")
        assert str(refused.value) == (
            "invalid_input: Argument 'start' must be a date or time in ISO 8601 (2026-11-29, 2026-11-29T15:00:00Z; "
            f"UTC when no zone is given), an age such as 24 hours ago or 3 days ago, today or yesterday; got {bad!r}.")


def test_an_age_as_an_end_is_that_moment_and_a_week_date_a_whole_day() -> None:
    # an age names a moment, not a day: as an end it is that moment, whatever its length in characters
    for said, ago in (("1 hour ago", datetime.timedelta(hours=1)), ("3 days ago", datetime.timedelta(days=3)),
                      ("1 week ago", datetime.timedelta(weeks=1)), ("24 hours ago", datetime.timedelta(days=1))):
        before = datetime.datetime.now(datetime.timezone.utc) - ago
        end = wiki_timestamp(said, "end", day_end=True)
        assert abs(datetime.datetime.fromisoformat(end.replace("Z", "+00:00")) - before) < datetime.timedelta(
            seconds=5), (said, end)
    # an ISO week date names a day, as 2026-11-23 does
    assert wiki_timestamp("2026-W48-1", "end", day_end=True) == "2026-11-23T23:59:59Z"
    assert wiki_timestamp("2026-W48-1", "start") == "2026-11-23T00:00:00Z"
    assert wiki_timestamp("2026W48T05", "end", day_end=True) == "2026-11-23T05:00:00Z"  # a time: itself


def test_namespace_prefixes_follow_the_wikis_own_names() -> None:
    german = SiteInfo.from_api({"general": {"server": "https://de.example.org"}, "namespaces": {
        "6": {"id": 6, "name": "Datei", "canonical": "File"},
        "14": {"id": 14, "name": "Kategorie", "canonical": "Category"}},
        "namespacealiases": [{"id": 6, "alias": "Bild"}]}, "https://de.example.org/w/api.php")
    assert title_in_namespace(german, "Obst", 14) == "Kategorie:Obst"
    assert title_in_namespace(german, "Category:Obst", 14) == "Category:Obst"
    assert title_in_namespace(german, "Bild:Rot.png", 6) == "Bild:Rot.png"
    assert title_in_namespace(german, "Datei:Rot.png", 6) == "Datei:Rot.png"
    assert title_in_namespace(german, "Rot.png", 6) == "Datei:Rot.png"
    assert title_in_namespace(german, "Foo:Rot.png", 6) == "Datei:Foo:Rot.png"


def test_raster_images_are_recognised_by_their_bytes() -> None:
    assert raster_type(png_bytes(2, 2)) == "image/png"
    assert raster_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert raster_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert raster_type(b"<svg xmlns='http://www.w3.org/2000/svg'/>") is None


# -- get-revision ----------------------------------------------------------------

@on_every_version
def test_get_revision_returns_an_old_revision_with_its_metadata(bot_server: Any, history: History,
                                                                wiki: RealWiki) -> None:
    old, parent, latest = history.revisions[2], history.revisions[1], history.revisions[-1]
    result = call(bot_server, "get-revision", revisionId=old)
    assert not result.is_error and len(result.blocks) == 1
    header, body = result.blocks[0].split("\n\n", 1)
    assert body == history.texts[old]
    assert header.splitlines()[:4] == [f"Title: {HISTORY_TITLE}", f"Revision ID: {old}",
                                       f"Parent revision ID: {parent}", f"Latest revision ID: {latest}"]
    assert "\nUser: Admin\n" in header and "\nEdit summary: Step 2\n" in header and "\nMinor: yes\n" in header
    assert f"\nURL: {wiki.url}/w/index.php?oldid={old}" in header
    current = call(bot_server, "get-revision", revisionId=latest, content="none")
    assert f"Latest revision ID: {latest} (this one)" in current.text and "#REDIRECT" not in current.text
    redirect = call(bot_server, "get-revision", revisionId=history.redirect_revision, content="none")
    assert "\nTags: mw-new-redirect\n" in redirect.text and "Minor" not in redirect.text


def test_get_revision_renders_html(bot_server: Any, history: History) -> None:
    result = call(bot_server, "get-revision", revisionId=history.revisions[3], content="html")
    assert not result.is_error and "<p>Line 1\nLine 2\nLine 3 edit 3\n" in result.text


def test_get_revision_of_the_long_page_truncates_like_get_page(bot_server: Any, wiki: RealWiki) -> None:
    revision = wiki.raw_get(action="query", titles="Long page", prop="info")["query"]["pages"][0]["lastrevid"]
    page = call(bot_server, "get-page", title="Long page")
    result = call(bot_server, "get-revision", revisionId=revision)
    shown = content_of(result.blocks[0])  # the longer name of its next call leaves a few bytes less
    assert len(result.blocks) == 2 and content_of(page.blocks[0]).startswith(shown[:-20])
    assert len(shown.encode()) + len(result.blocks[1].encode()) <= 50_000
    assert result.blocks[1] == re.sub(r"(?<=truncated at )\d+|(?<=offset=)\d+", str(len(shown.encode())), page.blocks[1]
                                      ).replace("call get-page again", "call get-revision again")
    assert "To read a specific section, call get-revision again with section=N." in result.blocks[1]
    parts, offset = [], 0
    for _ in range(5):  # a section over the budget: offset only, and every byte read
        result = call(bot_server, "get-revision", revisionId=revision, section=8, offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        assert "section=N" not in result.blocks[1]
        offset = int(result.blocks[1].rsplit("offset=", 1)[1].rstrip("."))
        assert result.blocks[1].endswith(f"call get-revision again with section=8 and offset={offset}.")
    assert "".join(parts) == wiki.raw_get(
        action="query", revids=revision, prop="revisions", rvprop="content", rvslots="main",
        rvsection=8)["query"]["pages"][0]["revisions"][0]["slots"]["main"]["content"]


def test_a_truncated_revision_read_guards_writing_it_back(wiki: RealWiki) -> None:
    """A model that read a revision only in part must not save it back whole (update-page)."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Revision read guard test"
    create(server, title, big_section_page())
    before = wiki.wikitext(title)
    revision = wiki.raw_get(action="query", titles=title, prop="info")["query"]["pages"][0]["lastrevid"]
    read = call(server, "get-revision", revisionId=revision)
    assert len(read.blocks) == 2 and read.blocks[1].startswith(
        f"Content truncated at {len(content_of(read.blocks[0]).encode())} of ")
    refused = call(server, "update-page", title=title, source=content_of(read.blocks[0]))
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: Page ")
    assert wiki.wikitext(title) == before


def test_a_missing_section_is_not_found(bot_server: Any, history: History) -> None:
    """MediaWiki answers a section past the last with an empty slot, not an error."""
    for tool, arguments in (("get-page", {"title": HISTORY_TITLE}),
                            ("get-revision", {"revisionId": history.revisions[0]}),
                            ("get-revision", {"revisionId": history.revisions[0], "content": "html"})):
        result = call(bot_server, tool, section=9, **arguments)
        assert result.is_error and result.blocks[0].startswith("not_found: There is no section 9 in History page")


def test_get_revision_errors(bot_server: Any, wiki: RealWiki) -> None:
    missing = call(bot_server, "get-revision", revisionId=987654321)
    assert missing.is_error and missing.blocks == [
        f"not_found: Revision 987654321 not found on {wiki.key}. get-page-history lists a page's revision IDs."]
    for arguments, message in (({"revisionId": 0}, "'revisionId' must be at least 1"),
                               ({"revisionId": "12"}, "'revisionId' must be an integer"),
                               ({"revisionId": 1, "offset": -1}, "'offset' must be at least 0")):
        result = call(bot_server, "get-revision", **arguments)
        assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text


# -- get-page-history --------------------------------------------------------------

@on_every_version
def test_history_lists_revisions_newest_first_in_compact_rows(bot_server: Any, history: History,
                                                              wiki: RealWiki) -> None:
    result = call(bot_server, "get-page-history", title=HISTORY_TITLE)
    assert not result.is_error and len(result.blocks) == 1  # ten fit in one segment of 20
    rows = rows_of(result.blocks[0])
    assert [int(r.split(" | ")[0]) for r in rows] == history.revisions[::-1]
    sizes = {r["revid"]: r["size"] for r in wiki.raw_get(
        action="query", titles=HISTORY_TITLE, prop="revisions", rvprop="ids|size|timestamp",
        rvlimit=50)["query"]["pages"][0]["revisions"]}
    for row in rows:
        revision, _, user, change, *rest = row.split(" | ")
        index = history.revisions.index(int(revision))
        parent_size = sizes[history.revisions[index - 1]] if index else 0
        assert user == history.users[int(revision)]
        assert change == signed(sizes[int(revision)] - parent_size)
        assert ("minor" in rest) == (int(revision) in history.minor)
        assert rest[-1] == f'"Step {index}"'
    redirect_row = rows[len(rows) - 1 - history.revisions.index(history.redirect_revision)]
    assert redirect_row.endswith('| tags: mw-new-redirect | "Step 8"')


def listed_revisions(result: Result) -> list[int]:
    return [int(r.split(" | ")[0]) for r in rows_of(result.blocks[0])]


def test_history_walked_by_its_markers_shows_every_revision_once(bot_server: Any, history: History) -> None:
    results = follow_markers(bot_server, "get-page-history", "olderThan", {"title": HISTORY_TITLE, "limit": 3})
    assert len(results) == 4
    for result in results[:-1]:
        assert result.blocks[1] == ("More results available. Returned 3 revisions. To fetch the next "
                                    f"segment, call get-page-history again with olderThan={listed_revisions(result)[-1]}.")
    seen = [revision for result in results for revision in listed_revisions(result)]
    assert seen == history.revisions[::-1]  # each exactly once, newest first


def test_history_walks_forward_with_newer_than(bot_server: Any, history: History) -> None:
    results = follow_markers(bot_server, "get-page-history", "newerThan",
                             {"title": HISTORY_TITLE, "limit": 4, "newerThan": history.revisions[0]})
    segments = [listed_revisions(result) for result in results]
    assert all(segment == sorted(segment, reverse=True) for segment in segments)  # newest first
    assert [revision for segment in segments for revision in segment[::-1]] == history.revisions[1:]


def test_history_filters_by_tag_and_user(bot_server: Any, history: History, wiki: RealWiki) -> None:
    tagged = call(bot_server, "get-page-history", title=HISTORY_TITLE, tag="mw-new-redirect")
    (row,) = rows_of(tagged.blocks[0])
    before = history.revisions[history.revisions.index(history.redirect_revision) - 1]
    sizes = {r["revid"]: r["size"] for r in wiki.raw_get(
        action="query", revids=f"{history.redirect_revision}|{before}", prop="revisions",
        rvprop="ids|size")["query"]["pages"][0]["revisions"]}
    # the size change is against the parent, which the filter left out
    assert row.split(" | ")[3] == signed(sizes[history.redirect_revision] - sizes[before])
    editor = call(bot_server, "get-page-history", title=HISTORY_TITLE, user="Editor")
    assert [int(r.split(" | ")[0]) for r in rows_of(editor.blocks[0])] == [
        r for r in history.revisions[::-1] if history.users[r] == "Editor"]
    none = call(bot_server, "get-page-history", title=HISTORY_TITLE, tag="no-such-tag")
    assert none.blocks == [f"No revisions of {HISTORY_TITLE} tagged no-such-tag."]


def test_history_errors(bot_server: Any, history: History) -> None:
    missing = call(bot_server, "get-page-history", title="No such page here")
    assert missing.is_error and missing.blocks[0].startswith("not_found: Page 'No such page here' not found")
    both = call(bot_server, "get-page-history", title=HISTORY_TITLE, olderThan=history.revisions[5],
                newerThan=history.revisions[1])
    assert both.is_error and both.blocks[0].startswith("invalid_input: Give olderThan or newerThan, not both")
    gone = call(bot_server, "get-page-history", title=HISTORY_TITLE, olderThan=987654321)
    assert gone.is_error and gone.blocks[0].startswith("not_found: Revision 987654321 does not exist")
    big = call(bot_server, "get-page-history", title=HISTORY_TITLE, limit=51)
    assert big.is_error and "'limit' must be at most 50" in big.text


# -- compare-pages --------------------------------------------------------------------

@on_every_version
def test_compare_two_revisions_shows_the_changed_line_and_nothing_else(bot_server: Any,
                                                                        history: History) -> None:
    old, new = history.revisions[3], history.revisions[4]
    result = call(bot_server, "compare-pages", fromRevision=old, toRevision=new)
    assert not result.is_error and len(result.blocks) == 1
    header, diff = result.blocks[0].split("\n\n", 1)
    assert diff == "@@ -3,2 +3,2 @@\n~Line 3[- edit 3-]\n~Line 4{+ edit 4+}"
    assert header.splitlines()[0].startswith(f"From: {HISTORY_TITLE}, revision {old} (")
    assert header.splitlines()[1].startswith(f"To: {HISTORY_TITLE}, revision {new} (")
    assert "\nSize change: 0 bytes\nChanged lines: 2 removed, 2 added" in header
    one_line = call(bot_server, "compare-pages", fromRevision=history.revisions[0],
                    toRevision=history.revisions[1])
    assert content_of(one_line.blocks[0]) == "@@ -1 +1 @@\n~Line 1{+ edit 1+}"


@on_every_version
def test_compare_a_title_with_supplied_text(bot_server: Any) -> None:
    result = call(bot_server, "compare-pages", fromTitle="Apple",
                  toText="An apple is a red fruit.\n[[Category:Fruits]]")
    header, diff = result.blocks[0].split("\n\n", 1)
    assert diff == "@@ -1 +1 @@\n~An apple is a {+red +}fruit."
    assert "To: the supplied toText (44 bytes)\nSize change: +4 bytes" in header
    quiet = call(bot_server, "compare-pages", fromTitle="Apple",
                 toText="An apple is a red fruit.\n[[Category:Fruits]]", includeDiff=False)
    assert quiet.blocks == [header]
    same = call(bot_server, "compare-pages", fromTitle="Apple", toTitle="Apple")
    assert same.blocks[0].endswith("Size change: 0 bytes\nChanged lines: none (the two sides are identical)")


def test_compare_with_long_text_goes_by_post(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    text = wiki.wikitext("Long page") + "\nOne more line."
    with counter.counting() as n:
        result = call(server, "compare-pages", fromTitle="Long page", toText=text)
    assert n[0] == 1 and "action=compare" not in counter.urls[-1]  # the text went in the body
    assert content_of(result.blocks[0]).endswith("+One more line.")


@on_every_version
def test_a_long_diff_is_truncated_and_read_whole_by_offset(bot_server: Any, wiki: RealWiki) -> None:
    lines = wiki.wikitext("Long page").split("\n")
    expected = "\n".join([f"@@ -1,{len(lines)} +1 @@"] + ["-" + line for line in lines] + ["+Short."])
    parts, offset = [], 0
    for _ in range(5):
        result = call(bot_server, "compare-pages", fromTitle="Long page", toText="Short.", offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        assert result.blocks[1].startswith("Content truncated at ")
        offset = int(result.blocks[1].rsplit("offset=", 1)[1].rstrip("."))
        assert result.blocks[1].endswith(f"To read on, call compare-pages again with offset={offset}.")
    assert len(parts) == 2 and "".join(parts) == expected


@pytest.mark.parametrize("arguments, message", [
    ({"toTitle": "Apple"}, "Must supply exactly one of fromRevision, fromTitle, fromText."),
    ({"fromRevision": 1, "fromTitle": "Apple", "toTitle": "Apple"},
     "Must supply exactly one of fromRevision, fromTitle, fromText; got fromRevision and fromTitle."),
    ({"fromTitle": "Apple"}, "Must supply exactly one of toRevision, toTitle, toText."),
    ({"fromText": "a", "toText": "b"}, "Cannot compare fromText with toText"),
    ({"fromTitle": "Apple", "toRevision": -3}, "'toRevision' must be at least 1"),
])
def test_compare_refuses_bad_side_mixes(bot_server: Any, arguments: dict[str, Any], message: str) -> None:
    result = call(bot_server, "compare-pages", **arguments)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text


def test_compare_missing_sides_are_not_found(bot_server: Any) -> None:
    page = call(bot_server, "compare-pages", fromTitle="No such page here", toTitle="Apple")
    assert page.is_error and page.blocks[0].startswith("not_found: ") and "No such page here" in page.text
    revision = call(bot_server, "compare-pages", fromRevision=987654321, toTitle="Apple")
    assert revision.is_error and revision.blocks[0].startswith("not_found: ") and "987654321" in revision.text


ENGINE_TEXT = (f"Opening paragraph.\n\nA paragraph that moves.\n\n{LONG_PARAGRAPH}\n\n"
               "Third paragraph.\n\nFourth paragraph.\n\nClosing paragraph.")


ENGINE_EDITS: list[tuple[str, Callable[[str], str], str]] = [  # what, the edit, the diff it shows
    ("a moved paragraph",
     lambda text: text.replace("A paragraph that moves.\n\n", "").replace(
         "Fourth paragraph.\n\n", "Fourth paragraph.\n\nA paragraph that moves.\n\n"),
     "@@ -2,2 +1,0 @@\n-\n-A paragraph that moves.\n@@ -9,0 +8,2 @@\n+\n+A paragraph that moves."),
    ("a changed word inside a long paragraph",
     lambda text: text.replace("grain 37 of sand", "grain 37 of silt"),
     f"@@ -3 +3 @@\n{ONE_WORD_DIFF}"),
    ("a line added at the end",
     lambda text: text + "\nA line added at the end.",
     "@@ -11,0 +12 @@\n+A line added at the end."),
    ("a paragraph moved and edited",
     lambda text: text.replace("Third paragraph.\n\n", "") + "\nThird paragraph, moved last.",
     "@@ -4,2 +3,0 @@\n-\n-Third paragraph.\n@@ -12,0 +11 @@\n~Third paragraph{+, moved last+}."),
    ("text holding the marks of a word diff",
     lambda text: text.replace("Fourth paragraph.", "Fourth paragraph, with [-a-] and {+b+} in it."),
     f"{ESCAPE_NOTE}\n@@ -5 +5 @@\n~Fourth paragraph{{+, with [\\-a-\\] and {{\\+b+\\}} in it+}}."),
    ("a word changed beside the text's own marks",
     lambda text: text.replace("{+b+} in it.", "{+b+} inside."),
     f"{ESCAPE_NOTE}\n@@ -5 +5 @@\n~Fourth paragraph, with [\\-a-\\] and {{\\+b+\\}} [-in it-]{{+inside+}}."),
]


@pytest.mark.parametrize("engine", list(DIFF_ENGINES))
def test_every_diff_engine_and_a_dry_run_show_the_same_lines(farm: WikiFarm, engine: str) -> None:
    """compare-pages reads each engine's table to the same lines, and a dry run shows the lines
    that compare-pages shows once the edit is saved."""
    wiki = farm.wiki(DIFF_ENGINES[engine])
    server = shared_bot_server(farm, wiki)
    title, text = "Diff engine test", ENGINE_TEXT
    revisions = [create(server, title, text)]
    for what, edit, expected in ENGINE_EDITS:
        new = edit(text)
        dry = call(server, "update-page", title=title, source=new, dryRun=True)
        assert content_of(dry.blocks[0]) == expected, (engine, what, "dry run")
        saved = call(server, "update-page", title=title, source=new)
        assert not saved.is_error, saved.text
        revisions.append(int(field(saved, "Revision ID")))
        diff = call(server, "compare-pages", fromRevision=revisions[-2], toRevision=revisions[-1])
        assert content_of(diff.blocks[0]) == expected, (engine, what, "compare-pages")
        text = new
    table = wiki.raw_get(action="compare", fromrev=revisions[0], torev=revisions[1])["compare"]["body"]
    assert ("mw-diff-movedpara-left" in table) == engine.startswith("wikidiff2")  # the engine it says


# -- find-text-origin -------------------------------------------------------------------

def saved_history(wiki: RealWiki, title: str, steps: list[tuple[str, str]]) -> list[int]:
    """Saves each (account, text) of ``steps`` as the next revision of ``title``, through the bare API
    as Admin (the bot) or Editor (the second account); their revision IDs, oldest first."""
    sessions = {"Admin": bare_login(wiki, wiki.bot_user, wiki.bot_password),
                "Editor": bare_login(wiki, wiki.editor_user, wiki.editor_password)}
    revisions = []
    for n, (user, text) in enumerate(steps):
        session, token = sessions[user]
        edit = session.post(wiki.api, timeout=30, data={
            "action": "edit", "title": title, "text": text, "summary": f"Step {n}", "token": token,
            "format": "json", "formatversion": "2"}).json()["edit"]
        assert edit["result"] == "Success" and "nochange" not in edit, edit
        revisions.append(edit["newrevid"])
    return revisions


def river_log(day: int, *extra: str) -> str:
    """A page of a river's log on ``day``: a line that changes every day, then ``extra`` lines."""
    return "\n".join([f"The river log, day {day}.", "The gauge stands at the bridge.", *extra])


ORIGIN_SENTENCE = "The ferry was built in 1873."


def added_lines(old: str, new: str, text: str) -> str:
    start = new.index(text)
    return adding_lines(old, new, (start, start + len(text)))


def test_the_diff_line_of_an_addition_is_the_text_s_own_cut_to_size() -> None:
    """find-text-origin shows the lines the text is on as compare-pages shows them, not a whole page
    made or passage pasted with it, and a long line cut around the text."""
    long_line = " ".join(["word"] * 120 + [ORIGIN_SENTENCE] + ["more"] * 120)
    assert added_lines("Intro.\nOther.", f"Intro changed.\n{long_line}\nOther.", ORIGIN_SENTENCE) == (
        "@@ -1,0 +2 @@\n+…" + "word " * 19 + ORIGIN_SENTENCE + " more" * 19 + "…")
    lines = [f"Line {n}." for n in range(60)]
    assert added_lines("", "\n".join([*lines, f"Then: {ORIGIN_SENTENCE}", "End."]), ORIGIN_SENTENCE) == (
        f"@@ -0,0 +61 @@\n+Then: {ORIGIN_SENTENCE}")  # the page made with it: its line alone
    pasted = "\n".join(["Intro.", *lines, f"Then: {ORIGIN_SENTENCE}", "Other."])
    assert added_lines("Intro.\nOther.", pasted, ORIGIN_SENTENCE) == f"@@ -1,0 +62 @@\n+Then: {ORIGIN_SENTENCE}"
    spanning = added_lines("Intro.\nOther.", pasted, "\n".join(lines[3:40]))  # ten lines of it at most
    assert spanning == "@@ -1,0 +5,10 @@\n" + "\n".join(f"+{line}" for line in lines[3:13])


def test_find_text_origin_shows_only_the_lines_of_a_text_that_spans_lines(wiki: RealWiki, bot_server: Any) -> None:
    """A text from an old line into the two lines added after it: the diff shows the added line it
    is on, not the other line the same edit added below it."""
    title = f"Ferry log {secrets.token_hex(4)}"
    revisions = saved_history(wiki, title, [("Admin", "Line A.\nLine B."),
                                            ("Editor", "Line A.\nLine B.\nשלום עולם — مرحبا\nLine C.")])
    result = call(bot_server, "find-text-origin", title=title, text="Line B.\nשלום")
    assert field(result, "Added in revision") == str(revisions[1]) and field(result, "User") == "Editor"
    assert result.text.split("\nDiff line that added it:\n", 1)[1] == "@@ -2,0 +3 @@\n+שלום עולם — مرحبا"


@on_every_version
def test_find_text_origin_names_the_revision_and_account_that_added_a_sentence(wiki: RealWiki,
                                                                                 bot_server: Any) -> None:
    """Twelve revisions, the sentence added by the second account in the eighth; then the ones after
    it change another line. Bisection finds it in a handful of reads, with the line it added."""
    title = f"Ferry log {secrets.token_hex(4)}"
    steps = [("Admin", river_log(day)) for day in range(7)]
    steps += [("Editor", river_log(7, ORIGIN_SENTENCE))]
    steps += [("Admin", river_log(day, ORIGIN_SENTENCE, f"Note {day}.")) for day in range(8, 12)]
    revisions = saved_history(wiki, title, steps)
    with RequestCounter(bot_server).counting() as n:
        result = call(bot_server, "find-text-origin", title=title, text="ferry was built")
    assert not result.is_error and len(result.blocks) == 1, result.text
    assert field(result, "Added in revision") == str(revisions[7])
    assert field(result, "User") == "Editor" and field(result, "Edit summary") == "Step 7"
    assert field(result, "Found").startswith(f'its latest addition: "ferry was built" is in revision '
                                             f"{revisions[7]} and each one read after it, not in revision "
                                             f"{revisions[6]} before it")
    assert f"diff={revisions[7]}&oldid={revisions[6]}" in field(result, "Diff")
    # the lines of the sentence, not the day's line that the edit changed too
    assert result.text.split("\nDiff line that added it:\n", 1)[1] == f"@@ -2,0 +3 @@\n+{ORIGIN_SENTENCE}"
    reads = int(field(result, "Revisions read").split()[0])
    assert reads <= 8 and field(result, "Revisions read").endswith("of 12 in the history")
    assert n[0] == 1 + reads  # the history in one request, then one a revision read
    assert "Earlier:" not in result.text and "History gaps" not in result.text
    regex = call(bot_server, "find-text-origin", title=title, text=r"built in \d{4}", regex=True)
    assert field(regex, "Added in revision") == str(revisions[7]), regex.text


@on_every_version
def test_find_text_origin_finds_the_latest_addition_and_says_it_was_there_before(wiki: RealWiki,
                                                                                bot_server: Any) -> None:
    title = f"Ferry log {secrets.token_hex(4)}"
    steps = [("Admin", river_log(0, ORIGIN_SENTENCE))]                                   # there from the start
    steps += [("Admin", river_log(day, ORIGIN_SENTENCE)) for day in range(1, 3)]
    steps += [("Admin", river_log(day)) for day in range(3, 6)]                          # removed
    steps += [("Editor", river_log(6, "Some say: " + ORIGIN_SENTENCE))]                  # added again
    steps += [("Admin", river_log(day, "Some say: " + ORIGIN_SENTENCE)) for day in range(7, 9)]
    revisions = saved_history(wiki, title, steps)
    result = call(bot_server, "find-text-origin", title=title, text=ORIGIN_SENTENCE)
    assert field(result, "Added in revision") == str(revisions[6]) and field(result, "User") == "Editor"
    assert field(result, "Found").startswith("its latest addition:")
    assert field(result, "Earlier").startswith(f"it was also in revision {revisions[0]} "), result.text
    assert "removed and added again" in field(result, "Earlier")
    assert f"+Some say: {ORIGIN_SENTENCE}" in result.text


@on_every_version
def test_find_text_origin_checks_the_reverts_after_the_addition_it_found(wiki: RealWiki) -> None:
    """The sentence added in one revision, removed later, and restored by an undo: the bisection's
    steps read revisions with the sentence on both sides of the removal, so the revision found first is
    not its latest addition. The undo (tagged mw-undo) is read with the one before it: the undo is the
    latest addition. With reads for the bisection only, the answer names the undo it did not check."""
    title = f"Ferry log {secrets.token_hex(4)}"
    steps = [("Admin", river_log(day)) for day in range(3)] + [("Editor", river_log(3, ORIGIN_SENTENCE))]
    steps += [("Admin", river_log(day, ORIGIN_SENTENCE)) for day in (4, 5)] + [("Editor", river_log(6))]
    revisions = saved_history(wiki, title, steps)
    session, token = bare_login(wiki, wiki.bot_user, wiki.bot_password)
    undo = session.post(wiki.api, timeout=30, data={
        "action": "edit", "title": title, "undo": revisions[-1], "token": token, "format": "json",
        "formatversion": "2"}).json()["edit"]
    assert undo["result"] == "Success" and wiki.wikitext(title) == river_log(5, ORIGIN_SENTENCE), undo
    assert "mw-undo" in latest_revision(wiki, title)["tags"]
    revisions += [undo["newrevid"]]
    revisions += saved_history(wiki, title, [("Admin", river_log(day, ORIGIN_SENTENCE)) for day in range(8, 12)])
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    with counter.counting() as n:
        result = call(server, "find-text-origin", title=title, text=ORIGIN_SENTENCE)
    assert not result.is_error and field(result, "Added in revision") == str(revisions[7]), result.text
    assert field(result, "User") == "Admin" and "mw-undo" in field(result, "Tags")
    assert field(result, "Found").startswith(
        f"its latest addition: {json.dumps(ORIGIN_SENTENCE)} is in revision {revisions[7]} and each one read after "
        f"it, not in revision {revisions[6]} before it")
    reads = int(field(result, "Revisions read").split()[0])
    assert n[0] == 1 + reads and field(result, "Revisions read") == f"{reads} of 12 in the history"
    unread = field(result, "Not read after it")
    assert unread.endswith("of the 4 after it, none tagged as a revert): a text removed and put back there by an "
                           "edit not tagged as a revert would not show"), unread
    assert str(revisions[7]) not in unread.split(" (")[0].split(", ")  # the undo was read
    assert "Unchecked reverts" not in result.text
    # seven reads take the bisection to the first addition, which it then names, with the undo unread
    capped = make_server(wiki.env(MCP_TEXT_ORIGIN_MAX_READS="7"))
    short = call(capped, "find-text-origin", title=title, text=ORIGIN_SENTENCE)
    assert not short.is_error and field(short, "Added in revision") == str(revisions[3]), short.text
    assert field(short, "Revisions read") == "7 of 12 in the history"
    assert field(short, "Unchecked reverts") == (
        f"{revisions[7]} (mw-undo), after it, restore earlier text, and the reads ran out before them: where one "
        "restored this text after a removal, it is the latest addition. To check, call find-text-origin again "
        f"with revisionId={revisions[7]}.")
    again = call(capped, "find-text-origin", title=title, text=ORIGIN_SENTENCE, revisionId=revisions[7])
    assert field(again, "Added in revision") == str(revisions[7]), again.text


@on_every_version
def test_find_text_origin_says_when_the_text_is_not_on_the_page(wiki: RealWiki, bot_server: Any) -> None:
    title = f"Ferry log {secrets.token_hex(4)}"
    revisions = saved_history(wiki, title, [("Admin", river_log(0, ORIGIN_SENTENCE)), ("Editor", river_log(1))])
    with RequestCounter(bot_server).counting() as n:
        result = call(bot_server, "find-text-origin", title=title, text=ORIGIN_SENTENCE)
    assert not result.is_error and result.blocks == [(
        f"Title: {title}\nNo match of {json.dumps(ORIGIN_SENTENCE)} in the wikitext of the page's current "
        f"revision ({revisions[1]}), so there is no addition to trace. To trace a text since removed, call "
        "find-text-origin again with the revisionId of a revision that has it (get-page-history lists them); a "
        "text a template shows, with the template's title.")]
    assert n[0] == 2  # the history, then the one revision's text
    older = call(bot_server, "find-text-origin", title=title, text=ORIGIN_SENTENCE, revisionId=revisions[0])
    assert field(older, "Added in revision") == str(revisions[0])
    assert field(older, "Found").startswith("the page's first revision:")
    assert f"+{ORIGIN_SENTENCE}" in older.text and field(older, "User") == "Admin"


def test_find_text_origin_of_a_text_a_template_shows_names_the_template_s_page_as_the_way_on(
        wiki: RealWiki, bot_server: Any) -> None:
    """The text is on the page as read, but from a template: the answer says it searched the page's
    wikitext, and the way on is the template's page, not older revisions of this one."""
    title = f"Fruit stall {secrets.token_hex(4)}"
    template = f"Template:{title} box"  # its own: other tests count the pages that use Fruitbox
    create(bot_server, template, "Fruit: {{{1}}}")
    create(bot_server, title, f"Today: {{{{{template.removeprefix('Template:')}|pears}}}}")
    assert "Fruit: pears" in call(bot_server, "get-page", title=title, content="text").text
    result = call(bot_server, "find-text-origin", title=title, text="Fruit: ")
    assert not result.is_error and "in the wikitext of the page's current revision" in result.text, result.text
    assert result.text.endswith("; a text a template shows, with the template's title.")
    there = call(bot_server, "find-text-origin", title=template, text="Fruit: ")
    assert int(field(there, "Added in revision")) in revision_ids(wiki, template), there.text


@on_every_version
def test_find_text_origin_stops_at_its_cap_and_the_next_call_goes_on(wiki: RealWiki) -> None:
    title = f"Ferry log {secrets.token_hex(4)}"
    steps = [("Admin", river_log(day)) for day in range(3)] + [("Editor", river_log(3, ORIGIN_SENTENCE))]
    steps += [("Admin", river_log(day, ORIGIN_SENTENCE)) for day in range(4, 16)]
    revisions = saved_history(wiki, title, steps)
    server = make_server(wiki.env(MCP_TEXT_ORIGIN_MAX_READS="3"))
    tool = next(t for t in list_tools(server) if t.name == "find-text-origin")
    assert "Reads at most 3 revisions." in tool.description
    arguments: dict[str, Any] = {"title": title, "text": ORIGIN_SENTENCE}
    counter = RequestCounter(server)
    with counter.counting() as n:
        calls = [call(server, "find-text-origin", **arguments)]
    while len(calls[-1].blocks) == 2:
        assert len(calls) < 10 and not calls[-1].is_error, calls[-1].text
        assert n[0] == 1 + 3, counter.urls[-n[0]:]  # the history, then the three reads the marker counts
        assert calls[-1].blocks[0].endswith("(revisions read: 3)."), calls[-1].blocks[0]
        marker = calls[-1].blocks[1]
        assert marker.startswith("Result capped at 3 revision reads. To read on, call find-text-origin again "
                                 "with revisionId="), marker
        arguments["revisionId"] = int(marker.rsplit("=", 1)[1].rstrip("."))
        assert revisions[3] <= arguments["revisionId"] < revisions[-1]
        assert f"is in revision {arguments['revisionId']} (" in calls[-1].blocks[0]
        with counter.counting() as n:
            calls.append(call(server, "find-text-origin", **arguments))
    assert len(calls) > 1 and field(calls[-1], "Added in revision") == str(revisions[3]), calls[-1].text
    assert field(calls[-1], "User") == "Editor"


@on_every_version
def test_find_text_origin_names_the_gaps_in_the_history(wiki: RealWiki, bot_server: Any) -> None:
    """A revision deleted with its page and left out when the page was restored is out of reach:
    the revision after it names a parent the history lacks, and as that gap lies right before the
    revision found, the answer says the text may have come in it."""
    title = f"Ferry log {secrets.token_hex(4)}"
    steps = [("Admin", river_log(day)) for day in range(3)] + [("Editor", river_log(3, ORIGIN_SENTENCE))]
    steps += [("Admin", river_log(day, ORIGIN_SENTENCE)) for day in range(4, 6)]
    import_page(wiki, title, [(user, f"Step {n}", text) for n, (user, text) in enumerate(steps)])
    session, token = bare_login(wiki, wiki.bot_user, wiki.bot_password)
    for action, fields in (("delete", {}), ("undelete", {"timestamps": "|".join(
            imported_at(n) for n in range(len(steps)) if n != 2)})):
        done = session.post(wiki.api, timeout=30, data={"action": action, "title": title, "token": token,
                                                        "format": "json", "formatversion": "2", **fields}).json()
        assert action in done, done
    revisions = revision_ids(wiki, title)[::-1]
    assert len(revisions) == len(steps) - 1
    result = call(bot_server, "find-text-origin", title=title, text=ORIGIN_SENTENCE)
    added, parent = revisions[2], parent_of(wiki, revisions[2])
    assert field(result, "Added in revision") == str(added) and field(result, "User") == "Editor"
    assert f"not in revision {revisions[1]} before it" in field(result, "Found")
    assert parent not in revisions and field(result, "History gaps") == (
        f"the parent of {added} ({parent}) is deleted. Those revisions are out of reach; one of them, before "
        f"revision {added}, may have added it.")
    whole = call(bot_server, "find-text-origin", title=title, text="The river log, day 5.")
    assert field(whole, "Added in revision") == str(revisions[-1])
    assert field(whole, "History gaps").endswith(" is deleted. Those revisions are out of reach.")


def parent_of(wiki: RealWiki, revision: int) -> int:
    """The parent revision ID a revision names."""
    return wiki.raw_get(action="query", revids=revision, prop="revisions", rvprop="ids")["query"]["pages"][0][
        "revisions"][0]["parentid"]


def test_find_text_origin_skips_revisions_whose_text_is_hidden(fake: FakeWiki) -> None:
    """A revision whose text an administrator hid (revision deletion, which the test wikis' accounts may
    not do) is never read: the bisection goes round it, and the answer says it may hold the addition."""
    def revision(revid: int, parent: int, sha1: str | None) -> dict[str, Any]:
        return {"revid": revid, "parentid": parent, "user": "Ann", "timestamp": f"2026-03-0{revid}T00:00:00Z",
                "comment": f"Edit {revid}", **({"sha1": sha1} if sha1 else {"sha1hidden": True})}

    def page(*revisions: dict[str, Any]) -> Reply:
        return Reply(body={"batchcomplete": True, "query": {"pages": [
            {"pageid": 1, "ns": 0, "title": "Main Page", "revisions": list(revisions)}]}})

    def text(revid: int, content: str) -> Reply:
        return page({"revid": revid, "slots": {"main": {"contentmodel": "wikitext", "content": content}}})
    fake.replies = [page(revision(5, 4, "e"), revision(4, 3, "d"), revision(3, 2, None), revision(2, 1, "b"),
                         revision(1, 0, "a")),
                    text(5, "Old line.\nThe ferry.\nMore."), text(4, "Old line.\nThe ferry."),
                    text(1, "Old line."), text(2, "Old line.")]
    result = call(fake_server(fake), "find-text-origin", title="Main Page", text="The ferry.")
    assert field(result, "Added in revision") == "4" and field(result, "Revisions read") == "4 of 5 in the history"
    assert field(result, "Found").endswith("not in revision 2 before it")
    assert field(result, "History gaps") == ("the text of 3 is hidden. Those revisions are out of reach; one of "
                                             "them, before revision 4, may have added it.")
    reads = [r["params"].get("revids") for r in fake.requests_to_api()][1:]
    assert reads == ["5", "4", "1", "2"]  # never 3


def test_find_text_origin_refuses_bad_arguments_and_changes_nothing(bot_server: Any, wiki: RealWiki) -> None:
    before = revision_ids(wiki, "Apple")
    cases = [
        ({"title": "Apple", "text": ""}, "invalid_input: Argument 'text' must not be empty."),
        ({"title": "Apple", "text": "(fruit", "regex": True}, "invalid_input: text is not a valid regular expression"),
        ({"title": "Apple", "text": "fruit", "revisionId": 0}, "invalid_input: "),
        ({"title": "Apple", "text": "fruit", "revisionId": 987654321}, "not_found: Revision 987654321 not found"),
        ({"title": "Apple", "text": "fruit", "revisionId": latest_revision(wiki, "Banana")["revid"]},
         "not_found: Revision "),
        ({"title": "No such page here", "text": "fruit"}, "not_found: Page 'No such page here' not found"),
        ({"title": "Apple", "text": "fruit", "since": "2020"}, "invalid_input: "),
        ({"title": "Apple", "find": "fruit"}, "invalid_input: "),
    ]
    for arguments, start in cases:
        result = call(bot_server, "find-text-origin", **arguments)
        assert result.is_error and len(result.blocks) == 1 and result.text.startswith(start), (arguments, result.text)
    assert revision_ids(wiki, "Apple") == before
    for value in ("1", "thirty", "-3"):  # the setting: at least 2, or no call could go on
        with pytest.raises(ConfigError, match="MCP_TEXT_ORIGIN_MAX_READS must be a whole number, at least 2"):
            Config.from_env({"MCP_TEXT_ORIGIN_MAX_READS": value})


# -- get-category-members ------------------------------------------------------------

FRUITS = ["Apple", "Banana", "Category:Citrus | subcat", "Cherry", "File:Notes.txt | file",
          "File:Red square.png | file"]


@on_every_version
def test_category_members_with_types_and_counts(bot_server: Any) -> None:
    for name in ("Fruits", "Category:Fruits", "category:Fruits"):
        result = call(bot_server, "get-category-members", category=name)
        assert not result.is_error and len(result.blocks) == 1
        assert result.blocks[0].split("\n")[0] == "Category:Fruits (pages: 3, subcategories: 1, files: 2):"
        assert sorted(rows_of(result.blocks[0])) == FRUITS
    subcats = call(bot_server, "get-category-members", category="Fruits", types=["subcat"])
    assert rows_of(subcats.blocks[0]) == ["Category:Citrus | subcat"]
    files = call(bot_server, "get-category-members", category="Fruits", namespaces=[6])
    assert rows_of(files.blocks[0]) == ["File:Notes.txt | file", "File:Red square.png | file"]


def test_an_empty_list_filters_nothing_as_an_absent_one(bot_server: Any) -> None:
    """types=[] or namespaces=[] is a filter left empty: every member, every link, as without it. It
    reached MediaWiki as an empty field (cmtype=), which asks for no type at all: "No members match"."""
    for arguments in ({"types": []}, {"namespaces": []}, {"types": [], "namespaces": []}):
        members = call(bot_server, "get-category-members", category="Fruits", **arguments)
        assert not members.is_error and sorted(rows_of(members.blocks[0])) == FRUITS, (arguments, members.text)
        links = call(bot_server, "get-links-here", title="Apple", **arguments)
        assert links.blocks == call(bot_server, "get-links-here", title="Apple").blocks, arguments


def test_category_members_continue_to_the_end(bot_server: Any) -> None:
    results = follow_markers(bot_server, "get-category-members", "continueFrom", {"category": "Fruits", "limit": 4})
    assert len(results) == 2 and results[0].blocks[0].startswith("Category:Fruits (pages: 3,")
    assert results[1].blocks[0].startswith("Category:Fruits:\n")  # the counts come with the first call
    seen = rows_of(results[0].blocks[0]) + rows_of(results[1].blocks[0])
    assert sorted(seen) == FRUITS and len(seen) == len(FRUITS)


def test_category_member_errors(bot_server: Any) -> None:
    missing = call(bot_server, "get-category-members", category="No such category")
    assert missing.is_error and missing.blocks[0].startswith(
        "not_found: Category:No such category has no page and no members")
    forged = call(bot_server, "get-category-members", category="Fruits", continueFrom="action=delete")
    assert forged.is_error and forged.blocks[0].startswith("invalid_input: continueFrom")
    bad_type = call(bot_server, "get-category-members", category="Fruits", types=["article"])
    assert bad_type.is_error and "must be one of page, subcat, file" in bad_type.text


# -- get-category-tree ------------------------------------------------------------------

def category_tree(server: Any, name: str) -> dict[str, str]:
    """A tree of categories of its own, named after ``name``: the root holds a page and A and C; A holds
    B, B holds A (a cycle); C holds D and E, D holds E and a page. Their full titles by letter ("" for the
    root)."""
    titles = {letter: f"Category:{name}{' ' + letter if letter else ''}" for letter in ("", "A", "B", "C", "D", "E")}
    parents = {"A": "", "B": "A", "C": "", "D": "C", "E": "D"}
    for letter, parent in parents.items():
        also = {"A": "B", "E": "C"}.get(letter)  # A is in B too (a cycle), E in C too (met twice)
        create(server, titles[letter], f"[[{titles[parent]}]]" + (f"\n[[{titles[also]}]]" if also else ""))
    create(server, titles[""], "The root of a tree.")
    create(server, f"{name} page", f"A page in the root. [[{titles['']}]]")
    create(server, f"{name} deep page", f"A page in D. [[{titles['D']}]]")
    return titles


TREE_LEGEND = "each under its parent with its counts (0 left out)"


@on_every_version
def test_get_category_tree_shows_depth_counts_pages_and_names_a_cycle(bot_server: Any) -> None:
    name = f"Tree {secrets.token_hex(3)}"
    t = category_tree(bot_server, name)
    counter = RequestCounter(bot_server)
    with counter.counting() as n:
        two = call(bot_server, "get-category-tree", category=name)
    assert not two.is_error and two.blocks == [(
        f"Subcategories of {t['']} to depth 2, {TREE_LEGEND}:\n"
        f"{t['']} (pages: 1, subcategories: 2)\n"
        f"  {t['A']} (subcategories: 1)\n"
        f"    {t['B']} (subcategories: 1)\n"
        f"  {t['C']} (subcategories: 2)\n"
        f"    {t['D']} (pages: 1, subcategories: 1)\n"
        f"    {t['E']}")], two.text
    assert n[0] == 4  # the root's counts, then the members of the root, A and C
    one = call(bot_server, "get-category-tree", category=t[""], depth=1, pages=True)
    assert one.blocks == [(
        f"Subcategories of {t['']} to depth 1, {TREE_LEGEND}; its pages and files as '- ' rows:\n"
        f"{t['']} (pages: 1, subcategories: 2)\n"
        f"  - {name} page\n"
        f"  {t['A']} (subcategories: 1)\n"
        f"  {t['C']} (subcategories: 2)")], one.text
    cycle = call(bot_server, "get-category-tree", category=t["A"], depth=3)
    assert cycle.blocks == [(
        f"Subcategories of {t['A']} to depth 3, {TREE_LEGEND}:\n"
        f"{t['A']} (subcategories: 1)\n"
        f"  {t['B']} (subcategories: 1)\n"
        f"    {t['A']} (subcategories: 1, cycle: {t['A']} → {t['B']} → {t['A']})")], cycle.text
    with counter.counting() as n:
        deep = call(bot_server, "get-category-tree", category=t["C"], depth=2, pages=True)
    assert deep.blocks[0].split("\n", 1)[1] == (  # E twice: under D, met again, not followed
        f"{t['C']} (subcategories: 2)\n  {t['D']} (pages: 1, subcategories: 1)\n    - {name} deep page\n"
        f"    {t['E']} (shown elsewhere in this tree)\n  {t['E']}")
    assert n[0] == 3  # C's counts, C's members, D's (E has none)
    deepest = call(bot_server, "get-category-tree", category=name, depth=5)
    assert deepest.text.endswith(f"\n  {t['C']} (subcategories: 2)\n    {t['D']} (pages: 1, subcategories: 1)\n"
                                 f"      {t['E']} (shown elsewhere in this tree)\n    {t['E']}")


def test_get_category_tree_caps_its_answer_naming_the_next_call(wiki: RealWiki) -> None:
    name = f"Wide tree {secrets.token_hex(3)}"
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    subcategories = [f"Category:{name} with a long name for a subcategory, number {n:02d}" for n in range(16)]
    for title in subcategories:
        create(bot_server_for(wiki), title, f"[[Category:{name}]]")
    result = call(server, "get-category-tree", category=name, depth=1)
    assert not result.is_error and len(result.blocks) == 2, result.text
    rows = rows_of(result.blocks[0])
    assert utf8_len(result.blocks[0]) <= 1000 and rows[1:] == [f"  {t}" for t in subcategories[:len(rows) - 1]]
    assert result.blocks[1] == (
        f"Result capped at {len(rows)} categories. Additional categories may exist — to see them, call "
        f"get-category-tree again with category={json.dumps(subcategories[len(rows) - 1])} and depth=1.")


def test_get_category_tree_s_cap_marker_followed_literally_keeps_the_depth_and_pages_asked(wiki: RealWiki) -> None:
    """Cut within a deep tree asked with pages=true: the call the marker names goes on as deep as the
    first call was asked to, below the category cut, and lists its pages too."""
    name = f"Deep tree {secrets.token_hex(3)}"
    chains = [[f"Category:{name} {n} {level} with a name long enough to fill the budget"
               for level in ("upper", "middle", "lower", "bottom")] for n in range(4)]
    import_pages(wiki, {**{title: f"[[{chain[at - 1] if at else 'Category:' + name}]]"
                           for chain in chains for at, title in enumerate(chain)},
                        **{f"{name} page {n}": f"[[{chain[-1]}]]" for n, chain in enumerate(chains)}})
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    first = call(server, "get-category-tree", category=name, depth=4, pages=True)
    assert len(first.blocks) == 2, first.text
    marker = first.blocks[1]
    arguments = {key: json.loads(value) for key, value in
                 (part.split("=", 1) for part in marker.split(" again with ", 1)[1].removesuffix(".").split(" and "))}
    cut = next(chain for chain in chains if arguments["category"] in chain)
    assert arguments == {"category": arguments["category"], "depth": 4 - cut.index(arguments["category"]),
                         "pages": True}, marker
    rest = call(server, "get-category-tree", **arguments)
    assert not rest.is_error and len(rest.blocks) == 1, rest.text
    assert rest.text.endswith(f"{cut[-1]} (pages: 1)\n{'  ' * (4 - cut.index(arguments['category']))}- "
                              f"{name} page {chains.index(cut)}"), rest.text


def test_get_category_tree_with_more_pages_than_fit_shows_those_that_do_and_its_marker_goes_on(
        wiki: RealWiki) -> None:
    """A category whose pages alone pass the byte budget: the pages that fit, a row naming the call
    that lists the rest, and a marker that names a call from further on, never the same call again."""
    name = f"Full shelf {secrets.token_hex(3)}"
    shelf = [f"{name} book number {n:02d} with a title long enough" for n in range(40)]
    import_pages(wiki, {**{title: f"[[Category:{name}]]" for title in shelf},
                        f"Category:{name} annex": f"[[Category:{name}]]",
                        **{f"{name} annex book {n}": f"[[Category:{name} annex]]" for n in range(2)}})
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    first = call(server, "get-category-tree", category=name, depth=1, pages=True)
    assert len(first.blocks) == 2 and utf8_len(first.blocks[0]) <= 1000, first.text
    rows = rows_of(first.blocks[0])
    shown = [row.removeprefix("  - ") for row in rows[1:-1]]
    assert rows[0] == f"Category:{name} (pages: 40, subcategories: 1)" and shown == shelf[:len(shown)] and shown
    assert rows[-1] == (f"  - … {40 - len(shown)} more: get-category-members with "
                        f"category={json.dumps('Category:' + name)} lists them")
    assert first.blocks[1].endswith(f'again with category="Category:{name} annex" and depth=1 and pages=true.')
    annex = call(server, "get-category-tree", category=f"Category:{name} annex", depth=1, pages=True)
    assert annex.blocks == [(f"Subcategories of Category:{name} annex to depth 1, {TREE_LEGEND}; its pages and "
                             f"files as '- ' rows:\nCategory:{name} annex (pages: 2)\n  - {name} annex book 0\n"
                             f"  - {name} annex book 1")], annex.text


def test_get_category_tree_stops_at_its_request_cap_naming_the_next_call(wiki: RealWiki) -> None:
    """A category of more subcategories, each with one of its own, than one call lists (the cap of
    requests): the rest are shown unlisted, and the marker names the first of them."""
    name = f"Broad tree {secrets.token_hex(3)}"
    children = [f"Category:{name} {n:02d}" for n in range(CATEGORY_TREE_REQUESTS + 1)]
    import_pages(wiki, {**{child: f"[[Category:{name}]]" for child in children},
                        **{f"{child} inner": f"[[{child}]]" for child in children}})
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    with counter.counting() as n:
        result = call(server, "get-category-tree", category=name)
    assert n[0] == CATEGORY_TREE_REQUESTS and len(result.blocks) == 2, result.text
    listed = CATEGORY_TREE_REQUESTS - 2  # after the root's counts and members, one a subcategory
    rows = rows_of(result.blocks[0])
    assert rows[1 + 2 * listed:] == [f"  {child} (subcategories: 1)" for child in children[listed:]]
    assert rows[2 * listed - 1:2 * listed + 1] == [f"  {children[listed - 1]} (subcategories: 1)",
                                                   f"    {children[listed - 1]} inner"]
    assert result.blocks[1] == (
        f"Result capped at {CATEGORY_TREE_REQUESTS} requests (the counts, then one a category listed): the "
        f"subcategories of {', '.join(children[listed:])} are not listed. To list them, call get-category-tree "
        f"again with category={json.dumps(children[listed])} and depth=1 (a category's subcategories).")
    rest = call(server, "get-category-tree", category=children[listed], depth=1)
    assert rows_of(rest.blocks[0]) == [f"{children[listed]} (subcategories: 1)", f"  {children[listed]} inner"]


def test_get_category_tree_with_pages_at_its_request_cap_names_the_categories_whose_pages_it_left_out(
        wiki: RealWiki) -> None:
    """Every category shown, only some categories' pages unlisted at the cap of requests: the marker
    says so, names those categories, and the call it names lists their pages; it does not call the
    tree capped at its categories."""
    name = f"Shelved tree {secrets.token_hex(3)}"
    children = [f"Category:{name} {n:02d}" for n in range(CATEGORY_TREE_REQUESTS)]
    import_pages(wiki, {**{child: f"[[Category:{name}]]" for child in children},
                        **{f"{child} book".removeprefix("Category:"): f"[[{child}]]" for child in children}})
    server = make_server(wiki.env())
    result = call(server, "get-category-tree", category=name, depth=1, pages=True)
    assert not result.is_error and len(result.blocks) == 2, result.text
    listed = CATEGORY_TREE_REQUESTS - 2  # after the root's counts and members, one a subcategory
    rows = rows_of(result.blocks[0])
    assert rows[1:] == [row for child in children[:listed] for row in
                        (f"  {child} (pages: 1)", f"    - {child.removeprefix('Category:')} book")] + [
                            f"  {child} (pages: 1)" for child in children[listed:]], result.text
    assert result.blocks[1] == (
        f"Result capped at {CATEGORY_TREE_REQUESTS} requests (the counts, then one a category listed): every "
        f"category is shown, but the pages and files of {', '.join(children[listed:])} are not listed. To list "
        f"them, call get-category-members with category={json.dumps(children[listed])} (a category's pages and "
        "files).")
    rest = call(server, "get-category-members", category=children[listed])
    assert f"{children[listed].removeprefix('Category:')} book" in rows_of(rest.blocks[0]), rest.text


def test_get_category_tree_refuses_bad_arguments(bot_server: Any) -> None:
    cases = [
        ({"category": "Fruits", "depth": 0}, "invalid_input: "),
        ({"category": "Fruits", "depth": 6}, "invalid_input: "),
        ({"category": "Fruits", "pages": "yes"}, "invalid_input: "),
        ({"category": "Fruits", "types": ["page"]}, "invalid_input: "),
        ({"category": ""}, "invalid_input: "),
        ({"category": "No such category here"}, "not_found: Category:No such category here has no page and no members"),
    ]
    for arguments, start in cases:
        result = call(bot_server, "get-category-tree", **arguments)
        assert result.is_error and len(result.blocks) == 1 and result.text.startswith(start), (arguments, result.text)


# -- get-links-here --------------------------------------------------------------------

@on_every_version
def test_links_here_shows_redirects_and_pages_reached_through_them(bot_server: Any) -> None:
    result = call(bot_server, "get-links-here", title="Apple")
    assert not result.is_error and result.blocks[0].startswith("Pages that link to Apple:\n")
    rows = rows_of(result.blocks[0])
    assert {"Fruit salad", "Fruit bowl", "Apple redirect | redirect",
            "Via redirect | via Apple redirect", "Fruit bowl | via Apple redirect"} <= set(rows)
    assert all("transclusion" not in r for r in rows)


def test_links_here_for_templates_files_and_missing_pages(bot_server: Any, wiki: RealWiki) -> None:
    template = call(bot_server, "get-links-here", title="Template:Fruitbox")
    assert rows_of(template.blocks[0]) == ["Fruit bowl | transclusion"]
    image = call(bot_server, "get-links-here", title="Image:Red square.png", types=["fileusage"])
    # other tests show the picture on pages of their own, so the rows are those the wiki lists now
    users = wiki.raw_get(action="query", list="imageusage", iutitle="File:Red square.png", iulimit="max")
    assert image.blocks[0] == "Pages that link to File:Red square.png:\n" + "\n".join(
        f"{page['title']} | file link" for page in users["query"]["imageusage"])
    assert "\nFruit bowl | file link" in image.blocks[0]
    missing = call(bot_server, "get-links-here", title="Pear")
    assert missing.blocks[0] == "Pages that link to Pear (the page does not exist):\nFruit bowl"
    nothing = call(bot_server, "get-links-here", title="Lemon")
    assert nothing.blocks == ["No pages link to Lemon."]
    wrong = call(bot_server, "get-links-here", title="Apple", types=["fileusage"])
    assert wrong.is_error and wrong.blocks[0].startswith("invalid_input: types 'fileusage' applies to File:")


def test_links_here_continues_to_the_end(bot_server: Any) -> None:
    whole = set(rows_of(call(bot_server, "get-links-here", title="Apple").blocks[0]))
    results = follow_markers(bot_server, "get-links-here", "continueFrom", {"title": "Apple", "limit": 1})
    assert len(results) > 3 and {row for r in results for row in rows_of(r.blocks[0])} == whole


# -- get-page-links --------------------------------------------------------------------

@on_every_version
def test_page_links_shows_what_a_page_uses_in_one_answer(bot_server: Any) -> None:
    """The page's template and categories are its own: Fruitbox and the Fruits category would add
    it to the transclusions and members other tests list whole."""
    mark = secrets.token_hex(4)
    hidden, shown, title = f"Category:Hidden {mark}", f"Category:Uses {mark}", f"Page uses {mark}"
    create(bot_server, hidden, "__HIDDENCAT__")
    create(bot_server, f"Template:Use box {mark}", "Fruit: {{{1|none}}}")
    create(bot_server, title, f"{{{{Use box {mark}|Apple}}}} [[Pear]] and [[Apple]]. [[File:Red square.png]]\n"
                              f"[[{shown}]] [[{hidden}]]")
    result = call(bot_server, "get-page-links", title=title)
    assert result.blocks == [f"{title} uses:\nApple | link\nPear | link\nTemplate:Use box {mark} | template\n"
                             + "\n".join(sorted([f"{hidden} | category, hidden", f"{shown} | category"]))
                             + "\nFile:Red square.png | file"]
    redirect = call(bot_server, "get-page-links", title="Apple redirect")
    assert redirect.blocks == ["Apple (redirected from Apple redirect) uses:\nCategory:Fruits | category"]
    assert call(bot_server, "get-page-links", title="Lemon").blocks == [
        "Lemon uses:\nCategory:Citrus | category"]
    missing = call(bot_server, "get-page-links", title="Pear")
    assert missing.is_error and missing.blocks[0].startswith("not_found: Page 'Pear' not found on ")


def test_page_links_continues_past_its_cap_without_repeating_a_row(bot_server: Any) -> None:
    """The page uses a template and a category of its own: one that others count (Fruitbox, the
    Fruits category) would add it to the members and transclusions other tests list whole."""
    mark = secrets.token_hex(4)
    title, targets = f"Many links {mark}", [f"Link target {n:03d}" for n in range(150)]
    create(bot_server, f"Template:Link box {mark}", "A box.")
    create(bot_server, title, f"{{{{Link box {mark}}}}} " + " ".join(f"[[{t}]]" for t in targets)
           + f" [[Category:Many links {mark}]]")
    results = follow_markers(bot_server, "get-page-links", "continueFrom", {"title": title})
    assert len(results) == 2 and "Returned 102 rows." in results[0].blocks[1]
    rows = [row for r in results for row in rows_of(r.blocks[0])]
    assert rows == [f"{t} | link" for t in targets[:100]] + [f"Template:Link box {mark} | template",
                                                             f"Category:Many links {mark} | category"] + [
        f"{t} | link" for t in targets[100:]]
    forged = call(bot_server, "get-page-links", title=title, continueFrom="action=delete")
    assert forged.is_error and forged.blocks[0].startswith("invalid_input: continueFrom")


def test_page_links_and_links_here_name_each_other() -> None:
    """"Which templates does a page use, and which pages link to it?": each tool routes to the other."""
    tools = {t.name: t for t in list_tools(create_server(Config.from_env(WRITABLE_NOWHERE)))}
    assert "For what a page uses, use get-page-links." in tools["get-links-here"].description
    assert "For pages linking to it, use get-links-here." in tools["get-page-links"].description
    assert "templates" in tools["get-page-links"].description
    assert f"At most {PAGE_USES_CAP} of each a call." in tools["get-page-links"].description


# -- get-recent-changes ----------------------------------------------------------------

def change_rows(server: Any, **arguments: Any) -> list[str]:
    result = call(server, "get-recent-changes", **arguments)
    assert not result.is_error, result.text
    return [] if result.blocks[0] == "No changes match." else rows_of(result.blocks[0])


@on_every_version
def test_recent_changes_in_a_time_window(bot_server: Any, history: History) -> None:
    rows = change_rows(bot_server, start=history.started, end=history.finished, limit=500)
    mine = [r for r in rows if r.split(" | ")[1] == HISTORY_TITLE]
    assert [int(r.split(" | ")[2].rsplit(" ", 1)[1]) for r in mine] == history.revisions[::-1]
    assert mine[-1].split(" | ")[2] == f"new page, revision {history.revisions[0]}"
    timestamps = [r.split(" | ")[0] for r in rows]
    assert timestamps == sorted(timestamps, reverse=True)
    assert all(history.started <= t <= history.finished for t in timestamps)
    assert change_rows(bot_server, start="2099-01-01T00:00:00Z") == []


def test_a_time_at_the_ends_of_the_calendar_is_read_or_refused_never_a_crash(bot_server: Any,
                                                                            history: History) -> None:
    """The year 1 is sent as MediaWiki reads it (0001), and a zone that moves a time out of the
    years 1 to 9999 is invalid_input naming the argument, in every tool and prompt that takes a time."""
    since_ever = change_rows(bot_server, start="0001-01-01", end=history.finished, limit=500)
    assert {str(r) for r in history.revisions} <= {row.split(" | ")[2].rsplit(" ", 1)[-1] for row in since_ever}
    for tool, arguments in (("get-recent-changes", {}), ("get-user-contributions", {"user": "Editor"}),
                            ("get-log-events", {})):
        for name, said in (("start", "0001-01-01T00:00:00+05:00"), ("end", "9999-12-31T23:00:00-05:00")):
            refused = call(bot_server, tool, **arguments, **{name: said})
            assert refused.is_error and refused.blocks == [
                f"invalid_input: Argument {name!r} is {said!r}, which in UTC falls outside the years 1 to 9999."
            ], (tool, refused.text)
    assert prompt_error(bot_server, "review-recent-changes", {"since": "0001-01-01T00:00:00+05:00"}) == (
        "invalid_input: Argument 'since' is '0001-01-01T00:00:00+05:00', which in UTC falls outside the years 1 "
        "to 9999.")


def test_recent_changes_filters(bot_server: Any, history: History) -> None:
    editor = change_rows(bot_server, user="Editor", limit=500)
    assert editor and all(r.split(" | ")[3] == "Editor" for r in editor)
    assert {f"revision {r}" for r in history.revisions if history.users[r] == "Editor"} <= {
        r.split(" | ")[2] for r in editor}
    uploads = change_rows(bot_server, types=["log"], limit=500)
    assert any(r.split(" | ")[1:3] == ["File:Red square.png", "log upload/upload"] for r in uploads)
    everyone = change_rows(bot_server, end=history.finished, limit=500)
    humans = change_rows(bot_server, end=history.finished, hide=["bot"], limit=500)
    assert any(r.split(" | ")[1] in BATCH_TITLES and "bot" in r.split(" | ")[5] for r in everyone)
    assert not any(r.split(" | ")[1] in BATCH_TITLES for r in humans)  # imported as bot edits
    assert any(r.split(" | ")[1] == HISTORY_TITLE for r in humans)
    tagged = change_rows(bot_server, start=history.started, end=history.finished, tag="mw-new-redirect")
    assert f"revision {history.redirect_revision}" in {r.split(" | ")[2] for r in tagged}
    assert all(" | tags: mw-new-redirect | " in r for r in tagged)


def test_recent_changes_continue(bot_server: Any, history: History) -> None:
    window = {"start": history.started, "end": history.finished}
    results = follow_markers(bot_server, "get-recent-changes", "continueFrom", {**window, "limit": 4})
    assert len(results) >= 3
    assert [row for r in results for row in rows_of(r.blocks[0])] == change_rows(bot_server, **window, limit=500)


@pytest.mark.parametrize("arguments, message", [
    ({"start": "last tuesday"}, "Argument 'start' must be a date or time in ISO 8601"),
    ({"end": "2026-02-30"}, "Argument 'end' must be a date or time in ISO 8601"),
    ({"start": "2026-02-01", "end": "2026-01-01"}, "start (2026-02-01T00:00:00Z) is after end"),
    ({"user": "Admin", "excludeUser": "Editor"}, "Give user or excludeUser, not both."),
    ({"hide": ["anonymous", "registered"]}, "Hiding both anonymous and registered users"),
    ({"types": ["edits"]}, "must be one of edit, new, log, categorize"),
])
def test_recent_changes_refuse_bad_arguments(bot_server: Any, arguments: dict[str, Any], message: str) -> None:
    result = call(bot_server, "get-recent-changes", **arguments)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text


# -- parse-wikitext -----------------------------------------------------------------------

@on_every_version
def test_parse_wikitext_marks_missing_links_and_saves_nothing(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "parse-wikitext", title="Sandbox test", wikitext=(
        "{{Fruitbox|Kiwi}} {{Nosuch}} [[Apple]] [[Pear]] {{PAGENAME}} [[Category:Fruits]] "
        "https://example.org/x"))
    assert not result.is_error and len(result.blocks) == 1
    header, body = result.blocks[0].split("\n\n", 1)
    assert header.split("\n") == [
        "Rendered as: Sandbox test", "Links: Apple, Pear (missing), Template:Nosuch (missing)",
        "Templates: Template:Fruitbox, Template:Nosuch (missing)", "Categories: Fruits",
        "External links: https://example.org/x"]
    assert '<div class="fruitbox">Fruit: Kiwi</div>' in body and "Sandbox test" in body
    assert wiki.raw_get(action="query", titles="Sandbox test")["query"]["pages"][0].get("missing")


def test_parse_wikitext_of_long_text_posts_and_continues(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    wikitext = "\n\n".join(f"Paragraph {n} of a long preview, with [[Apple]]." for n in range(1500))
    with counter.counting() as n:
        first = call(server, "parse-wikitext", wikitext=wikitext)
    assert n[0] == 1 and "action=parse" not in counter.urls[-1]  # the text went in the body
    assert first.blocks[0].startswith("Rendered as: API\nLinks: Apple\n\n")
    parts, result, offset = [content_of(first.blocks[0])], first, 0
    while len(result.blocks) == 2:
        assert result.blocks[1].endswith(f"To read on, call parse-wikitext again with offset={offset + len(parts[-1].encode())}.")
        offset = int(result.blocks[1].rsplit("offset=", 1)[1].rstrip("."))
        result = call(server, "parse-wikitext", wikitext=wikitext, offset=offset)
        assert result.blocks[0].startswith(f"Rendered as: API\nOffset: {offset} of ")  # the lists came first
        parts.append(content_of(result.blocks[0]))
    html = "".join(parts)
    # 1.43 adds the language and direction to the wrapper: <div class="mw-content-ltr mw-parser-output" ...>
    assert len(parts) >= 3 and re.match(r'<div class="[^"]*mw-parser-output"[^>]*><p>Paragraph 0 of', html)
    assert html.endswith("</div>") and html.count("<p>Paragraph ") == 1500


def test_the_lists_of_a_preview_share_a_quarter_of_the_budget_and_say_how_many_more(wiki: RealWiki) -> None:
    """3000 links and 3000 external links came back whole in the header (84 KB on a 1000-byte budget):
    each list now shows those that fit what is left of a quarter of the budget, then how many more."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    wikitext = " ".join(f"[[Linked page {n}]] http://example.org/{n}" for n in range(3000)) + " [[Apple]]"
    result = call(server, "parse-wikitext", wikitext=wikitext)
    assert not result.is_error and len(result.blocks) == 2, result.text[:300]
    header = result.blocks[0].split("\n\n", 1)[0]
    assert utf8_len(header) <= 1000 // 4 + 100, header  # the labels and the counts on top
    links, external = field(result, "Links"), field(result, "External links")
    shown_links = links.split(", and ")[0].split(", ")
    assert links == ", ".join(shown_links) + f", and {3001 - len(shown_links)} more"
    assert shown_links[:2] == ["Linked page 0 (missing)", "Linked page 1 (missing)"], links
    assert external.startswith("http://example.org/0") and external.endswith(" more"), external
    assert utf8_len("\n".join(result.blocks)) < 2 * 1000  # the header, the HTML within the budget, the marker


def test_a_preview_with_many_links_still_lists_its_few_categories(wiki: RealWiki) -> None:
    """An article's hundreds of links do not take the room of its three categories: each list has an
    even share of what the shorter ones leave, so the categories the model added are all listed."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="4000"))
    wikitext = " ".join(f"[[Linked page {n}]]" for n in range(300)) + "".join(
        f"[[Category:Preview category {n}]]" for n in range(3))
    result = call(server, "parse-wikitext", wikitext=wikitext)
    assert not result.is_error, result.text[:300]
    assert field(result, "Categories") == "Preview category 0 (missing), Preview category 1 (missing), " \
                                          "Preview category 2 (missing)"
    assert field(result, "Links").startswith("Linked page 0 (missing), ") and field(result, "Links").endswith(" more")


def test_parse_wikitext_refuses_empty_text(bot_server: Any) -> None:
    result = call(bot_server, "parse-wikitext", wikitext="  \n")
    assert result.is_error and result.blocks[0].startswith("invalid_input: Argument 'wikitext' must contain")


# -- get-file and get-file-data ----------------------------------------------------------------

@on_every_version
def test_get_file_metadata_with_or_without_prefix(bot_server: Any, wiki: RealWiki) -> None:
    png = SEED_FILES["Red square.png"]
    # Media: as a [[Media:...]] link names the file itself; it was looked up as File:Media:Red square.png
    for name in ("Red square.png", "File:Red square.png", "Image:Red square.png", "Media:Red square.png"):
        result = call(bot_server, "get-file", title=name)
        assert not result.is_error
        lines = result.text.split("\n")
        assert lines[0] == "Title: File:Red square.png"
        assert lines[1].startswith(f"URL: {wiki.url}/images/") and lines[1].endswith("/Red_square.png")
        assert f"Description URL: {wiki.url}/wiki/File:Red_square.png" in lines
        assert {"MIME type: image/png", f"Size: {len(png)} bytes", "Dimensions: 40×30 pixels"} <= set(lines)
        assert any(line.startswith("Uploaded: ") and line.endswith(" by Admin") for line in lines)
    text = call(bot_server, "get-file", title="Notes.txt")
    assert "MIME type: text/plain" in text.text and "Dimensions" not in text.text


def test_get_file_of_a_missing_file_is_not_found(bot_server: Any) -> None:
    for tool in ("get-file", "get-file-data"):
        result = call(bot_server, tool, title="No such file.png")
        assert result.is_error and result.blocks[0].startswith("not_found: File 'File:No such file.png' not found")


def test_get_file_data_returns_the_image(bot_server: Any) -> None:
    result = call(bot_server, "get-file-data", title="Red square.png")
    assert not result.is_error and len(result.images) == 1
    assert call(bot_server, "get-file-data", title="Media:Red square.png").blocks == result.blocks
    image = result.images[0]
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == SEED_FILES["Red square.png"]
    assert "Rendition: original, 40×30 pixels" in result.blocks[0]  # this wiki has no scaler


def test_get_file_data_refuses_a_file_that_is_not_an_image(bot_server: Any) -> None:
    result = call(bot_server, "get-file-data", title="Notes.txt")
    assert result.is_error and not result.images
    assert result.blocks[0].startswith("invalid_input: File:Notes.txt is text/plain, which the wiki does "
                                       "not render as an image.")


def imageinfo_reply(fake: FakeWiki, thumb_url: str, mime: str = "image/png") -> Reply:
    return Reply(body={"query": {"pages": [{"ns": 6, "title": "File:Big.png", "imagerepository": "local",
                                            "imageinfo": [{
        "size": 5_000_000, "width": 4000, "height": 3000, "mime": mime,
        "url": f"http://127.0.0.1:{fake.port}/images/Big.png", "thumburl": thumb_url,
        "thumbwidth": 400, "thumbheight": 300}]}]}})


def test_get_file_data_fetches_the_scaled_rendition_with_the_wikis_credentials(fake: FakeWiki) -> None:
    thumb = png_bytes(400, 300, (0, 90, 200))
    fake.files["/images/thumb/Big.png/400px-Big.png"] = (thumb, "image/png")
    fake.replies = [imageinfo_reply(fake, f"http://127.0.0.1:{fake.port}/images/thumb/Big.png/400px-Big.png")]
    result = call(fake_server(fake, MEDIAWIKI_TOKEN="tok-file-123"), "get-file-data", title="Big.png", width=400)
    assert not result.is_error and base64.b64decode(result.images[0].data) == thumb
    assert "Rendition: 400×300 pixels, scaled from 4000×3000" in result.blocks[0]
    assert fake.seen[-2]["params"]["iiurlwidth"] == "400"
    assert fake.seen[-1]["path"].endswith("400px-Big.png")
    assert fake.seen[-1]["headers"].get("Authorization") == "Bearer tok-file-123"  # same host
    assert not any(s["path"] == "/images/Big.png" for s in fake.seen)  # the original was not fetched


def test_get_file_data_sends_no_credentials_to_another_host(fake: FakeWiki) -> None:
    other = FakeWiki()
    try:
        thumb = png_bytes(4, 3)
        other.files["/thumb.png"] = (thumb, "image/png")
        fake.replies = [imageinfo_reply(fake, f"http://localhost:{other.port}/thumb.png")]
        result = call(fake_server(fake, MEDIAWIKI_TOKEN="tok-file-123"), "get-file-data", title="Big.png")
        assert not result.is_error and base64.b64decode(result.images[0].data) == thumb
        assert len(other.seen) == 1 and "Authorization" not in other.seen[0]["headers"]
    finally:
        other.close()


def test_get_file_data_of_a_wiki_a_model_added_passes_the_address_guard(fake: FakeWiki) -> None:
    """A wiki added by a model (its client guarded) cannot point the server at a private host."""
    other = FakeWiki()
    try:
        other.files["/thumb.png"] = (png_bytes(4, 3), "image/png")
        fake.replies = [imageinfo_reply(fake, f"http://localhost:{other.port}/thumb.png")]
        server = make_server({"MEDIAWIKI_URL": fake.api}, retry=RetryPolicy(sleep=lambda s: None),
                             guard=AddressGuard([f"127.0.0.1:{fake.port}"]))  # the wiki, not localhost
        result = call(server, "get-file-data", title="Big.png")
        assert result.is_error and result.blocks[0].startswith("permission_denied: localhost resolves to ")
        assert other.seen == [] and not result.images
    finally:
        other.close()


def test_get_file_data_refuses_icons_and_oversized_images(fake: FakeWiki) -> None:
    icon = f"http://127.0.0.1:{fake.port}/w/resources/assets/file-type-icons/fileicon-pdf.png"
    fake.files["/w/resources/assets/file-type-icons/fileicon-pdf.png"] = (png_bytes(120, 120), "image/png")
    fake.replies = [imageinfo_reply(fake, icon, mime="application/pdf")]
    refused = call(fake_server(fake), "get-file-data", title="Big.png")
    assert refused.is_error and not refused.images and "application/pdf" in refused.text
    assert not any("file-type-icons" in s["path"] for s in fake.seen)  # never fetched, never shown
    fake.files["/big.png"] = (png_bytes(400, 300) + b"\0" * 2000, "image/png")
    fake.replies = [imageinfo_reply(fake, f"http://127.0.0.1:{fake.port}/big.png")]
    over = call(fake_server(fake, MCP_FILE_DATA_MAX_BYTES="1000"), "get-file-data", title="Big.png")
    assert over.is_error and over.blocks[0].startswith("invalid_input: The image of File:Big.png is over the "
                                                       "1000-byte cap (MCP_FILE_DATA_MAX_BYTES")
    assert "smaller width" in over.text


def test_new_tools_list_entries_stay_small() -> None:
    """tools/list is paid on every turn: these tools stay compact."""
    new = {"get-revision", "get-page-history", "compare-pages", "get-category-members", "get-links-here",
           "get-recent-changes", "parse-wikitext", "get-file", "get-file-data"}
    tools = {t.name: t for t in list_tools(create_server(Config.from_env({"MCP_TOOLSETS": "all"})))}
    assert new <= set(tools)
    sizes = {name: len(json.dumps(tools[name].model_dump(by_alias=True, exclude_none=True),
                                  ensure_ascii=False).encode()) for name in new}
    print(sizes)
    assert all(size < 1900 for size in sizes.values()), sizes
