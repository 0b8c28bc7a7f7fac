"""Read tools for revisions: get-revision, get-page-history and compare-pages."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from .diff import compact_diff, parse_diff_table
from .dispatch import ToolContext
from .errors import NEXT_STEP, WikiError, invalid_input, not_found, permission_denied
from .ledger import Shown
from .pages import (
    ContentArg,
    OffsetArg,
    SectionArg,
    TitleArg,
    asked_section,
    check_page,
    main_slot,
    no_such_revision,
    query_page,
    revision_of,
    slot_text,
)
from .read_pages import content_blocks, refuse_section_of_none, rendered
from .registry import Arg, name_arg, tool
from .render import labelled, more_results_marker, one_line, signed, utf8_len
from .sections import Section, html_sections, section_heading, wikitext_sections

#: The most wikitext a tool takes to diff or render: MediaWiki's default page size cap.
MAX_TEXT_CHARS = 2_000_000


@tool("get-revision", "Get revision", toolset="history", read_only=True,
      see={"for the latest revision": "get-page"})
def get_revision(
    ctx: ToolContext,
    revisionId: Annotated[int, Arg("Revision ID (get-page-history lists them).", minimum=1)],
    content: Annotated[Literal["source", "html", "text", "none"], ContentArg] = "source",
    section: Annotated[int | str | None, SectionArg] = None,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Returns a revision as wikitext, HTML or plain text, with its page, time, user and summary.
    Truncated at {content_max_bytes:bytes}; offset reads the rest."""
    refuse_section_of_none(content, section)
    number = None if isinstance(section, str) else section  # a heading is numbered from the whole text
    query = ctx.client.get({
        "action": "query", "revids": revisionId, "prop": "revisions|info", "rvslots": "main",
        "rvprop": "ids|timestamp|user|size|comment|flags|tags|contentmodel"
                  + ("|content" if content == "source" else ""),
        "rvsection": number if content == "source" else None,
    }).get("query", {})
    page: dict[str, Any] = next(iter(query.get("pages") or []), {})
    revision = revision_of(page)
    if query.get("badrevids") or revision.get("revid") != revisionId:
        raise no_such_revision(ctx, revisionId)
    title = page.get("title", "")
    latest = revisionId == page.get("lastrevid")
    if content == "none":  # its ID shown, as get-page's: the base of a write
        return ctx.reads.showed([revision_header(ctx, page, revision, section)],
                                Shown(title, revisionId, latest=latest, outline=False))
    if content in ("html", "text"):
        parsed, text, number, shown = rendered(ctx, title, content, section, oldid=revisionId)
        sections: Sequence[Section | tuple[int, str]] = html_sections(parsed)
    else:
        if "texthidden" in main_slot(revision) or "texthidden" in revision:
            raise permission_denied(f"The content of revision {revisionId} is hidden "
                                    "(revision deletion). " + NEXT_STEP["permission_denied"])
        number, shown, text = asked_section(ctx, title, section, text=slot_text(ctx, revision, number, title),
                                            revid=revisionId)
        sections = wikitext_sections(text, ctx.site.syntax)
    again = {**({} if content == "source" else {"content": content}),
             **({"section": number} if number is not None else {})}
    # its outline is the revision's: get-page-sections lists the latest one's
    blocks, piece = content_blocks(revision_header(ctx, page, revision, shown), text, offset, ctx.budget,
                                   "get-revision", sections=None if number is not None else sections,
                                   again=again or None)
    if content != "source":  # as get-page's: no wikitext to write back, of any revision; the latest's
        return ctx.reads.showed(blocks, Shown(title, revisionId, latest=latest, rendered=(text, piece.text)))
    # a truncated read of an old revision must not be written back either (update-page); a read of the
    # latest one is, like get-page's, the base of the next write
    return ctx.reads.showed(blocks, Shown(title, revisionId, text, (piece.start, piece.end), number,
                                          section_heading(text, 1, ctx.site.syntax) if number else None, latest))


