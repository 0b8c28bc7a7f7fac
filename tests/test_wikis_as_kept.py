"""Tests: Wikis as people keep them: templates, references, Lua, big pages, other languages."""
from __future__ import annotations

import base64
import urllib.parse
from pathlib import Path
from typing import Any

from realwiki import (
    ALMANAC,
    ALMANAC_SECTIONS,
    DANUBE,
    INFOBOX,
    PERSIAN_LINES,
    PERSIAN_TITLE,
    REPEATED_HEADINGS_PAGE,
    RHINE,
    RIVER_ARTICLE,
    RealWiki,
    WikiFarm,
    png_bytes,
)
from tests.support import (
    call,
    content_of,
    create,
    field,
    file_versions,
    make_server,
    on_every_version,
    read_whole,
    sha1,
    shared_bot_server,
    unique_png,
    upload_server,
    uploads_dir,
)

# -- pages like the ones people keep (river_pages) -----------------------------------

@on_every_version
def test_an_article_of_templates_references_a_table_and_lua_renders_whole(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title=RIVER_ARTICLE, content="html")
    assert not result.is_error and len(result.blocks) == 1
    html = content_of(result.blocks[0])
    assert 'class="infobox"' in html and "Lake Toma" in html
    assert "1230 km (764 mi)" in html  # Lua, through #invoke in an infobox argument
    assert "Main river" in html  # #switch, in a template inside a template
    assert 'class="wikitable"' in html and "Rotterdam" in html
    assert "A river drains its basin into the sea." in html and "Not transcluded." not in html
    assert '<ol class="references">' in html and "<i>Rivers of Europe</i>, Test Press, 2001." in html
    assert "Script error" not in html and "scribunto-error" not in html


