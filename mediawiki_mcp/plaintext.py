"""Plain text: a rendered page as a reader reads it, without navigation, references' markup or
hidden elements."""
from __future__ import annotations

import dataclasses
import html
import html.parser
import re
import urllib.parse
from collections.abc import Mapping, Sequence

#: Rendered parts plain text leaves out: edit links, navigation boxes, the table of contents,
#: references' links back, sort keys. Not noprint or noexcerpt: a reader sees those on screen
#: (a [citation needed] tag, a maintenance table); they are only left out of print and excerpts.
TEXT_SKIPPED_CLASSES = frozenset({
    "mw-editsection", "navbox", "vertical-navbox", "navbox-styles", "toc",
    "mw-cite-backlink", "mw-empty-elt", "sortkey", "mw-jump-link"})


TEXT_SKIPPED_TAGS = frozenset({"style", "script", "noscript", "template", "math"})


VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                       "source", "track", "wbr"})


PARAGRAPH_TAGS = frozenset({"p", "table", "blockquote", "pre", "figure", "center", "section"})


LINE_TAGS = frozenset({"div", "caption", "figcaption", "tr", "li", "dt", "dd", "hr"})


HIDDEN_STYLE = re.compile(r"display\s*:\s*none", re.IGNORECASE)


#: <sup> and <sub> text as the Unicode characters that write it raised or lowered, where every
#: character has one; other text is written ^(...) or _(...), as in plain mathematics.
SUPERSCRIPTS = str.maketrans("0123456789+-\u2212=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿⁱ")


