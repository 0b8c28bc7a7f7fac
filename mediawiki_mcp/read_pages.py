"""Read tools for pages: get-page, get-page-sections and get-pages, with truncation and offsets."""
from __future__ import annotations

import concurrent.futures
import functools
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from .dispatch import ToolContext
from .errors import invalid_input
from .ledger import Shown
from .pages import (
    ContentArg,
    OffsetArg,
    SectionArg,
    TitleArg,
    TitlesArg,
    asked_section,
    check_page,
    invalid_reason,
    main_slot,
    no_such_section,
    outline_call,
    parse_page,
    query_page,
    resolve_page,
    revision_of,
    slot_text,
    truncated_marker,
)
from .plaintext import plain_text
from .registry import Arg, tool
from .render import OUTLINE_SHARE, Batch, Slice, call_args, fitted, labelled, protection_text, slice_content, utf8_len
from .sections import (
    Section,
    as_wiki_receives,
    heading_key,
    heading_plain,
    html_sections,
    numbered_headings,
    outline_of,
    section_ends,
    section_heading,
    wikitext_sections,
)


@tool("get-page", "Get page", toolset="pages", read_only=True,
      see={"for several pages": "get-pages", "for the outline": "get-page-sections",
           "for an old revision": "get-revision"})
def get_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    content: Annotated[Literal["source", "html", "text", "none"], ContentArg] = "source",
    metadata: Annotated[bool, Arg(
        'Adds ID, content model, size, last edit, protection, URL.')] = False,
    section: Annotated[int | str | None, SectionArg] = None,
    offset: Annotated[int, OffsetArg] = 0,
    followRedirects: Annotated[bool, Arg("false: the redirect itself.")] = True,
) -> list[str]:
    """Returns a page's latest revision as wikitext, HTML or plain text, with its revision ID.
    Truncated at {content_max_bytes:bytes}; offset reads the rest."""
    refuse_section_of_none(content, section)
    if content in ("html", "text"):
        parsed, text, number, shown = rendered(ctx, title, content, section, page=title,
                                               redirects=followRedirects)
        page: dict[str, Any] = {"title": parsed.get("title"), "pageid": parsed.get("pageid")}
        revision: dict[str, Any] = {"revid": parsed.get("revid")}
        redirected, hops = parse_redirected(parsed), parsed.get("redirects")
        if metadata:
            page, _ = query_page(ctx, pageids=parsed.get("pageid"), **header_fields(True))
            revision = revision_of(page)
        sections: Sequence[Section | tuple[int, str]] = html_sections(parsed)
    else:
        number = None if isinstance(section, str) else section  # a heading is numbered from the whole text
        query = ctx.client.get({"action": "query", "titles": title, "redirects": followRedirects,
                                **header_fields(metadata, content == "source"),
                                "rvsection": number if content == "source" else None}).get("query", {})
        page, redirected = resolve_page(query)
        hops = query.get("redirects")
        check_page(ctx, page, title, redirected=redirected)
        revision = revision_of(page)
        if content == "none":
            return ctx.reads.showed([page_header(ctx, page, revision, redirected, metadata, section)],
                                    Shown(page["title"], revision.get("revid") or 0, outline=False))
        number, shown, text = asked_section(ctx, page["title"], section, revid=revision.get("revid"),
                                            text=slot_text(ctx, revision, number, page["title"]))
        sections = wikitext_sections(text, ctx.site.syntax)
    again = {**({} if content == "source" else {"content": content}),
             **({"section": number} if number is not None else {}),
             **({} if followRedirects else {"followRedirects": False})}
    header = page_header(ctx, page, revision, redirected, metadata, shown,
                         redirected_to=None if section is not None else redirect_section(
                             hops, page.get("title") or title, sections))
    blocks, piece = content_blocks(header, text, offset, ctx.budget, "get-page",
        again=again or None, outline=outline_call(page.get("title") or title),
        sections=None if number is not None else sections)
    if content != "source":
        seen = [Shown(page["title"], revision.get("revid") or 0, rendered=(text, piece.text))]
        return ctx.reads.showed(blocks, *seen if page.get("title") else [])
    # for update-page: refusing to write back a part, and the revision a write is based on; noted under
    # its heading too, by which a write may name it once a section above renumbered it
    return ctx.reads.showed(blocks, Shown(page["title"], revision.get("revid", 0), text, (piece.start, piece.end),
                                          number, section_heading(text, 1, ctx.site.syntax) if number else None))


