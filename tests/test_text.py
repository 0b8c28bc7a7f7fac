"""Tests: Text helpers."""
from __future__ import annotations

import re

import pytest

from mediawiki_mcp.errors import WikiError, error_from_api
from mediawiki_mcp.pages import truncated_marker
from mediawiki_mcp.render import Slice, decode_continuation, encode_continuation, fitted, labelled, slice_content
from mediawiki_mcp.sections import wikitext_sections
from mediawiki_mcp.siteinfo import CORE_SYNTAX, SiteInfo, Syntax
from realwiki import (
    long_page_text,
)


def test_slice_cuts_on_character_boundaries() -> None:
    text = "aé日本" * 10  # 1 + 2 + 3 + 3 bytes per repeat
    for budget in range(1, 30):
        piece = slice_content(text, 0, budget)
        assert piece.text.encode() == text.encode()[:piece.end]
        assert piece.end <= budget or piece.end <= 3  # only a lone character may exceed a tiny budget
    inside = slice_content(text, 2, 100)  # byte 2 is inside "é": start at the character
    assert inside.start == 1 and inside.text.startswith("é")


def test_slices_joined_give_back_every_byte() -> None:
    text = long_page_text()
    offset, parts = 0, []
    while True:
        piece = slice_content(text, offset, 7_777)
        parts.append(piece.text)
        if not piece.truncated:
            break
        offset = piece.end
    assert "".join(parts) == text


def test_offset_past_the_end_is_invalid_input() -> None:
    with pytest.raises(WikiError, match="^invalid_input: offset 10 is past the end"):
        slice_content("short", 10, 100)


def test_sections_are_numbered_as_mediawiki_does() -> None:
    text = ("lead\n== A ==\n<!-- == not a heading == -->\n=== A.1 ===\n<nowiki>\n== no ==\n</nowiki>\n"
            "== B ==  \n<pre>\n== no ==\n</pre>\n==C==\n")
    assert [(s.number, s.level, s.heading) for s in wikitext_sections(text)] == [
        (1, 2, "A"), (2, 3, "A.1"), (3, 2, "B"), (4, 2, "C")]


def test_sections_follow_the_wikis_tags_and_skip_numbers_as_it_does() -> None:
    text = ("lead\n<ref>\n== In a reference ==\n</ref>\n== A ==\n<syntaxhighlight>\n== Code ==\n"
            "</syntaxhighlight>\n{{T|\n== In a template call ==\n}}\n== B ==\n<includeonly>\n== X ==\n"
            "</includeonly>\n<noinclude>\n=C=\n</noinclude>\n== D == <!-- note -->\n")
    cite = Syntax(CORE_SYNTAX.tags | {"ref", "references"})
    assert [(s.number, s.level, s.heading) for s in wikitext_sections(text, cite)] == [
        (1, 2, "A"), (2, 2, "Code"), (4, 2, "B"), (5, 1, "C"), (6, 2, "D")]
    assert [s.heading for s in wikitext_sections(text)][:2] == ["In a reference", "A"]  # no Cite
    site = SiteInfo.from_api({"general": {"langconversion": False},
                                "extensiontags": ["<pre>", "<nowiki>", "<ref>"]}, "https://w.example/api.php")
    assert site.syntax == Syntax(frozenset({"pre", "nowiki", "ref"}), lang_conversion=False)


def test_truncation_marker_names_sections_and_both_remedies() -> None:
    piece = Slice("x", 0, 50_000, 70_000)
    marker = truncated_marker(piece, "get-page", sections=[(1, "History"), (2, "Geography")])
    assert marker == ("Content truncated at 50000 of 70000 bytes. Available sections: 0 (Lead), "
                      "1 (History), 2 (Geography). To read a specific section, call get-page again "
                      "with section=N. To read on, call get-page again with offset=50000.")
    single = truncated_marker(piece, "get-page", again={"section": 2})
    assert "section=N" not in single and single.endswith("call get-page again with section=2 and offset=50000.")


def test_the_content_and_its_marker_fit_the_budget_and_a_tiny_budget_still_reads_on() -> None:
    text = "Lead.\n" + "".join(f"== Heading {n} ==\nText.\n" for n in range(1, 301))
    sections = [(s.number, s.heading) for s in wikitext_sections(text)]
    piece, marker = fitted(text, 0, 1000, lambda cut: truncated_marker(cut, "get-page", sections=sections,
                                                                           room=250, outline="get-page-sections"))
    assert marker and 990 < len(piece.text.encode()) + len(marker.encode()) <= 1000
    assert re.search(r", and \d+ more\. To list every section, call get-page-sections\.", marker), marker
    piece, marker = fitted("日本語" * 100, 0, 50, lambda cut: truncated_marker(cut, "get-page"))
    assert piece.text == "日" and marker == "Content truncated at 3 of 900 bytes. To read on, call get-page again with offset=3."


@pytest.mark.parametrize("code, category", [
    ("missingtitle", "not_found"), ("nosuchrevid", "not_found"), ("protectedpage", "permission_denied"),
    ("badtags", "permission_denied"), ("editconflict", "conflict"), ("articleexists", "conflict"),
    ("assertuserfailed", "authentication"), ("ratelimited", "rate_limited"),
    ("abusefilter-disallowed", "permission_denied"), ("readonly", "upstream_failure"),
])
def test_mediawiki_error_codes_map_to_categories(code: str, category: str) -> None:
    error = error_from_api(code, "MediaWiki's own words.", "wiki.example.org")
    assert error.category == category
    assert str(error).startswith(f"{category}: ") and "MediaWiki's own words." in str(error)


def test_unknown_mediawiki_error_keeps_code_and_text() -> None:
    error = error_from_api("weird-new-code", "Something odd happened.")
    assert str(error).startswith("upstream_failure: MediaWiki error weird-new-code")
    assert "Something odd happened." in str(error)


def test_continuation_tokens_only_carry_continuation_fields() -> None:
    token = encode_continuation({"sroffset": 10, "continue": "-||"})
    assert decode_continuation(token, ("sroffset",)) == {"sroffset": "10", "continue": "-||"}
    with pytest.raises(WikiError, match="^invalid_input: continueFrom"):
        decode_continuation("sroffset=10&action=delete", ("sroffset",))
    with pytest.raises(WikiError, match="^invalid_input"):
        decode_continuation("garbage", ("sroffset",))


def test_labelled_lines_leave_out_default_values() -> None:
    assert labelled(("Title", "A"), ("Redirected from", None), ("Minor", False), ("Tags", [])) == "Title: A"
    assert labelled(("Section", 0), ("Size", "")) == "Section: 0"  # 0 is a value: the lead
