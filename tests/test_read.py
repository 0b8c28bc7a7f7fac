"""Tests: Read tools on the real wiki."""
from __future__ import annotations

import json
import logging
import secrets
from typing import Any

import pytest

from realwiki import (
    BATCH_TITLES,
    NON_ASCII_TITLE,
    SEARCH_WORD,
    RealWiki,
)
from tests.support import (
    HISTORY_TITLE,
    History,
    RequestCounter,
    assert_requests_per_call,
    call,
    content_of,
    create,
    field,
    make_server,
    on_every_version,
)


@on_every_version
def test_get_page_truncates_the_long_page_with_sections_and_remedies(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "get-page", title="Long page")
    total = len(wiki.wikitext("Long page").encode())
    assert not result.is_error and len(result.blocks) == 2
    body = content_of(result.blocks[0])
    marker = result.blocks[1]
    assert 49_990 < len(body.encode()) + len(marker.encode()) <= 50_000  # the marker is in the budget
    assert marker.startswith(f"Content truncated at {len(body.encode())} of {total} bytes. "
                             "Available sections: 0 (Lead), 1 (Section 1), 2 (Section 2),")
    assert "6 (Subsection 5.1)" in marker
    assert "To read a specific section, call get-page again with section=N." in marker
    assert marker.endswith(f"To read on, call get-page again with offset={len(body.encode())}.")