@on_every_version
def test_sections_are_numbered_by_the_page_itself_not_by_what_it_transcludes(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    html = call(server, "get-page", title=RIVER_ARTICLE, content="html")
    assert "A river drains its basin" in read_whole(server, title=RIVER_ARTICLE, content="html")
    # the transcluded Basin heading is River facts' section, not one of this page
    assert "Available sections: 0 (Lead), 1 (Course), 2 (References). " in html.blocks[-1]
    course = call(server, "get-page", title=RIVER_ARTICLE, content="html", section=1)
    assert "\nSection: 1\n" in course.text and 'class="wikitable"' in course.text
    assert "Lake Toma" not in course.text


@on_every_version
def test_parse_wikitext_renders_nested_templates_parser_functions_refs_and_lua(bot_server: Any) -> None:
    result = call(bot_server, "parse-wikitext", title="Elbe", wikitext=(
        "{{Infobox river|length={{#invoke:Length|km|1094}}|type=tributary}}\n"
        "The Elbe.<ref>{{Cite note|title=Elbe facts|year=1999}}</ref> "
        "{{#if:{{{unset|}}}|set|unset}} {{#switch:b|a=first|b=second}}\n<references />"))
    assert not result.is_error and len(result.blocks) == 1
    header, html = result.blocks[0].split("\n\n", 1)
    assert "\nTemplates: Template:Infobox river, Template:Infobox row, Template:River type, " \
           "Template:Cite note, Module:Length" in header
    assert "<th colspan=\"2\">Elbe\n</th>" in html  # {{PAGENAME}}, the default of a template argument
    assert "1094 km (680 mi)" in html and "Tributary" in html and "unset second" in html
    assert "<i>Elbe facts</i>, 1999." in html


def test_get_pages_gives_templates_modules_and_articles_as_written(bot_server: Any, wiki: RealWiki) -> None:
    titles = [RIVER_ARTICLE, INFOBOX, "Module:Length", REPEATED_HEADINGS_PAGE]
    result = call(bot_server, "get-pages", titles=titles, metadata=True)
    assert not result.is_error and len(result.blocks) == 4
    for title, block in zip(titles, result.blocks):
        header, body = block.split("\n\n", 1)
        assert header.startswith(f"Title: {title}\n") and body == wiki.wikitext(title)
    assert "<templatedata>" in result.blocks[1] and "Content model: wikitext" in result.blocks[1]
    assert "Content model: Scribunto" in result.blocks[2]


def test_find_replace_inside_a_template_argument(bot_server: Any, wiki: RealWiki) -> None:
    title = "Rhine find replace test"
    create(bot_server, title, RHINE)
    twice = call(bot_server, "update-page", title=title, find="{{Cite note|title=", replace="{{Cite note|title=A ")
    assert twice.is_error and twice.blocks[0].startswith("invalid_input: The text to find occurs 2 times")
    for find, replace in (("| source = Lake Toma", "| source = Lake Toma, in the Alps"),
                          ("{{#invoke:Length|km|1230}}", "{{#invoke:Length|km|1233}}"),
                          ("|year=2001}}", "|year=2002}}")):
        result = call(bot_server, "update-page", title=title, find=find, replace=replace)
        assert not result.is_error, result.text
    assert wiki.wikitext(title) == RHINE.replace("Lake Toma", "Lake Toma, in the Alps").replace(
        "km|1230", "km|1233").replace("year=2001", "year=2002")
    html = call(bot_server, "get-page", title=title, content="html").text
    assert "Lake Toma, in the Alps" in html and "1233 km (766 mi)" in html and "Test Press, 2002." in html


def test_a_300_kb_page_reads_whole_by_offsets_and_by_sections(bot_server: Any, wiki: RealWiki) -> None:
    expected = wiki.wikitext(ALMANAC)
    assert 290_000 < len(expected.encode()) < 320_000
    first = call(bot_server, "get-page", title=ALMANAC)
    assert first.blocks[1].startswith(f"Content truncated at {len(content_of(first.blocks[0]).encode())} of "
                                      f"{len(expected.encode())} bytes. Available sections: 0 (Lead), 1 (Day 1), ")
    assert ", 63 (Day 63), 64 (Day 64). To read a specific section," in first.blocks[1]
    assert read_whole(bot_server, title=ALMANAC) == expected
    for number in (0, 1, 61, ALMANAC_SECTIONS):  # a section fits: read whole, no marker
        result = call(bot_server, "get-page", title=ALMANAC, section=number)
        assert len(result.blocks) == 1 and content_of(result.blocks[0]) == wiki.raw_get(
            action="query", prop="revisions", titles=ALMANAC, rvprop="content", rvslots="main",
            rvsection=number)["query"]["pages"][0]["revisions"][0]["slots"]["main"]["content"]
    assert content_of(result.blocks[0]).startswith(f"== Day {ALMANAC_SECTIONS} ==\n")
    batch = call(bot_server, "get-pages", titles=[ALMANAC, RIVER_ARTICLE])
    assert "Available sections of River almanac: 0 (Lead), 1 (Day 1), " in batch.blocks[-1]
    assert content_of(batch.blocks[1]) == wiki.wikitext(RIVER_ARTICLE)  # it fits beside the cut almanac
    assert "Not included" not in batch.blocks[-1]


@on_every_version
def test_sections_that_repeat_a_heading_are_told_apart_by_number(bot_server: Any, wiki: RealWiki) -> None:
    assert content_of(call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, section=4).blocks[0]) == (
        "=== Notes ===\nGeography notes.")
    html = call(bot_server, "get-page", title=REPEATED_HEADINGS_PAGE, content="html", section=4).text
    assert "Geography notes." in html and "History notes." not in html
    title, text = "Danube section test", "A long lead. " * 100 + DANUBE
    create(bot_server, title, text)
    small = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    marker = call(small, "get-page", title=title).blocks[-1]
    assert "Available sections: 0 (Lead), 1 (History), 2 (Notes), 3 (Geography), 4 (Notes), 5 (Notes)." in marker
    assert read_whole(small, title=title, section=4) == "=== Notes ===\nGeography notes."
    saved = call(small, "update-page", title=title, section=4, source="=== Notes ===\nRevised geography notes.")
    assert not saved.is_error, saved.text
    assert wiki.wikitext(title) == text.replace("Geography notes.", "Revised geography notes.")


