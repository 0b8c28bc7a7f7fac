"""Tests: Lean queries: each tool asks the wiki only for what its answer shows."""
from __future__ import annotations

import secrets
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from realwiki import (
    RealWiki,
    install_holding,
    php,
)
from tests.support import RequestCounter, Result, call, content_of, create, make_server


def sent_queries(server: Any, tool: str, **arguments: Any) -> tuple[Result, list[dict[str, str]]]:
    """A call, and the API parameters of each GET it sent to the wiki (after site info and login)."""
    counter = RequestCounter(server)
    start = len(counter.urls)
    result = call(server, tool, **arguments)
    return result, [dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)) for url in counter.urls[start:]]


def values(query: Mapping[str, str], name: str) -> set[str]:
    return set(query.get(name, "").split("|")) - {""}


def test_get_page_without_metadata_asks_for_no_page_info_and_no_last_edit(wiki: RealWiki) -> None:
    """prop=info and the revision's user and comment cost the wiki time (a join each) and show nothing
    without metadata."""
    server = make_server(wiki.env())
    revid = wiki.raw_get(action="query", titles="Apple", prop="info")["query"]["pages"][0]["lastrevid"]
    for content, body in (("source", "\n\nAn apple is a fruit.\n[[Category:Fruits]]"), ("none", "")):
        result, sent = sent_queries(server, "get-page", title="Apple", content=content)
        assert result.blocks == [f"Title: Apple\nRevision ID: {revid}{body}"], result.text
        assert len(sent) == 1 and values(sent[0], "prop") == {"revisions"}, sent
        assert values(sent[0], "rvprop") == {"ids"} | ({"content"} if content == "source" else set()), sent
        assert "inprop" not in sent[0], sent