SUBSCRIPTS = str.maketrans("0123456789+-\u2212=()", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎")


def scripted(text: str, tag: str) -> str:
    """``2`` in <sup> as ``²``; ``st`` as ``^st``, ``a b`` as ``^(a b)``; a note mark ``[a]`` as it is."""
    table, mark = (SUPERSCRIPTS, "^") if tag == "sup" else (SUBSCRIPTS, "_")
    if text.startswith("[") and text.endswith("]"):
        return text
    if all(ord(c) in table for c in text):
        return text.translate(table)
    return f"{mark}{text}" if text.isalnum() else f"{mark}({text})"


def gallery_file(href: str) -> str:
    """The file a gallery image links to, without its namespace: from its page's address, or
    from the upload form's for a missing file."""
    address = urllib.parse.urlsplit(href)
    query = urllib.parse.parse_qs(address.query)
    title = (query.get("wpDestFile") or query.get("title") or [urllib.parse.unquote(address.path)])[0]
    return title.rpartition("/")[2].rpartition(":")[2].replace("_", " ")


@dataclasses.dataclass
class _TextHeading:
    level: int
    anchor: str
    text: str = ""


@dataclasses.dataclass
class _Open:
    tag: str
    action: str = ""  # what closing it does: "skip", "cell", "list", "heading", "pre", "ref", "table", ...
    start: int = 0  # where its text starts in the line, for what closing it rewrites


class PlainText(html.parser.HTMLParser):
    """Reads MediaWiki's rendered HTML (action=parse) as plain text: headings as ``== Heading ==``
    lines with the section number the wiki edits them by (from ``sections``: anchor -> index),
    paragraphs apart by blank lines, list items one a line behind wikitext's markers, table
    rows one a line with their cells apart by " | ", references as ``[1]`` notes, a gallery's
    images one a line as ``* caption (file)``, <sup> and <sub> as ``km²`` (scripted). What a reader
    never sees (TEXT_SKIPPED_CLASSES and _TAGS, display:none) is left out; a line of text that reads
    as a heading (in <pre>) is indented a space, so that only headings start with =."""

    def __init__(self, sections: Mapping[str, tuple[str, str]]) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = sections
        self.lines: list[str | _TextHeading] = []
        self.line: list[str] = []
        self.open: list[_Open] = []
        self.skipping = 0
        self.cells = 0      # table cells open: line breaks inside one are spaces
        self.pre = 0
        self.lists: list[str] = []
        self.rows: list[int] = []  # cells so far in the current row of each open table
        self.heading: _TextHeading | None = None
        self.ref: list[str] | None = None  # the text of a reference mark being read, and its target
        self.ref_target = ""
        self.ref_labels: dict[str, str] = {}
        self.notes: dict[str, str] = {}  # each reference's note by its label
        self.note = ""  # the label of the note being read
        self.gallery: list[str] | None = None  # the thumb text of the gallery image being read
        self.gallery_file = ""  # and the file it links to (the thumb text names a missing file, in 1.39)

    def text(self, lines: Sequence[str | _TextHeading]) -> str:
        shown = "\n".join(self.heading_line(line) if isinstance(line, _TextHeading)
                          else f" {line}" if line.startswith("=") else line for line in lines)
        return re.sub(r"\n{3,}", "\n\n", shown).strip("\n")  # blank lines in a row read as one

    def heading_line(self, heading: _TextHeading) -> str:
        marks = "=" * heading.level
        index, source = self.sections.get(heading.anchor, ("", ""))
        where = (f" (section {index})" if index.isdigit() else
                 f" (from {source.replace('_', ' ')})" if index.startswith("T-") else "")
        return f"{marks} {heading.text} {marks}{where}"

    def section(self, number: int) -> list[str | _TextHeading] | None:
        """The lines of section ``number`` (its subsections and the sections templates bring
        into it included), then the notes of the references it cites; None when there is none."""
        numbered = [(k, line) for k, line in enumerate(self.lines) if isinstance(line, _TextHeading)
                    and self.sections.get(line.anchor, ("",))[0].isdigit()]
        start, level = 0, 0
        if number:
            start, heading = next(((k, h) for k, h in numbered if self.sections[h.anchor][0] == str(number)),
                                  (-1, None))
            if heading is None:
                return None
            level = heading.level
        end = next((k for k, h in numbered if k > start and (not level or h.level <= level)), len(self.lines))
        lines = self.lines[start:end]
        cited = re.findall(r"\[([^\[\]\n]{1,20})\]", self.text(lines))
        notes = [self.notes[label] for label in dict.fromkeys(cited)
                 if self.notes.get(label) and self.notes[label] not in lines]
        return [*lines, "", *notes] if notes else lines

    def newline(self, blank: bool = False) -> None:
        if self.cells:
            self.line.append(" ")
            return
        text = "".join(self.line)
        if self.pre:
            self.lines += text.split("\n")
        elif text.strip():
            self.lines.append(" ".join(text.split()))
        self.line = []
        if blank and self.lines and self.lines[-1] != "" and not isinstance(self.lines[-1], _TextHeading):
            self.lines.append("")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = set(attributes.get("class", "").split())
        if tag == "br":
            if self.pre:
                self.line.append("\n")
            elif not self.skipping:
                self.newline()
            return
        if tag in VOID_TAGS:
            return
        element = _Open(tag, start=len(self.line))
        self.open.append(element)
        if self.gallery is not None and tag == "a" and not self.gallery_file:
            self.gallery_file = gallery_file(attributes.get("href", ""))
        if self.skipping or self.unseen(tag, attributes, classes):
            element.action = "skip"
            self.skipping += 1
        else:
            element.action = self.started(element, attributes, classes)

    def unseen(self, tag: str, attributes: Mapping[str, str], classes: set[str]) -> bool:
        """Whether an element is one a reader never sees, or a gallery's image, read for its file alone."""
        return (tag in TEXT_SKIPPED_TAGS or bool(classes & TEXT_SKIPPED_CLASSES)
                or attributes.get("id") == "toc" or bool(HIDDEN_STYLE.search(attributes.get("style", "")))
                or self.gallery is not None and "thumb" in classes)

    def started(self, element: _Open, attributes: Mapping[str, str], classes: set[str]) -> str:
        """Starts an element that is seen; what closing it does (_Open.action)."""
        tag = element.tag
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.newline(blank=True)
            self.heading = _TextHeading(int(tag[1]), attributes.get("id", ""))
            self.lines.append(self.heading)
            return "heading"
        if "mw-headline" in classes and self.heading is not None:
            self.heading.anchor = attributes.get("id") or self.heading.anchor
            return ""
        if tag in PARAGRAPH_TAGS or tag in LINE_TAGS:
            self.newline(blank=tag in PARAGRAPH_TAGS)
        if tag in ("td", "th", "tr", "table", "ul", "ol", "dl") or tag in ("li", "dt", "dd") and self.lists:
            return self.structure_started(element, attributes.get("id", ""), classes)
        elif tag == "sup" and "reference" in classes:
            self.ref = []
            return "ref"
        elif tag in ("sup", "sub"):
            return "script"
        elif tag == "a" and self.ref is not None:
            self.ref_target = attributes.get("href", "").partition("#cite_note-")[2]
        elif tag == "pre":
            self.pre += 1
            return "pre"
        return ""

    def structure_started(self, element: _Open, anchor: str, classes: set[str]) -> str:
        """Starts a table, a row, a cell, a list or a list item; what closing it does."""
        tag = element.tag
        if tag in ("td", "th"):
            if self.rows and self.rows[-1]:
                self.line.append(" | ")
            if self.rows:
                self.rows[-1] += 1
            self.cells += 1
            return "cell"
        if tag == "tr":
            if self.rows:
                self.rows[-1] = 0
            return ""
        if tag == "table":
            self.rows.append(0)
            return "table"
        if tag in ("ul", "ol", "dl"):
            if not self.lists:
                self.newline(blank=True)
            self.lists.append("ref" if "references" in classes else {"ul": "*", "ol": "#", "dl": ":"}[tag])
            return "list"
        action = ""
        if self.lists[-1] == "ref":
            label = self.ref_labels.get(anchor.removeprefix("cite_note-"), str(len(self.notes) + 1))
            self.line.append(f"[{label}] ")
            self.notes[label], self.note, action = "", label, "note"
        else:
            marks = "".join(self.lists).replace("ref", "")
            self.line.append((marks[:-1] + ";" if tag == "dt" else marks) + " ")
        if "gallerybox" in classes:  # its caption's lines on the image's line
            self.gallery, self.gallery_file, self.cells, action = [], "", self.cells + 1, "gallery"
            element.start = len(self.line)
        return action

    def handle_endtag(self, tag: str) -> None:
        if not any(element.tag == tag for element in self.open):
            return  # a stray closing tag
        while self.open:
            element = self.open.pop()
            self.closed(element)
            if element.tag == tag:
                return

    def closed(self, element: _Open) -> None:
        action = element.action
        if action == "skip":
            self.skipping -= 1
            return
        if action == "heading" and self.heading is not None:
            self.heading.text = " ".join("".join(self.line).split())
            self.line, self.heading = [], None
            self.newline(blank=True)
        elif action == "cell":
            self.cells -= 1
        elif action == "table":
            self.rows.pop()
        elif action == "list":
            self.lists.pop()
            self.newline(blank=not self.lists)
        elif action == "note":
            self.newline()
            self.notes[self.note] = str(self.lines[-1])
            return
        elif action == "ref" and self.ref is not None:
            label = "".join(self.ref).strip().strip("[]")
            if self.ref_target and label:
                self.ref_labels.setdefault(self.ref_target, label)
            self.ref = None
        elif action == "pre":
            self.newline()
            self.pre -= 1
        elif action == "script":
            self.line[element.start:] = [scripted("".join(self.line[element.start:]).strip(), element.tag)]
        elif action == "gallery" and self.gallery is not None:
            file = self.gallery_file or " ".join("".join(self.gallery).split())
            caption = " ".join("".join(self.line[element.start:]).split())
            self.line[element.start:] = [f"{caption} ({file})" if caption and file else caption or file]
            self.gallery, self.cells = None, self.cells - 1
        if element.tag in PARAGRAPH_TAGS or element.tag in LINE_TAGS:
            self.newline(blank=element.tag in PARAGRAPH_TAGS)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            if self.gallery is not None:
                self.gallery.append(data)
            return
        self.line.append(data)
        if self.ref is not None:
            self.ref.append(data)


def plain_text(page_html: str, sections: Mapping[str, tuple[str, str]] | None = None,
               section: int | None = None) -> str | None:
    """A rendered page as plain text (PlainText); ``sections`` maps each heading's anchor to its
    section index and the page it comes from, as action=parse lists them. ``section``: that
    section alone, with the notes it cites (None when there is no such section)."""
    reader = PlainText(sections or {})
    reader.feed(page_html)
    reader.close()
    reader.newline()
    lines = reader.lines if section is None else reader.section(section)
    return None if lines is None else reader.text(lines)