def revision_header(ctx: ToolContext, page: dict[str, Any], revision: dict[str, Any],
                    section: int | str | None) -> str:
    revid, latest = revision.get("revid"), page.get("lastrevid")
    return labelled(
        ("Title", page.get("title")), ("Revision ID", revid),
        ("Parent revision ID", revision.get("parentid") or None),  # 0: the page's first revision
        ("Latest revision ID", f"{latest} (this one)" if latest == revid else latest),
        ("Timestamp", revision.get("timestamp")), ("User", revision_user(revision)),
        ("Edit summary", "(hidden)" if revision.get("commenthidden") else revision.get("comment")),
        ("Size", f"{revision.get('size', 0)} bytes"), ("Minor", "yes" if revision.get("minor") else None),
        ("Tags", ", ".join(revision.get("tags") or [])),
        ("Content model", main_slot(revision).get("contentmodel")), ("Section", section),
        ("URL", ctx.site.index_url(oldid=revid)))


def revision_user(revision: dict[str, Any]) -> str:
    return "(hidden)" if revision.get("userhidden") else revision.get("user", "")


HISTORY_LEGEND = ("revision ID | timestamp | user | size change | minor (only when minor) | "
                  "tags (only when any) | edit summary (quoted, only when any)")


@tool("get-page-history", "Get page history", toolset="history", read_only=True,
      see={"for content": "get-revision", "for what an edit changed": "compare-pages"})
def get_page_history(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    limit: Annotated[int, Arg("Most revisions.", minimum=1, maximum=50)] = 20,
    olderThan: Annotated[int | None, Arg("Older than this revision ID.", minimum=1)] = None,
    newerThan: Annotated[int | None, Arg("Newer than this revision ID.", minimum=1)] = None,
    tag: Annotated[str | None, name_arg("Only this change tag.")] = None,
    user: Annotated[str | None, name_arg("Only by this account.")] = None,
) -> list[str]:
    """Returns a page's revisions, newest first: ID, time, user, size change, summary; more with
    olderThan."""
    if olderThan is not None and newerThan is not None:
        raise invalid_input("Give olderThan or newerThan, not both: olderThan pages back in time, "
                            "newerThan forward.")
    anchor = olderThan or newerThan
    try:
        page, _ = query_page(ctx, titles=title, prop="revisions", rvlimit=limit + 2, rvstartid=anchor,
                             rvprop="ids|timestamp|user|size|comment|flags|tags", rvtag=tag, rvuser=user,
                             rvdir="newer" if newerThan else None)
    except WikiError as error:
        if error.code == "badid_rvstartid":
            raise not_found(f"Revision {anchor} does not exist on {ctx.wiki.key}; "
                            f"call get-page-history without {'olderThan' if olderThan else 'newerThan'} "
                            "for the latest revisions.") from None
        raise
    check_page(ctx, page, title)
    fetched = page.get("revisions") or []
    sizes = {r["revid"]: r.get("size", 0) for r in fetched}
    rows = [r for r in fetched if r["revid"] != anchor]
    more = len(rows) > limit
    rows = rows[:limit]
    unknown = [r["parentid"] for r in rows if r.get("parentid") and r["parentid"] not in sizes]
    if unknown:  # filtered by tag or user: the parents are not in the list
        parents = ctx.client.get({"action": "query", "revids": unknown, "prop": "revisions",
                                  "rvprop": "ids|size"}).get("query", {})
        sizes.update({r["revid"]: r.get("size", 0) for p in parents.get("pages") or []
                      for r in p.get("revisions") or []})
    if newerThan:
        rows.reverse()
    filters = "".join(f" {label} {value}" for label, value in (
        ("older than", olderThan), ("newer than", newerThan), ("tagged", tag), ("by", user)) if value)
    if not rows:
        return [f"No revisions of {page['title']}{filters}."]
    blocks = [f"Revisions of {page['title']}{filters}, newest first ({HISTORY_LEGEND}):\n"
              + "\n".join(history_row(r, sizes) for r in rows)]
    if more:
        param = "newerThan" if newerThan else "olderThan"
        blocks.append(more_results_marker(len(rows), "revision", "get-page-history", param,
                                          rows[0]["revid"] if newerThan else rows[-1]["revid"]))
    return blocks


def history_row(revision: dict[str, Any], sizes: Mapping[int, int]) -> str:
    parent = revision.get("parentid") or 0
    size = revision.get("size", 0)
    change = signed(size - sizes[parent]) if parent in sizes else "" if parent else signed(size)
    parts = [str(revision["revid"]), revision.get("timestamp", ""), revision_user(revision), change,
             "minor" if revision.get("minor") else "", row_tags(revision), row_summary(revision)]
    return " | ".join(p for p in parts if p)


