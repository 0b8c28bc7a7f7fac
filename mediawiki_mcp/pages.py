"""Pieces the page tools share: parameter types, a page resolved with its redirects, sections
picked by number or heading, outlines, and revisions' slots."""
from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from .dispatch import ToolContext
from .errors import WikiError, invalid_input, not_found
from .registry import Arg
from .render import (
    OUTLINE_SHARE,
    Batch,
    Slice,
    call_args,
    decode_continuation,
    encode_continuation,
    more_results_marker,
    one_line,
    protection_text,
)
from .sections import (
    Heading,
    Section,
    fitting,
    heading_key,
    heading_paths,
    heading_plain,
    joined_within,
    numbered_headings,
    outline_of,
    section_list,
    section_span,
    section_text,
    source_headings,
    wikitext_sections,
)
from .siteinfo import STANDARD_CHOICES
from .state import MAX_PAGES_PER_CALL


def truncated_marker(piece: Slice | None, tool: str, *, sections: Sequence[Section | tuple[int, str]] = (),
                     again: Mapping[str, Any] | None = None, room: int | None = None,
                     outline: str | None = None, batch: Batch | None = None) -> str:
    """The content-truncated marker: where the cut is, and the exact next calls: ``tool`` again, or
    for a batch, which names a tool other than the one called, ``tool`` with. The sections listed
    are of the page ``again`` names, if it names one, as many as fit ``room`` bytes, then how many
    more and the call that lists them all (``outline``, if any)."""
    again = dict(again or {})
    verb = "with" if batch else "again with"
    end, total = (piece.end, piece.total) if piece else batch.shown if batch else (0, 0)
    # a batch's offset is into the page it cut, so its numbers are that page's, which it names
    of = f" of {again['title']}" if batch and piece else ""
    parts = [f"Content truncated at {end} of {total} bytes{of}."]
    numbered = numbered_headings(sections)
    if piece and numbered:
        of = f"Available sections of {again['title']}" if "title" in again else "Available sections"
        listed = numbered if numbered[0][0] == 0 else [(0, "Lead"), *numbered]
        fit = len(listed) if room is None else fitting([f"{n} ({heading})" for n, heading in listed], room)
        shown_list = listed[:fit]
        parts.append(f"{of}: {section_list(shown_list)}" + (
            "." if len(shown_list) == len(listed) else f", and {len(listed) - len(shown_list)} more."))
        if len(shown_list) < len(listed) and outline:
            parts.append(f"To list every section, call {outline}.")
        before = f"{call_args(**again)} and " if again else ""  # content="html" and the like
        parts.append(f"To read a specific section, call {tool} {verb} {before}section=N.")
    if piece:
        parts.append(f"To read on, call {tool} {verb} {call_args(**again, offset=piece.end)}.")
    if batch and batch.left_out:
        parts.append(f"Not included: {', '.join(batch.left_out)}. To read them, call get-pages again with "
                     f"{call_args(titles=list(batch.left_out), **batch.fields)}.")
    return " ".join(parts)


TitleArg = Arg("Page title.", title=True)


FileTitleArg = Arg("File title; File: optional.", title=True)


ContentArg = Arg("none: metadata only.")


SectionArg = Arg("Number (0 = lead) or heading.", minimum=0, max_length=255, max_length_listed=False)


OffsetArg = Arg("From the marker.", minimum=0)


Namespaces = Annotated[list[int] | None, Arg("Namespace IDs.", max_items=50)]


CommentArg = Arg("Edit summary.", max_length=500, max_length_listed=False)  # MediaWiki's limit


ReasonArg = Arg("Reason.", max_length=500, max_length_listed=False)


TitlesArg = Arg("Page titles.", title=True, max_items=MAX_PAGES_PER_CALL)


LatestIdArg = Arg("Revision ID of the page as read.", minimum=1)


TalkTitleArg = Arg("Talk page, or its subject page.", title=True)


