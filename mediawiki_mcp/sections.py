"""Sections as MediaWiki counts them, from wikitext alone: the preprocessor's headings, the outline
(wikitext_sections, outline_of), a heading as it reads and as a lookup compares it (heading_plain,
heading_key), spans (section_span, section_text, replace_section), a section followed across edits
(followed_section), the no-loss checks of a section's text (lost_subsections, lost_headings,
repeated_sections, shrunk_to_section), and text as the wiki receives and saves it. What needs the
wiki (a heading looked up with the page's rendered outline) is in pages."""
from __future__ import annotations

import collections
import dataclasses
import functools
import html
import itertools
import re
import typing
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .render import utf8_len
from .siteinfo import CORE_SYNTAX, Syntax

#: Brackets the preprocessor pairs, as Preprocessor::$rules: closing text, and the element
#: each count makes (None: plain text, so headings inside still count).
BRACKETS: dict[str, tuple[str, dict[int, str | None]]] = {
    "{": ("}", {2: "template", 3: "tplarg"}), "[": ("]", {2: None}), "-{": ("}-", {2: None})}


@dataclasses.dataclass(frozen=True)
class Section:
    number: int
    level: int
    heading: str
    start: int = 0  # byte offset of the heading line in the text


class HeadingNode(typing.NamedTuple):
    """A heading as the preprocessor finds it, in characters: the section number it takes, its
    level, and where its line starts and its closing equals signs end."""
    number: int
    level: int
    start: int
    end: int


@dataclasses.dataclass(slots=True)
class _Part:
    """One part of an open bracket (its text up to a pipe): where it starts, the headings found
    in it, and the comment bookkeeping Preprocessor_Hash keeps for heading ends."""
    start: int
    headings: list[HeadingNode] = dataclasses.field(default_factory=list)
    eqpos: bool = False
    comment_end: int = -1
    visual_end: int = -1


class _Piece:
    __slots__ = ("close", "count", "open", "parts", "prefix", "start")

    def __init__(self, open_: str, close: str, count: int, start: int = 0, prefix: str = "") -> None:
        self.open, self.close, self.count, self.start, self.prefix = open_, close, count, start, prefix
        self.parts = [_Part(start + count)]

    def flags(self) -> tuple[bool, bool, bool]:
        """(find pipes, find equals, in a heading), as PPDStackElement::getFlags."""
        pipe = self.open not in ("\n", "[")
        return pipe, pipe and len(self.parts) > 1 and not self.parts[-1].eqpos, self.open == "\n"

    def broken(self) -> list[HeadingNode]:
        return [h for part in self.parts for h in part.headings]


