"""Tests: Page writes on the real wiki (part 2)."""
from __future__ import annotations

import concurrent.futures
import json
import re
import secrets
import threading
import unicodedata
from typing import Any

import pytest

from mediawiki_mcp.calls import IdempotencyStore
from mediawiki_mcp.config import Config
from mediawiki_mcp.diff import line_diff
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.ledger import ReadLedger
from mediawiki_mcp.merge import line_changes, merge3
from mediawiki_mcp.sections import lost_subsections, section_ends, separator, wikitext_sections
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import READ_LEDGER_MAX_ENTRIES, ConfigError
from mediawiki_mcp.state import ServerState
from mediawiki_mcp.store import MemoryStore
from realwiki import (
    BATCH_TITLES,
    RealWiki,
)
from tests.support import (
    FORGOTTEN_READ,
    Accounts,
    RequestCounter,
    big_section_page,
    bot_server_for,
    call,
    calls_at_once,
    content_of,
    create,
    editor_edit,
    field,
    good_then_bad,
    latest_revision,
    make_server,
    on_every_version,
    read_whole,
    revision_ids,
    sections_page,
    sizes_on_wiki,
    threaded_talk,
)


def test_a_cut_read_of_an_old_revision_written_back_without_latest_id_is_asked_which_revision(
        wiki: RealWiki) -> None:
    """get-revision cut an old revision, and the model writes it back as the page without latestId:
    the answer asks which revision the text was made from (the latest's author named), not to read
    on with get-page's offset, which reads the latest revision and would be refused again."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1500"))
    title = "Write old revision cut test"
    old = create(bot_server_for(wiki), title, sections_page(12))
    editor_edit(wiki, title, sections_page(12).replace("Intro of", "Intro, edited, of"))
    latest = revision_ids(wiki, title)[0]
    read = call(server, "get-revision", revisionId=old)
    assert read.blocks[-1].startswith("Content truncated at "), read.text
    refused = call(server, "update-page", title=title, source=content_of(read.blocks[0]))
    assert refused.is_error and "no read of" in refused.text and f"latestId={latest}" in refused.text, refused.text
    assert "offset=" not in refused.text and revision_ids(wiki, title)[0] == latest


def test_every_save_answers_with_the_size_change_the_wiki_stored(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write size change test"
    created = call(bot_server, "create-page", title=title, source="Signed: ~~~~")  # the wiki expands it
    stored = len(wiki.wikitext(title).encode())
    assert stored > len("Signed: ~~~~") and field(created, "Size change") == f"+{stored} bytes (0 to {stored})"
    for arguments in ({"mode": "append", "source": "Ünïcödé line."}, {"find": "Signed", "replace": "Sig"},
                      {"source": "Short.", "removeSections": True}, {"section": 0, "source": "Shorter"}):
        result = call(bot_server, "update-page", title=title, **arguments)
        assert not result.is_error, result.text
        before, after = int(field(result, "Previous revision ID")), int(field(result, "Revision ID"))
        sizes = sizes_on_wiki(wiki, before, after)
        change = sizes[after] - sizes[before]
        assert field(result, "Size change") == f"{change:+d} bytes ({sizes[before]} to {sizes[after]})", arguments


@on_every_version
def test_plain_text_keeps_pre_galleries_and_raised_and_lowered_text_apart(bot_server: Any) -> None:
    title = "Plain text gallery test"
    create(bot_server, title, "Area 5 km<sup>2</sup> of H<sub>2</sub>O; x<sup>n+1</sup>, the 1<sup>st</sup>, "
                              "a<sub>i,j</sub>, a note<sup>[a]</sup>.\n<pre>\n== Not a heading ==\ncode\n</pre>\n"
                              "<gallery>\nFile:Red square.png|A red square\nFile:No such picture.png|Missing one\n"
                              "File:Red square.png\n</gallery>\nAfter the gallery.")
    text = content_of(call(bot_server, "get-page", title=title, content="text").blocks[0])
    assert text == ("Area 5 km² of H₂O; xⁿ⁺¹, the 1^st, a_(i,j), a note[a].\n\n == Not a heading ==\ncode\n\n"
                    "* A red square (Red square.png)\n* Missing one (No such picture.png)\n* Red square.png\n\n"
                    "After the gallery.")


SECTION_TRAPS = "A lead long enough to be cut.\n" * 40 + """== One ==
Text.<ref>
== In a reference ==
</ref>
== Two ==
<syntaxhighlight lang="python">
== Code heading ==
</syntaxhighlight>
<!--
== In a comment ==
-->
<nowiki>
== In nowiki ==
</nowiki>
<pre>
== In pre ==
</pre>
<noinclude>
== In noinclude ==
</noinclude>
<includeonly>
== In includeonly ==
</includeonly>
{{Fixture box|
== In a template call ==
}}
=Level one=
Top.
== Three ==
End.
== Three ==
Same heading again.
<references />"""


@on_every_version
def test_section_numbers_are_the_wikis(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write section numbers test"
    create(server, title, SECTION_TRAPS)
    parsed = wiki.raw_get(action="parse", page=title, prop="sections")["parse"]["sections"]
    wikis = ", ".join(f"{s['index']} ({s['line']})" for s in parsed if s["index"].isdigit())
    assert "Code heading" in wikis and "In noinclude" in wikis and "Level one" in wikis  # real sections
    assert "In a reference" not in wikis and "In a comment" not in wikis and "In pre" not in wikis
    marker = call(server, "get-page", title=title).blocks[-1]
    assert f"Available sections: 0 (Lead), {wikis}." in marker
    for n in (int(s["index"]) for s in parsed if s["index"].isdigit()):
        mine = read_whole(server, title=title, section=n)
        theirs = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="content", rvslots="main",
                              rvsection=n)["query"]["pages"][0]["revisions"][0]["slots"]["main"]["content"]
        assert mine == theirs, n
    two = next(int(s["index"]) for s in parsed if s["line"] == "Two")
    code = next(int(s["index"]) for s in parsed if s["line"] == "Code heading")
    done = call(server, "update-page", title=title, section=two, source="== Two ==\nChanged from the list.")
    assert not done.is_error, done.text
    text = wiki.wikitext(title)
    assert "== Two ==\nChanged from the list.\n\n== Code heading ==" in text
    code_section = call(server, "get-page", title=title, section=code)
    assert content_of(code_section.blocks[0]).startswith("== Code heading ==")


def test_replacing_a_section_keeps_subsections_that_repeat_a_heading(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write repeated subsections test"
    original = ("Lead.\n== Orte ==\nOrte.\n=== Köln ===\nText Köln.\n==== Quellen ====\nQuelle Köln.\n"
                "=== Bonn ===\nText Bonn.\n==== Quellen ====\nQuelle Bonn.\n== Weblinks ==\nLinks.")
    revid = create(bot_server, title, original)
    refused = call(bot_server, "update-page", title=title, section=1, source=(
        "== Orte ==\nOrte.\n=== Köln ===\nText Köln.\n==== Quellen ====\nQuelle Köln.\n=== Bonn ===\nText Bonn."))
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: section 1 ")
    assert "(Quellen (under Bonn))" in refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]


def test_a_subsection_whose_heading_level_changes_is_not_taken_for_lost(bot_server: Any, wiki: RealWiki) -> None:
    title = f"Write heading levels {secrets.token_hex(4)}"
    original = "Lead.\n== Plan ==\nPlan.\n=== Steps ===\nSteps.\n=== Notes ===\nNotes.\n== After ==\nEnd."
    revid = create(bot_server, title, original)
    # a subsection that is really gone is refused, naming it, even when another changed level
    refused = call(bot_server, "update-page", title=title, section=1, source="== Plan ==\nPlan.\n== Steps ==\nSteps.")
    assert refused.is_error and "lacks (Notes)" in refused.text, refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    promoted = "== Plan ==\nPlan.\n== Steps ==\nSteps.\n== Notes ==\nNotes."  # sections of their own now
    saved = call(bot_server, "update-page", title=title, section=1, source=promoted)
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title) == f"Lead.\n{promoted}\n\n== After ==\nEnd."
    assert lost_subsections("== A ==\n=== A ===\nx", "== A ==\nx") == ["A"]


def test_a_section_written_with_the_sections_after_it_is_refused_not_doubled(bot_server: Any, wiki: RealWiki) -> None:
    """The model read the page and sent sections 1 and 2, or the whole page, as section 1 (or 0):
    saved, the sections besides it would stand on the page twice."""
    title = f"Write sections twice {secrets.token_hex(4)}"
    original = "Lead.\n== A ==\nAlpha.\n=== Notes ===\nA's notes.\n== B ==\nBeta.\n=== Notes ===\nB's notes."
    revid = create(bot_server, title, original)
    for section, source, named in ((1, "== A ==\nAlpha, changed.\n=== Notes ===\nA's notes.\n== B ==\nBeta.", "(B)"),
                                   (1, original.replace("Alpha.", "Alpha, changed."), "(B)"),
                                   (0, original.replace("Lead.", "Lead, changed."), "(A, Notes, B)")):
        refused = call(bot_server, "update-page", title=title, section=section, source=source)
        assert refused.is_error and refused.text.startswith(
            f"invalid_input: Nothing was saved: the new text of section {section} of {title!r} holds sections the "
            f"page has besides it {named}"), refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    # a section split in two, and a subsection named as another section's, are no repeats
    split = "== A ==\nAlpha.\n== A, continued ==\nMore.\n=== Notes ===\nA's notes."
    saved = call(bot_server, "update-page", title=title, section=1, source=split)
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title) == original.replace("== A ==\nAlpha.\n=== Notes ===\nA's notes.", split + "\n")


def test_a_section_given_a_sibling_named_as_one_under_another_heading_is_saved(bot_server: Any,
                                                                                wiki: RealWiki) -> None:
    """A manual's platforms each have their Usage: one added under Linux is Linux's own, not Windows'
    written twice, so it is saved."""
    title = f"Write sections per platform {secrets.token_hex(4)}"
    create(bot_server, title, "== Windows ==\n=== Install ===\nRun setup.\n=== Usage ===\nClick.\n"
                              "== Linux ==\n=== Install ===\nRun make.")
    source = "=== Install ===\nRun make.\n=== Usage ===\nType a command."
    saved = call(bot_server, "update-page", title=title, section=5, source=source)
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title).endswith("== Linux ==\n" + source)


def test_appended_and_prepended_text_stands_on_a_line_of_its_own(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write separator test"
    create(bot_server, title, "Erste Zeile.\n\n[[Category:Usertest3]]")
    # appends go above the category that closes the page
    steps = [({"mode": "append", "source": "== Neuer Abschnitt ==\nAngehängt."},
              "Erste Zeile.\n\n== Neuer Abschnitt ==\nAngehängt.\n\n[[Category:Usertest3]]"),
             ({"mode": "append", "source": "Second line."},
              "Erste Zeile.\n\n== Neuer Abschnitt ==\nAngehängt.\nSecond line.\n\n[[Category:Usertest3]]"),
             ({"mode": "prepend", "source": "{{Fixture box}}"},
              ("{{Fixture box}}\n\nErste Zeile.\n\n== Neuer Abschnitt ==\nAngehängt.\n"
               "Second line.\n\n[[Category:Usertest3]]")),
             ({"mode": "prepend", "source": "Opening words."},
              ("Opening words.\n{{Fixture box}}\n\nErste Zeile.\n\n"
               "== Neuer Abschnitt ==\nAngehängt.\nSecond line.\n\n[[Category:Usertest3]]")),
             ({"mode": "append", "source": "\n* an item"},  # a line break already given is kept, not doubled
              ("Opening words.\n{{Fixture box}}\n\nErste Zeile.\n\n"
               "== Neuer Abschnitt ==\nAngehängt.\nSecond line.\n* an item\n\n[[Category:Usertest3]]"))]
    previous = wiki.wikitext(title)
    for arguments, expected in steps:
        dry = call(bot_server, "update-page", title=title, dryRun=True, **arguments)
        assert not call(bot_server, "update-page", title=title, **arguments).is_error
        assert wiki.wikitext(title) == expected, arguments
        assert dry.blocks[0].split("\n\n", 1)[1] == line_diff(previous, expected), arguments
        previous = expected
    section = call(bot_server, "get-page", title=title, section=1)
    assert content_of(section.blocks[0]).startswith("== Neuer Abschnitt ==\nAngehängt.")


def test_a_prepend_to_a_section_goes_under_its_heading(bot_server: Any, wiki: RealWiki) -> None:
    """MediaWiki's prependtext with section=N puts the text above the section's heading, at the end
    of the section before it; the model asked for it in section N."""
    title = f"Write section prepend {secrets.token_hex(4)}"
    create(bot_server, title, "Lead.\n== A ==\nAlpha.\n== B ==\n\nBeta.")
    steps = [({"section": 2, "source": "Opening of B."}, "Lead.\n== A ==\nAlpha.\n== B ==\n\nOpening of B.\nBeta."),
             ({"section": "A", "source": "{{Fixture box}}"},
              "Lead.\n== A ==\n{{Fixture box}}\n\nAlpha.\n\n== B ==\n\nOpening of B.\nBeta."),
             # a text with a heading of its own is a section before it
             ({"section": 2, "source": "== Before B ==\nNew."},
              "Lead.\n== A ==\n{{Fixture box}}\n\nAlpha.\n\n== Before B ==\nNew.\n\n== B ==\n\nOpening of B.\nBeta.")]
    for arguments, expected in steps:
        previous = wiki.wikitext(title)
        dry = call(bot_server, "update-page", title=title, mode="prepend", dryRun=True, **arguments)
        saved = call(bot_server, "update-page", title=title, mode="prepend", **arguments)
        assert not saved.is_error, saved.text
        assert wiki.wikitext(title) == expected, arguments
        assert content_of(dry.blocks[0]) == line_diff(previous, expected), arguments
    section = call(bot_server, "get-page", title=title, section=3)
    assert content_of(section.blocks[0]) == "== B ==\n\nOpening of B.\nBeta."


def test_parallel_appends_without_latest_id_all_land_once(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write parallel appends test"
    create(server, title, "Log:")
    results = calls_at_once(server, "update-page", [{"title": title, "mode": "append", "source": f"\nLine {i}."}
                                                    for i in range(8)])
    assert [r.text for r in results if r.is_error] == [] and len(results) == 8
    lines = wiki.wikitext(title).split("\n")
    assert lines[0] == "Log:" and sorted(lines[1:]) == [f"Line {i}." for i in range(8)]
    assert len(revision_ids(wiki, title)) == 9


def test_an_addition_waiting_on_a_slow_wiki_holds_up_no_other_pages_addition() -> None:
    """Unpinned additions to one page go one at a time, each taking the page's lock. Every page
    has a lock of its own: when 64 were shared by hash, two pages in 64 waited on each other, and
    an edit stuck on a slow wiki held up the other page's edit for the whole timeout."""
    state = ServerState.from_config(Config.from_env({}))
    held = [state.page_lock("wiki.example", f"Page {i}") for i in range(500)]
    assert all(lock.acquire(blocking=False) for lock in held), "an edit of one page waited for another's"
    assert state.page_lock("wiki.example", "Page 7") is held[7]  # the same page: the same lock
    assert state.page_lock("other.example", "Page 7").acquire(blocking=False)  # the same title elsewhere
    for lock in held:
        lock.release()
    del held, lock
    assert len(state.page_locks) == 0, "a page's lock outlived every call that used it"


