"""Tests: Reading like an editor: outlines, sections by heading, finding in a page, plain text, templates, budgets filled, word-level diffs."""
from __future__ import annotations

import json
import re
import secrets
import unicodedata
from typing import Any

import pytest

from mediawiki_mcp.config import Config
from mediawiki_mcp.diff import line_diff
from mediawiki_mcp.plaintext import plain_text
from mediawiki_mcp.read_links import TEMPLATE_LEGEND
from mediawiki_mcp.read_pages import SECTIONS_LEGEND
from mediawiki_mcp.read_search import FIND_LEGEND, inner_nodes, match_place
from mediawiki_mcp.render import utf8_len
from mediawiki_mcp.server import create_server
from mediawiki_mcp.siteinfo import CORE_SYNTAX, Syntax
from realwiki import (
    ALMANAC,
    ALMANAC_SECTIONS,
    DANUBE,
    REPEATED_HEADINGS_PAGE,
    RHINE,
    RIVER_ARTICLE,
    RealWiki,
    WikiFarm,
)
from tests.support import (
    DIFF_ENGINES,
    LONG_PARAGRAPH,
    ONE_WORD_DIFF,
    RequestCounter,
    assert_requests_per_call,
    bot_server_for,
    call,
    content_of,
    create,
    editor_edit,
    field,
    list_tools,
    make_server,
    next_value,
    on_every_version,
    read_whole,
    rows_of,
    shared_bot_server,
    signature,
)


def latest_revid(wiki: RealWiki, title: str) -> int:
    return int(wiki.raw_get(action="query", titles=title, prop="info")["query"]["pages"][0]["lastrevid"])


#: What a reference-heavy article transcludes, made as English Wikipedia's are: citations
#: rendered as its Citation Style 1 renders them, navigation boxes, hidden maintenance templates.
REFERENCE_HEAVY_TEMPLATES = {
    "Template:Cite web (test)": (
        '<span class="citation">{{{last}}}, {{{first}}} ({{{date}}}). "[{{{url}}} {{{title}}}]". '
        "''{{{website}}}''. {{{publisher}}}. {{#if:{{{archive-url|}}}|[{{{archive-url}}} Archived] from the "
        "original on {{{archive-date}}}.}} Retrieved {{{access-date}}}.</span>"),
    "Template:Navbox rivers (test)": ('<div class="navbox" role="navigation">Rivers of Europe: [[Rhine]] · '
                                      "[[Danube]] · [[Elbe]] · [[Moselle]]</div>"),
    "Template:Authority control (test)": '<div class="navbox authority-control">Authority control: {{{1|}}}</div>',
    "Template:Short description (test)": '<div class="shortdescription" style="display:none">{{{1}}}</div>',
    "Template:Use dmy dates (test)": "[[Category:Use dmy dates from {{{date}}}]]",
}


REFERENCE_HEAVY = "Reference-heavy test"


def reference_heavy_article() -> str:
    """An article shaped like English Wikipedia's: hidden maintenance templates and an editor's
    comment at the top, an infobox, piped links, a captioned image and three full web citations per
    section and a reused one, navigation boxes and categories at the bottom."""
    parts = [("{{Short description (test)|River in western Europe}}\n{{Use dmy dates (test)|date=May 2020}}\n"
              "<!-- Keep the infobox in step with the survey figures below. -->"),
             ("{{Infobox river\n| name = Moselle\n| length = {{#invoke:Length|km|544}}\n"
              "| source = Col de Bussang\n| type = tributary\n}}")]
    for n, town in enumerate(["Basel", "Strasbourg", "Mannheim", "Mainz", "Koblenz", "Bonn", "Cologne",
                              "Düsseldorf"], 1):
        sentences = []
        for k in range(1, 4):
            url = f"https://www.example.org/rivers/moselle/{town.lower()}/report-{k}.html"
            sentences.append(
                f"At [[{town}|the town of {town}]] the river is {100 + 10 * k} metres wide in part {k} of the "
                f'survey, and [[barge]]s pass it daily.<ref name="r{n}-{k}">{{{{Cite web (test)|url={url}'
                f"|title=River report on {town}, part {k}|last=Author{k}|first=Anna|date={k} March 200{n}"
                f"|website=Rivers of Europe|publisher=Test Press|language=en|access-date={k} May 2020"
                f"|archive-url=https://web.archive.example.org/web/2020050{k}000000/{url}"
                f"|archive-date={k} June 2020|url-status=live}}}}</ref>")
        parts.append(f"== {town} ==\n[[File:Red square.png|thumb|upright=0.8|alt=A red square standing for the "
                     f"river at {town}|The river at {town}]]\n" + " ".join(sentences)
                     + f' Earlier surveys agree.<ref name="r{n}-1" />')
    parts.append("== References ==\n<references />\n\n{{Navbox rivers (test)}}\n"
                 "{{Authority control (test)|VIAF: 000000}}\n\n{{DEFAULTSORT:Moselle}}\n"
                 + "\n".join(f"[[Category:{c}]]" for c in ("Rivers of Europe", "Tributaries of the Rhine",
                                                             "Rivers of France", "Rivers of Germany",
                                                             "Rivers of Luxembourg", "International rivers of Europe")))
    return "\n\n".join(parts)


def ensure_page(server: Any, title: str, text: str) -> None:
    """Makes a page that several tests read, once."""
    result = call(server, "create-page", title=title, source=text)
    assert not result.is_error or result.blocks[0].startswith("conflict: "), result.text


def reference_heavy_page(server: Any) -> None:
    for title, text in REFERENCE_HEAVY_TEMPLATES.items():
        ensure_page(server, title, text)
    ensure_page(server, REFERENCE_HEAVY, reference_heavy_article())


# -- word-level diffs ---------------------------------------------------------------

def test_a_changed_line_shows_its_changed_words_once() -> None:
    one_word = line_diff(f"Intro.\n{LONG_PARAGRAPH}\nEnd.",
                           f"Intro.\n{LONG_PARAGRAPH.replace('grain 37 of sand', 'grain 37 of silt')}\nEnd.")
    assert one_word == f"@@ -2 +2 @@\n{ONE_WORD_DIFF}" and len(one_word.encode()) <= 600
    # each change keeps its context; changes apart by spaces alone are one; short lines stay whole
    assert line_diff("The river carried grain to the sea.", "The river took sand to the sea.") == (
        "@@ -1 +1 @@\n~The river [-carried grain-]{+took sand+} to the sea.")
    assert line_diff("日本語のページです。", "日本語の文書です。") == "@@ -1 +1 @@\n~日本語の[-ページ-]{+文書+}です。"
    # a line new or gone as a whole, or replaced by one with little in common, is shown whole
    assert line_diff("Intro.\nAlpha beta gamma delta.\nCompletely different words here.\nEnd.",
                       "Intro.\nAlpha beta GAMMA delta.\nA new inserted line.\nNothing shared at all.\nEnd.") == (
        "@@ -2,2 +2,3 @@\n~Alpha beta [-gamma-]{+GAMMA+} delta.\n-Completely different words here.\n"
        "+A new inserted line.\n+Nothing shared at all.")
    assert line_diff("a\nb", "a\nb\nc") == "@@ -2,0 +3 @@\n+c"