FindArg = Arg("Exact wikitext; with regex, a Python regex.", max_length=500, max_length_listed=False)


def query_page(ctx: ToolContext, **params: Any) -> tuple[dict[str, Any], str | None]:
    """The page an action=query about one page answers with, and the title it was redirected from."""
    return resolve_page(ctx.client.get({"action": "query", **params}).get("query", {}))


def resolve_page(query: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The page a single-page query returned, and the title it was redirected from. A title of another
    wiki (an interwiki prefix) is listed apart: as a page marked ``interwiki``, which check_page refuses."""
    other = [{"title": i.get("title"), "interwiki": i.get("iw")} for i in query.get("interwiki") or []]
    pages, hops = query.get("pages") or other or [{}], query.get("redirects") or []
    return pages[0], next((hop["from"] for hop in hops if hop.get("from")), None)


def check_page(ctx: ToolContext, page: dict[str, Any], title: str, must_exist: bool = True,
               redirected: str | None = None) -> None:
    """Refuses a page that is not an existing page of this wiki (must_exist=False: an invalid title);
    ``redirected``: the title a redirect was followed from, refused too when it leads to no page."""
    if page.get("invalid"):
        raise invalid_input(f"{title!r} is not a valid page title: {invalid_reason(page)}")
    if redirected and (not page or page.get("missing")):
        raise broken_redirect(redirected, page.get("title"))
    if not must_exist:
        return
    if "interwiki" in page:
        raise invalid_input(f"{title!r} points to another wiki (interwiki prefix {page['interwiki']!r}).")
    if page.get("special"):
        raise invalid_input(f"{page.get('title', title)!r} is a special page, which the wiki makes when asked; "
                            "it has no text to read or change.")
    if page.get("missing") or not page:
        raise missing_page(ctx, page.get("title", title))


def broken_redirect(redirected: str, target: str | None) -> WikiError:
    """not_found for a redirect that leads to no page: to a ``target`` that does not exist, or (none
    given: the wiki answers with no page) in a loop or to another wiki."""
    where = (f"to {target!r}, which does not exist" if target
             else "in a loop or to another wiki, to no page here")
    return not_found(f"{redirected!r} redirects {where}. To read the redirect itself, call get-page with "
                     f"{call_args(title=redirected, followRedirects=False)}.")


def invalid_reason(page: dict[str, Any]) -> str:
    reason = page.get("invalidreason")  # {"code", "text"} with errorformat=plaintext
    return str(reason.get("text", "") if isinstance(reason, dict) else reason or "")


def missing_page(ctx: ToolContext, title: str) -> WikiError:
    return not_found(f"Page {title!r} not found on {ctx.wiki.key}. " + (
        why_missing(ctx, title) or "search-page-by-prefix or search-page finds existing titles."))


def why_missing(ctx: ToolContext, title: str) -> str | None:
    """What the wiki says of a page that is not there: that it is protected against creation, and
    where it went, from the log: deleted (undelete-page restores it) or moved without a redirect.
    None when it says neither."""
    query = ctx.client.get({"action": "query", "list": "logevents", "letitle": title, "lelimit": 5,
                            "leprop": "type|user|timestamp|comment|details", "titles": title,
                            "prop": "info", "inprop": "protection"}).get("query", {})
    create = [e for page in query.get("pages") or [] for e in page.get("protection") or []
              if e.get("type") == "create"]
    protected = f"It is protected against creation ({protection_text(create)}). " if create else ""
    for event in query.get("logevents") or []:
        when = (f" on {event.get('timestamp')} by {event.get('user', 'a hidden user')}"
                + (f" ({one_line(event['comment'])})" if event.get("comment") else ""))
        if (event.get("type"), event.get("action")) == ("delete", "delete"):
            return f"{protected}It was deleted{when}; undelete-page restores it."
        if event.get("type") == "move":
            target = (event.get("params") or {}).get("target_title")
            return f"{protected}It was moved to {target!r}{when}, leaving no redirect; use that title."
    if to := subject_redirect(ctx, title):
        return f"{protected}Its subject page is a redirect to {to!r}, whose talk page is {talk_title(ctx, to)!r}."
    return protected.strip() or None


def subject_redirect(ctx: ToolContext, talk: str) -> str | None:
    """The page that the subject page of talk page ``talk`` redirects to, if it is a redirect:
    readers of that page discuss it on its own talk page."""
    namespace = ctx.site.namespace_of(talk)
    if namespace <= 0 or not namespace % 2:
        return None
    name = talk.partition(":")[2].strip()
    subject = f"{ctx.site.namespaces.get(namespace - 1)}:{name}" if namespace > 1 else name
    query = ctx.client.get({"action": "query", "titles": subject, "redirects": True}).get("query", {})
    return (query.get("redirects") or [{}])[0].get("to")


def no_such_section(ctx: ToolContext, title: str, section: int | None, revid: int | None = None) -> WikiError:
    """not_found for a section past the last, listing the sections there are, as the wiki
    numbers them (headings that templates bring cannot be read or edited by number)."""
    outline = rendered_outline(ctx, title, **of_page(title, revid))
    return not_found(f"There is no section {section} in {title} on {ctx.wiki.key}. "
                     f"Its sections: {outline_list(ctx, outline, title)}.")


def of_page(title: str, revid: int | None) -> dict[str, Any]:
    """The action=parse parameters naming a revision, or else a page's latest."""
    return {"oldid": revid} if revid else {"page": title}


def outline_list(ctx: ToolContext, outline: Sequence[Heading], title: str) -> str:
    """``0 (Lead), 1 (== History ==), ...``: the sections of ``title`` that can be read or changed by
    number, as many as a truncation marker lists, then how many more and the call that lists them all."""
    listed = joined_within(["0 (Lead)"] + [f"{n} ({'=' * level} {heading} {'=' * level})"
                                           for n, level, heading, _ in outline if n is not None],
                           ctx.budget // OUTLINE_SHARE)
    return listed + (f" ({outline_call(title)} lists them all)" if listed.endswith(" more") else "")


class AskedSection(typing.NamedTuple):
    """A section asked for by number or heading: its number (None: the whole page), how a header
    shows it (``2 (History)`` for a heading), and the text read, cut to that section when its
    heading was looked up in that text."""
    number: int | None
    shown: int | str | None
    text: str = ""


def asked_section(ctx: ToolContext, title: str, section: int | str | None, *, text: str = "",
                  parsed: Mapping[str, Any] | None = None, revid: int | None = None) -> AskedSection:
    """The section ``section`` names: a number as it is; a heading (pick_section) looked up in the
    wikitext ``text`` of revision ``revid`` (its rendered outline fetched only if needed), or in an
    action=parse result ``parsed`` with prop=sections|wikitext."""
    if not isinstance(section, str):
        return AskedSection(section, section, text)
    syntax = ctx.site.syntax
    with_templates: Callable[[], list[Heading]]
    if parsed is None:
        outline = [Heading(s.number, s.level, heading_plain(s.heading)) for s in wikitext_sections(text, syntax)]
        with_templates = functools.cache(lambda: rendered_outline(ctx, title, **of_page(title, revid)))
    else:
        outline = outline_of(parsed)
        text, with_templates = str(parsed.get("wikitext", "")), lambda: outline
    number, heading = pick_section(ctx, outline, section, title, with_templates,
                                   lambda: source_headings(text, syntax) + with_templates())
    shown = f"{number} ({heading})" if heading else number
    if parsed is not None:
        return AskedSection(number, shown)
    span = section_span(text, number, syntax)
    if span is None:
        raise no_such_section(ctx, title, number, revid)
    return AskedSection(number, shown, section_text(text, span))


def rendered_outline(ctx: ToolContext, title: str, **params: Any) -> list[Heading]:
    """The sections action=parse lists for a page (page=) or revision (oldid=), those that
    templates bring included."""
    return outline_of(parse_page(ctx, title, None, prop="sections", **params))


def pick_section(ctx: ToolContext, outline: Sequence[Heading], wanted: str, title: str,
                 with_templates: Callable[[], list[Heading]],
                 aliases: Callable[[], list[Heading]]) -> tuple[int, str]:
    """The number and heading of the one section of ``outline`` headed ``wanted``, matched
    without regard to case, surrounding space or markup. Headed nowhere: not_found, listing
    the headings (a heading a template brings, from ``with_templates``, is named with its page);
    headed more than once: invalid_input, listing those sections. Digits that head nothing are
    taken as the section number. ``aliases``: the same sections' other names (as rendered, as
    written), tried when no heading matches, so that a section is found by the name
    get-page-sections shows and by its source alike."""
    key = heading_key(wanted)
    own = [(n, h) for n, _, h, _ in outline if n is not None and heading_key(h) == key]
    if not own and not wanted.strip().isdigit():
        numbered = {n: h for n, _, h, _ in outline if n is not None}
        own = [(n, numbered[n]) for n in dict.fromkeys(
            n for n, _, h, _ in aliases() if n in numbered and heading_key(h) == key)]
    if not own and not wanted.strip().isdigit():  # a heading named with its footnote marks: Notes[1]
        bare = heading_key(wanted, marks=False)
        own = [(n, h) for n, _, h, _ in outline if n is not None and heading_key(h, marks=False) == bare]
    if len(own) == 1:
        return own[0][0], own[0][1]
    if own:
        parents = {n: parent for (n, *_), (parent, _) in zip(outline, heading_paths(
            [Section(n or 0, level, h) for n, level, h, _ in outline]))}
        raise invalid_input(f"{len(own)} sections of {title} are headed {wanted!r}: " + ", ".join(
            f"{n} ({h}" + (f", under {parents[n]})" if parents.get(n) else ")") for n, h in own)
            + ". Give the one meant by its number: section=N.")
    if wanted.strip().isdigit():
        return int(wanted), ""
    brought = [src for n, _, h, src in with_templates() if n is None and heading_key(h) == key]
    if brought and not brought[0]:  # MediaWiki names no page for an <h2> written in HTML
        raise not_found(f"The heading {wanted!r} in {title} is written in HTML (<h2>), which starts no section: "
                        "its text is part of the section before it, as get-page-sections shows.")
    if brought:
        raise not_found(f"The section headed {wanted!r} in {title} comes from the page {brought[0]}, which "
                        f"{title} transcludes, so it is read and changed there: call again with "
                        f"title={json.dumps(brought[0], ensure_ascii=False)}.")
    raise not_found(f"No section of {title} on {ctx.wiki.key} is headed {wanted!r}. "
                    f"Its sections: {outline_list(ctx, outline, title)}.")


def no_such_revision(ctx: ToolContext, revid: int) -> WikiError:
    return not_found(f"Revision {revid} not found on {ctx.wiki.key}. get-page-history lists a page's "
                     "revision IDs.")


def revision_of(page: dict[str, Any]) -> dict[str, Any]:
    return (page.get("revisions") or [{}])[0]


def main_slot(revision: dict[str, Any]) -> dict[str, Any]:
    return (revision.get("slots") or {}).get("main") or {}


def slot_text(ctx: ToolContext, revision: dict[str, Any], section: int | None, title: str) -> str:
    """The wikitext of a revision's main slot; MediaWiki marks a missing section, not errs."""
    slot = main_slot(revision)
    if slot.get("nosuchsection"):
        raise no_such_section(ctx, title, section, revision.get("revid"))
    return slot.get("content", "")


def continuation(ctx: ToolContext, *keys: str) -> dict[str, str]:
    """The API fields of the call's continueFrom, if any; it may hold only ``keys`` (decode_continuation)."""
    return decode_continuation(ctx.continue_from, keys) if ctx.continue_from else {}


def listing(data: dict[str, Any], rows: list[str], head: str | None, empty: str, item: str,
            tool_name: str) -> list[str]:
    """``head`` over a row each (``empty`` when there are none), then the 'More results available'
    marker when MediaWiki has more to give."""
    blocks = ["\n".join([head, *rows] if head else rows) if rows else empty]
    if data.get("continue"):
        blocks.append(more_results_marker(len(rows), item, tool_name, "continueFrom",
                                          encode_continuation(data["continue"])))
    return blocks


def outline_call(title: str) -> str:
    """The call that lists every section of a page a marker could list only some of (get-page-sections,
    offered wherever get-page is: they are of one toolset)."""
    return f"get-page-sections with {call_args(title=title)}"


def parse_page(ctx: ToolContext, title: str, section: int | None, **params: Any) -> dict[str, Any]:
    """A page or revision rendered (action=parse); a missing page or section says what there is."""
    try:
        return ctx.client.get({"action": "parse", "section": section, "disableeditsection": True,
                               "disablelimitreport": True, **params}).get("parse", {})
    except WikiError as error:
        if error.code == "nosuchsection":
            raise no_such_section(ctx, title, section, params.get("oldid")) from None
        if error.code == "missingtitle":
            if params.get("redirects"):  # to a page that does not exist?
                page, redirected = query_page(ctx, titles=title, redirects=True)
                check_page(ctx, page, title, redirected=redirected)
            raise missing_page(ctx, title) from None
        raise


def refuse_unknown_choice(ctx: ToolContext, kind: str, value: str | None, before: str) -> None:
    """Refuses, before anything is sent, a value of one of CHOICES' arguments that the wiki does not
    take, naming those it does; ``before`` opens the message. MediaWiki's own pass unasked, and
    so does any value when the wiki lists none (it judges them itself)."""
    if not value or value in STANDARD_CHOICES[kind]:
        return
    known = ctx.client.choices[kind]
    if known and value not in known:
        raise invalid_input(f"{before}{ctx.wiki.key} knows no {kind} {value!r} (its {kind}s: "
                            f"{', '.join(known)}).")


def is_revision_of(ctx: ToolContext, revid: int, page: dict[str, Any]) -> bool:
    """Whether revision ``revid`` belongs to ``page``: a base from another page would make
    MediaWiki merge against another text."""
    query = ctx.client.get({"action": "query", "revids": revid}).get("query", {})
    other = (query.get("pages") or [{}])[0]
    return not query.get("badrevids") and other.get("pageid") == page.get("pageid")


def revision_texts(ctx: ToolContext, *revids: int) -> dict[int, str]:
    """The wikitext of revisions, by revision ID (one request)."""
    query = ctx.client.get({"action": "query", "revids": list(dict.fromkeys(revids)), "prop": "revisions",
                            "rvprop": "ids|content", "rvslots": "main"}).get("query", {})
    return {r["revid"]: main_slot(r).get("content", "") for p in query.get("pages") or []
            for r in p.get("revisions") or []}


def names_text(names: list[str]) -> str:
    """'Admin', 'Admin and Editor', 'Admin, Editor and 127.0.0.1'."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def talk_title(ctx: ToolContext, title: str) -> str:
    """The talk page of ``title``: itself if it is one (odd namespace IDs), else the page of
    the same name in the namespace after its own."""
    namespace = ctx.site.namespace_of(title)
    if namespace > 0 and namespace % 2:
        return title
    talk = ctx.site.namespaces.get(namespace + 1) if namespace >= 0 else None
    if talk is None:
        raise invalid_input(f"{title!r} is in a namespace without talk pages (such as Special:).")
    return f"{talk}:{title.partition(':')[2].strip() if namespace else title}"