def test_an_edit_to_a_section_numbered_by_a_read_goes_where_the_model_saw_it(wiki: RealWiki) -> None:
    """Additions and finds are made on the page as it is now: a section added above since the
    model read section 2 moves that section to 3, and the edit follows it there."""
    server = make_server(wiki.env())
    for arguments, expected in (({"mode": "append", "source": "Added to B."}, "Beta.\nAdded to B."),
                                ({"mode": "prepend", "source": "Added to B."}, "Added to B.\nBeta."),
                                ({"find": "Beta.", "replace": "Bee."}, "Bee.")):
        title = f"Write renumbered section {secrets.token_hex(4)}"
        create(bot_server_for(wiki), title, "Lead.\n== A ==\nAlpha.\n== B ==\nBeta.")
        assert content_of(call(server, "get-page", title=title, section=2).blocks[0]) == "== B ==\nBeta."
        editor_edit(wiki, title, "Lead.\n== New ==\nNew.\n== A ==\nAlpha.\n== B ==\nBeta.")
        saved = call(server, "update-page", title=title, section=2, **arguments)
        assert not saved.is_error, saved.text
        assert wiki.wikitext(title) == f"Lead.\n== New ==\nNew.\n== A ==\nAlpha.\n== B ==\n{expected}", arguments


def test_an_edit_to_a_subsection_read_and_since_removed_is_refused_not_put_in_its_namesake(
        wiki: RealWiki) -> None:
    """The model read A's Notes as section 2; since, A's Notes were removed and a section added
    above. B's Notes has the heading, not the place: the addition is refused, and nothing saved."""
    server = make_server(wiki.env())
    title = f"Write subsection gone {secrets.token_hex(4)}"
    create(bot_server_for(wiki), title, "Lead.\n== A ==\n=== Notes ===\nOn A.\n== B ==\n=== Notes ===\nOn B.")
    assert content_of(call(server, "get-page", title=title, section=2).blocks[0]) == "=== Notes ===\nOn A."
    changed = "Lead.\n== New ==\nNew.\n== A ==\nAlpha.\n== B ==\n=== Notes ===\nOn B."
    editor_edit(wiki, title, changed)
    refused = call(server, "update-page", title=title, section=2, mode="append", source="More on A.")
    assert refused.is_error and refused.text.startswith("invalid_input: Nothing was saved: section 2 of "), \
        refused.text
    assert wiki.wikitext(title) == changed


def test_an_edit_to_a_section_named_twice_goes_where_read_when_sections_changed_only_below_it(
        wiki: RealWiki) -> None:
    """Two sections (or talk topics) headed alike, the first read as 1; since, a section was added
    at the end. Section 1 is where it was: the addition and the reply go there, not refused as a
    heading that heads several sections."""
    server = make_server(wiki.env())
    title = f"Talk:Write namesakes {secrets.token_hex(4)}"
    create(bot_server_for(wiki), title, "== Question ==\nFirst.\n== Question ==\nSecond.")
    assert content_of(call(server, "get-page", title=title, section=1).blocks[0]) == "== Question ==\nFirst."
    editor_edit(wiki, title, "== Question ==\nFirst.\n== Question ==\nSecond.\n== Later ==\nThird.")
    saved = call(server, "update-page", title=title, section=1, mode="append", source="More on the first.")
    assert not saved.is_error, saved.text
    editor_edit(wiki, title, wiki.wikitext(title) + "\n== Latest ==\nFourth.")
    replied = call(server, "reply-on-talk-page", title=title, topic=1, message="An answer.")
    assert not replied.is_error, replied.text
    first, rest = wiki.wikitext(title).split("\n== Question ==\nSecond.\n")
    assert first.startswith("== Question ==\nFirst.\nMore on the first.\n:An answer. ") and "answer" not in rest