@pytest.mark.parametrize("engine", list(DIFF_ENGINES))
def test_a_one_word_change_in_a_long_paragraph_diffs_to_a_few_hundred_bytes(farm: WikiFarm, engine: str) -> None:
    """On every diff engine, and in the dry run before the save (see also
    test_every_diff_engine_and_a_dry_run_show_the_same_lines)."""
    wiki = farm.wiki(DIFF_ENGINES[engine])
    server = shared_bot_server(farm, wiki)
    title = "Word diff test"
    base = create(server, title, f"Intro.\n\n{LONG_PARAGRAPH}\n\nEnd.")
    edit = {"title": title, "find": "grain 37 of sand", "replace": "grain 37 of silt"}
    dry = call(server, "update-page", dryRun=True, **edit)
    saved = call(server, "update-page", **edit)
    compared = call(server, "compare-pages", fromRevision=base, toRevision=int(field(saved, "Revision ID")))
    assert content_of(dry.blocks[0]) == content_of(compared.blocks[0]) == f"@@ -3 +3 @@\n{ONE_WORD_DIFF}"
    print(f"{engine}: one word in a {len(LONG_PARAGRAPH.encode())}-byte paragraph: compare-pages answers "
          f"{len(compared.text.encode())} bytes, its diff {len(content_of(compared.blocks[0]).encode())} "
          f"(both lines whole: {2 * len(LONG_PARAGRAPH.encode()) + 14})")


# -- get-page-sections --------------------------------------------------------------

@on_every_version
def test_get_page_sections_gives_the_outline_and_sizes_in_one_request(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    with counter.counting() as n:
        rhine = call(server, "get-page-sections", title=RIVER_ARTICLE)
    assert n[0] == 1 and not rhine.is_error
    assert rhine.blocks == [
        (f"Title: Rhine\nRevision ID: {latest_revid(wiki, RIVER_ARTICLE)}\nSize: {len(RHINE.encode())} bytes\n"
         f"Sections ({SECTIONS_LEGEND}):\n"
         "0 | (Lead) | 306\n1 | == Course == | 216\n- | == Basin == | from River facts\n2 | == References == | 31")]
    danube = call(server, "get-page-sections", title=REPEATED_HEADINGS_PAGE)
    assert rows_of(danube.blocks[0])[3:] == [
        "0 | (Lead) | 24", "1 | == History == | 32 | 62", "2 | === Notes === | 30", "3 | == Geography == | 42 | 74",
        "4 | === Notes === | 32", "5 | == Notes == | 26"]
    for line in rows_of(danube.blocks[0])[5::2]:  # a section's own size is what get-page gives, and a blank line
        number, own = int(line.split(" | ")[0]), int(line.split(" | ")[-1])
        text = content_of(call(server, "get-page", title=REPEATED_HEADINGS_PAGE, section=number).blocks[0])
        assert len(text.encode()) + 2 == own, line
    almanac = call(server, "get-page-sections", title=ALMANAC)
    assert f"\nSize: {len(wiki.wikitext(ALMANAC).encode())} bytes\n" in almanac.text
    assert len(rows_of(almanac.blocks[0])) == 4 + ALMANAC_SECTIONS
    assert rows_of(almanac.blocks[0])[-1].startswith(f"{ALMANAC_SECTIONS} | == Day {ALMANAC_SECTIONS} == | ")
    redirect = call(server, "get-page-sections", title="Redirect page")
    assert redirect.text.startswith("Title: Target page\nRedirected from: Redirect page\n")
    missing = call(server, "get-page-sections", title="No such page here")
    assert missing.is_error and missing.blocks[0].startswith("not_found: Page 'No such page here' not found")


# -- sections by heading -----------------------------------------------------------------

def test_a_section_is_read_by_its_heading_in_every_form(bot_server: Any, wiki: RealWiki) -> None:
    by_number = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section=3)
    for heading in ("Geography", "geography", "  GEOGRAPHY ", "== Geography =="):
        result = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section=heading)
        assert result.blocks == [by_number.blocks[0].replace("Section: 3\n", "Section: 3 (Geography)\n")], heading
    title = "Heading with markup test"
    create(bot_server, title, "Lead.\n\n== The [[Rhine|river]] '''basin''' <small>today</small> ==\nBasin text.\n\n"
                              "== Other ==\nOther text.")
    basin = call(bot_server, "get-page", title=title, section="the river basin today")
    assert basin.blocks[0].endswith("\nSection: 1 (The river basin today)\n\n== The [[Rhine|river]] '''basin''' "
                                    "<small>today</small> ==\nBasin text.")
    html = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section="geography", content="html")
    assert "\nSection: 3 (Geography)\n" in html.text and "Geography notes." in html.text
    assert "History notes." not in html.text
    text = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section="Geography", content="text")
    assert content_of(text.blocks[0]) == ("== Geography == (section 3)\nIt crosses ten countries.\n\n"
                                          "=== Notes === (section 4)\nGeography notes.")
    old = call(bot_server, "get-revision", revisionId=int(field(by_number, "Revision ID")), section="Geography")
    assert "\nSection: 3 (Geography)\n" in old.text and content_of(old.blocks[0]) == content_of(by_number.blocks[0])
    digits = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section="3")  # no heading '3': the number
    assert content_of(digits.blocks[0]) == content_of(by_number.blocks[0])


def test_a_section_is_found_by_the_name_the_outline_shows_its_rendered_text_and_its_source(
        bot_server: Any) -> None:
    title = "Heading names test"
    create(bot_server, title, "Lead.\n\n== Notes<ref>x</ref> ==\nNoted.\n\n== {{PAGENAME}} today ==\nToday.\n\n"
                              "== Last ==\nLast.\n\n<references />")
    outline = call(bot_server, "get-page-sections", title=title)
    assert "1 | == Notes == |" in outline.text and f"2 | == {title} today == |" in outline.text, outline.text
    for content in ("source", "html", "text"):
        for name, number in (("Notes[1]", 1), ("Notes<ref>x</ref>", 1), (f"{title} today", 2),
                             ("{{PAGENAME}} today", 2)):
            found = call(bot_server, "get-page", title=title, section=name, content=content)
            assert not found.is_error, (name, content, found.text)
            assert f"\nSection: {number} (" in found.text, (name, content, found.text)
            assert ("Noted." if number == 1 else "Today.") in found.text, (name, content)