@functools.lru_cache(maxsize=32)
def _element_pattern(tags: frozenset[str]) -> re.Pattern[str]:
    names = sorted(tags | {"includeonly", "noinclude", "/noinclude", "onlyinclude", "/onlyinclude"})
    return re.compile("(" + "|".join(re.escape(n) for n in names) + r")(?:[ \t\n\x0b\x0c\r]|/>|>)|(!--)",
                      re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _closing_tag(name: str) -> re.Pattern[str]:
    return re.compile("</" + re.escape(name) + "[ \t\n\x0b\x0c\r]*>", re.IGNORECASE)


@functools.lru_cache(maxsize=128)
def _next_mark(closing: str, pipe: bool, equals: bool, heading: bool, lang_conversion: bool) -> re.Pattern[str]:
    """Where the preprocessor stops next: a bracket, a tag, the closing text of the innermost
    bracket, pipes or equals signs where they count, and a line break where it can end a
    heading or start one. A '-' matters only in -{."""
    chars = "[{<" + closing.replace("-", "").replace("\n", "") + ("|" if pipe else "") + ("=" if equals else "")
    return re.compile("[" + re.escape(chars) + "]|\n" + ("" if heading else "(?==)")
                      + (r"|-(?=\{)" if "-" in closing or lang_conversion else ""))


#: A link or template call with no markup inside: it holds no heading, so it is skipped whole.
PLAIN_BRACKETS = re.compile(r"\[\[[^\[\]{}<\n]*\]\]|\{\{[^\[\]{}<\n]*\}\}")


def _span(text: str, chars: str, start: int, limit: int | None = None) -> int:
    """PHP's strspn: how many of ``chars`` run from ``start``."""
    end = len(text) if limit is None else min(len(text), start + limit)
    i = start
    while i < end and text[i] in chars:
        i += 1
    return i - start


def _span_back(text: str, chars: str, end: int) -> int:
    """How many of ``chars`` run backwards from just before ``end``."""
    i = end
    while i > 0 and text[i - 1] in chars:
        i -= 1
    return end - i


@dataclasses.dataclass(frozen=True)
class Node:
    """A stretch of wikitext the preprocessor makes a node of, in characters: a template call or
    parser function ('template'), a parameter ('tplarg'), a tag ('tag', such as <ref>) or a
    comment; ``parts``: for a template or parameter, its parts' (start, end), the name first."""
    kind: str
    start: int
    end: int
    name: str = ""
    parts: tuple[tuple[int, int], ...] = ()


def preprocess(text: str, syntax: Syntax = CORE_SYNTAX, inclusion: bool = False,  # noqa: C901
               ) -> tuple[list[HeadingNode], list[Node]]:
    """The headings and the other nodes (Node) of wikitext, as MediaWiki's preprocessor
    (Preprocessor_Hash, a port of buildDomTreeArrayFromText) finds them; ``inclusion``: as a page
    transcluding it reads it (<noinclude> parts left out, <includeonly> parts in), where no heading
    makes a section. The headings come in text order, those that make sections: comments,
    <includeonly> and the wiki's tags hide a heading; so does a template call around it, yet that
    heading still takes a number, which is why section numbers can skip one."""
    ignored = ("includeonly", "/includeonly") if inclusion else ("noinclude", "/noinclude")
    element_pattern = _element_pattern(syntax.tags | ({"/includeonly"} if inclusion else set()))
    nodes: list[Node] = []
    root: list[HeadingNode] = []
    stack: list[_Piece] = []
    index, i, length = 1, 0, len(text)
    no_more_gt, no_closing = False, set()
    fake_line_start = True

    def headings() -> list[HeadingNode]:  # where a heading closed now belongs
        return stack[-1].parts[-1].headings if stack else root

    while True:
        find_pipe, find_equals, in_heading = stack[-1].flags() if stack else (False, False, False)
        if fake_line_start:
            found, char = "line-start", ""
        else:
            closing = stack[-1].close if stack else ""
            match = _next_mark(closing, find_pipe, find_equals, in_heading, syntax.lang_conversion).search(text, i)
            i = match.start() if match else length
            if i >= length:
                if closing != "\n":
                    break
                found, char = "line-end", ""
            else:
                char, two = text[i], text[i:i + 2]
                opening = two if two in BRACKETS else char
                if char in "|=<":
                    found = {"|": "pipe", "=": "equals", "<": "angle"}[char]
                elif char == "\n":
                    found = "line-end" if in_heading else "line-start"
                elif closing in (two, char):
                    found, char = "close", closing
                elif opening in BRACKETS:
                    found, char = "open", opening
                else:  # a '-' or '}' that opens or closes nothing
                    i += 1
                    continue
        if found == "angle":
            element = element_pattern.match(text, i + 1)
            if not element:
                i += 1
                continue
            if element.group(2):  # a comment, to -->; whole-line comments vanish with their line
                end = text.find("-->", i + 4)
                if end < 0:
                    i = length
                    continue
                ws_start = i - _span_back(text, " \t", i)
                ws_end = end + 2 + _span(text, " \t", end + 3)
                while text.startswith("<!--", ws_end + 1) and (more := text.find("-->", ws_end + 4)) >= 0:
                    ws_end = more + 2 + _span(text, " \t", more + 3)
                fake_line_start = (ws_start > 0 and text[ws_start - 1] == "\n"
                                   and text[ws_end + 1:ws_end + 2] == "\n")
                end = ws_end + 1 if fake_line_start else end + 2
                if stack:
                    part = stack[-1].parts[-1]
                    if part.comment_end != ws_start - 1:
                        part.visual_end = ws_start
                    part.comment_end = end
                nodes.append(Node("comment", i, end + 1))
                i = end + 1
                continue
            name = element.group(1)
            lower = name.lower()
            tag_end = -1 if no_more_gt else text.find(">", i + len(name) + 1)
            if tag_end < 0:
                no_more_gt = True
                i += 1
                continue
            if lower in ignored or lower in ("onlyinclude", "/onlyinclude"):
                i = tag_end + 1
                continue
            if text[tag_end - 1] == "/":
                end = tag_end + 1
            elif name not in no_closing and (closed := _closing_tag(name).search(text, tag_end + 1)):
                end = closed.end()
            elif name in ("includeonly", "noinclude", "onlyinclude"):
                end = length
            else:  # no closing tag: the opening tag is plain text
                no_closing.add(name)
                i = tag_end + 1
                continue
            nodes.append(Node("tag", i, end, lower))
            i = end
            continue
        if found == "line-start":
            if fake_line_start:
                fake_line_start = False
            else:
                i += 1
            count = _span(text, "=", i, 6)
            if count > 0 and not (count == 1 and find_equals):
                stack.append(_Piece("\n", "\n", count, start=i))
                i += count
        elif found == "line-end":
            piece = stack.pop()
            part = piece.parts[-1]
            search_start = i - _span_back(text, " \t", i)
            if part.comment_end >= 0 and search_start - 1 == part.comment_end:
                search_start = part.visual_end - _span_back(text, " \t", part.visual_end)
            equals = _span_back(text, "=", search_start)
            if search_start - equals == piece.start:  # a line of equals signs only
                level = min(6, (equals - 1) // 2) if equals >= 3 else 0
            else:
                level = min(equals, piece.count)
            if level:
                headings().append(HeadingNode(index, level, piece.start, search_start))
                index += 1
            else:
                headings().extend(piece.broken())
        elif found == "open":
            plain = PLAIN_BRACKETS.match(text, i)
            if plain:
                if char == "{":
                    pipes = [k for k in range(i + 2, plain.end() - 2) if text[k] == "|"]
                    parts = tuple(zip([i + 2] + [k + 1 for k in pipes], [*pipes, plain.end() - 2]))
                    nodes.append(Node("template", i, plain.end(), text[slice(*parts[0])].strip(), parts))
                i = plain.end()
                continue
            count = _span(text, char[-1], i + 1) + 1 if len(char) > 1 else _span(text, char, i)
            prefix = ""
            if char == "-{" and count > 2:  # "-{{": the braces win
                prefix, char, count, i = "-", "{", count - 1, i + 1
            close, names = BRACKETS[char]
            if count >= min(names):
                stack.append(_Piece(char, close, count, start=i, prefix=prefix))
            i += count
        elif found == "close":
            piece = stack[-1]
            count = len(char) if len(char) > 1 else _span(text, char, i, piece.count)
            names = BRACKETS[piece.open][1]
            matching = max((n for n in names if n <= count), default=0)
            if not matching:
                i += count
                continue
            kept = piece.broken() if names[matching] is None else []  # a template hides its headings
            if names[matching]:
                bounds = [part.start for part in piece.parts] + [i + 1]
                parts = tuple((a, b - 1) for a, b in itertools.pairwise(bounds))
                nodes.append(Node(str(names[matching]), piece.start + piece.count - matching, i + matching,
                                  text[parts[0][0]:parts[0][1]].strip(), parts))
            i += matching
            stack.pop()
            if matching < piece.count:
                piece.count -= matching
                piece.parts = [_Part(piece.start + piece.count)]
                if piece.count == 1 and piece.open == "{" and piece.prefix == "-":
                    piece.prefix, piece.open, piece.count, piece.close = "", "-{", 2, "}-"
                if piece.count >= min(BRACKETS[piece.open][1]):
                    stack.append(piece)
            headings().extend(kept)
        elif found == "pipe":
            stack[-1].parts.append(_Part(i + 1))
            i += 1
        elif found == "equals":
            stack[-1].parts[-1].eqpos = True
            i += 1
    for piece in stack:  # unclosed brackets are plain text, and headings in them count
        root.extend(piece.broken())
    return sorted(root, key=lambda h: h.start), nodes


def wikitext_sections(text: str, syntax: Syntax = CORE_SYNTAX) -> list[Section]:
    """The sections of wikitext as MediaWiki numbers them for section=N editing (preprocess)."""
    found: list[Section] = []
    position = offset = 0
    for number, level, start, end in preprocess(text, syntax)[0]:
        offset += utf8_len(text[position:start])
        position = start
        heading = re.sub(r"<!--.*?(?:-->|$)", "", text[start + level:end - level], flags=re.DOTALL)
        found.append(Section(number, level, " ".join(heading.split()), offset))
    return found


def section_heading(text: str, number: int | None, syntax: Syntax) -> str | None:
    """The heading of section ``number`` of wikitext ``text``, as it reads (heading_plain)."""
    found = (heading_plain(s.heading) for s in wikitext_sections(text, syntax) if s.number == number)
    return next(found, None)


def numbered_headings(sections: Iterable[Section | tuple[int, str]]) -> list[tuple[int, str]]:
    """Sections as (number, heading) rows, each heading as the outline names it (heading_plain)."""
    return [(s.number, heading_plain(s.heading)) if isinstance(s, Section) else s for s in sections]


class Heading(typing.NamedTuple):
    """A section as a heading names it; ``source``: the page a template brings it from, which
    gives it no ``number`` here."""
    number: int | None
    level: int
    text: str  # as it reads
    source: str = ""


def outline_of(parsed: Mapping[str, Any]) -> list[Heading]:
    return [Heading(int(s["index"]) if str(s.get("index", "")).isdigit() else None, int(s.get("level") or 2),
                    heading_plain(s.get("line", "")), "" if str(s.get("index", "")).isdigit()
                    else str(s.get("fromtitle") or "").replace("_", " ")) for s in parsed.get("sections") or []]


def html_sections(parsed: dict[str, Any]) -> list[tuple[int, str]]:
    """The numbered sections of an action=parse result, as truncation markers list them."""
    return [(number, heading) for number, _, heading, _ in outline_of(parsed) if number is not None]


def source_headings(text: str, syntax: Syntax) -> list[Heading]:
    """The numbered headings of wikitext as written (templates, tags and all) and as they read
    without markup: the names a section may be asked for besides the rendered one."""
    sections = wikitext_sections(text, syntax)
    return ([Heading(s.number, s.level, s.heading) for s in sections]
            + [Heading(s.number, s.level, heading_plain(s.heading)) for s in sections])


def heading_plain(heading: str) -> str:
    """A heading as the outline names it, from its wikitext or from the HTML action=parse lists
    it with: links as their text; bold, italics, tags and footnotes dropped."""
    text = re.sub(r"\[\[:?(?:[^\[\]|]*\|)?([^\[\]]*)\]\]", r"\1", FOOTNOTE.sub("", heading))
    text = re.sub(r"\[(?:[a-z]+:)?//[^\s\]]+\s*([^\]]*)\]", r"\1", text)
    text = re.sub(r"<[^>]*>|'{2,}", "", text)
    return " ".join(html.unescape(text).split())


#: A footnote in a heading: a <ref> as written, or the mark ([1], [n 1]) action=parse's outline
#: renders it as. The outline and every answer name a heading without its footnotes.
FOOTNOTE = re.compile(r"<ref\b[^>]*?/>|<ref\b[^>]*>.*?(?:</ref\s*>|$)"
                      r"|<sup\b[^>]*>(?:(?!</sup>).)*?(?:&#91;|\[)(?:(?!</sup>).)*</sup>", re.IGNORECASE | re.DOTALL)


#: A footnote's mark as rendered text shows it after a heading: [1], [n 1], [a].
FOOTNOTE_MARK = re.compile(r"\[[^\[\]]*\]")


def heading_key(heading: str, marks: bool = True) -> str:
    """A heading as matching compares it: its plain text in NFC, case and spacing aside; without
    ``marks``, bracketed text aside too, as rendered text shows a footnote's mark ('Notes[1]')."""
    plain = heading_plain(heading.strip().strip("="))
    plain = plain if marks else FOOTNOTE_MARK.sub("", plain)
    return " ".join(unicodedata.normalize("NFC", plain).split()).casefold()


def heading_paths(sections: list[Section]) -> list[tuple[str | None, str]]:
    """Each heading with the heading it stands under (None at the top): (parent, heading)."""
    paths: list[tuple[str | None, str]] = []
    above: list[Section] = []
    for s in sections:
        while above and above[-1].level >= s.level:
            above.pop()
        paths.append((above[-1].heading if above else None, s.heading))
        above.append(s)
    return paths


def heading_keys(sections: list[Section]) -> list[tuple[str | None, str]]:
    """heading_paths as heading_key compares headings: (the parent's key or None, the heading's key)."""
    return [(parent and heading_key(parent), heading_key(own)) for parent, own in heading_paths(sections)]


def starts_heading(text: str) -> bool:
    return bool(re.match(r"=[^\n]*=[ \t]*(?:\n|$)", text.lstrip("\n")))


def section_spans(text: str, syntax: Syntax = CORE_SYNTAX) -> dict[int, tuple[int, int]]:
    """Where each section (0 = lead) lies, in bytes: from its heading to the next heading of the
    same or a higher level, so that it holds its subsections."""
    sections = wikitext_sections(text, syntax)
    total = utf8_len(text)
    spans = {0: (0, sections[0].start if sections else total)}
    for i, section in enumerate(sections):
        spans[section.number] = (section.start, next((s.start for s in sections[i + 1:]
                                                      if s.level <= section.level), total))
    return spans


def section_span(text: str, section: int, syntax: Syntax = CORE_SYNTAX) -> tuple[int, int] | None:
    """Where section ``section`` lies in ``text`` (section_spans); None when there is none."""
    return section_spans(text, syntax).get(section)


def section_ends(text: str, syntax: Syntax = CORE_SYNTAX) -> dict[int, int]:
    """Where each section (0 = lead) ends, in bytes (section_spans)."""
    return {number: end for number, (_, end) in section_spans(text, syntax).items()}


def section_text(text: str, span: tuple[int, int]) -> str:
    """A section's text as the wiki gives it (rvsection): trailing space dropped."""
    return text.encode()[span[0]:span[1]].decode().rstrip(PHP_WHITESPACE)


def replace_section(text: str, span: tuple[int, int], new: str) -> str:
    """``text`` with the section at ``span`` replaced as MediaWiki's Parser::replaceSection does:
    the new text and a blank line before what follows, trailing space dropped."""
    data = text.encode()
    new = new.rstrip(PHP_WHITESPACE)
    return (data[:span[0]].decode() + (new + "\n\n" if new else "")
            + data[span[1]:].decode()).rstrip(PHP_WHITESPACE)


def followed_section(seen: str, now: str, number: int, syntax: Syntax = CORE_SYNTAX) -> list[int]:
    """Section ``number`` of text ``seen``, followed into text ``now``: a section added or removed
    above it moves it (one below does not), and it is found by its heading and the one it stands
    under (one Notes is not another's). The numbers it may have in ``now``: one, or none or several."""
    before, after = wikitext_sections(seen, syntax), wikitext_sections(now, syntax)
    was = next((i for i, s in enumerate(before) if s.number == number), None)

    def above(sections: list[Section]) -> list[tuple[int, str]]:  # up to the section: level and heading
        return [(s.level, heading_key(s.heading)) for s in sections[:number]]
    if was is None or above(before) == above(after):  # changed below it at most
        return [number]
    path = heading_keys(before)[was]
    return [s.number for s, there in zip(after, heading_keys(after)) if there == path]


def repeated_sections(whole: str, section: int, new: str, syntax: Syntax = CORE_SYNTAX) -> list[str]:
    """The headings of the sections that new text for section ``section`` of page text ``whole``
    holds, at the section's level or above, and the page has besides it: saved, they would stand on
    the page twice (the next sections, or the whole page, written back into one section)."""
    span = section_span(whole, section, syntax)
    if span is None:
        return []
    own = next((s for s in wikitext_sections(whole, syntax) if s.number == section), None)  # None: the lead
    # each as it would stand on the page, under its heading: a Usage given under Linux is its own,
    # not the one under Windows written twice
    placed = wikitext_sections(replace_section(whole, span, new), syntax)
    end = span[0] + utf8_len(new.rstrip(PHP_WHITESPACE))  # where the new text ends there
    paths = [(s.level, *keys) for s, keys in zip(placed, heading_keys(placed))]
    elsewhere = {path for s, path in zip(placed, paths) if not span[0] <= s.start < end}
    given = [(s, path) for s, path in zip(placed, paths) if span[0] <= s.start < end]
    given = given[1:] if own and given and heading_key(given[0][0].heading) == heading_key(own.heading) else given
    return list(dict.fromkeys(s.heading for s, path in given
                              if (not own or s.level <= own.level) and path in elsewhere))


def lost_subsections(old: str, new: str, syntax: Syntax = CORE_SYNTAX) -> list[str]:
    """The subsections of section text ``old`` that text ``new`` lacks. Headings are compared
    with the heading each stands under, and repeats count: a page repeats References or
    Quellen under many subsections, and each is a subsection of its own. A heading left over
    after that keeps one of the same name: its level changed, so it stands under another."""
    kept = collections.Counter(heading_paths(wikitext_sections(new, syntax)))
    paths = heading_paths(wikitext_sections(old, syntax))
    unmatched = []
    for path in paths:
        if kept[path]:
            kept[path] -= 1
        elif path is not paths[0]:
            unmatched.append(path)
    names = collections.Counter(heading for (_, heading), count in kept.items() for _ in range(count))
    lost = []
    for parent, heading in unmatched:
        if names[heading]:
            names[heading] -= 1
        else:
            lost.append(heading if parent == paths[0][1] else f"{heading} (under {parent})")
    return lost


def lost_headings(old: str, new: str, syntax: Syntax) -> list[str]:
    """The headings of page text ``old`` that text ``new`` lacks (each repeat counts)."""
    kept = collections.Counter(heading_plain(s.heading) for s in wikitext_sections(new, syntax))
    lost = []
    for s in wikitext_sections(old, syntax):
        heading = heading_plain(s.heading)
        if kept[heading]:
            kept[heading] -= 1
        else:
            lost.append(f"{s.number} ({heading})")
    return lost


def shrunk_to_section(old: str, new: str, syntax: Syntax = CORE_SYNTAX) -> int | None:
    """The section of page text ``old`` that whole-page text ``new`` is shaped like, when saving
    it would shrink the page to that section: ``new`` is under half the size, the page has more
    than one section, and ``new`` has exactly that section's headings (none: the lead)."""
    if utf8_len(new) * 2 >= utf8_len(old):
        return None
    sections = wikitext_sections(old, syntax)
    outline = [(s.level, s.heading) for s in wikitext_sections(new, syntax)]
    if not sections or outline == [(s.level, s.heading) for s in sections]:
        return None  # a page of one section, or a shorter text of the same outline: a rewrite
    if not outline:
        return 0
    for i, section in enumerate(sections):  # its headings and its subsections'
        end = next((k for k in range(i + 1, len(sections)) if sections[k].level <= section.level),
                   len(sections))
        if [(s.level, s.heading) for s in sections[i:end]] == outline:
            return section.number
    return None


def section_list(sections: list[tuple[int, str]]) -> str:
    """``1 (History), 2 (Geography), ...``: every section, so that each can be asked for."""
    return ", ".join(f"{n} ({heading})" for n, heading in sections)


def fitting(items: Sequence[str], room: int) -> int:
    """How many of ``items``, joined by ", ", fit ``room`` bytes: at least the first."""
    sizes = itertools.accumulate(utf8_len(f", {item}") for item in items)
    return max(1, sum(size <= room for size in sizes)) if items else 0


def joined_within(items: Sequence[str], room: int) -> str:
    """``items`` joined by ", ", as many as fit ``room`` bytes, then how many more: a list in an answer's
    metadata or an error stays small, whatever the page."""
    shown = fitting(items, room)
    return ", ".join(items[:shown]) + (f", and {len(items) - shown} more" if shown < len(items) else "")


#: Control characters MediaWiki replaces in every request (UtfNormal\Validator::cleanUp).
REFUSED_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


PHP_WHITESPACE = " \t\n\r\0\x0b"  # what PHP's rtrim() strips


def as_wiki_receives(text: str) -> str:
    """Text as MediaWiki takes it from a request: NFC, refused control characters replaced by
    U+FFFD, line ends as the wiki keeps them (\n; a page never holds \r). Matching a find against
    the wiki's text, or diffing a dry run, needs the same."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", REFUSED_CHARACTERS.sub("\ufffd", text))


def as_saved(text: str) -> str:
    """Wikitext as a save stores it (the pre-save transform's line ends and trailing space;
    signatures and subst: are left as they are)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip(PHP_WHITESPACE)


def ends_block(text: str) -> bool:
    """Whether the last line of ``text`` closes a block: a heading, list item, table row,
    rule, template or tag standing on its own line."""
    last = text.rstrip().rpartition("\n")[2].strip()
    return (last[:1] in ("*", "#", ":", ";", "|", "!") or last.startswith("----") or starts_heading(last)
            or (last.endswith("}}") and last.startswith(("{{", "}}")))
            or (last.startswith("<") and last.endswith(">")))


def separator(before: str, after: str) -> str:
    """The line breaks that set ``after`` on a line of its own below ``before`` (an append or
    prepend): one, or a blank line when ``after`` starts with a heading or ``before`` ends with a
    block, except that a list line is never set apart. Line breaks already at the seam count."""
    if not before.strip() or not after.strip():
        return ""
    seam = before[len(before.rstrip()):] + after[:len(after) - len(after.lstrip())]
    # A list item joins the list it follows: decided by the item alone, so that an append made
    # on a read gone stale (appendtext lands on the page as it then is) joins it too.
    apart = after.lstrip()[:1] not in ("*", "#", ":", ";") and (starts_heading(after) or ends_block(before))
    wanted = 2 if apart else 1
    return "\n" * max(0, wanted - seam.count("\n"))