def test_after_an_outline_the_models_own_additions_number_sections_as_they_left_the_page(
        wiki: RealWiki) -> None:
    """The model took the outline, then added to section 1, a new section among it: its own edits
    are known to it, as after a read of the wikitext. Its section 2 is the one it made, and no
    addition fetches the revision outlined to renumber from (3 requests each, not 4)."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    title = f"Write after an outline {secrets.token_hex(4)}"
    create(bot_server_for(wiki), title, "Lead.\n== A ==\nAlpha.\n== B ==\nBeta.")
    assert "2 | == B ==" in call(server, "get-page-sections", title=title).text
    assert not call(server, "update-page", title=title, section=1, mode="append", source="On A.").is_error
    for section, source in ((1, "== A2 ==\nNew."), (2, "More on A2.")):
        with counter.counting() as n:
            saved = call(server, "update-page", title=title, section=section, mode="append", source=source)
        assert not saved.is_error and n[0] == 3, (saved.text, counter.urls[-n[0]:])
    assert wiki.wikitext(title) == ("Lead.\n== A ==\nAlpha.\nOn A.\n\n== A2 ==\nNew.\nMore on A2.\n\n"
                                    "== B ==\nBeta.")


def test_an_edit_to_a_section_numbered_by_a_later_outline_goes_where_that_outline_showed_it(
        wiki: RealWiki) -> None:
    """The model read the page, then, after a section was added above, took section 2 from a fresh
    outline (get-page-sections, the page as text, a find's rows): the addition goes to that section 2, not to
    the section that was 2 when it read the wikitext."""
    server = make_server(wiki.env())
    for outline in ({"tool": "get-page-sections"}, {"tool": "get-page", "content": "text"},
                    {"tool": "find-in-page", "find": "Alpha."}):
        title = f"Write renumbered section seen since {secrets.token_hex(4)}"
        create(bot_server_for(wiki), title, "Lead.\n== A ==\nAlpha.\n== B ==\nBeta.")
        assert content_of(call(server, "get-page", title=title).blocks[0]).endswith("== B ==\nBeta.")
        editor_edit(wiki, title, "Lead.\n== New ==\nNew.\n== A ==\nAlpha.\n== B ==\nBeta.")
        shown = call(server, outline["tool"], title=title, **{k: v for k, v in outline.items() if k != "tool"})
        assert any(f in shown.text for f in ("== A == (section 2)", "2 | == A ==", "\n2 (A) | ")), shown.text
        saved = call(server, "update-page", title=title, section=2, mode="append", source="Added to A.")
        assert not saved.is_error, saved.text
        assert wiki.wikitext(title) == "Lead.\n== New ==\nNew.\n== A ==\nAlpha.\nAdded to A.\n\n== B ==\nBeta.", outline


def test_what_was_read_of_a_page_holds_under_the_title_this_client_moved_it_to(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title, moved = f"Write before a move {secrets.token_hex(4)}", f"Write after a move {secrets.token_hex(4)}"
    text = "".join(f"Line {n:03d} of the page, some words here.\n" for n in range(45)).rstrip()
    create(bot_server_for(wiki), title, text)
    cut = call(server, "get-page", title=title)
    assert cut.blocks[-1].startswith("Content truncated at "), cut.text
    assert not call(server, "move-page", fromTitle=title, toTitle=moved).is_error
    refused = call(server, "update-page", title=moved, source=content_of(cut.blocks[0]) + "\nA last line.")
    assert refused.is_error and refused.text.startswith(f"invalid_input: Nothing was saved: Page {moved!r} was "
                                                        "not read whole"), refused.text
    assert wiki.wikitext(moved) == text
    # read whole, then changed by someone else, then moved: the write is based on the read
    whole = read_whole(server, title=moved)
    editor_edit(wiki, moved, text.replace("Line 001 of", "Line one of"))
    again = f"Write moved again {secrets.token_hex(4)}"
    assert not call(server, "move-page", fromTitle=moved, toTitle=again).is_error
    overlapping = call(server, "update-page", title=again, source=whole.replace("Line 001 of", "Line 1 of"))
    assert overlapping.is_error and overlapping.text.startswith("conflict: "), overlapping.text
    assert "Line one of" in wiki.wikitext(again)


def test_two_clients_changing_one_passage_at_once_never_both_save(wiki: RealWiki) -> None:
    """Each find-replace is pinned to the revision it read: of two at once on one line, the later
    is a conflict (or finds its text gone), never a save over the other's."""
    clients = [make_server(wiki.env()), make_server(wiki.env())]
    for attempt in range(2):
        title = f"Write two clients {secrets.token_hex(4)}"
        create(bot_server_for(wiki), title, "Lead.\nThe shared line.\nThe end.")
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda n, title=title: call(clients[n], "update-page", title=title,
                                                                find="shared line", replace=f"line of client {n}"),
                                    range(2)))
        saved = [n for n, result in enumerate(results) if not result.is_error]
        assert len(saved) == 1, [r.text for r in results]
        refused = results[1 - saved[0]]
        assert refused.text.startswith(("conflict: ", "invalid_input: The text to find does not occur")), refused.text
        assert wiki.wikitext(title) == f"Lead.\nThe line of client {saved[0]}.\nThe end.", attempt