@on_every_version
def test_a_heading_holding_a_footnote_is_named_without_it_everywhere_and_found_so(bot_server: Any,
                                                                                  wiki: RealWiki) -> None:
    """== Notes<ref>A source.</ref> == was 'Notes[1]' in the outline, 'NotesA source.' in the
    errors, and section "Notes" was not found: it is 'Notes' in both, found as Notes or Notes[1]."""
    title = "Footnote heading test"
    create(bot_server, title, "Lead.\n\n== Notes<ref>A source.</ref> ==\nNoted.\n\n"
                              "== Sources<ref group=n>x</ref><ref name=q/> ==\n<references />")
    outline = call(bot_server, "get-page-sections", title=title)
    assert "\n1 | == Notes == |" in outline.text and "\n2 | == Sources == |" in outline.text, outline.text
    listed = "Its sections: 0 (Lead), 1 (== Notes ==), 2 (== Sources ==)."
    for content in ("source", "html", "text"):
        for name in ("Notes", "notes", "Notes[1]", "Notes<ref>A source.</ref>"):
            found = call(bot_server, "get-page", title=title, section=name, content=content)
            assert not found.is_error and "\nSection: 1 (Notes)\n" in found.text, (name, content, found.text)
        assert "\nSection: 2 (Sources)\n" in call(bot_server, "get-page", title=title, section="Sources[n 1][2]",
                                                    content=content).text
        absent = call(bot_server, "get-page", title=title, section="Climate", content=content)
        assert absent.is_error and absent.text.endswith(listed), (content, absent.text)
    past = call(bot_server, "get-page", title=title, section=7)
    assert past.is_error and past.text.endswith(listed), past.text
    create(bot_server, "Bracket heading test", "== Array[0] ==\nFirst.\n== Array[1] ==\nSecond.")
    second = call(bot_server, "get-page", title="Bracket heading test", section="array[1]")
    assert not second.is_error and second.text.endswith("Second."), second.text  # brackets that are no footnote
    saved = call(bot_server, "update-page", title=title, section="Notes", mode="append", source="More.")
    assert not saved.is_error, saved.text
    assert "== Notes<ref>A source.</ref> ==\nNoted.\nMore.\n\n== Sources" in wiki.wikitext(title)
    create(bot_server, f"Talk:{title}", f"== Notes<ref>A source.</ref> ==\nA question. {signature('Bob', '11:00')}")
    replied = call(bot_server, "reply-on-talk-page", title=title, topic="Notes[1]", message="An answer.")
    assert not replied.is_error and field(replied, "Topic") == "1 (Notes<ref>A source.</ref>)", replied.text
    unknown = call(bot_server, "reply-on-talk-page", title=title, topic="Nope", message="An answer.")
    assert unknown.is_error and unknown.text.endswith("Its topics: 1 (Notes). To start one, use add-talk-topic.")
    nobody = call(bot_server, "reply-on-talk-page", title=title, topic="Notes", replyTo="Zed", message="Hi.")
    assert nobody.is_error and "No comment in topic 1 (Notes) of " in nobody.text, nobody.text


def test_a_heading_is_found_whether_it_or_the_name_given_is_composed_or_decomposed(bot_server: Any,
                                                                                    wiki: RealWiki) -> None:
    """Section names are compared in NFC, as finds are: an é given as e and U+0301 finds the
    heading the wiki stores composed, and a heading written e&#769; is found as é."""
    title = "Decomposed heading test"
    create(bot_server, title, "Lead.\n\n== Café ==\nCoffee.\n\n== Entrée e&#769; ==\nStarter.")
    decomposed = "Cafe\u0301"
    found = call(bot_server, "get-page", title=title, section=decomposed)
    assert not found.is_error and "\nSection: 1 (Café)\n" in found.text, found.text
    composed = call(bot_server, "get-page", title=title, section="Entrée é")
    assert not composed.is_error and "Starter." in composed.text, composed.text
    saved = call(bot_server, "update-page", title=title, section=decomposed, mode="append", source="Tea.")
    assert not saved.is_error and "== Café ==\nCoffee.\nTea.\n" in wiki.wikitext(title), saved.text
    create(bot_server, "Talk:" + title, "== Café ==\nA question. [[User:Admin|Admin]] 10:00, 1 May 2026 (UTC)")
    replied = call(bot_server, "reply-on-talk-page", title=title, topic=decomposed, message="An answer.")
    assert not replied.is_error and "An answer." in wiki.wikitext("Talk:" + title), replied.text


def test_a_heading_written_in_html_is_shown_and_refused_as_no_section_not_as_a_page_named_false(
        bot_server: Any, wiki: RealWiki) -> None:
    """MediaWiki lists an <h2> written in HTML among the sections, with no number and no page it
    comes from (false): the outline said 'from False', and asking for it by name said to read the
    page False."""
    title = f"HTML heading {secrets.token_hex(4)}"
    create(bot_server, title, "Lead.\n<h2>Written in HTML</h2>\nUnder it.\n== A ==\nAlpha.")
    outline = call(bot_server, "get-page-sections", title=title)
    assert "\n- | == Written in HTML == | in HTML, part of the section before\n1 | == A == |" in outline.text, \
        outline.text
    for tool, arguments in (("get-page", {}), ("update-page", {"mode": "append", "source": "More."})):
        refused = call(bot_server, tool, title=title, section="Written in HTML", **arguments)
        assert refused.blocks == [(f"not_found: The heading 'Written in HTML' in {title} is written in HTML "
                                   "(<h2>), which starts no section: its text is part of the section before it, "
                                   "as get-page-sections shows.")], (tool, refused.text)
    assert wiki.wikitext(title).endswith("Alpha.")


@on_every_version
def test_a_heading_that_is_absent_repeated_or_brought_by_a_template_is_refused_saying_why(
        bot_server: Any, wiki: RealWiki) -> None:
    for content in ("source", "html", "text"):
        twice = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section="notes", content=content)
        assert twice.is_error and twice.blocks == [
            ("invalid_input: 3 sections of Danube are headed 'notes': 2 (Notes, under History), 4 (Notes, under "
             "Geography), 5 (Notes). Give the one meant by its number: section=N.")], content
        absent = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section="Climate", content=content)
        assert absent.is_error and absent.blocks == [
            (f"not_found: No section of Danube on {wiki.key} is headed 'Climate'. Its sections: 0 (Lead), "
             "1 (== History ==), 2 (=== Notes ===), 3 (== Geography ==), 4 (=== Notes ===), 5 (== Notes ==).")], content
        basin = call(bot_server, "get-page", title=RIVER_ARTICLE, section="Basin", content=content)
        assert basin.is_error and basin.blocks == [
            ("not_found: The section headed 'Basin' in Rhine comes from the page River facts, which Rhine "
             'transcludes, so it is read and changed there: call again with title="River facts".')], content
    assert call(bot_server, "get-page", title="River facts", section="Basin").text.endswith(
        "\n\n== Basin ==\nA river drains its basin into the sea.\n</onlyinclude>")
    edit = call(bot_server, "update-page", title=REPEATED_HEADINGS_PAGE, section="Notes", source="x")
    assert edit.is_error and edit.blocks[0].startswith("invalid_input: 3 sections of Danube are headed 'Notes'")
    schema = {t.name: t for t in list_tools(bot_server)}["get-page"].input_schema["properties"]["section"]
    assert schema["type"] == ["integer", "string"] and "heading" in schema["description"]