def test_following_offset_markers_reads_every_byte(bot_server: Any, wiki: RealWiki) -> None:
    expected = wiki.wikitext("Long page")
    parts, offset = [], 0
    for _ in range(10):
        result = call(bot_server, "get-page", title="Long page", offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        offset = int(result.blocks[-1].rsplit("offset=", 1)[1].rstrip("."))
    assert "".join(parts) == expected


def test_a_section_over_the_budget_offers_offset_only_and_reads_whole(bot_server: Any, wiki: RealWiki) -> None:
    expected = wiki.raw_get(action="query", prop="revisions", titles="Long page", rvprop="content",
                            rvslots="main", rvsection=8)["query"]["pages"][0]["revisions"][0]["slots"]["main"]["content"]
    assert len(expected.encode()) > 50_000
    parts, offset = [], 0
    for _ in range(5):
        result = call(bot_server, "get-page", title="Long page", section=8, offset=offset)
        assert "Section: 8" in result.blocks[0]
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        marker = result.blocks[-1]
        assert "section=N" not in marker and "Available sections" not in marker
        offset = int(marker.rsplit("offset=", 1)[1].rstrip("."))
        assert marker.endswith(f"call get-page again with section=8 and offset={offset}.")
    assert "".join(parts) == expected


def test_get_page_reports_a_followed_redirect(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="Redirect page")
    assert result.blocks[0].startswith("Title: Target page\nRedirected from: Redirect page\nRevision ID: ")
    assert "The target of a redirect." in result.blocks[0]


def test_get_page_html_reports_a_followed_redirect(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="Redirect page", content="html")
    assert result.blocks[0].startswith("Title: Target page\nRedirected from: Redirect page\nRevision ID: ")
    assert "The target of a redirect." in result.blocks[0]


@on_every_version
def test_a_redirect_to_a_section_names_that_section(bot_server: Any, wiki: RealWiki) -> None:
    """#REDIRECT [[Target#Part]] gave the whole target without a word of the section it leads to:
    the header names it and the call that reads it alone, in every content form."""
    target = "Section redirect target"
    create(bot_server, target, "Lead.\n\n== History ==\nOld.\n\n== Early course ==\nThe part meant.")
    create(bot_server, "Section redirect", f"#REDIRECT [[{target}#Early_course]]")
    create(bot_server, "Anchor redirect", f"#REDIRECT [[{target}#Nowhere]]")
    line = (f'Redirected to: section 2 (Early course), in the page shown whole; to read it alone, call get-page with '
            f'title="{target}" and section=2')
    for content in ("source", "html", "text"):
        result = call(bot_server, "get-page", title="Section redirect", content=content)
        assert not result.is_error and result.blocks[0].startswith(
            f"Title: {target}\nRedirected from: Section redirect\n{line}\nRevision ID: "), (content, result.text)
        assert "Old." in result.text and "The part meant." in result.text
        anchor = call(bot_server, "get-page", title="Anchor redirect", content=content)
        assert field(anchor, "Redirected to") == "#Nowhere, which heads no section: the page is shown whole"
    part = call(bot_server, "get-page", title="Section redirect", section=2)
    assert not part.is_error and "Redirected to:" not in part.text and part.text.endswith("The part meant.")
    assert "Redirected to:" not in call(bot_server, "get-page", title="Redirect page").text


def test_a_double_redirect_is_followed_and_one_that_leads_nowhere_is_named_as_such(bot_server: Any) -> None:
    """A redirect to a redirect reads its end (get-page does, get-pages did not); one into a loop or to a
    missing page is not_found saying so, never "page not found" of a page that is there, and names
    the call that reads the redirect itself; get-pages lists each under what it is."""
    tag = secrets.token_hex(3)
    loop_a, loop_b, self_loop, into_loop = (f"Loop {tag} {x}" for x in ("A", "B", "self", "into"))
    target, middle, double, dangling = (f"Chain {tag} {x}" for x in ("target", "middle", "double", "dangling"))
    texts = {loop_a: f"#REDIRECT [[{loop_b}]]", loop_b: f"#REDIRECT [[{loop_a}]]",
             self_loop: f"#REDIRECT [[{self_loop}]]", into_loop: f"#REDIRECT [[{loop_a}]]",
             target: "The end of the chain.", middle: f"#REDIRECT [[{target}]]",
             double: f"#REDIRECT [[{middle}]]", dangling: f"#REDIRECT [[Nowhere {tag}]]"}
    made = {title: create(bot_server, title, text) for title, text in texts.items()}
    pages = call(bot_server, "get-pages", titles=[double, loop_a, self_loop, into_loop, dangling])
    assert not pages.is_error and pages.blocks == [
        f"Missing pages: {dangling} (redirects to Nowhere {tag})",
        f"Redirects in a loop or to another wiki, which lead to no page here: {loop_a}, {self_loop}, {into_loop}",
        f"Title: {target}\nRedirected from: {double}\nRevision ID: {made[target]}\n\nThe end of the chain."]
    for loop in (loop_a, self_loop, into_loop):
        for tool, arguments in (("get-page", {}), ("get-page", {"content": "none"}), ("find-in-page", {"find": "a"}),
                                ("get-page-links", {})):
            refused = call(bot_server, tool, title=loop, **arguments)
            assert refused.is_error and refused.blocks == [(
                f"not_found: '{loop}' redirects in a loop or to another wiki, to no page here. To read the "
                f'redirect itself, call get-page with title="{loop}" and followRedirects=false.')], (tool, refused.text)
    for content in ("source", "html", "text"):
        refused = call(bot_server, "get-page", title=dangling, content=content)
        assert refused.blocks == [(
            f"not_found: '{dangling}' redirects to 'Nowhere {tag}', which does not exist. To read the redirect "
            f'itself, call get-page with title="{dangling}" and followRedirects=false.')], (content, refused.text)
    itself = call(bot_server, "get-page", title=loop_a, followRedirects=False)  # the remedy, as written
    assert not itself.is_error and content_of(itself.blocks[0]) == f"#REDIRECT [[{loop_b}]]"
    # rendered, a loop is its own redirect page, not a page redirected from itself
    for content in ("html", "text"):
        rendered = call(bot_server, "get-page", title=loop_a, content=content)
        assert rendered.blocks[0].startswith(f"Title: {loop_a}\nRevision ID: {made[loop_a]}\n\n"), rendered.text
        assert loop_b in content_of(rendered.blocks[0])
    outline = call(bot_server, "get-page-sections", title=loop_a)
    assert outline.blocks[0].startswith(f"Title: {loop_a}\nRevision ID: {made[loop_a]}\n"), outline.text


def test_get_page_of_a_missing_page_is_not_found(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="No such page here")
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("not_found: Page 'No such page here' not found")


@on_every_version
def test_get_page_html_metadata_and_none(bot_server: Any, wiki: RealWiki) -> None:
    html = call(bot_server, "get-page", title="Fruit salad", content="html", metadata=True)
    assert 'href="/wiki/Apple"' in html.text and "Content model: wikitext" in html.text
    assert f"URL: {wiki.url}/wiki/Fruit_salad" in html.text
    none = call(bot_server, "get-page", title="Fruit salad", content="none", metadata=True)
    assert len(none.blocks) == 1 and "Page ID: " in none.text and "Fruit salad mixes" not in none.text


def test_a_section_with_content_none_is_refused_not_echoed_as_read(bot_server: Any) -> None:
    """content='none' reads no content, so a section (one that is there or not) was never looked for,
    yet the answer said "Section: 99" as if it had been read: now it is invalid_input saying so."""
    revision = int(field(call(bot_server, "get-page", title="Fruit salad", content="none"), "Revision ID"))
    for tool, arguments in (("get-page", {"title": "Fruit salad"}), ("get-revision", {"revisionId": revision})):
        for section in (99, 0, "Nope"):
            refused = call(bot_server, tool, content="none", section=section, **arguments)
            assert refused.is_error and refused.blocks == [(
                "invalid_input: section picks a part of the content, and content='none' reads none: leave "
                "section out, or ask for the content.")], (tool, section, refused.text)


def test_a_title_of_another_wiki_is_named_as_such(bot_server: Any, wiki: RealWiki) -> None:
    """MediaWiki lists a title with an interwiki prefix apart from its pages, so the tools saw no page,
    looked in the deletion log for why and relayed its "Bad title" error: now they say where it points."""
    assert wiki.raw_get(action="query", titles="wikipedia:Foo")["query"]["interwiki"][0]["iw"] == "wikipedia"
    for tool, arguments in (("get-page", {}), ("get-page", {"content": "none"}), ("get-page-history", {}),
                            ("find-in-page", {"find": "x"}), ("get-page-links", {}),
                            ("find-text-origin", {"text": "x"})):
        refused = call(bot_server, tool, title="wikipedia:Foo", **arguments)
        assert refused.blocks == [("invalid_input: 'wikipedia:Foo' points to another wiki (interwiki prefix "
                                   "'wikipedia').")], (tool, refused.text)
    pages = call(bot_server, "get-pages", titles=["wikipedia:Foo", "Wikipedia:foo_bar", "Nope Nope", "Apple"])
    assert pages.blocks[:2] == ["Missing pages: Nope Nope", "Titles of other wikis: wikipedia:Foo, Wikipedia:foo_bar"]
    assert pages.blocks[2].startswith("Title: Apple\n") and len(pages.blocks) == 3


def test_get_page_of_a_non_ascii_title(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "get-page", title=NON_ASCII_TITLE, metadata=True)
    assert not result.is_error and "日本語のページ" in result.text
    assert wiki.url + "/wiki/Caf%C3%A9_%C3%9Cn" in result.text


@on_every_version
def test_get_pages_returns_pages_in_order_and_lists_missing(bot_server: Any) -> None:
    result = call(bot_server, "get-pages", titles=["Banana", "Nope Nope", "Apple", "Redirect page"])
    assert result.blocks[0] == "Missing pages: Nope Nope"
    assert [b.split("\n", 1)[0] for b in result.blocks[1:]] == [
        "Title: Banana", "Title: Apple", "Title: Target page"]
    assert "Redirected from: Redirect page" in result.blocks[3]


def test_get_pages_with_fifty_titles_is_one_request(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    titles = BATCH_TITLES + ["Apple", "Banana"]
    with counter.counting() as n:
        result = call(server, "get-pages", titles=titles)
    assert n[0] == 1
    assert not result.is_error and len(result.blocks) == 50


def test_get_pages_over_budget_cuts_the_page_that_does_not_fit_and_keeps_those_that_do(
        bot_server: Any, wiki: RealWiki) -> None:
    """The page cut says so in its own header, and the marker's numbers are that page's (its offset is
    into that page): the bytes shown of it and its size."""
    result = call(bot_server, "get-pages", titles=["Long page", "Apple", "Banana"])
    assert [b.split("\n", 1)[0] for b in result.blocks[:-1]] == ["Title: Long page", "Title: Apple", "Title: Banana"]
    assert "An apple is a fruit." in result.blocks[1] and "A banana is a fruit." in result.blocks[2]
    marker = result.blocks[-1]
    shown = sum(len(content_of(b).encode()) for b in result.blocks[:-1])
    cut, size = len(content_of(result.blocks[0]).encode()), len(wiki.wikitext("Long page").encode())
    assert result.blocks[0].split("\n\n", 1)[0].endswith(
        f"\nTruncated: at {cut} of {size} bytes; the marker after the pages names the call that reads on")
    assert "Truncated" not in result.blocks[1] + result.blocks[2]
    assert marker.startswith(f"Content truncated at {cut} of {size} bytes of Long page. ")
    assert 49_990 < shown + len(marker.encode()) <= 50_000 and cut < size
    assert "Available sections of Long page: 0 (Lead), 1 (Section 1)" in marker
    assert 'To read on, call get-page with title="Long page" and offset=' in marker
    assert "Not included" not in marker


@on_every_version
def test_search_page_finds_a_word_only_in_page_bodies(bot_server: Any) -> None:
    result = call(bot_server, "search-page", query=SEARCH_WORD)
    assert not result.is_error and "Search target" in result.text


def test_search_page_continues_with_the_marker(bot_server: Any) -> None:
    first = call(bot_server, "search-page", query="fruit", limit=1)
    marker = first.blocks[-1]
    assert marker.startswith("More results available. Returned 1 page. To fetch the next segment, "
                             "call search-page again with continueFrom=")
    token = json.loads(marker.split("continueFrom=", 1)[1].rstrip("."))
    second = call(bot_server, "search-page", query="fruit", limit=1, continueFrom=token)
    assert not second.is_error and second.blocks[0].splitlines()[1] != first.blocks[0].splitlines()[1]


@on_every_version
def test_search_by_prefix_is_namespace_aware(bot_server: Any) -> None:
    assert call(bot_server, "search-page-by-prefix", prefix="Category:Fru").blocks[0] == "Category:Fruits"
    assert call(bot_server, "search-page-by-prefix", prefix="Fru", namespace=14).blocks[0] == "Category:Fruits"
    assert "Fruit salad" in call(bot_server, "search-page-by-prefix", prefix="Fru").text


@on_every_version
def test_get_site_info_names_the_wiki(bot_server: Any, wiki: RealWiki) -> None:
    text = call(bot_server, "get-site-info").text
    assert "Name: Test Wiki" in text and f"MediaWiki: MediaWiki {wiki.version}." in text
    assert "14 Category" in text and "Read-only" not in text.split("Writes")[0]
    assert "Cite, " in text and "ParserFunctions, Scribunto, TemplateData, TextExtracts" in text


@on_every_version
def test_whoami_names_the_bot_account(bot_server: Any, anon_server: Any) -> None:
    text = call(bot_server, "whoami").text
    assert "User: Admin\n" in text and "App: mcp (bot password)" in text and "sysop" in text
    assert call(anon_server, "whoami").text.splitlines()[1].startswith("User: anonymous")


@on_every_version
def test_wrong_bot_password_is_authentication_and_never_echoed(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "f" * 32
    with caplog.at_level(logging.DEBUG):
        result = call(make_server(wiki.env(MEDIAWIKI_PASSWORD=wrong)), "get-page", title="Apple")
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("authentication: Login to ")
    assert "Incorrect username or password" in result.blocks[0]  # MediaWiki's reason
    assert wrong not in result.text and wrong not in caplog.text


def test_a_bot_password_pasted_with_surrounding_whitespace_logs_in(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MEDIAWIKI_PASSWORD=f" {wiki.bot_password}\n"))
    assert "User: Admin\n" in call(server, "whoami").text


@on_every_version
def test_a_lost_session_logs_in_again(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    assert "User: Admin" in call(server, "whoami").text
    client = server.state.clients[wiki.key]
    client._session.cookies.clear()  # the wiki forgets us, as when a session expires
    assert "User: Admin\n" in call(server, "whoami").text


@on_every_version
def test_steady_state_requests_per_tool(wiki: RealWiki, history: History) -> None:
    """One HTTP request per call once site info and login are cached (the closing
    notes quote this table)."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    old, new = history.revisions[1], history.revisions[2]
    calls = [
        ("get-page", {"title": "Apple"}, 1),
        ("get-page", {"title": "Long page"}, 1),
        ("get-page", {"title": "Long page", "section": 8, "offset": 50_000}, 1),
        ("get-page", {"title": "Apple", "content": "html"}, 1),
        ("get-page", {"title": "Apple", "content": "html", "metadata": True}, 2),
        ("get-pages", {"titles": BATCH_TITLES}, 1),
        ("search-page", {"query": "fruit"}, 1),
        ("search-page-by-prefix", {"prefix": "Ba"}, 1),
        ("get-site-info", {}, 1),
        ("whoami", {}, 1),
        ("get-revision", {"revisionId": old}, 1),
        ("get-revision", {"revisionId": old, "content": "html"}, 2),  # metadata, then action=parse
        ("get-page-history", {"title": HISTORY_TITLE}, 1),
        # a filter leaves the rows' parents out: one more request reads their sizes
        ("get-page-history", {"title": HISTORY_TITLE, "tag": "mw-new-redirect"}, 2),
        ("compare-pages", {"fromRevision": old, "toRevision": new}, 1),
        ("compare-pages", {"fromTitle": "Apple", "toText": "x" * 5000}, 1),  # by POST
        ("get-category-members", {"category": "Fruits"}, 1),
        ("get-links-here", {"title": "Apple"}, 1),
        ("get-page-links", {"title": "Fruit bowl"}, 1),  # links, templates, categories and files at once
        ("get-recent-changes", {}, 1),
        ("parse-wikitext", {"wikitext": "[[Apple]] {{Fruitbox}}"}, 1),
        ("get-file", {"title": "Red square.png"}, 1),
        ("get-file-data", {"title": "Red square.png"}, 2),  # imageinfo, then the image itself
    ]
    assert_requests_per_call(server, counter, calls)