def test_get_page_with_metadata_still_shows_the_page_and_its_last_edit(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    page = wiki.raw_get(action="query", titles="Apple", prop="info|revisions",
                        rvprop="timestamp|user|comment")["query"]["pages"][0]
    last = page["revisions"][0]
    header = (f"Title: Apple\nRevision ID: {page['lastrevid']}\nPage ID: {page['pageid']}\nContent model: wikitext\n"
              f"Size: {page['length']} bytes\nLast edited: {last['timestamp']} by {last['user']}\n"
              + (f"Edit summary: {last['comment']}\n" if last["comment"] else "") + f"URL: {wiki.url}/wiki/Apple")
    for content, body in (("source", "\n\nAn apple is a fruit.\n[[Category:Fruits]]"), ("none", "")):
        result, sent = sent_queries(server, "get-page", title="Apple", content=content, metadata=True)
        assert result.blocks == [header + body], result.text
        assert len(sent) == 1 and {"info", "revisions"} <= values(sent[0], "prop"), sent
    rendered, sent = sent_queries(server, "get-page", title="Apple", content="html", metadata=True)
    assert rendered.blocks[0].startswith(header), rendered.text
    assert len(sent) == 2 and "size" not in values(sent[1], "rvprop"), sent  # prop=info gives the length


def test_get_pages_asks_for_the_last_edit_only_with_metadata(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    result, sent = sent_queries(server, "get-pages", titles=["Apple", "Banana"])
    assert [b.split("\n", 1)[0] for b in result.blocks] == ["Title: Apple", "Title: Banana"]
    assert all(b.split("\n")[1].startswith("Revision ID: ") and b.split("\n")[2] == "" for b in result.blocks)
    assert len(sent) == 1 and values(sent[0], "prop") == {"revisions"}, sent
    assert values(sent[0], "rvprop") == {"ids", "content"}, sent
    described, sent = sent_queries(server, "get-pages", titles=["Apple"], content="none", metadata=True)
    assert "\nContent model: wikitext\nSize: " in described.text and "\nLast edited: " in described.text
    assert len(sent) == 1 and values(sent[0], "rvprop") == {"ids", "timestamp", "user"}, sent


@pytest.mark.wiki
def test_get_pages_names_the_pages_whose_text_the_wiki_held_back(wiki: RealWiki) -> None:
    """MediaWiki answers at most 8 MB ($wgAPIMaxResultSize): the revisions of pages past that come empty."""
    token = secrets.token_hex(4)
    titles = [f"Held back {token} {n}" for n in range(5)]
    (directory := wiki.directory / f"held-back-{token}").mkdir()
    for n, title in enumerate(titles):
        (directory / f"{title}.txt").write_text(f"heldback{token}{n} " * 110_000)  # about 2 MB each
    seen = install_holding(wiki.directory).seen
    php(wiki.directory, "maintenance/importTextFiles.php", "--bot",
        *[str(seen(directory / f"{title}.txt")) for title in titles])
    result = call(make_server(wiki.env()), "get-pages", titles=[*titles, "Apple"])
    assert not result.is_error, result.text
    assert [b.split("\n", 1)[0] for b in result.blocks[:-1]] == [f"Title: {titles[0]}", "Title: Apple"]
    marker = result.blocks[-1]
    shown = sum(len(content_of(b).encode()) for b in result.blocks[:-1])
    cut = len(content_of(result.blocks[0]).encode())  # the marker's numbers are the cut page's
    assert marker.startswith(f"Content truncated at {cut} of {len(wiki.wikitext(titles[0]).encode())} bytes of "
                             f"{titles[0]}. "), marker
    assert 49_990 < shown + len(marker.encode()) <= 50_000
    assert f"Not included: {', '.join(titles[1:])}." in marker, marker


@pytest.mark.parametrize("tool, arguments, check", [
    # titles= alone tells whether the page is missing, or not a valid title
    ("get-links-here", {"title": "Apple"}, lambda q: "prop" not in q),
    # rows show the size change, not the size
    ("get-user-contributions", {"user": "Admin", "limit": 5},
     lambda q: "size" not in values(q, "ucprop") and "sizediff" in values(q, "ucprop")),
    # past the first call, parse-wikitext shows only the rest of the HTML
    ("parse-wikitext", {"wikitext": "[[Apple]] " * 20, "offset": 40}, lambda q: values(q, "prop") == {"text"}),
    # the dry run of a replace reads the pages' text; prop=info shows nothing there
    ("replace-in-pages", {"find": "apple", "replace": "pear", "titles": ["Apple", "Banana"]},
     lambda q: "info" not in values(q, "prop")),
])
def test_other_tools_ask_only_for_what_they_show(wiki: RealWiki, tool: str, arguments: dict[str, Any],
                                                  check: Callable[[Mapping[str, str]], bool]) -> None:
    server = make_server(wiki.env())
    call(server, tool, **arguments)  # the account's rights, checked once, are not what is measured
    result, sent = sent_queries(server, tool, **arguments)
    assert not result.is_error, result.text
    assert len(sent) == 1 and check(sent[0]), sent


def test_write_tools_read_the_page_without_page_info_where_they_show_none(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = f"Lean pre-read {secrets.token_hex(4)}"
    first = create(server, title, "First line.\n\nSecond line.\n\nThird line.")
    call(server, "update-page", title=title, source="First line, changed.\n\nSecond line.\n\nThird line.")
    # a latestId that is not the latest is checked to be this page's: its page ID comes without prop=info
    based, sent = sent_queries(server, "update-page-categories", title=title, add=["Lean"], latestId=first,
                               dryRun=True)
    assert not based.is_error and "+[[Category:Lean]]" in based.text, based.text
    assert [values(q, "prop") for q in sent if q.get("revids") == str(first)] == [set(), {"revisions"}], sent
    saved, sent = sent_queries(server, "update-page-categories", title=title, add=["Lean"])
    assert not saved.is_error and "[[Category:Lean]]" in wiki.wikitext(title), saved.text
    # info: its redirect flag, since a redirect's categories are said to be the redirect page's own
    assert next(values(q, "prop") for q in sent if "titles" in q) == {"revisions", "categories", "info"}, sent
    preview, sent = sent_queries(server, "rollback-edits", title=title, user="Admin")
    assert preview.is_error and "nothing was changed" in preview.text, preview.text
    assert len(sent) == 1 and values(sent[0], "prop") == {"revisions"}, sent