def test_a_section_not_there_lists_as_many_sections_as_a_marker_does_and_names_the_outline(
        bot_server: Any, wiki: RealWiki) -> None:
    """The error for a section that is not there listed every section (19 KB for 600): it lists those a
    truncation marker would, then how many more and get-page-sections, which lists them all."""
    title = f"Many sections {secrets.token_hex(3)}"
    create(bot_server, title, "".join(f"== Heading number {n} ==\ntext {n}\n" for n in range(600)))
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    for section in (9999, "Nope"):
        refused = call(server, "get-page", title=title, section=section)
        assert refused.is_error and len(refused.blocks) == 1 and utf8_len(refused.text) < 1000 // 4 + 250
        listed = refused.text.split("Its sections: ", 1)[1]
        assert listed.startswith("0 (Lead), 1 (== Heading number 0 ==), 2 (== Heading number 1 ==)"), listed
        shown = listed.split(", and ", 1)[0].count(" (")
        assert listed.endswith(f", and {601 - shown} more (get-page-sections with title=\"{title}\" lists them "
                               "all)."), listed
        assert int(field(call(server, "get-page-sections", title=title), "Size").split()[0]) > 0


def test_a_section_is_changed_by_its_heading(bot_server: Any, wiki: RealWiki) -> None:
    title = "Danube heading edit test"
    create(bot_server, title, DANUBE)
    arguments = {"title": title, "section": "geography", "source": "== Geography ==\nIt crosses ten countries "
                 "and four capitals.\n=== Notes ===\nGeography notes."}
    dry = call(bot_server, "update-page", dryRun=True, **arguments)
    assert "\nSection: 3\n" in dry.text and content_of(dry.blocks[0]) == (
        "@@ -9 +9 @@\n~It crosses ten countries{+ and four capitals+}.")
    saved = call(bot_server, "update-page", **arguments)
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title) == DANUBE.replace("ten countries.", "ten countries and four capitals.")
    # a heading is found in the revision the change is based on, which the wiki splices it into
    base = int(field(saved, "Revision ID"))
    editor_edit(wiki, title, "The Danube flows east.\n\n== Source ==\nThe Black Forest.\n\n"
                + wiki.wikitext(title).split("\n\n", 1)[1])
    pinned = call(bot_server, "update-page", title=title, section="History", latestId=base,
                  source="== History ==\nA Roman frontier, long ago.\n=== Notes ===\nHistory notes.")
    assert not pinned.is_error, pinned.text
    assert "== Source ==\nThe Black Forest." in wiki.wikitext(title)
    assert "A Roman frontier, long ago." in wiki.wikitext(title)


@on_every_version
@pytest.mark.parametrize("read_as", ["[[Gamma river|gamma]]", 2, "revision"],
                         ids=["by heading", "by number", "by number, the latest revision"])
def test_a_section_written_by_its_heading_keeps_an_edit_made_since_its_read(wiki: RealWiki,
                                                                           read_as: str | int) -> None:
    """The base of a write by heading is the read of that section, by its heading or its number
    (get-page, or get-revision of the latest revision), though a section added above has renumbered
    it since: the Editor's change to it is merged in, never written over."""
    server = make_server(wiki.env())
    title = f"Heading base since test {read_as if read_as in (2, 'revision') else 'heading'}"
    revid = create(bot_server_for(wiki), title, "Lead.\n\n== Alpha ==\nalpha\n\n== [[Gamma river|Gamma]] ==\n"
                   "first line\nsecond line")
    read = (call(server, "get-revision", revisionId=revid, section=2) if read_as == "revision" else
            call(server, "get-page", title=title, section=read_as))
    assert field(read, "Section") == ("2 (Gamma)" if isinstance(read_as, str) and "[" in read_as else "2"), read.text
    editor_edit(wiki, title, "Lead.\n\n== New ==\nnew\n\n== Alpha ==\nalpha\n\n== [[Gamma river|Gamma]] ==\n"
                "first line, corrected by the Editor\nsecond line")
    saved = call(server, "update-page", title=title, section="Gamma",
                 source="== [[Gamma river|Gamma]] ==\nfirst line\nsecond line\nthird line")
    assert not saved.is_error and saved.blocks[0].startswith("Saved, merged with the edits made since revision "
                                                             f"{field(read, 'Revision ID')}"), saved.text
    assert wiki.wikitext(title).endswith("== [[Gamma river|Gamma]] ==\nfirst line, corrected by the Editor\n"
                                         "second line\nthird line")


# -- find-in-page ------------------------------------------------------------------------