def redirect_section(hops: Sequence[Mapping[str, Any]] | None, title: str,
                     sections: Sequence[Section | tuple[int, str]]) -> str | None:
    """The header line naming the section a redirect followed leads to (#REDIRECT [[Rhine#Course]]):
    get-page shows the whole page, as the wiki does, and this line says where to look, and how to
    read that section alone. Its heading is looked up among ``sections`` as section names are."""
    fragment = next((str(hop["tofragment"]) for hop in reversed(hops or []) if hop.get("tofragment")), "")
    if not fragment:
        return None
    key = heading_key(fragment.replace("_", " "))
    numbered = numbered_headings(sections)
    found = next(((n, h) for n, h in numbered if heading_key(h) == key), None)
    if found is None:
        return f"#{fragment}, which heads no section: the page is shown whole"
    return (f"section {found[0]} ({found[1]}), in the page shown whole; to read it alone, call get-page with "
            f"{call_args(title=title, section=found[0])}")


def refuse_section_of_none(content: str, section: int | str | None) -> None:
    """A section with content='none' would be neither read nor looked for, only echoed back."""
    if content == "none" and section is not None:
        raise invalid_input("section picks a part of the content, and content='none' reads none: leave "
                            "section out, or ask for the content.")


def header_fields(metadata: bool, content: bool = False, *, brief: bool = False) -> dict[str, Any]:
    """The query parameters that give page_header its lines: the revision ID; with metadata, prop=info
    (page ID, content model, size, protection) and the last edit's time, user and summary (``brief``:
    without protection and summary, as get-pages shows). ``content``: the wikitext too."""
    last_edit = ["timestamp", "user"] + ([] if brief else ["comment"])
    rvprop = ["ids", *(last_edit if metadata else []), *(["content"] if content else [])]
    return {"prop": "revisions|info" if metadata else "revisions",
            "inprop": "protection" if metadata and not brief else None,
            "rvprop": "|".join(rvprop), "rvslots": "main" if content else None}


def page_header(ctx: ToolContext, page: dict[str, Any], revision: dict[str, Any],
                redirected: str | None, metadata: bool, section: int | str | None,
                redirected_to: str | None = None) -> str:
    lines = [("Title", page.get("title")), ("Redirected from", redirected), ("Redirected to", redirected_to),
             ("Revision ID", revision.get("revid") or page.get("lastrevid")),
             ("Section", section)]
    if metadata:
        lines += [("Page ID", page.get("pageid")),
                  ("Content model", page.get("contentmodel")),
                  ("Size", f"{page.get('length', revision.get('size', 0))} bytes"),
                  ("Last edited", f"{revision.get('timestamp')} by {revision.get('user')}"
                   if revision.get("timestamp") else None),
                  ("Edit summary", revision.get("comment")),
                  ("Protection", page.get("protection") and protection_text(page["protection"])),
                  ("URL", ctx.site.page_url(page.get("title", "")))]
    return labelled(*lines)