@on_every_version
def test_a_write_after_a_read_never_overwrites_an_edit_made_since(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write base from read test"
    create(bot_server_for(wiki), title, "Line one.\nLine two is the one both change.\nLine three.")
    seen = content_of(call(server, "get-page", title=title).blocks[0])
    editor_edit(wiki, title, "Line one.\nLine two, as the Editor wrote it.\nLine three.\n\nThe Editor's paragraph.")
    revised = seen.replace("Line two is the one both change.", "Line two, as the model wrote it.")
    dry = call(server, "update-page", title=title, source=revised, dryRun=True)
    assert dry.is_error and dry.blocks[0].startswith("conflict: ")
    result = call(server, "update-page", title=title, source=revised)
    assert result.is_error and result.blocks[0].startswith("conflict: ") and "last read here" in result.text
    assert "Line two, as the Editor wrote it." in wiki.wikitext(title)
    assert latest_revision(wiki, title)["user"] == "Editor"
    # the same for a section: based on the revision the section was read at
    section_title = "Write base from section read test"
    create(bot_server_for(wiki), section_title, "Lead.\n== A ==\nShared line.\n\nOther line.")
    section = content_of(call(server, "get-page", title=section_title, section=1).blocks[0])
    editor_edit(wiki, section_title, "Lead.\n== A ==\nShared line, by the Editor.\n\nOther line.")
    refused = call(server, "update-page", title=section_title, section=1,
                   source=section.replace("Shared line.", "Shared line, by the model."))
    assert refused.is_error and refused.blocks[0].startswith("conflict: ")
    assert "Shared line, by the Editor." in wiki.wikitext(section_title)
    # an edit that does not overlap is merged, as with latestId, and the answer says so
    text = content_of(call(server, "get-page", title=section_title).blocks[0])
    editor_edit(wiki, section_title, text.replace("Other line.", "Other line, by the Editor."))
    merged = call(server, "update-page", title=section_title, source=text.replace("Lead.", "Lead, by the model."))
    assert not merged.is_error and merged.blocks[0].startswith("Saved, merged with ")
    now = "Lead, by the model.\n== A ==\nShared line, by the Editor.\n\nOther line, by the Editor."
    assert wiki.wikitext(section_title) == now
    # the model's own saves since its read are its own knowledge, never a conflict
    now = content_of(call(server, "get-page", title=section_title).blocks[0])
    for edited in (now.replace("Lead,", "The lead,"), now.replace("Lead,", "The whole lead,")):
        again = call(server, "update-page", title=section_title, source=edited)
        assert not again.is_error and again.blocks[0].startswith("Saved.\n"), again.text
    assert wiki.wikitext(section_title) == now.replace("Lead,", "The whole lead,")


def test_an_edit_through_a_redirect_names_the_target(bot_server: Any, wiki: RealWiki) -> None:
    # made elsewhere: this client knows the redirect only as get-page shows it
    create(bot_server_for(wiki), "Write redirect target", "The target's own text.")
    create(bot_server_for(wiki), "Write redirect source", "#REDIRECT [[Write redirect target]]")
    seen = call(bot_server, "get-page", title="Write redirect source")
    assert field(seen, "Title") == "Write redirect target"
    target_revision = int(field(seen, "Revision ID"))
    for arguments in ({"latestId": target_revision, "source": "The target's own text, edited."},
                      {"find": "own text", "replace": "text"}, {"mode": "append", "source": "More."}):
        result = call(bot_server, "update-page", title="Write redirect source", **arguments)
        assert result.is_error and result.blocks[0].startswith(
            "invalid_input: Nothing was saved: 'Write redirect source' is a redirect to 'Write redirect target'")
        assert 'title="Write redirect target"' in result.text and "followRedirects=false" in result.text
    assert wiki.wikitext("Write redirect source") == "#REDIRECT [[Write redirect target]]"
    own = call(bot_server, "get-page", title="Write redirect source", followRedirects=False)
    assert field(own, "Title") == "Write redirect source" and "Redirected from" not in own.text
    assert content_of(own.blocks[0]) == "#REDIRECT [[Write redirect target]]"
    changed = call(bot_server, "update-page", title="Write redirect source", find="]]",
                   replace="]]\n[[Category:Redirects kept]]")  # not Fruits, whose members other tests list
    assert not changed.is_error, changed.text
    assert wiki.wikitext("Write redirect source") == "#REDIRECT [[Write redirect target]]\n[[Category:Redirects kept]]"
    assert wiki.wikitext("Write redirect target") == "The target's own text."


def test_a_find_changed_since_latest_id_is_a_conflict_saying_what_changed(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write find stale base test"
    base = create(bot_server, title, "Line one.\nLine two.\nLine three.")
    editor_edit(wiki, title, "Line 1, by the Editor.\nLine two.\nLine three.")
    result = call(bot_server, "update-page", title=title, find="Line one.", replace="Line ONE.", latestId=base)
    assert result.is_error and result.blocks[0].startswith(
        f"conflict: The text to find is in revision {base}, the base of this change, but no longer in")
    assert "~Line [-one-]{+1, by the Editor+}." in result.text and "get-page" in result.text
    assert f"The edits made since: {revision_ids(wiki, title)[0]} by Editor." in result.text, result.text
    assert wiki.wikitext(title) == "Line 1, by the Editor.\nLine two.\nLine three."


@on_every_version
def test_a_dry_run_is_the_save_without_saving(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write dry run agrees test"
    text = "Lead.\n" + "".join(f"== S{n} ==\nLine {n}a.\nLine {n}b.\n\n" for n in range(1, 6)).rstrip()
    base = create(bot_server, title, text)
    # a missing section: both refuse, naming the sections
    for dry in (True, False):
        missing = call(bot_server, "update-page", title=title, section=9, source="== S9 ==\nx", dryRun=dry)
        assert missing.is_error and missing.blocks[0].startswith("not_found: There is no section 9"), dry
        assert "5 (== S5 ==)" in missing.text
    # a stale latestId: the dry run shows the save's merge, numbered as compare-pages numbers it
    editor_edit(wiki, title, text.replace("Line 1a.", "Line 1a, by the Editor."))
    arguments = {"title": title, "section": 4, "latestId": base, "source": "== S4 ==\nLine 4a, changed.\nLine 4b."}
    dry = call(bot_server, "update-page", dryRun=True, **arguments)
    assert not dry.is_error and field(dry, "Merged into").startswith("revision ")
    saved = call(bot_server, "update-page", **arguments)
    assert not saved.is_error and "Line 1a, by the Editor." in wiki.wikitext(title)
    compared = call(bot_server, "compare-pages", fromRevision=int(field(saved, "Previous revision ID")),
                    toRevision=int(field(saved, "Revision ID")))
    assert dry.blocks[0].split("\n\n", 1)[1] == compared.blocks[0].split("\n\n", 1)[1] == \
        "@@ -15 +15 @@\n~Line 4a{+, changed+}."
    # decomposed (NFD) text is what the wiki stores composed (NFC): the dry run says so too
    create(bot_server, "Write dry run NFC test", "Un café noir.")
    nfd = unicodedata.normalize("NFD", "café")
    for dry in (True, False):
        same = call(bot_server, "update-page", title="Write dry run NFC test", find="café", replace=nfd,
                    dryRun=dry)
        assert "No change" in same.text, (dry, same.text)
        found = call(bot_server, "update-page", title="Write dry run NFC test", find=nfd, replace="thé",
                     dryRun=dry)
        assert not found.is_error, found.text
    assert wiki.wikitext("Write dry run NFC test") == "Un thé noir."


def test_edit_summaries_keep_the_attribution_and_mediawikis_own(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write summary test"
    create(bot_server, title, "Some text.")
    assert latest_revision(wiki, title)["comment"] == 'Created page with "Some text."'
    long = "Ä long summary, " + "x" * 482
    assert len(long) == 498
    assert not call(bot_server, "update-page", title=title, source="Other text.", comment=long).is_error
    stored = latest_revision(wiki, title)["comment"]
    assert len(stored) == 500 and stored.startswith("Ä long summary, xxx")
    assert stored.endswith("… (via mediawiki-mcp)")
    assert not call(bot_server, "update-page", title=title, source="", blank=True).is_error
    assert latest_revision(wiki, title)["comment"] == "Blanked the page"


def test_a_refused_write_back_says_what_the_read_showed(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write partial read message test"
    create(server, title, big_section_page())
    call(server, "get-page", title=title)  # truncated
    missing = call(server, "update-page", title=title, section=99, source="== X ==\nx")
    assert missing.is_error and missing.blocks[0].startswith("not_found: There is no section 99")
    assert "3 (== After ==)" in missing.text and "section=99" not in missing.text
    fresh = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))  # a session that read only the middle
    tail = call(fresh, "get-page", title=title, offset=600)
    total = len(wiki.wikitext(title).encode())
    assert len(tail.blocks) == 2
    shown_to = int(tail.blocks[1].split("Content truncated at ", 1)[1].split(" ")[0])
    refused = call(fresh, "update-page", title=title, source=content_of(tail.blocks[0]))
    assert refused.is_error and f"showed bytes 600 to {shown_to} of {total}, not the first 600" in refused.text
    assert "(get-page)" in refused.text


def test_a_section_read_whole_through_an_offset_read_may_be_written_and_only_what_was_not_seen_is_refused(
        wiki: RealWiki) -> None:
    """A session that read the end of a page with offset saw its last section whole: that section
    may be replaced; a section it saw in part, or not at all, is refused, naming the bytes."""
    title = "Write offset read sections test"
    create(bot_server_for(wiki), title, big_section_page())
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    text = wiki.wikitext(title).encode()
    total, offset = len(text), len(text) - 500
    revision = int(field(call(server, "get-page", title=title, offset=offset), "Revision ID"))
    after = call(server, "update-page", title=title, section=3, source="== After ==\nThe new end.", dryRun=True)
    assert not after.is_error and after.blocks[0].startswith("Dry run: nothing was saved."), after.text
    big_start, after_start = text.index(b"== Big =="), text.index(b"== After ==")
    for section, unread in ((2, (big_start, offset)), (1, (text.index(b"== Small =="), big_start))):
        refused = call(server, "update-page", title=title, section=section, source="== X ==\nx", dryRun=True)
        assert refused.blocks == [(
            f"invalid_input: Nothing was saved: Section {section} of {title!r} was not read whole (the reads here "
            f"of the page (revision {revision}) showed bytes {offset} to {total} of {total}, not bytes "
            f"{unread[0]} to {unread[1]}, in section {section}), so writing it back would drop the part that was "
            "not read. To change part of it, use update-page with find and replace. To replace it whole, first "
            f"read the rest (get-page with section={section}).")], section
    assert after_start > offset and wiki.wikitext(title) == big_section_page()


def test_a_forgotten_read_past_the_ledgers_byte_bound_is_read_again_before_a_whole_write(wiki: RealWiki) -> None:
    """MCP_READ_LEDGER_MAX_BYTES bounds what one client's ledger keeps; once a truncated read is
    dropped, writing that page whole waits for a new read, which is truncated again."""
    with pytest.raises(ConfigError, match="MCP_READ_LEDGER_MAX_BYTES"):
        Config.from_env({"MCP_READ_LEDGER_MAX_BYTES": "lots"})
    title = "Write ledger byte bound test"
    create(bot_server_for(wiki), title, big_section_page())
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000", MCP_READ_LEDGER_MAX_BYTES="1000"))
    assert server.state.reads.max_bytes == 1000
    seen = content_of(call(server, "get-page", title=title).blocks[0])
    refused = call(server, "update-page", title=title, source=seen)
    assert refused.blocks[0].startswith(f"invalid_input: Nothing was saved: Page {title!r} was not read whole")
    for other in BATCH_TITLES[:15]:
        call(server, "get-page", title=other)
    forgotten = call(server, "update-page", title=title, source=seen)
    assert forgotten.blocks == [FORGOTTEN_READ.format(title=repr(title))]
    latest = int(field(call(server, "get-page", title=title), "Revision ID"))
    again = call(server, "update-page", title=title, source=seen, latestId=latest)
    assert again.blocks[0].startswith(f"invalid_input: Nothing was saved: Page {title!r} was not read whole")
    assert wiki.wikitext(title) == big_section_page()


# -- the one edit pipeline: text no write may lose ---------------------------------------

def test_a_page_with_only_a_lead_is_neither_blanked_nor_shrunk_unless_asked(bot_server: Any, wiki: RealWiki) -> None:
    title = "Pipeline lead only test"
    text = "A small page with only a lead, long enough to be worth keeping. " * 3
    revid = create(bot_server, title, text)
    blanked = call(bot_server, "update-page", title=title, source="")
    assert blanked.is_error and blanked.blocks[0].startswith("invalid_input: Nothing was saved: the new text is "
                                                             "empty"), blanked.text
    assert "blank=true" in blanked.text
    shrunk = call(bot_server, "update-page", title=title, source="x")
    assert shrunk.is_error and "less than half of it" in shrunk.text and "removeSections=true" in shrunk.text
    dry = call(bot_server, "update-page", title=title, source="", dryRun=True)
    assert dry.is_error and dry.blocks == blanked.blocks
    assert wiki.wikitext(title) == text.strip() and revision_ids(wiki, title) == [revid]
    rewritten = call(bot_server, "update-page", title=title, source=text.replace("worth", "well worth"))
    assert not rewritten.is_error, rewritten.text
    emptied = call(bot_server, "update-page", title=title, source="", blank=True)
    assert not emptied.is_error and wiki.wikitext(title) == "", emptied.text


def test_a_section_replaced_without_its_heading_is_refused_unless_asked(bot_server: Any, wiki: RealWiki) -> None:
    title = "Pipeline section heading test"
    text = "Lead.\n\n== One ==\nFirst.\n\n== Two ==\nSecond."
    revid = create(bot_server, title, text)
    call(bot_server, "get-page", title=title, section=2)
    refused = call(bot_server, "update-page", title=title, section=2, source="Text without heading.")
    assert refused.is_error and refused.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text of section 2 of {title!r} lacks its heading (== Two ==)")
    assert "removeHeading=true" in refused.text
    assert wiki.wikitext(title) == text and revision_ids(wiki, title) == [revid]
    kept = call(bot_server, "update-page", title=title, section=2, source="== Two ==\nSecond, edited.")
    assert not kept.is_error and wiki.wikitext(title).endswith("== Two ==\nSecond, edited."), kept.text
    merged = call(bot_server, "update-page", title=title, section=2, source="Joined.", removeHeading=True)
    assert not merged.is_error and wiki.wikitext(title).endswith("== One ==\nFirst.\n\nJoined."), merged.text


@on_every_version
@pytest.mark.parametrize("content", ["text", "html"])
def test_rendered_text_written_back_as_wikitext_is_refused(bot_server: Any, wiki: RealWiki, content: str) -> None:
    title = f"Pipeline rendered {content} test"
    text = ("'''River''' flows.<ref>A source.</ref>\n\n== Course ==\nIt runs {{Fixture box}}.\n\n"
            "== Notes ==\n<references />\n[[Category:Rivers]]")
    revid = create(bot_server, title, text)
    shown = content_of(call(bot_server, "get-page", title=title, content=content).blocks[0])
    for arguments in ({"title": title, "source": shown}, {"title": title, "source": shown, "latestId": revid}):
        refused = call(bot_server, "update-page", **arguments)
        assert refused.is_error and refused.blocks[0].startswith(
            f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text"), refused.text
    assert wiki.wikitext(title) == text and revision_ids(wiki, title) == [revid]


@pytest.mark.parametrize("content", ["text", "html"])
def test_rendered_text_of_the_latest_revision_from_get_revision_is_refused_as_wikitext(
        wiki: RealWiki, content: str) -> None:
    """get-revision of the page's latest revision renders what get-page renders: written back, it is
    refused as get-page's rendering is. An older revision's rendering is no base of a write."""
    server = make_server(wiki.env())
    title = f"Pipeline get-revision rendered {content} test"
    text = "'''River''' flows.\n\n== Course ==\nIt runs north.\n\n[[Category:Rivers]]"
    revid = create(bot_server_for(wiki), title, text)
    shown = content_of(call(server, "get-revision", revisionId=revid, content=content).blocks[0])
    refused = call(server, "update-page", title=title, source=shown)
    assert refused.is_error and refused.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text"), refused.text
    assert wiki.wikitext(title) == text and revision_ids(wiki, title) == [revid]
    editor_edit(wiki, title, text.replace("north", "north-west"))
    older = make_server(wiki.env())
    assert not call(older, "get-revision", revisionId=revid, content=content).is_error
    unknown = call(older, "update-page", title=title, source=text.replace("flows", "runs"))
    assert unknown.is_error and unknown.blocks[0].startswith("invalid_input: Nothing was saved: no read of "), \
        unknown.text


RHEIN = ("{{Infobox river\n| name = Rhein\n| length = 1230\n| source = Lake Toma\n}}\n"
         "The '''Rhein''' is a river of Europe, flowing from the Alps to the North Sea.\n\n"
         "== History ==\nThe Romans built forts along its banks, and later towns grew around them.\n\n"
         "[[Category:Rivers of Germany]]")


@on_every_version
def test_rendered_text_with_its_section_markers_removed_is_refused_here_and_in_a_new_process(
        wiki: RealWiki) -> None:
    """The model strips ' (section 1)' from get-page's plain text so that it looks like wikitext: this
    client's rendering still recognises it; a new process, which holds none, refuses a whole-page text
    that keeps none of the page's template calls and categories."""
    env = wiki.env()
    first, second = make_server(env), make_server(env)
    title = "Write rendered markers removed test"
    revid = create(bot_server_for(wiki), title, RHEIN)
    shown = content_of(call(first, "get-page", title=title, content="text").blocks[0])
    assert "== History == (section 1)" in shown
    stripped = shown.replace(" (section 1)", "")
    here = call(first, "update-page", title=title, source=stripped)
    assert here.is_error and here.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text"), here.text
    there = call(second, "update-page", title=title, source=stripped, latestId=revid)
    assert there.is_error and there.blocks[0].startswith(
        "invalid_input: Nothing was saved: the new text keeps none of the template calls and categories "
        f"{title!r} has ({{{{Infobox river}}}}, [[Category:Rivers of Germany]])"), there.text
    assert "removeSections=true" in there.text
    assert wiki.wikitext(title) == RHEIN and revision_ids(wiki, title) == [revid]


@on_every_version
def test_rendered_text_of_the_last_section_is_refused_though_the_links_closing_the_page_would_be_kept(
        wiki: RealWiki) -> None:
    """The page's last section, read rendered, has no category: written back, the server keeps the
    page's closing category below it, and the text it checks is then no longer the rendering shown,
    yet the model's text is that rendering all the same, which would replace the section's links and
    templates with their flattened text."""
    server = make_server(wiki.env())
    title = "Write rendered last section test"
    original = ("Lead.\n== Early ==\nText one.\n== Later ==\nThe [[Apple|apples]] of '''the''' valley, "
                "{{Convert|3|km}} long.\n\n[[Category:Rivers of Germany]]")
    revid = create(bot_server_for(wiki), title, original)
    shown = content_of(call(server, "get-page", title=title, section=2, content="text").blocks[0])
    assert "Category:" not in shown
    stripped = re.sub(r" \(section \d+\)", "", shown)
    refused = call(server, "update-page", title=title, section=2, source=stripped)
    assert refused.is_error and refused.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text"), refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]


@on_every_version
def test_rendered_text_read_with_get_revision_is_refused_as_wikitext(wiki: RealWiki) -> None:
    """get-revision renders a revision as get-page does: its plain text, markers removed, written
    back over a page with neither templates nor categories would flatten its links and bold."""
    server = make_server(wiki.env())
    title = "Write rendered revision test"
    original = "The [[Apple|apples]] of the valley.\n== Harvest ==\nPicked in '''autumn''', by [[Pear|hand]]."
    revid = create(bot_server_for(wiki), title, original)
    shown = content_of(call(server, "get-revision", revisionId=revid, content="text").blocks[0])
    stripped = re.sub(r" \(section \d+\)", "", shown)
    assert "[[" not in stripped and "Harvest" in stripped
    refused = call(server, "update-page", title=title, source=stripped, latestId=revid)
    assert refused.is_error and refused.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text"), refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]


@on_every_version
def test_every_write_names_the_template_calls_and_categories_it_removes(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write removed markup named test"
    create(server, title, RHEIN)
    dry = call(server, "update-page", title=title, source=RHEIN.split("}}\n", 1)[1], dryRun=True)
    assert not dry.is_error and "\nRemoved: {{Infobox river}}" in dry.text, dry.text
    found = call(server, "update-page", title=title, find="\n\n[[Category:Rivers of Germany]]", replace="")
    assert not found.is_error and found.text.endswith("\nRemoved: [[Category:Rivers of Germany]]"), found.text
    kept = call(server, "update-page", title=title, find="Rhein", replace="Rhine", replaceAll=True)
    assert not kept.is_error and "Removed:" not in kept.text, kept.text


def test_a_write_changing_a_magic_words_argument_does_not_call_it_removed(wiki: RealWiki) -> None:
    """{{DEFAULTSORT:B}} in place of {{DEFAULTSORT:A}} changes the call: it is still there."""
    server = make_server(wiki.env())
    title = "Write changed magic word test"
    create(server, title, "{{DISPLAYTITLE:Changed magic word}}{{DEFAULTSORT:Apple}}{{lc:TROUT}}\n"
                          "{{Infobox river|name=Rhein}} Trout swim here.\n[[Category:Fish]]")
    changed = call(server, "update-page", title=title, find="{{DISPLAYTITLE:Changed magic word}}"
                   "{{DEFAULTSORT:Apple}}{{lc:TROUT}}", replace="{{DISPLAYTITLE:''Changed magic word''}}"
                   "{{DEFAULTSORT:Pear}}{{lc:SALMON}}")
    assert not changed.is_error and "Removed:" not in changed.text, changed.text
    assert wiki.wikitext(title).startswith("{{DISPLAYTITLE:''Changed magic word''}}{{DEFAULTSORT:Pear}}")
    kept = call(server, "update-page", title=title, find="name=Rhein", replace="name=Rhine")
    assert not kept.is_error and "Removed:" not in kept.text, kept.text
    dropped = call(server, "update-page", title=title, find="{{DEFAULTSORT:Pear}}", replace="")
    assert not dropped.is_error and dropped.text.endswith("\nRemoved: {{DEFAULTSORT:Pear}}"), dropped.text


def test_replace_in_pages_names_the_template_calls_and_categories_it_removes_on_each_page(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    titles = ["Replace removed markup A", "Replace removed markup B", "Replace removed markup C"]
    for title, text in zip(titles, ["{{Stub}} Trout swim here.\n[[Category:Fish]]",
                                    "Trout swim here.\n[[Category:Fish]]", "Trout swim here."]):
        create(bot_server_for(wiki), title, text)
    arguments = {"titles": titles, "find": r"\{\{Stub\}\} |\n\[\[Category:Fish\]\]| here", "replace": "",
                 "regex": True}
    revids = [revision_ids(wiki, title)[0] for title in titles]
    dry = call(server, "replace-in-pages", **arguments)
    assert not dry.is_error and "3 of 3 pages would change" in dry.text, dry.text
    assert (f"{titles[0]} | 3 replacements | base revision ID {revids[0]}\n"
            "Removed: {{Stub}}, [[Category:Fish]]\n") in dry.text, dry.text
    assert f"{titles[1]} | 2 replacements | base revision ID {revids[1]}\nRemoved: [[Category:Fish]]\n" in dry.text
    assert dry.text.count("Removed:") == 2
    saved = call(server, "replace-in-pages", **arguments, dryRun=False)
    assert not saved.is_error and saved.blocks[0].startswith("Saved 3 of 3 pages."), saved.text
    rows = saved.blocks[0].split("\n")
    assert f"{titles[0]} | saved | {revision_ids(wiki, titles[0])[0]} | Removed: {{{{Stub}}}}, [[Category:Fish]]" in rows
    assert f"{titles[1]} | saved | {revision_ids(wiki, titles[1])[0]} | Removed: [[Category:Fish]]" in rows
    assert f"{titles[2]} | saved | {revision_ids(wiki, titles[2])[0]}" in rows
    assert [wiki.wikitext(title) for title in titles] == ["Trout swim.", "Trout swim.", "Trout swim."]


def test_an_appended_list_item_joins_the_list_also_from_a_stale_read(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Pipeline list append test"
    create(bot_server_for(wiki), title, "Members:\n* [[Ada Gill]]\n* [[Ben Gill]]")
    appended = call(server, "update-page", title=title, mode="append", source="* [[Wendle Gill]]")
    assert not appended.is_error, appended.text
    assert wiki.wikitext(title) == "Members:\n* [[Ada Gill]]\n* [[Ben Gill]]\n* [[Wendle Gill]]"
    results = calls_at_once(server, "update-page", [{"title": title, "mode": "append", "source": f"* [[Member {i}]]"}
                                                    for i in range(4)])
    assert [r.text for r in results if r.is_error] == [] and len(results) == 4
    lines = wiki.wikitext(title).split("\n")
    assert lines[:4] == ["Members:", "* [[Ada Gill]]", "* [[Ben Gill]]", "* [[Wendle Gill]]"]
    assert sorted(lines[4:]) == [f"* [[Member {i}]]" for i in range(4)]  # one list: no blank line


def rendered_categories(wiki: RealWiki, title: str) -> list[str]:
    """The categories the wiki puts a page in when it renders it now, templates as they are now
    (its text rendered afresh, as a purge would)."""
    parsed = wiki.raw_get(action="parse", title=title, text=wiki.wikitext(title), contentmodel="wikitext",
                          prop="categories")["parse"]
    return sorted(c["category"] for c in parsed["categories"])


@on_every_version
def test_a_category_added_to_a_template_goes_inside_noinclude(bot_server: Any, wiki: RealWiki) -> None:
    bare, kept = "Template:Pipeline river stub", "Template:Pipeline lake stub"
    create(bot_server, bare, "''This river article is a stub.''")
    create(bot_server, kept, "''This lake article is a stub.''<noinclude>[[Category:Stub templates]]</noinclude>")
    create(bot_server, "Pipeline river article", "{{Pipeline river stub}} {{Pipeline lake stub}}")
    results = [call(bot_server, "update-page-categories", title=title, add=["Stub templates", "Water stubs"])
               for title in (bare, kept)]
    assert [r.text for r in results if r.is_error] == []
    assert rendered_categories(wiki, "Pipeline river article") == []
    assert wiki.wikitext(bare) == ("''This river article is a stub.''<noinclude>\n[[Category:Stub templates]]\n"
                                   "[[Category:Water stubs]]\n</noinclude>")
    assert wiki.wikitext(kept) == ("''This lake article is a stub.''<noinclude>[[Category:Stub templates]]\n"
                                   "[[Category:Water stubs]]\n</noinclude>")
    assert rendered_categories(wiki, bare) == ["Stub_templates", "Water_stubs"]
    assert all("Placed: inside <noinclude>, so pages using the template are not put in it" in r.text for r in results)
    removed = call(bot_server, "update-page-categories", title=bare, remove=["Water stubs"])
    assert not removed.is_error and "Removed: Category:Water stubs" in removed.text, removed.text
    assert rendered_categories(wiki, bare) == ["Stub_templates"]


@on_every_version
def test_a_multi_line_reply_keeps_its_tables_templates_lists_and_pre(bot_server: Any, wiki: RealWiki) -> None:
    title = "Pipeline reply blocks test"
    create(bot_server, "Template:Pipeline cite", "<cite>{{{title}}}</cite>")
    create(bot_server, f"Talk:{title}", threaded_talk("*"))
    message = ("Here are the numbers:\n{| class=\"wikitable\"\n! River !! Length\n|-\n| Wendle || 12 km\n|}\n"
               "And the source:\n{{Pipeline cite\n|title=Rivers of the north\n}}\nTwo points:\n* first\n* second\n"
               "<pre>\nline one\n  line two\n</pre>")
    result = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message=message)
    assert not result.is_error, result.text
    html = wiki.raw_get(action="parse", title=f"Talk:{title}", text=wiki.wikitext(f"Talk:{title}"),
                        contentmodel="wikitext", prop="text")["parse"]["text"]
    assert "{|" not in html and "|}" not in html and "{{Pipeline cite" not in html and "|title=" not in html
    assert re.search(r"<table class=\"wikitable\">\s*<tbody><tr>\s*<th>River</th>", html), html
    assert "<td>Wendle</td>" in html and "<cite>Rivers of the north</cite>" in html
    assert "<li>first</li>" in html and "<li>second</li>" in html
    assert "line one\n  line two" in html and "<pre>" in html
    assert "[[User:Admin|Admin]]" in wiki.wikitext(f"Talk:{title}")
    heading = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message="Hi\n== New ==\nText")
    assert heading.is_error and heading.blocks[0].startswith("invalid_input: A reply cannot hold a heading")
    unclosed = call(bot_server, "reply-on-talk-page", title=title, topic="Plans", message="{|\n| a\nno end")
    assert unclosed.is_error and "leaves a table, template call or tag open" in unclosed.text


def test_a_repeated_replace_in_pages_without_a_preview_saves_nothing_twice(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    titles = ["Pipeline repeat replace A", "Pipeline repeat replace B"]
    for title in titles:
        create(bot_server_for(wiki), title, "Trout swim here.")
    arguments = {"titles": titles, "find": "Trout", "replace": "Trout (seeded)", "dryRun": False}
    first = call(server, "replace-in-pages", **arguments)
    assert not first.is_error and first.blocks[0].startswith("Saved 2 of 2 pages."), first.text
    saved = {title: revision_ids(wiki, title) for title in titles}
    again = call(server, "replace-in-pages", **arguments)
    assert not again.is_error and again.blocks[0].startswith("Saved 0 of 2 pages."), again.text
    for title in titles:
        assert wiki.wikitext(title) == "Trout (seeded) swim here." and revision_ids(wiki, title) == saved[title]
        assert f"{title} | unchanged | saved by this change before, as revision {saved[title][0]}" in again.text
    editor_edit(wiki, titles[0], "Trout (seeded) swim here, and more.")
    third = call(server, "replace-in-pages", **arguments)
    assert f"{titles[0]} | skipped | saved by this change before" in third.text, third.text
    assert wiki.wikitext(titles[0]) == "Trout (seeded) swim here, and more."
    preview = call(server, "replace-in-pages", **{**arguments, "dryRun": True})
    assert not preview.is_error and "2 of 2 pages would change" in preview.text
    fourth = call(server, "replace-in-pages", **{**arguments, "titles": titles[:1]})
    assert not fourth.is_error and wiki.wikitext(titles[0]) == "Trout (seeded) (seeded) swim here, and more."


@on_every_version
def test_a_confirmed_rollback_reverts_only_what_was_previewed(bot_server: Any, wiki: RealWiki) -> None:
    title = "Pipeline rollback pinned test"
    base, previewed = good_then_bad(bot_server, wiki, title, 2)
    asked = call(bot_server, "rollback-edits", title=title, user="Editor")
    assert asked.is_error and f"revisions {previewed[1]} to {previewed[0]}" in asked.text, asked.text
    editor_edit(wiki, title, "Bad text 2.")
    latest = revision_ids(wiki, title)[0]
    refused = call(bot_server, "rollback-edits", title=title, user="Editor", confirm=True)
    assert refused.is_error and refused.blocks[0].startswith(
        f"conflict: {title!r} was edited since the preview the user confirmed (its latest revision was "
        f"{previewed[0]}, now {latest}); nothing was rolled back."), refused.text
    assert f"the 3 latest edits to {title!r}, all by Editor (revisions {previewed[1]} to {latest})" in refused.text
    assert wiki.wikitext(title) == "Bad text 2."
    call(bot_server, "rollback-edits", title=title, user="Editor")  # previewed again, as it now is
    done = call(bot_server, "rollback-edits", title=title, user="Editor", confirm=True)
    assert not done.is_error and done.blocks[0].startswith(
        f"Rolled back the 3 latest edits to {title!r}, all by Editor (revisions {previewed[1]} to {latest}), "
        f"to revision {base}."), done.text
    assert wiki.wikitext(title) == "Good text."


@on_every_version
def test_a_dry_run_shows_signatures_and_subst_as_the_save_expands_them(bot_server: Any, wiki: RealWiki) -> None:
    """A dry run showed ~~~~, {{subst:...}} and [[A (b)|]] as written, where the save expands them:
    it runs the wiki's pre-save transform, one request more, and only when the text holds them."""
    title = "Dry run pre-save test"
    create(bot_server, "Template:Dry run greeting", "Hello from a template.")
    base = create(bot_server, title, "Lead.")
    counter = RequestCounter(bot_server)
    with counter.counting() as plain:
        call(bot_server, "update-page", title=title, source="Lead.\nPlain.", latestId=base, dryRun=True)
    source = "Lead.\nSigned: ~~~~\n{{subst:Dry run greeting}}\nSee [[Help:Links (old)|]]."
    with counter.counting() as sent:
        dry = call(bot_server, "update-page", title=title, source=source, latestId=base, dryRun=True)
    assert not dry.is_error and sent[0] == plain[0] + 1, (sent, plain, counter.urls)
    assert field(dry, "Expanded").startswith("signatures, subst: and the pipe trick are shown as the wiki "), dry.text
    saved = call(bot_server, "update-page", title=title, source=source, latestId=base)
    assert not saved.is_error, saved.text

    def timeless(text: str) -> str:
        return re.sub(r"\d\d:\d\d, \d+ \w+ \d{4} \(UTC\)", "(time)", text)
    added = [line[1:] for line in dry.blocks[0].split("\n") if line.startswith("+")]
    assert timeless("\n".join(added)) == timeless(wiki.wikitext(title).split("\n", 1)[1]), dry.text
    assert "~~~~" not in dry.text and "Hello from a template." in dry.text and "[[Help:Links (old)|Links]]" in dry.text
    reply = call(bot_server, "add-talk-topic", title=title, heading="Signed", message="A question.", dryRun=True)
    assert not reply.is_error and "~~~~" not in reply.text and "A question. [[User:Admin|Admin]]" in reply.text


def test_a_dry_run_refuses_what_the_save_would_refuse(bot_server: Any, wiki: RealWiki) -> None:
    """A content model the wiki does not know, invalid JSON on a JSON page and a text over the
    wiki's maximum page size: each save is refused by the wiki, and so is each dry run."""
    title = "Pipeline JSON test"
    created = call(bot_server, "create-page", title=title, source='{"rivers": 3}', contentModel="json")
    assert not created.is_error, created.text
    limit = int(wiki.raw_get(action="query", meta="siteinfo")["query"]["general"]["maxarticlesize"])
    call(bot_server, "get-page", title="Apple")
    cases = [("create-page", {"title": "Pipeline unknown model test", "source": "x", "contentModel": "nosuchmodel"},
              "knows no content model 'nosuchmodel'"),
             ("update-page", {"title": title, "source": '{"rivers": '}, "the new text is not valid JSON"),
             ("create-page", {"title": "Pipeline bad JSON test", "source": "{", "contentModel": "json"},
              "the new text is not valid JSON"),
             ("update-page", {"title": "Apple", "source": wiki.wikitext("Apple") + "\nAn apple." * (limit // 10 + 100)},
              f"over {wiki.key}'s maximum page size of {limit} bytes")]
    for tool, arguments, message in cases:
        dry = call(bot_server, tool, dryRun=True, **arguments)
        assert dry.is_error and dry.blocks[0].startswith("invalid_input: Nothing was saved (dry run): "), dry.text
        assert message in dry.text, dry.text
        saved = call(bot_server, tool, **arguments)
        assert saved.is_error and saved.blocks[0].startswith("invalid_input: "), (tool, saved.text)
    for dry_run in (True, False):
        across = call(bot_server, "replace-in-pages", titles=[title], find="3", replace="3,", dryRun=dry_run)
        assert not across.is_error and "the wiki would not save the change: " in across.text, across.text
        assert "the new text is not valid JSON" in across.text
    assert json.loads(wiki.wikitext(title)) == {"rivers": 3} and len(revision_ids(wiki, title)) == 1
    assert revision_ids(wiki, "Pipeline unknown model test") == []


@pytest.mark.wiki
def test_a_save_the_wiki_refuses_for_its_own_reasons_says_why_and_never_to_retry(
        spam_wiki: RealWiki, accounts: Accounts, bot_server: Any, wiki: RealWiki) -> None:
    spam = spam_wiki
    server = make_server(spam.env())
    refused = {
        "spam filter": [("update-page", {"title": "Spam target", "mode": "append",
                                         "source": "Win at casino-jackpot-bonus now."}),
                        ("update-page-categories", {"title": "Spam target", "add": ["Casino-jackpot-bonus"]})],
        "does not accept links": [("create-page", {"title": "Spam page", "source": "See http://pills-cheap-example.com/"}),
                                  ("update-page", {"title": "Spam target", "find": "Clean",
                                                   "replace": "[http://pills-cheap-example.com Clean]"})]}
    for reason, calls in refused.items():
        for tool, arguments in calls:
            result = call(server, tool, **arguments)
            assert result.is_error and result.blocks[0].startswith("permission_denied: "), (tool, result.text)
            assert f"Nothing was saved: the wiki {reason}" in result.text.replace("wiki's", "wiki"), result.text
            assert "Retry" not in result.text and "the same call fails again" not in result.text, result.text
    assert spam.wikitext("Spam target") == "Clean text." and revision_ids(spam, "Spam page") == []
    title = "Pipeline protected title"
    assert not call(bot_server, "protect-page", title=title, create="sysop", confirm=True).is_error
    for arguments in ({"dryRun": True}, {}):
        result = call(make_server(accounts.plain), "create-page", title=title, source="Hello.", **arguments)
        assert result.is_error and result.blocks[0].startswith("permission_denied: "), result.text
        assert "ask a wiki administrator" in result.text.lower() and "Retry" not in result.text, result.text
    assert revision_ids(wiki, title) == []


@on_every_version
def test_get_pages_answer_written_back_with_its_header_is_refused(bot_server: Any, wiki: RealWiki) -> None:
    """The whole of get-page's answer sent as the text, its header lines (Title:, Revision ID:, the
    metadata) too, would save them in the page: it is refused, whatever the mode, and so is a copy
    to a new page."""
    title = "Answer header test"
    create(bot_server, title, "Just a paragraph.\n\nAnother one.")
    before = revision_ids(wiki, title)
    for metadata in (False, True):
        answer = call(bot_server, "get-page", title=title, metadata=metadata).text
        for arguments in ({"source": answer + "\nAdded line."}, {"source": answer, "dryRun": True},
                          {"source": answer, "mode": "prepend"}):
            refused = call(bot_server, "update-page", title=title, **arguments)
            assert refused.is_error and refused.blocks[0].startswith(
                f"invalid_input: Nothing was saved: the new text for {title!r} starts with the header of "
                "get-page's answer"), (arguments, refused.text)
    copy = call(bot_server, "create-page", title="Answer header copy test", source=answer)
    assert copy.is_error and "starts with the header of get-page's answer" in copy.text
    assert revision_ids(wiki, title) == before and revision_ids(wiki, "Answer header copy test") == []
    assert not call(bot_server, "update-page", title=title, source="Title: a line of text.\n\nAnother one.").is_error


@on_every_version
def test_plain_text_of_a_page_without_headings_written_back_is_refused(bot_server: Any, wiki: RealWiki) -> None:
    title = "Pipeline rendered lead test"
    text = "'''Wendle Gill''' is a stream{{Fixture box}}.<ref>A survey.</ref>\n\n<references />\n[[Category:Rivers]]"
    revid = create(bot_server, title, text)
    shown = content_of(call(bot_server, "get-page", title=title, content="text").blocks[0])
    refused = call(bot_server, "update-page", title=title, source=shown + "\n")
    assert refused.is_error and refused.blocks[0].startswith(
        f"invalid_input: Nothing was saved: the new text for {title!r} is rendered text, not wikitext (it is "
        "what get-page returned as content text or html)"), refused.text
    assert wiki.wikitext(title) == text and revision_ids(wiki, title) == [revid]


# -- the pieces behind the write tools ------------------------------------------

def test_line_diff_is_compact() -> None:
    assert line_diff("a\nb\nc\nd\ne\nf", "a\nb\nC\nd\ne\nf\ng") == "@@ -3 +3 @@\n-c\n+C\n@@ -6,0 +7 @@\n+g"
    assert line_diff("a\nb\nc", "a\nc") == "@@ -2 +1,0 @@\n-b"
    assert line_diff("same", "same") == ""


def test_line_diff_picks_the_equal_lines_mediawiki_picks() -> None:
    """A paragraph moved or added between blank lines can be told with the blank line before
    it or the one after; MediaWiki's engines tell it with the one before, and so does a dry run."""
    moved = line_diff("A\n\nB\n\nC\n\nD", "A\n\nC\n\nD\n\nB")
    assert moved == "@@ -2,2 +1,0 @@\n-\n-B\n@@ -7,0 +6,2 @@\n+\n+B"
    added = line_diff("A\n\nB\n\nC", "A\n\nB\n\nNew\n\nC")
    assert added == "@@ -3,0 +4,2 @@\n+\n+New"
    assert line_diff("x\nx\nx", "x\nx") == "@@ -1 +0,0 @@\n-x"
    assert line_diff("A\nB", "A\nB\nB\nB") == "@@ -1,0 +2,2 @@\n+B\n+B"
    # a tie the engines break apart: as wikidiff2 (Wikipedia's) here; MediaWiki's PHP engine
    # keeps the blank lines instead (-P0 +P1, then -P1 +X)
    assert line_diff("P0\n\nP1\n\nP2", "P1\n\nX\n\nP2") == "@@ -1,2 +0,0 @@\n-P0\n-\n@@ -3,0 +2,2 @@\n+\n+X"


def test_section_ends_include_subsections_and_count_bytes() -> None:
    text = "Lead é\n== A ==\nx\n=== A1 ===\ny\n== B ==\nz"
    assert section_ends(text) == {0: 8, 1: 31, 2: 31, 3: 40}
    assert [text.encode()[s.start:].split(b"\n")[0] for s in wikitext_sections(text)] == [
        b"== A ==", b"=== A1 ===", b"== B =="]


def test_read_ledger_knows_the_revision_each_write_is_based_on() -> None:
    reads = ReadLedger().of("w")
    reads.record("P", None, 5, "Lead.\n== A ==\na", (0, 1000))
    assert reads.base("P", None) == 5 and reads.base("P", 1) == 5  # the page shows its sections
    reads.record("P", 1, 6, "== A ==\na", (0, 1000))
    assert reads.base("P", 1) == 6 and reads.base("P", None) == 5
    reads.record("P", None, 2, "Old.", (0, 1000), latest=False)  # get-revision of an old revision
    assert reads.base("P", None) == 5
    reads.saved("P", None, 5, 7, sent_whole=False)  # an append here on top of what was read
    assert reads.base("P", None) == 7 and reads.base("P", 1) == 7
    reads.saved("P", 2, 9, 10, sent_whole=True)  # merged into an edit made since: only the section
    assert reads.base("P", None) == 7 and reads.base("P", 2) == 10
    assert reads.base("Other", None) is None


def test_read_ledger_remembers_the_last_read_of_each_page_and_section() -> None:
    reads = ReadLedger().of("w")
    text = "Lead.\n== A ==\n" + "a" * 3000 + "\n== B ==\nb"
    reads.record("P", None, 5, text, (0, 1000))
    assert reads.unseen("P", None).seen == 1000
    assert reads.unseen("P", 1) is not None and reads.unseen("P", 2) is not None
    assert reads.unseen("Other", None) is None  # never read here: nothing to protect
    reads.record("P", 2, 5, "== B ==\nb", (0, 1000))  # a later whole read of section 2
    assert reads.unseen("P", 2) is None
    reads.record("P", None, 6, text, (1000, 6000))  # the tail of a newer revision: still a gap
    assert reads.unseen("P", None).seen == 0
    for offset in (0, 1000, 2000, 3000):
        reads.record("P", None, 6, text, (offset, offset + 1000))
    assert reads.unseen("P", None) is None and reads.unseen("P", 1) is None


def test_the_read_ledger_keeps_the_latest_reads_up_to_its_size(wiki: RealWiki) -> None:
    """Truncated reads are remembered up to READ_LEDGER_MAX_ENTRIES pages and sections (the
    oldest read forgotten first), so the server's memory stays bounded; this server holds two.
    A page whose read was forgotten is read again before it is written whole."""
    state = ServerState.from_config(Config.from_env(wiki.env(MCP_CONTENT_MAX_BYTES="1000")))
    assert state.reads.capacity == READ_LEDGER_MAX_ENTRIES == 2000
    state.reads = ReadLedger(capacity=2)
    server = create_server(state=state)
    title = "Write ledger size test"
    create(server, title, big_section_page())
    seen = content_of(call(server, "get-page", title=title).blocks[0])

    def write_back_refused() -> bool:
        result = call(server, "update-page", title=title, source=seen, dryRun=True)
        return result.is_error and result.blocks[0].startswith("invalid_input: Nothing was saved: Page ")
    assert write_back_refused()
    call(server, "get-page", title="Apple")  # two reads: the truncated one is still remembered
    assert write_back_refused()
    call(server, "get-page", title="Banana")  # a third: the oldest, the truncated one, is forgotten
    forgotten = call(server, "update-page", title=title, source=seen, dryRun=True)
    assert forgotten.blocks == [FORGOTTEN_READ.format(title=repr(title))]
    latest = int(field(call(server, "get-page", title=title), "Revision ID"))  # read again, cut again
    assert write_back_refused()
    pinned = call(server, "update-page", title=title, source=seen, latestId=latest, dryRun=True)
    assert pinned.blocks[0].startswith("invalid_input: Nothing was saved: Page ")
    assert "The very last line of the big section." in wiki.wikitext(title)


@pytest.mark.parametrize("before, after, joined", [
    ("Text.", "More.", "Text.\nMore."),
    ("[[Category:X]]", "== New ==\nText.", "[[Category:X]]\n\n== New ==\nText."),
    ("{{Box}}", "First line.", "{{Box}}\n\nFirst line."),
    ("* item", "After.", "* item\n\nAfter."),
    ("* item", "* next", "* item\n* next"),
    ("{|\n| cell\n|}", "# first", "{|\n| cell\n|}\n# first"),
    ("{|\n| cell\n|}", "After.", "{|\n| cell\n|}\n\nAfter."),
    ("<references />", "After.", "<references />\n\nAfter."),
    ("Text.", "\nMore.", "Text.\nMore."),
    ("Text.", "\n== New ==", "Text.\n\n== New =="),
    ("Text.\n\n", "== New ==", "Text.\n\n== New =="),
    ("", "First.", "First."),
])
def test_appended_text_is_set_on_a_line_of_its_own(before: str, after: str, joined: str) -> None:
    assert before + separator(before, after) + after == joined


@pytest.mark.parametrize("mine, theirs, merged", [  # base a b c d e; results as GNU diff3 gives them
    ("x b c d e", "a b c d y", "x b c d y"),          # apart: both kept
    ("x b c d e", "a y c d e", None),                 # adjacent lines: a conflict
    ("a x c d e", "a x c d e", "a x c d e"),          # the same change on both sides
    ("a b c d e f", "a b c d e g", None),             # both added at the end
    ("a I b c d e", "a b c d e J", "a I b c d e J"),  # an insertion and an addition apart
    ("a b c d e", "a b c d e", "a b c d e"),
])
def test_merges_follow_mediawikis_diff3(mine: str, theirs: str, merged: str | None) -> None:
    result = merge3("a\nb\nc\nd\ne", mine.replace(" ", "\n"), theirs.replace(" ", "\n"))
    assert result == (merged.replace(" ", "\n") if merged else None)


def test_line_changes_slide_runs_of_equal_lines_as_diff_does() -> None:
    # a paragraph and its blank line added after a blank line: diff puts the blank line last
    assert line_changes(["A", "", "B"], ["A", "", "N", "", "B"]) == [(2, 2, 2, 4)]
    assert line_changes(list("abc"), list("abc")) == []
    assert line_changes([], ["x"]) == [(0, 0, 0, 1)]


def test_idempotency_store_runs_once_forgets_failures_and_expires() -> None:
    now = [0.0]
    store = IdempotencyStore(ttl=3600, capacity=2, clock=lambda: now[0])
    runs: list[int] = []
    assert store.run("k", "f", lambda: runs.append(1) or ["done"]) == (["done"], False)
    assert store.run("k", "f", lambda: runs.append(2) or ["again"]) == (["done"], True)
    with pytest.raises(WikiError, match="^conflict: idempotencyKey 'k' was already used"):
        store.run("k", "other", lambda: ["x"])

    def fail() -> list[str]:
        raise WikiError("upstream_failure", "boom")
    with pytest.raises(WikiError):
        store.run("f", "f", fail)
    assert store.run("f", "f", lambda: ["second try"]) == (["second try"], False)
    now[0] = 3601.0
    assert store.run("k", "f", lambda: ["fresh"]) == (["fresh"], False)
    for key in ("a", "b", "c"):
        store.run(key, "f", lambda: ["x"])
    assert len(store.store._kinds["idempotency"]) <= 2 and runs == [1]  # bounded by its capacity


def test_idempotency_store_runs_concurrent_repeats_once() -> None:
    store = IdempotencyStore()
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> list[str]:
        runs.append(1)
        started.set()
        release.wait(10)
        return ["saved"]
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(store.run("k", "f", slow)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: results.append(store.run("k", "f", slow)))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert runs == [1] and sorted(results, key=lambda r: r[1]) == [(["saved"], False), (["saved"], True)]


def test_a_repeat_that_looks_while_the_first_call_finishes_gets_its_result_not_a_conflict() -> None:
    """Replicas share the store: a repeat reads the claim (no result yet), and the first call
    saves its result and lets go before the repeat asks whether the claim is still held."""
    first_done = threading.Event()

    class FinishingMeanwhile(MemoryStore):
        def held(self, key: Any) -> bool:
            release.set()
            first_done.wait(10)  # the first call put its result and let go in between
            return super().held(key)
    store = IdempotencyStore(store=FinishingMeanwhile(100))
    started, release = threading.Event(), threading.Event()

    def slow() -> list[str]:
        started.set()
        release.wait(10)
        return ["saved"]
    first = threading.Thread(target=lambda: (store.run("k", "f", slow), first_done.set()))
    first.start()
    started.wait(10)
    assert store.run("k", "f", lambda: ["second run"]) == (["saved"], True)
    first.join(10)