@on_every_version
def test_find_in_page_places_each_match_and_says_what_it_is_inside(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    revid = latest_revid(wiki, RIVER_ARTICLE)
    legend = FIND_LEGEND.format(reader="get-page")
    with counter.counting() as n:
        delta = call(server, "find-in-page", title=RIVER_ARTICLE, find="delta")
    assert n[0] == 1 and delta.blocks == [
        (f"Title: Rhine\nRevision ID: {revid}\n3 matches of \"delta\" ({legend}):\n"
         "0 (Lead) | line 7 | 262 | in a reference\n"
         "  6: }}\n"
         "> 7: …of Europe|publisher=Test Press|year=2001}}</ref> It flows into the North Sea.<ref "
         'name="delta">{{Cite note|title=The delta}}</ref>\n'
         "0 (Lead) | line 7 | 291 | in {{Cite note}} parameter title, in a reference\n"
         "1 (Course) | line 10 | 362 | in a reference\n"
         "  9: == Course ==\n"
         '> 10: The river passes several cities.<ref name="delta" />')]
    assert RHINE.encode()[262:267] == b"delta"  # the offset is get-page's
    assert content_of(call(server, "get-page", title=RIVER_ARTICLE, offset=362).blocks[0]).startswith(
        'delta" />\n\n{| class="wikitable"')
    regex = call(server, "find-in-page", title=RIVER_ARTICLE, find=r"(?i)rhine|\b1230\b", regex=True)
    assert rows_of(regex.blocks[0])[2:] == [
        "0 (Lead) | line 2 | 25 | in {{Infobox river}} parameter name",
        "  1: {{Infobox river", "> 2: | name = Rhine", "  3: | length = {{#invoke:Length|km|1230}}",
        "0 (Lead) | line 3 | 62 | in {{#invoke:Length}} parameter 2, in {{Infobox river}} parameter length",
        "  2: | name = Rhine", "> 3: | length = {{#invoke:Length|km|1230}}", "  4: | source = Lake Toma",
        "0 (Lead) | line 7 | 114",
        "  6: }}", "> 7: The '''Rhine''' is a river of Europe.<ref>{{Cite note|title=Rivers of Europe|publisher=Test…"]
    none = call(server, "find-in-page", title=RIVER_ARTICLE, find="Amazon")
    assert none.blocks == [f"Title: Rhine\nRevision ID: {revid}\nNo match of \"Amazon\"."]


def test_find_in_page_is_capped_finds_in_a_revision_and_refuses_a_bad_pattern(bot_server: Any, wiki: RealWiki) -> None:
    title = "Find in page test"
    first = create(bot_server, title, "\n".join(f"Line {n} holds a needle. <!-- needle in a comment -->"
                                                for n in range(1, 31)))
    result = call(bot_server, "find-in-page", title=title, find="needle")
    assert result.blocks[0].split("\n")[2].startswith('60 matches of "needle"')
    rows = [row for row in rows_of(result.blocks[0]) if row.startswith("0 (Lead) | line ")]
    assert len(rows) == 50 and rows[:2] == ["0 (Lead) | line 1 | 15", "0 (Lead) | line 1 | 28 | in a comment"]
    assert result.blocks[1].startswith("More results available. Returned 50 matches. To fetch the next segment, "
                                       "call find-in-page again with continueFrom=")
    token = next_value(result.blocks[1], "continueFrom")
    rest = call(bot_server, "find-in-page", title=title, find="needle", continueFrom=token)
    assert len(rest.blocks) == 1 and rest.blocks[0].split("\n")[2].startswith('60 matches of "needle", from match 51 (')
    rows = [row for row in rows_of(rest.blocks[0]) if row.startswith("0 (Lead) | line ")]
    assert len(rows) == 10 and rows[0].startswith("0 (Lead) | line 26 | ") and "line 30" in rows[-1]
    narrowed = call(bot_server, "find-in-page", title=title, find="30 holds a needle")
    assert len(narrowed.blocks) == 1 and "\n1 match of " in narrowed.text and "| line 30 |" in narrowed.text
    editor_edit(wiki, title, "Now the page is about hay.")
    assert "No match" in call(bot_server, "find-in-page", title=title, find="needle").text
    old = call(bot_server, "find-in-page", title=title, find="needle", revisionId=first)
    assert f"\nRevision ID: {first}\n60 matches" in old.text
    later = call(bot_server, "find-in-page", title=title, find="needle", continueFrom=token)  # the first one's
    assert f'\nRevision ID: {first}\n60 matches of "needle", from match 51' in later.text and "get-revision" in later.text
    assert call(bot_server, "find-in-page", title=title, find="needle", continueFrom="from=70&revision="
                + str(first)).text.startswith("invalid_input: continueFrom starts at match 71, but there are 60")
    other = call(bot_server, "find-in-page", title=RIVER_ARTICLE, find="x", revisionId=first)
    assert other.is_error and other.blocks[0].startswith(f"not_found: Revision {first} is not a revision of Rhine")
    bad = call(bot_server, "find-in-page", title=title, find="(hay", regex=True)
    assert bad.is_error and bad.blocks[0].startswith(
        "invalid_input: find is not a valid regular expression: missing ), unterminated subpattern")
    create(bot_server, "Find backtracking test", "a" * 40 + "!")
    quick = make_server(wiki.env())
    quick.state.regex_seconds = 1.0  # the child process is stopped: the call answers
    stuck = call(quick, "find-in-page", title="Find backtracking test", find="(a+)+$", regex=True)
    assert stuck.is_error and stuck.blocks[0].startswith(
        "invalid_input: The regular expression ran over 1 s on this page without finishing")
    empty = call(bot_server, "find-in-page", title=title, find="")
    assert empty.is_error and empty.blocks[0].startswith("invalid_input: ")


def test_decomposed_text_finds_what_the_wiki_stores_composed(bot_server: Any) -> None:
    """MediaWiki stores text in NFC, so a find sent decomposed (as some keyboards and models write é)
    finds it, in find-in-page and find-text-origin, as update-page's find does."""
    title = f"Find NFC test {secrets.token_hex(3)}"
    create(bot_server, title, "Un café noir.\nUn thé.")
    decomposed = unicodedata.normalize("NFD", "café noir")
    found = call(bot_server, "find-in-page", title=title, find=decomposed)
    assert not found.is_error and "\n1 match of " in found.text and rows_of(found.blocks[0])[2:] == [
        "0 (Lead) | line 1 | 3", "> 1: Un café noir.", "  2: Un thé."], found.text
    origin = call(bot_server, "find-text-origin", title=title, text=decomposed)
    assert not origin.is_error and field(origin, "User") == "Admin", origin.text


def test_a_match_after_multibyte_text_is_at_its_byte_offset_and_an_old_one_names_get_revision(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Find after Größe test"
    text = "Größe, Fläche und Höhe: 大河.\n== Überblick ==\nDer Strom fließt südwärts. Ziel: needle hier.\n"
    first = create(bot_server, title, text)
    found = call(bot_server, "find-in-page", title=title, find="needle")
    row = rows_of(found.blocks[0])[2]
    offset = text.encode().index(b"needle")
    assert offset != text.index("needle")  # bytes and characters differ before the match
    assert row == f"1 (Überblick) | line 3 | {offset}"
    assert "byte offset, get-page's offset |" in found.text
    assert content_of(call(bot_server, "get-page", title=title, offset=offset).blocks[0]).startswith("needle hier.")
    editor_edit(wiki, title, "Nichts mehr.")
    old = call(bot_server, "find-in-page", title=title, find="needle", revisionId=first)
    assert f"byte offset, get-revision {first}'s offset |" in old.text and "get-page" not in old.text
    assert rows_of(old.blocks[0])[2] == f"1 (Überblick) | line 3 | {offset}"
    assert content_of(call(bot_server, "get-revision", revisionId=first, offset=offset).blocks[0]
                      ).startswith("needle hier.")


def test_a_match_is_placed_in_the_template_call_parameter_reference_or_comment_around_it() -> None:
    text = ("{{Box|a={{Inner|x}}|b}} <ref>{{Cite|title=T}}</ref> <!-- c --> {{{p|d}}} <ref name=n/> "
            "<nowiki>{{Not}}</nowiki>")
    nodes = inner_nodes(text, Syntax(CORE_SYNTAX.tags | {"ref", "references"}))
    places = {word: match_place(text, nodes, text.index(word)) for word in ("Box", "Inner", "x}", "b}", "T}", "c ",
                                                                              "d}", "n/", "Not")}
    assert places == {
        "Box": "in {{Box}}", "Inner": "in {{Inner}}, in {{Box}} parameter a", "x}": "in {{Inner}} parameter 1, in "
        "{{Box}} parameter a", "b}": "in {{Box}} parameter 1", "T}": "in {{Cite}} parameter title, in a reference",
        "c ": "in a comment", "d}": "in {{{p}}}", "n/": "in a reference", "Not": "in <nowiki>"}


# -- plain text ----------------------------------------------------------------------------

RHINE_TEXT = """Rhine
Length | 1230 km (764 mi)
Source | Lake Toma
Type | Main river

The Rhine is a river of Europe.[1] It flows into the North Sea.[2]

== Course == (section 1)
The river passes several cities.[2]

City | Bank | km
Basel | left | 166
Cologne | left | 688
Rotterdam | both | 1000

== Basin == (from River facts)
A river drains its basin into the sea.

== References == (section 2)
[1] Rivers of Europe, Test Press, 2001.
[2] The delta."""


PLAIN_TEXT_PAGE = """{{Infobox river|name=Moselle|length=544 km|type=tributary}}
The '''Moselle''' joins the [[Rhine]] at [[Koblenz|the German Corner]].<ref>{{Cite note|title=Moselle facts|year=1999}}</ref>
<div class="navbox">Navigation: [[Rhine]] · [[Danube]]</div>
<span style="display:none">Hidden maintenance note</span><div class="noprint">A box only for screens</div>

== Towns ==
* Trier
** Old town
* Koblenz
# First
# Second
; Term
: Definition
{| class="wikitable"
|+ Towns by distance
! Town !! km
|-
| Trier || 200<br />(about)
|-
| Koblenz || 544
|}
 preformatted  line
== References ==
<references />"""


def test_plain_text_keeps_what_a_reader_reads_and_nothing_else() -> None:
    page = ('<div class="mw-parser-output"><style>.x{color:red}</style><script>alert(1)</script>'
            '<meta property="mw:PageProp/toc" /><div id="toc" class="toc"><ul><li>1 History</li></ul></div>'
            '<p>Lead &amp; more<sup class="reference"><a href="#cite_note-a-1">[a]</a></sup>.</p>'
            '<div class="mw-heading mw-heading2"><h2 id="History">History</h2><span class="mw-editsection">'
            '<a href="/w/index.php?title=X&amp;action=edit&amp;section=1">edit</a></span></div>'
            '<p>Old<br>times.</p><table class="navbox"><tr><td>Nav</td></tr></table>'
            '<h3><span class="mw-headline" id="Then">Then</span></h3><table><tr><td>a<table><tr><td>b</td></tr>'
            '</table></td><td>c</td></tr></table><pre>  two  spaces\nkept</pre>'
            '<ol class="references"><li id="cite_note-a-1"><span class="mw-cite-backlink">↑</span> '
            '<span class="reference-text">A note.</span></li></ol></div>')
    assert plain_text(page, {"History": ("1", "X"), "Then": ("T-2", "Template:Then")}) == (
        "Lead & more[a].\n\n== History == (section 1)\nOld\ntimes.\n\n=== Then === (from Template:Then)\n"
        "a b | c\n\n  two  spaces\nkept\n\n[a] A note.")


@on_every_version
def test_plain_text_of_a_page_reads_its_infobox_references_tables_and_lists(bot_server: Any) -> None:
    rhine = call(bot_server, "get-page", title=RIVER_ARTICLE, content="text")
    assert not rhine.is_error and content_of(rhine.blocks[0]) == RHINE_TEXT
    create(bot_server, "Plain text test", PLAIN_TEXT_PAGE)
    moselle = call(bot_server, "get-page", title="Plain text test", content="text")
    assert content_of(moselle.blocks[0]) == (
        "Moselle\nLength | 544 km\nType | Tributary\n\nThe Moselle joins the Rhine at the German Corner.[1]\n\n"
        "A box only for screens\n\n== Towns == (section 1)\n* Trier\n** Old town\n* Koblenz\n\n# First\n# Second\n\n; Term\n: Definition\n\n"
        "Towns by distance\nTown | km\nTrier | 200 (about)\nKoblenz | 544\n\npreformatted  line\n\n"
        "== References == (section 2)\n[1] Moselle facts, 1999.")
    course = call(bot_server, "get-page", title=RIVER_ARTICLE, content="text", section=1)  # with its notes
    assert "\nSection: 1\n" in course.text and content_of(course.blocks[0]) == RHINE_TEXT.split("\n\n== References")[
        0][RHINE_TEXT.index("== Course =="):] + "\n\n[2] The delta."
    lead = call(bot_server, "get-page", title=RIVER_ARTICLE, content="text", section="0")
    assert content_of(lead.blocks[0]).endswith("Type | Main river\n\nThe Rhine is a river of Europe.[1] It flows "
                                               "into the North Sea.[2]\n\n[1] Rivers of Europe, Test Press, 2001.\n"
                                               "[2] The delta.")
    pages = call(bot_server, "get-pages", titles=[RIVER_ARTICLE, REPEATED_HEADINGS_PAGE], content="text")
    assert content_of(pages.blocks[0]) == RHINE_TEXT
    assert content_of(pages.blocks[1]).startswith("The Danube flows east.\n\n== History == (section 1)\n")


def test_plain_text_keeps_what_is_left_out_only_in_print(bot_server: Any) -> None:
    create(bot_server, "Plain text print-only test",
           'The river is long.<sup class="noprint Inline-Template">[citation needed]</sup>\n'
           '<div class="noexcerpt">Seen, but not excerpted.</div>\n'
           '{| class="wikitable noprint"\n! Gauge !! Level\n|-\n| Kaub || 2 m\n|}')
    text = content_of(call(bot_server, "get-page", title="Plain text print-only test", content="text").blocks[0])
    assert text == ("The river is long.[citation needed]\n\nSeen, but not excerpted.\n\nGauge | Level\nKaub | 2 m")


def test_plain_text_reads_a_long_page_whole_by_offsets_and_sections(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="20000"))
    first = call(server, "get-page", title=ALMANAC, content="text")
    assert first.blocks[1].startswith("Content truncated at ") and (
        ", 64 (Day 64). To read a specific section, call get-page again with content=\"text\" and section=N. "
        "To read on, call get-page again with content=\"text\" and offset=") in first.blocks[1]
    whole = read_whole(server, title=ALMANAC, content="text")
    assert whole.startswith("The almanac keeps a day of river news in each section. Tributary\n\n"
                            "== Day 1 == (section 1)\nDay 1, reading 00: ")
    assert whole.count(" (section ") == ALMANAC_SECTIONS and whole.endswith("gauge of Kōbe-façade.")
    day = call(server, "get-page", title=ALMANAC, content="text", section="day 61")
    assert content_of(day.blocks[0]).startswith("== Day 61 == (section 61)\nDay 61, reading 00:")


def test_plain_text_of_a_reference_heavy_page_is_under_half_its_wikitext(bot_server: Any, wiki: RealWiki) -> None:
    reference_heavy_page(bot_server)
    source = len(wiki.wikitext(REFERENCE_HEAVY).encode())
    text = content_of(call(bot_server, "get-page", title=REFERENCE_HEAVY, content="text").blocks[0])
    assert "Col de Bussang" in text and "[24] Author3, Anna (3 March 2008). \"River report on Düsseldorf, part 3\"" \
        in text
    assert "The river at Düsseldorf" in text and "A red square" not in text  # a caption, not the image's alt text
    for left_out in ("Rivers of Europe: Rhine", "Authority control", "River in western Europe", "Keep the infobox",
                     "https://", "Category:"):  # boxes, hidden templates, comments, links
        assert left_out not in text, left_out
    html = content_of(call(bot_server, "get-page", title=REFERENCE_HEAVY, content="html").blocks[0])
    print(f"MediaWiki {wiki.version}: wikitext {source} bytes, text {len(text.encode())} bytes "
          f"({len(text.encode()) / source:.0%}), HTML {len(html.encode())} bytes")
    assert len(text.encode()) * 2 <= source


@on_every_version
def test_plain_text_holds_every_line_textextracts_gives(bot_server: Any, wiki: RealWiki) -> None:
    """TextExtracts' plain extract (prose only: it drops tables, boxes and references) against ours."""
    reference_heavy_page(bot_server)
    for title in (RIVER_ARTICLE, REPEATED_HEADINGS_PAGE, "Target page", REFERENCE_HEAVY):
        extract = wiki.raw_get(action="query", prop="extracts", explaintext=1, titles=title)["query"]["pages"][0]
        ours = content_of(call(bot_server, "get-page", title=title, content="text").blocks[0])
        bare = re.sub(r" \((section \d+|from [^)]*)\)$", "", re.sub(r"\[\d+\]", "", ours), flags=re.MULTILINE)
        for line in filter(None, extract["extract"].split("\n")):
            assert line in bare, (title, line)
        print(f"{title}: TextExtracts {len(extract['extract'].encode())} bytes, ours {len(ours.encode())}")


# -- get-template-info -----------------------------------------------------------------------

@on_every_version
def test_template_info_reads_templatedata_or_infers_the_parameters(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    call(server, "get-site-info")  # learns the wiki's extensions, as a first call would
    with counter.counting() as n:
        infobox = call(server, "get-template-info", title="Infobox river")
    assert n[0] == 1 and infobox.blocks == [
        ("Template: Template:Infobox river\nDescription: Facts about a river, in a box.\nFormat: block\n"
         f"Parameters ({TEMPLATE_LEGEND}):\n"
         "name | string | label: Name\nlength | string | label: Length | \"Length with its unit\"\n"
         "source | string | label: Source\ntype | string | label: Type | \"main or tributary\"")]
    with counter.counting() as n:
        cite = call(server, "get-template-info", title="Template:Cite note")
    assert n[0] == 2 and cite.blocks == [
        ("Template: Template:Cite note\nIt has no TemplateData: its parameters are inferred from "
         "{{{name|default}}} in its source (name | default, only when it has one):\n"
         "title\npublisher | default: \"\"\nyear | default: \"\"")]
    assert rows_of(call(server, "get-template-info", title="Infobox row").blocks[0])[1:] == ["1", '2 | default: ""']
    create(server, "Template:Included test", "<noinclude>{{{documented|x}}} Shown on the template page only."
                                             "</noinclude><includeonly>{{{shown|{{{fallback|none}}}}}}</includeonly>")
    assert rows_of(call(server, "get-template-info", title="Included test").blocks[0])[1:] == [
        'shown | default: "{{{fallback|none}}}"', 'fallback | default: "none"']
    missing = call(server, "get-template-info", title="No such template")
    assert missing.is_error and missing.blocks[0].startswith("not_found: Page 'Template:No such template' not found")


def test_template_info_keeps_the_reason_a_parameter_is_deprecated(bot_server: Any) -> None:
    create(bot_server, "Template:Deprecation reason test", "{{{place|}}}<noinclude><templatedata>"
           '{"params": {"place": {"type": "string", "deprecated": "Use location instead."}, '
           '"old": {"deprecated": true}}}</templatedata></noinclude>')
    info = call(bot_server, "get-template-info", title="Deprecation reason test")
    assert rows_of(info.blocks[0])[1:] == ['place | string | deprecated: "Use location instead."', "old | deprecated"]


# -- search-page in content namespaces ----------------------------------------------------------

def test_search_page_searches_every_content_namespace_by_default(recipes_wiki: RealWiki) -> None:
    server = make_server(recipes_wiki.env())
    for title in ("Pancake", "Recipe:Pancake", "Talk:Pancake"):
        create(server, title, f"Quarkbatter for {title}.")
    found = call(server, "search-page", query="Quarkbatter")
    assert sorted(rows_of(found.blocks[0])) == ["Pancake: Quarkbatter for Pancake.",
                                                "Recipe:Pancake: Quarkbatter for Recipe:Pancake."]
    talk = call(server, "search-page", query="Quarkbatter", namespaces=[1])
    assert rows_of(talk.blocks[0]) == ["Talk:Pancake: Quarkbatter for Talk:Pancake."]


# -- get-pages fills its budget --------------------------------------------------------------------

def test_get_pages_fills_its_budget_with_every_page_that_fits(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="2000"))
    result = call(server, "get-pages", titles=["Apple", "Long page", "Banana", "Apple redirect", "Nope Nope", "Cherry"])
    assert result.blocks[0] == "Missing pages: Nope Nope"
    assert [b.split("\n", 1)[0] for b in result.blocks[1:-1]] == [
        "Title: Apple", "Title: Long page", "Title: Banana", "Title: Cherry"]
    assert result.blocks[1].startswith("Title: Apple\nRedirected from: Apple redirect\n")  # one entry for both
    small = sum(len(wiki.wikitext(t).encode()) for t in ("Apple", "Banana", "Cherry"))
    cut = content_of(result.blocks[2]).encode()
    marker = len(result.blocks[-1].encode())  # in the budget
    assert wiki.wikitext("Long page").encode().startswith(cut) and 1990 < small + len(cut) + marker <= 2000
    size = len(wiki.wikitext("Long page").encode())
    assert f"\nTruncated: at {len(cut)} of {size} bytes;" in result.blocks[2].split("\n\n", 1)[0]
    assert result.blocks[-1].startswith(f"Content truncated at {len(cut)} of {size} bytes of Long page. Available "
                                        "sections of Long page: 0 (Lead), 1 (Section 1), ")
    assert result.blocks[-1].endswith(f'To read on, call get-page with title="Long page" and offset={len(cut)}.')
    rest = call(server, "get-page", title="Long page", offset=len(cut))  # the marker's call reads on from the cut
    assert (cut + content_of(rest.blocks[0]).encode()).startswith(wiki.wikitext("Long page").encode()[:2100])
    text = call(server, "get-pages", titles=[ALMANAC, "Apple", RIVER_ARTICLE, "Banana"], content="text")
    assert [b.split("\n", 1)[0] for b in text.blocks[:-1]] == [
        "Title: River almanac", "Title: Apple", "Title: Rhine", "Title: Banana"]
    assert 'call get-page with title="River almanac" and content="text" and offset=' in text.blocks[-1]
    assert "Not included" not in text.blocks[-1]
    crowded = call(server, "get-pages", titles=[ALMANAC, "Long page", "Apple"], content="text")
    assert crowded.blocks[-1].endswith('Not included: Long page. To read them, call get-pages again with '
                                       'titles=["Long page"] and content="text".')


def test_the_budget_holds_the_content_the_marker_and_its_outline(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="2000"))
    title = "Six hundred sections test"
    create(server, title, "Lead.\n" + "".join(f"== Heading {n} ==\nText {n}.\n" for n in range(1, 601)))
    for tool, arguments in (("get-page", {"title": title}), ("get-page", {"title": title, "content": "text"}),
                            ("get-pages", {"titles": [title]})):
        result = call(server, tool, **arguments)
        body, marker = content_of(result.blocks[-2]), result.blocks[-1]
        assert 1900 < len(body.encode()) + len(marker.encode()) <= 2000, (tool, arguments, marker)
        assert re.search(r"Heading 1\), .*, and \d+ more\. To list every section, call get-page-sections "
                         f'with title="{title}"\\.', marker), marker
        assert "To read a specific section, call get-page " in marker and "offset=" in marker
    outline = call(server, "get-page-sections", title=title)
    assert not outline.is_error and "\n600 | == Heading 600 == | " in outline.text
    revision = call(server, "get-revision", revisionId=latest_revid(wiki, title)).blocks
    assert len(content_of(revision[0]).encode()) + len(revision[1].encode()) <= 2000
    assert re.search(r", and \d+ more\. To read a specific section, call get-revision again with section=N\.",
                     revision[1]) and "get-page-sections" not in revision[1]  # it lists the latest revision's