# -- a wiki in German --------------------------------------------------------------

def test_german_categories_by_their_local_and_english_names(farm: WikiFarm, german_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, german_wiki)
    for name in ("Obst", "Kategorie:Obst", "Category:Obst", "kategorie:Obst"):
        result = call(server, "get-category-members", category=name)
        assert not result.is_error and result.blocks[0].split("\n") == [
            "Kategorie:Obst (pages: 2, subcategories: 0, files: 1):", "Apfel", "Birne",
            "Datei:Rotes Quadrat.png | file"], name
    for prefix in ("Kategorie:Ob", "Category:Ob"):
        assert call(server, "search-page-by-prefix", prefix=prefix).blocks == ["Kategorie:Obst"]


def test_german_files_by_their_local_and_english_names(farm: WikiFarm, german_wiki: RealWiki,
                                                       tmp_path: Path) -> None:
    server = shared_bot_server(farm, german_wiki)
    png = png_bytes(40, 30)
    for name in ("Rotes Quadrat.png", "Datei:Rotes Quadrat.png", "File:Rotes Quadrat.png", "Bild:Rotes Quadrat.png"):
        result = call(server, "get-file", title=name)
        assert not result.is_error and result.text.startswith("Title: Datei:Rotes Quadrat.png\n"), name
        image = call(server, "get-file-data", title=name).images
        assert base64.b64decode(image[0].data) == png, name
    for name in ("Datei:Rotes Quadrat.png", "File:Rotes Quadrat.png"):
        links = call(server, "get-links-here", title=name)  # file links: a File page, by either name
        assert links.blocks == ["Pages that link to Datei:Rotes Quadrat.png:\nObstschale | file link"]
    directory = uploads_dir(tmp_path)
    (directory / "blau.png").write_bytes(unique_png("German upload"))
    (directory / "blau2.png").write_bytes(unique_png("German upload, second version"))
    uploads = upload_server(german_wiki, directory)
    new = call(uploads, "upload-file", filepath=str(directory / "blau.png"), title="File:Blaues Quadrat.png")
    assert not new.is_error and new.blocks[0].startswith("Uploaded.\nTitle: Datei:Blaues Quadrat.png\n")
    again = call(uploads, "upload-file", filepath=str(directory / "blau.png"), title="Datei:Blaues Quadrat.png")
    assert again.is_error and again.blocks[0].startswith("conflict: ") and "Datei:Blaues Quadrat.png" in again.text
    newer = call(uploads, "update-file", filepath=str(directory / "blau2.png"), title="Datei:Blaues Quadrat.png")
    assert not newer.is_error, newer.text
    assert [v["sha1"] for v in file_versions(german_wiki, "File:Blaues Quadrat.png")] == [
        sha1(unique_png("German upload, second version")), sha1(unique_png("German upload"))]


def test_german_templates_by_their_local_and_english_names(farm: WikiFarm, german_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, german_wiki)
    for name in ("Vorlage:Obstkasten", "Template:Obstkasten"):
        links = call(server, "get-links-here", title=name)
        assert links.blocks == ["Pages that link to Vorlage:Obstkasten:\nObstschale | transclusion"], name
        page = call(server, "get-page", title=name)
        assert page.blocks[0].startswith("Title: Vorlage:Obstkasten\n") and "obstkasten" in page.text
    parsed = call(server, "parse-wikitext", wikitext="{{Template:Obstkasten|Birne}} {{Vorlage:Obstkasten|Kiwi}}")
    assert "\nTemplates: Vorlage:Obstkasten\n" in parsed.blocks[0]
    assert "Obst: Birne" in parsed.text and "Obst: Kiwi" in parsed.text