def row_tags(row: Mapping[str, Any]) -> str:
    return "tags: " + ", ".join(row["tags"]) if row.get("tags") else ""


def row_summary(row: Mapping[str, Any]) -> str:
    """An edit summary as the last field of a row, quoted: a summary such as "minor" or one
    holding " | " then cannot pass for a flag or a column."""
    if row.get("commenthidden"):
        return "(summary hidden)"
    summary = one_line(row.get("comment", ""))
    return json.dumps(summary, ensure_ascii=False) if summary else ""


@tool("compare-pages", "Compare pages", toolset="history", read_only=True)
def compare_pages(
    ctx: ToolContext,
    fromRevision: Annotated[int | None, Arg("Old side: revision ID.", minimum=1)] = None,
    fromTitle: Annotated[str | None, Arg("Old side: page title (latest).", title=True)] = None,
    fromText: Annotated[str | None, Arg("Old side: wikitext.", max_length=MAX_TEXT_CHARS,
                                                max_length_listed=False)] = None,
    toRevision: Annotated[int | None, Arg("New side: revision ID.", minimum=1)] = None,
    toTitle: Annotated[str | None, Arg("New side: page title (latest).", title=True)] = None,
    toText: Annotated[str | None, Arg("New side: wikitext.", max_length=MAX_TEXT_CHARS,
                                              max_length_listed=False)] = None,
    includeDiff: Annotated[bool, Arg("false: counts only.")] = True,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Diffs two versions (revisions, pages or wikitext; text on one side at most): a unified diff,
    changed words as [-old-]{{+new+}}. Truncated at {content_max_bytes:bytes}."""
    sides = {side: compare_side(side, *values) for side, values in
             (("from", (fromRevision, fromTitle, fromText)), ("to", (toRevision, toTitle, toText)))}
    if fromText is not None and toText is not None:
        raise invalid_input("Cannot compare fromText with toText: one side must be a revision or a page "
                            "title (fromRevision, fromTitle, toRevision or toTitle).")
    result = ctx.client.get({"action": "compare", "prop": "diff|ids|title|size|timestamp|user",
                             **sides["from"], **sides["to"]}).get("compare", {})
    lines = parse_diff_table(result.get("body", ""))
    removed = sum(d.kind == "-" for d in lines)
    added = sum(d.kind == "+" for d in lines)
    size_from = result.get("fromsize", utf8_len(fromText) if fromText is not None else None)
    size_to = result.get("tosize", utf8_len(toText) if toText is not None else None)
    header = labelled(
        ("From", compare_label(result, "from", size_from)), ("To", compare_label(result, "to", size_to)),
        ("Size change", f"{signed(size_to - size_from)} bytes"
         if size_from is not None and size_to is not None else None),
        ("Changed lines", f"{removed} removed, {added} added" if removed or added else
         "none (the two sides are identical)"))
    if not includeDiff or not (removed or added):
        return [header]
    return content_blocks(header, compact_diff(lines), offset, ctx.budget, "compare-pages",
                          sections=None, again=None)[0]


def compare_side(side: str, revision: int | None, title: str | None, text: str | None) -> dict[str, Any]:
    names = [f"{side}Revision", f"{side}Title", f"{side}Text"]
    given = [n for n, v in zip(names, (revision, title, text)) if v is not None]
    if len(given) != 1:
        raise invalid_input(f"Must supply exactly one of {', '.join(names)}"
                            + (f"; got {' and '.join(given)}." if given else "."))
    if revision is not None:
        return {f"{side}rev": revision}
    if title is not None:
        return {f"{side}title": title}
    return {f"{side}slots": "main", f"{side}text-main": text}


def compare_label(result: dict[str, Any], side: str, size: int | None) -> str:
    title = result.get(f"{side}title")
    if title is None:
        return f"the supplied {side}Text ({size} bytes)"
    details = ", ".join(str(d) for d in (f"{size} bytes", result.get(f"{side}timestamp"),
                                         result.get(f"{side}user")) if d)
    return f"{title}, revision {result.get(f'{side}revid')} ({details})"