def test_the_budget_is_counted_in_utf8_bytes_with_non_ascii_headings_and_text(wiki: RealWiki) -> None:
    """Cyrillic, Hebrew and emoji take two to four bytes a character: the content, its marker and
    the section list stay within MCP_CONTENT_MAX_BYTES counted in UTF-8 bytes, not characters, and
    the marker's numbers are the bytes sent and the page's bytes, from which offset reads on."""
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="2000"))
    title = f"Многоязычный бюджет {secrets.token_hex(3)}"
    text = "Вступление: שלום 🌍.\n" + "".join(f"== Глава {n} — פרק {n} 🌊 ==\nТекст {n}: שלום עולם 🌍🌊.\n"
                                             for n in range(1, 201))
    create(server, title, text)
    size = len(wiki.wikitext(title).encode())
    for tool, arguments in (("get-page", {"title": title}), ("get-page", {"title": title, "content": "text"}),
                            ("get-pages", {"titles": [title]}),
                            ("get-revision", {"revisionId": latest_revid(wiki, title)})):
        result = call(server, tool, **arguments)
        body, marker = content_of(result.blocks[-2]), result.blocks[-1]
        sent = len(body.encode())
        assert 1900 < sent + len(marker.encode()) <= 2000, (tool, arguments, sent, marker)
        assert "Available sections" in marker and "(Глава 1 — פרק 1 🌊)" in marker, marker
        whole = "" if arguments.get("content") else f"{size} bytes"  # plain text: the rendering's size
        assert marker.startswith(f"Content truncated at {sent} of {whole}"), (tool, marker)
    first = call(server, "get-page", title=title)
    sent = len(content_of(first.blocks[0]).encode())
    rest = call(server, "get-page", title=title, offset=sent)  # the offset the marker names
    assert f"offset={sent}." in first.blocks[-1]
    assert (content_of(first.blocks[0]) + content_of(rest.blocks[0])).encode() == \
        wiki.wikitext(title).encode()[:sent + len(content_of(rest.blocks[0]).encode())]