def test_german_talk_pages_by_their_local_and_english_names(farm: WikiFarm, german_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, german_wiki)
    for name in ("Diskussion:Apfel", "Talk:Apfel"):
        page = call(server, "get-page", title=name)
        assert page.blocks[0].startswith("Title: Diskussion:Apfel\n") and "Ist der Apfel rot?" in page.text
    create(server, "Pflaume", "Eine Pflaume ist Obst.")
    create(server, "Talk:Pflaume", "Blau oder gelb?")
    assert german_wiki.wikitext("Diskussion:Pflaume") == "Blau oder gelb?"
    edited = call(server, "update-page", title="Diskussion:Pflaume", mode="append", source="\nBlau.")
    assert not edited.is_error and german_wiki.wikitext("Talk:Pflaume") == "Blau oder gelb?\nBlau."
    moved = call(server, "move-page", fromTitle="Pflaume", toTitle="Zwetschge")
    assert not moved.is_error, moved.text
    assert "\nTalk page moved: Diskussion:Pflaume -> Diskussion:Zwetschge\n" in moved.blocks[0]
    assert german_wiki.wikitext("Diskussion:Zwetschge") == "Blau oder gelb?\nBlau."


# -- a wiki written right to left -------------------------------------------------------

def test_a_right_to_left_wiki_reads_its_pages(farm: WikiFarm, persian_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, persian_wiki)
    text = persian_wiki.wikitext(PERSIAN_TITLE)
    page = call(server, "get-page", title=PERSIAN_TITLE, metadata=True)
    assert not page.is_error and content_of(page.blocks[0]) == text
    url = persian_wiki.url + "/wiki/" + urllib.parse.quote(PERSIAN_TITLE.replace(" ", "_"))
    assert page.blocks[0].startswith(f"Title: {PERSIAN_TITLE}\n") and f"\nURL: {url}\n" in page.text + "\n"
    html = call(server, "get-page", title=PERSIAN_TITLE, content="html").text
    assert 'dir="rtl"' in html and "پرآب‌ترین" in html  # the zero-width non-joiner kept
    section = call(server, "get-page", title=PERSIAN_TITLE, section=1)
    assert content_of(section.blocks[0]).startswith("== مسیر ==\n" + PERSIAN_LINES[0])
    small = make_server(persian_wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    assert "Available sections: 0 (Lead), 1 (مسیر). " in call(small, "get-page", title=PERSIAN_TITLE).blocks[-1]
    pages = call(server, "get-pages", titles=[PERSIAN_TITLE, "Talk:" + PERSIAN_TITLE])
    assert [b.split("\n", 1)[0] for b in pages.blocks] == [f"Title: {PERSIAN_TITLE}", f"Title: بحث:{PERSIAN_TITLE}"]


def test_a_right_to_left_wiki_diffs_by_line_numbers_in_its_own_digits(farm: WikiFarm,
                                                                      persian_wiki: RealWiki) -> None:
    server = shared_bot_server(farm, persian_wiki)
    title = "آزمون تفاوت"
    lines = PERSIAN_LINES + [f"سطر افزوده {n}" for n in range(1, 9)]
    before = create(server, title, "\n".join(lines))
    new = "\n".join([lines[0], "سطر تازه", *lines[1:14], lines[14] + " (ویرایش)", *lines[15:]])
    expected = f"@@ -1,0 +2 @@\n+سطر تازه\n@@ -15 +16 @@\n~{lines[14]}{{+ (ویرایش)+}}"
    dry = call(server, "update-page", title=title, source=new, dryRun=True)
    assert content_of(dry.blocks[0]) == expected
    after = int(field(call(server, "update-page", title=title, source=new), "Revision ID"))
    table = persian_wiki.raw_get(action="compare", fromrev=before, torev=after)["compare"]["body"]
    assert "خط ۱۴:" in table  # the wiki numbers lines in Persian digits
    diff = call(server, "compare-pages", fromRevision=before, toRevision=after)
    assert content_of(diff.blocks[0]) == expected