def content_blocks(header: str, text: str, offset: int, budget: int, tool_name: str, *,
                   sections: Sequence[Section | tuple[int, str]] | None,
                   again: Mapping[str, Any] | None, outline: str | None = None) -> tuple[list[str], Slice]:
    """Header and body as one block, then the truncation marker as its own block; the body and the
    marker together fit ``budget`` (fitted). Also the part of ``text`` shown."""
    piece, marker = fitted(text, offset, budget, lambda cut: truncated_marker(
        cut, tool_name, sections=sections or (), again=again, room=budget // OUTLINE_SHARE, outline=outline))
    if offset:
        header += f"\nOffset: {piece.start} of {piece.total} bytes"
    return [f"{header}\n\n{piece.text}", *([marker] if marker else [])], piece


def parse_redirected(parsed: Mapping[str, Any]) -> str | None:
    """The title an action=parse result was redirected from; none for a redirect in a loop, whose own
    page it renders."""
    redirected = next((r.get("from") for r in parsed.get("redirects") or []), None)
    return redirected if redirected != parsed.get("title") else None


class Rendered(typing.NamedTuple):
    """A page or revision rendered (rendered): the action=parse result, the HTML or plain text
    shown, and the section asked for (AskedSection)."""
    parsed: dict[str, Any]
    body: str
    number: int | None
    shown: int | str | None


def rendered(ctx: ToolContext, title: str, content: str, section: int | str | None, **params: Any) -> Rendered:
    """A page (page=) or revision (oldid=) rendered, whole or one section (by number or heading),
    as HTML or plain text. Plain text is read from the whole page, so that a section's references
    are the page's; an HTML section by heading costs a request more, for the numbers of the headings."""
    by_name = isinstance(section, str)  # then the source too, for the headings as written
    parsed: dict[str, Any] = {}
    if content == "text" or by_name:
        props = ("text|sections|revid" if content == "text" else "sections") + "|wikitext" * by_name
        parsed = parse_page(ctx, title, None, prop=props, **params)
    number, shown, _ = asked_section(ctx, title, section, parsed=parsed)
    if content == "text":
        body = plain_text(parsed.get("text", ""), text_sections(parsed), number)
        if body is None:
            raise no_such_section(ctx, title, number, params.get("oldid"))
        return Rendered(parsed, body, number, shown)
    parsed = parse_page(ctx, title, number, prop="text|sections|revid", **params)
    return Rendered(parsed, parsed.get("text", ""), number, shown)


def text_sections(parsed: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The anchor of each heading of an action=parse result, with its section index and the page
    it comes from (plain_text)."""
    return {s.get("anchor", ""): (str(s["index"]), str(s.get("fromtitle", "")))
            for s in parsed.get("sections") or [] if "index" in s}


SECTIONS_LEGEND = ("number | heading, its = marks showing its level | bytes of its own text | bytes with its "
                   "subsections (only when it has any)")


@tool("get-page-sections", "Get page sections", toolset="pages", read_only=True,
      see={"for a section's text": "get-page with section"})
def get_page_sections(ctx: ToolContext, title: Annotated[str, TitleArg]) -> list[str]:
    """Returns a page's outline and revision ID: each section's number, heading and size."""
    parsed = parse_page(ctx, title, None, page=title, redirects=True, prop="sections|revid|wikitext")
    text = parsed.get("wikitext", "")
    syntax = ctx.site.syntax
    own = wikitext_sections(text, syntax)
    ends = section_ends(text, syntax)
    starts = [s.start for s in own] + [utf8_len(text)]
    outline = outline_of(parsed)
    shown = dict(html_sections(parsed))
    rows = [((0, 0), f"0 | (Lead) | {ends[0]}")]  # by the number of the section they follow
    for s, end in zip(own, starts[1:]):
        marks, size, whole = "=" * s.level, end - s.start, ends[s.number] - s.start
        heading = shown.get(s.number) or heading_plain(s.heading)
        rows.append(((s.number, 0), f"{s.number} | {marks} {heading} {marks} | {size}"
                     + (f" | {whole}" if whole > size else "")))
    after = 0  # a heading a template brings comes after the numbered ones before it in the outline
    for place, (number, level, heading, source) in enumerate(outline, 1):
        if number is None:
            whence = f"from {source}" if source else "in HTML, part of the section before"
            rows.append(((after, place), f"- | {'=' * level} {heading} {'=' * level} | {whence}"))
        else:
            after = number
    redirected = parse_redirected(parsed)
    return ctx.reads.showed([labelled(("Title", parsed.get("title")), ("Redirected from", redirected),
                    ("Revision ID", parsed.get("revid")), ("Size", f"{utf8_len(text)} bytes")) \
        + f"\nSections ({SECTIONS_LEGEND}):\n" + "\n".join(row for _, row in sorted(rows))],
        Shown(parsed.get("title", title), parsed.get("revid") or 0))


@tool("get-pages", "Get pages", toolset="pages", read_only=True,
      see={"for HTML or a section": "get-page"})
def get_pages(
    ctx: ToolContext,
    titles: Annotated[list[str], TitlesArg],
    content: Annotated[Literal["source", "text", "none"], Arg(
        "none: revision IDs only.")] = "source",
    metadata: Annotated[bool, Arg("Adds ID, content model, size, last edit.")] = False,
) -> list[str]:
    """Returns up to 50 pages' wikitext or plain text with revision IDs; missing ones listed.
    The pages share {content_max_bytes:bytes}: whole pages first, then one cut; the marker says
    how to read the rest."""
    wanted = list(dict.fromkeys(titles))
    source = content == "source"
    query = ctx.client.get({"action": "query", "titles": wanted, "redirects": True,
                            **header_fields(metadata, source, brief=True)}).get("query", {})
    loops = "Redirects in a loop or to another wiki, which lead to no page here"
    other = "Titles of other wikis"
    unread: dict[str, list[str]] = {"Missing pages": [], loops: [], other: [], "Not valid page titles": [],
                                    "Special pages, which have no content": []}
    interwiki = {i["title"] for i in query.get("interwiki") or []}  # listed apart from pages, as normalized
    interwiki |= {n["from"] for n in query.get("normalized") or [] if n["to"] in interwiki}
    entries: dict[str, tuple[dict[str, Any], list[str]]] = {}  # by title: a page asked twice is one entry
    for asked, (page, redirected) in batch_pages(query, wanted).items():
        kind = (loops if page is None and redirected else
                other if page is None and as_wiki_receives(asked) in interwiki else
                "Missing pages" if page is None or page.get("missing") else
                "Not valid page titles" if page.get("invalid") else
                "Special pages, which have no content" if page.get("special") else None)
        if kind:
            unread[kind].append(f"{asked} ({invalid_reason(page)})" if page and page.get("invalid") else
                                f"{asked} (redirects to {page['title']})" if page and redirected else asked)
            continue
        assert page is not None
        entries.setdefault(page["title"], (page, []))[1].extend([redirected] if redirected else [])
    blocks = [f"{label}: {', '.join(titles)}" for label, titles in unread.items() if titles]
    headers = {title: page_header(ctx, page, revision_of(page), ", ".join(froms) or None, metadata, None)
               for title, (page, froms) in entries.items()}
    if content == "none":  # each revision ID shown is the base of a write
        return ctx.reads.showed(blocks + list(headers.values()) or ["No pages."],
                                *(Shown(title, revision_of(page).get("revid") or 0, outline=False)
                                  for title, (page, _) in entries.items()))
    bodies = dict(zip(entries, page_bodies(ctx, [page for page, _ in entries.values()], content)))
    sizes = {title: utf8_len(b[0]) if b else None for title, b in bodies.items()}
    text = {"content": "text"} if content == "text" else {}
    total = sum(size or 0 for size in sizes.values())
    room, marker = ctx.budget, None
    while True:  # the pages and the marker together fit the budget: the marker's room is the pages'
        whole, cut, left = fill_budget(sizes, room)
        cut_body = bodies[cut] if cut else None
        piece = slice_content(cut_body[0], 0, left) if cut_body else None
        if len(whole) == len(bodies):
            break
        marker = truncated_marker(
            piece, "get-page", sections=cut_body[1]() if cut_body else (),
            again={"title": cut, **text} if piece else None,
            room=ctx.budget // OUTLINE_SHARE, outline=outline_call(cut) if cut else None,
            batch=Batch((room - left + (piece.end if piece else 0), total),
                        [title for title in bodies if title not in whole and title != cut], text))
        if room - left + (piece.end if piece else 0) + utf8_len(marker) <= ctx.budget or room <= 1:
            break
        room = max(ctx.budget - utf8_len(marker), 1)
    seen: list[Shown] = []
    for title, body in bodies.items():
        if body and (title in whole or title == cut):
            shown = piece.text if piece and title == cut else body[0]
            # marked on the page itself: a model reading it alone must not take it for the whole page
            cut_at = (f"\nTruncated: at {piece.end} of {piece.total} bytes; the marker after the pages names the "
                      "call that reads on") if piece and title == cut else ""
            blocks.append(f"{headers[title]}{cut_at}\n\n{shown}")
            revid = revision_of(entries[title][0]).get("revid", 0)
            if source or revid:  # for update-page, as get-page; rendered, as get-page's: the base of a write
                seen.append(Shown(title, revid, body[0], (0, utf8_len(shown))) if source else
                            Shown(title, revid, rendered=(body[0], shown)))
    if marker and len(whole) < len(bodies):
        blocks.append(marker)
    return ctx.reads.showed(blocks, *seen) or ["No pages."]


#: A page's body and a way to its sections (for a marker), or None: the wiki held it back.
Body = tuple[str, Callable[[], Sequence[Section | tuple[int, str]]]] | None


def page_bodies(ctx: ToolContext, pages: list[dict[str, Any]], content: str) -> list[Body]:
    """Each page's wikitext as the query gave it, or its plain text, parsed four at a time."""
    if content == "text":
        def text(page: dict[str, Any]) -> Body:
            parsed = parse_page(ctx, page["title"], None, oldid=revision_of(page).get("revid"),
                                prop="text|sections")
            return plain_text(parsed.get("text", ""), text_sections(parsed)) or "", \
                functools.partial(html_sections, parsed)
        return run_each(text, pages)
    slots = [main_slot(revision_of(page)) for page in pages]
    # no revision with content (formatversion 2 gives an empty list): the wiki held it back, its
    # answer being at its size limit ($wgAPIMaxResultSize)
    return [(slot["content"], functools.partial(wikitext_sections, slot["content"], ctx.site.syntax))
            if "content" in slot else None for slot in slots]


def fill_budget(sizes: Mapping[str, int | None], budget: int) -> tuple[set[str], str | None, int]:
    """What a budget holds of bodies of these sizes, in order: every one that fits whole, then the
    first that does not, to be cut to what is left (none when nothing is), and that; a size of None
    is a body held back."""
    whole, left = set(), budget
    for title, size in sizes.items():
        if size is not None and size <= left:
            whole.add(title)
            left -= size
    cut = next((title for title, size in sizes.items() if title not in whole and size is not None), None)
    return whole, cut if left else None, left


def run_each(work: Callable[[Any], Any], items: Sequence[Any], at_once: int = 4) -> list[Any]:
    """``work`` on each item, a few at a time (each a request to the wiki), results in order."""
    if len(items) < 2:
        return [work(item) for item in items]
    with concurrent.futures.ThreadPoolExecutor(min(at_once, len(items))) as pool:
        return list(pool.map(work, items))


def batch_pages(query: dict[str, Any], wanted: list[str]) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Maps each asked title to its page (None if the answer has none) and the redirect followed."""
    normalized = {n["from"]: n["to"] for n in query.get("normalized") or []}
    redirects = {r["from"]: r["to"] for r in query.get("redirects") or []}
    by_title = {p.get("title"): p for p in query.get("pages") or []}
    result: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for asked in wanted:
        sent = as_wiki_receives(asked)  # MediaWiki composes a decomposed title (NFC) before it normalizes
        followed = [normalized.get(sent, sent)]
        # on to the end of a double redirect; once round a loop
        while (hop := redirects.get(followed[-1])) and hop not in followed:
            followed.append(hop)
        result[asked] = (by_title.get(followed[-1]), followed[0] if followed[0] in redirects else None)
    return result