# -- requests and tools/list ----------------------------------------------------------------------

def test_requests_per_call_of_the_editors_reads(wiki: RealWiki) -> None:
    """Steady state, once site info, extensions and login are cached (the closing notes quote it)."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    call(server, "get-site-info")  # learns the wiki's extensions once
    call(server, "update-page", title="Apple", source="x", dryRun=True)  # and the account's rights
    calls = [
        ("get-page-sections", {"title": RIVER_ARTICLE}, 1),
        ("get-page", {"title": REPEATED_HEADINGS_PAGE, "section": "Geography"}, 1),
        ("get-page", {"title": REPEATED_HEADINGS_PAGE, "section": "Geography", "content": "html"}, 2),  # numbers
        ("get-page", {"title": RIVER_ARTICLE, "content": "text"}, 1),
        ("get-page", {"title": RIVER_ARTICLE, "content": "text", "section": "Course"}, 1),  # from the whole page
        ("get-revision", {"revisionId": latest_revid(wiki, RIVER_ARTICLE), "section": "Course"}, 1),
        ("find-in-page", {"title": RIVER_ARTICLE, "find": "delta"}, 1),
        ("find-in-page", {"title": RIVER_ARTICLE, "find": "del+ta", "regex": True}, 1),
        ("get-template-info", {"title": "Infobox river"}, 1),
        ("get-template-info", {"title": "Cite note"}, 2),  # no TemplateData: then its source
        ("get-pages", {"titles": [RIVER_ARTICLE, "Apple", "Banana"], "content": "text"}, 4),  # a parse a page
        ("search-page", {"query": "river"}, 1),
        ("update-page", {"title": REPEATED_HEADINGS_PAGE, "section": "Geography", "dryRun": True,
                         "source": "== Geography ==\nx\n=== Notes ===\ny"}, 1),
    ]
    assert_requests_per_call(server, counter, calls)


def test_the_editors_tools_stay_small_in_tools_list() -> None:
    """tools/list is paid on every turn: about 800 bytes a new tool (find-in-page's four own parameters
    and the wiki's take 730 before its description)."""
    tools = {t.name: t for t in list_tools(create_server(Config.from_env({})))}
    sizes = {name: len(json.dumps(tools[name].model_dump(mode="json", by_alias=True, exclude_none=True),
                                  separators=(",", ":"), ensure_ascii=False).encode())
             for name in ("get-page-sections", "find-in-page", "get-template-info")}
    print(sizes)
    assert all(size <= 950 for size in sizes.values()) and sum(sizes.values()) <= 3 * 850, sizes
