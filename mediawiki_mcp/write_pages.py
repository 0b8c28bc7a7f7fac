"""Write tools for whole pages: create-page, update-page, move-page, delete-page and undelete-page."""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from .diff import line_diff
from .dispatch import ToolContext
from .edit import (
    ADDITION,
    CREATION,
    IN_PLACE,
    REPLACEMENT,
    Composed,
    EditTarget,
    Overrides,
    changes_since,
    edit_page,
    find_changed_since_read,
    read_for_edit,
    refuse_rendered_text,
)
from .errors import MW_NEXT_STEP, WikiError, conflict, error_from_api, invalid_input
from .pages import (
    CommentArg,
    LatestIdArg,
    ReasonArg,
    SectionArg,
    TitleArg,
    check_page,
    missing_page,
    names_text,
    query_page,
    refuse_unknown_choice,
    resolve_page,
    talk_title,
)
from .read_history import revision_user
from .read_pages import batch_pages
from .registry import Arg, Preview, tool
from .render import counted, labelled, strip_tags
from .saving import (
    above_closing_links,
    after_lost_answer,
    change_tags,
    closes_page,
    edit_summary,
    keeping_closing_links,
    save_edit,
    settle_write,
)
from .sections import as_wiki_receives, separator, starts_heading
from .siteinfo import STANDARD_CHOICES


@tool("create-page", "Create page", toolset="edit",
      read_only=False, destructive=False, idempotent=True, dry_run=True,
      idempotency_key=True, watch=True, rights=("edit", "createpage"),
      see={"to change a page": "update-page"})
def create_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    source: Annotated[str, Arg("Content, usually wikitext.")],
    comment: Annotated[str | None, CommentArg] = None,
    contentModel: Annotated[str | None, Arg(
        ", ".join(STANDARD_CHOICES["content model"]) + "...; default: by namespace.",
        max_length=64)] = None,
) -> list[str] | str:
    """Creates a page; fails if the title exists or the text is empty."""
    source = as_wiki_receives(source)
    if not source.strip():  # as update-page refuses to blank a page, unless told
        raise invalid_input(f"Nothing was saved{' (dry run)' if ctx.dry_run else ''}: source is "
                            f"{'blank' if source else 'empty'}, so the page would be created empty. "
                            "Give the page's text as source.")
    refuse_unknown_choice(ctx, "content model", contentModel,
                          f"Nothing was saved{' (dry run)' if ctx.dry_run else ''}: ")

    def compose(target: EditTarget) -> Composed:
        if target.latest:  # read in a dry run only: a save's createonly has the wiki refuse it
            raise error_from_api("articleexists", f"The page {target.title!r} already exists.", ctx.wiki.key)
        return Composed(source, summary=edit_summary(ctx, comment), fields={"contentmodel": contentModel},
                        given=Overrides())
    return edit_page(ctx, title, compose, CREATION)


@tool("update-page", "Update page", toolset="edit",
      read_only=False, destructive=True, idempotent=False, dry_run=True, asks=True,
      idempotency_key=True, watch=True, rights=("edit",),
      see={"for new pages": "create-page", "for categories": "update-page-categories",
           "for many pages": "replace-in-pages"})
def update_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    source: Annotated[str | None, Arg(
        'The new page or section, or what mode adds.')] = None,
    section: Annotated[int | str | None, SectionArg] = None,
    mode: Annotated[Literal["replace", "append", "prepend"], Arg(
        "append/prepend: on its own line.")] = "replace",
    find: Annotated[str | None, Arg("Exact wikitext to change.")] = None,
    replace: Annotated[str | None, Arg("Replacement ('' deletes).")] = None,
    replaceAll: Annotated[bool, Arg("Every occurrence.")] = False,
    latestId: Annotated[int | None, LatestIdArg] = None,
    comment: Annotated[str | None, CommentArg] = None,
    minor: Annotated[bool, Arg("Minor edit.")] = False,
    bot: Annotated[bool, Arg("Bot edit.")] = False,
    removeSubsections: Annotated[bool, Arg("Lets a section lose subsections.")] = False,
    removeSections: Annotated[bool, Arg("Lets the page shrink to a section.")] = False,
    removeHeading: Annotated[bool, Arg("Lets a section lose its heading.")] = False,
    blank: Annotated[bool, Arg("Lets the page be emptied.")] = False,
) -> list[str] | str:
    """Changes an existing page: whole, a section, an addition (mode) or a passage (find, replace).
    Based on latestId, else on this client's last read of the page: others' edits to the same lines
    since then make a conflict. Refused: a replacement with neither; text from a truncated or
    rendered read (content text, html); a whole-page write dropping sections or half the page
    unless this client read the current page whole."""
    allow = Overrides(removeSections, removeSubsections, removeHeading, blank)
    check_update(source, section, mode, find, replace, replaceAll, allow)
    replacing = mode == "replace" and find is None
    source, find, replace = (None if t is None else as_wiki_receives(t) for t in (source, find, replace))

    if bot and not ctx.client.account.can("bot"):
        raise invalid_input(f"The account {ctx.client.account.name} lacks the bot right on {ctx.wiki.key}, "
                            "so bot=true cannot be honoured; nothing was saved. Call again without bot.")
    text = source or ""
    # A prepend to a section goes below its heading, as a section edit made on the base as a
    # replacement is; one that starts with a heading of its own is a section before it.
    in_section = mode == "prepend" and section not in (None, 0, "0") and not starts_heading(text)
    # A replacement is based on what the model saw; appends and prepends, unless pinned, on
    # nothing (MediaWiki adds them to the page as it then is, so parallel ones all land).
    kind = REPLACEMENT if replacing else IN_PLACE if mode == "replace" or in_section else ADDITION

    def compose(target: EditTarget) -> Composed:
        summary = edit_summary(ctx, comment)
        made = functools.partial(Composed, summary=summary)
        fields = {"minor": minor, "bot": bot}
        if find is not None:
            return made(replace_found(ctx, target, find, replace or "", replaceAll), fields=fields)
        if mode == "replace":
            kept, note = keeping_closing_links(ctx, target, text)
            return made(kept, note, fields=fields, given=allow)
        refuse_rendered_text(target.title, text)
        if mode == "append":
            added = separator(target.old, text) + text
            unpinned = {**fields, "appendtext": added, "text": None}
            at = closes_page(ctx, target) if target.latest else None
            if at is None:
                return made(target.old + added, fields=unpinned)
            # MediaWiki's appendtext adds below them: the text is sent whole on the latest revision
            # instead, made again on the page as it then is where an edit made since overlaps
            send = functools.partial(append_above_closing_links, ctx, target, text, summary, fields,
                                     lambda: read_for_edit(ctx, title, section, kind, latestId))
            return made(above_closing_links(ctx, target, added, at), fields=unpinned, send=send)
        if in_section:  # under its heading: MediaWiki's prependtext puts it above, in the section before
            heading, _, rest = target.old.partition("\n")
            body = rest.lstrip("\n")
            return made(f"{heading}\n{rest[:len(rest) - len(body)]}{text}{separator(text, body)}{body}",
                        fields=fields)
        added = text + separator(text, target.old)
        return made(added + target.old, fields={**fields, "prependtext": added, "text": None})
    return edit_page(ctx, title, compose, kind, section, latestId)


def check_update(source: str | None, section: int | str | None, mode: str, find: str | None,
                 replace: str | None, replace_all: bool, allow: Overrides) -> None:
    """Refuses update-page arguments that do not make one change: source or find with replace, and
    the Overrides only beside the replacement each lets through."""
    if find is not None:
        if source is not None or mode != "replace":
            raise invalid_input("find and replace change a passage in place: give them without source and mode.")
        if replace is None:
            raise invalid_input("find needs replace: the text to put in its place ('' deletes it).")
        if not find:
            raise invalid_input("Argument 'find' must not be empty.")
    elif source is None:
        raise invalid_input("Give source (the new text), or find and replace.")
    elif replace is not None or replace_all:
        raise invalid_input("replace and replaceAll go with find.")
    replacing = mode == "replace" and find is None
    for flag, given, whole in (("removeSubsections", allow.remove_subsections, False),
                               ("blank", allow.blank, True), ("removeSections", allow.remove_sections, True),
                               ("removeHeading", allow.remove_heading, False)):
        if given and not (replacing and (section is None) == whole):
            raise invalid_input(f"{flag} applies only to replacing " + (
                "the whole page (source without section)." if whole else "a section (section=N with source)."))


#: How many times an append above the links that close the page is made, each on the page as it then
#: is, while edits made meanwhile overlap it (a colleague's addition at the same place).
APPEND_ABOVE_TRIES = 3


def append_above_closing_links(ctx: ToolContext, target: EditTarget, text: str, summary: str | None,
                               fields: Mapping[str, Any], reread: Callable[[], EditTarget]) -> str | None:
    """Saves an append of ``text`` put above the links that close the page, on the revision read;
    where an edit made since overlaps it, again on the page read anew (``reread``). Where edits
    kept overlapping, it is appended as MediaWiki appends, below them, and the answer says so.
    None when the page no longer ends with such links: then it is appended as usual."""
    for attempt in range(APPEND_ABOVE_TRIES):
        if attempt:
            target = reread()
        at = closes_page(ctx, target)
        if at is None:
            return None
        new = above_closing_links(ctx, target, separator(target.old, text) + text, at)
        sent = {"text": new, "baserevid": target.latest, "nocreate": True, "section": target.section,
                **fields}
        try:
            saved = save_edit(ctx, target.title, {k: v for k, v in sent.items() if v is not None}, target.latest,
                              summary, composed=True)
        except WikiError as error:
            if error.code != "editconflict":
                raise
            continue
        return f"{saved}\nPlaced: above the categories and links that close the page"
    sent = {"appendtext": separator(target.old, text) + text, "nocreate": True, "section": target.section, **fields}
    with ctx.state.page_lock(ctx.wiki.key, target.title):
        saved = save_edit(ctx, target.title, {k: v for k, v in sent.items() if v is not None}, target.latest,
                          summary, composed=True)
    return (f"{saved}\nPlaced: below the categories and links that close the page, as others kept editing "
            "there meanwhile; to move it above them, read the page and edit it")


def replace_found(ctx: ToolContext, target: EditTarget, find: str, replace: str, every: bool) -> str:
    """The target's old text with ``find`` replaced, once (it must occur once) or everywhere. A
    find that was in the base revision but is gone from the latest was changed since: a
    conflict, showing the change and who made it."""
    old, base, latest, latest_text = target.old, target.pin or target.latest, target.latest, target.now
    where = repr(target.title) if target.section is None else f"section {target.section} of {target.title!r}"
    count = old.count(find)
    if count and base != latest and find not in latest_text:
        raise conflict(f"The text to find is in revision {base}, the base of this change, but no longer in "
                       f"{where} (revision {latest}): it was changed since. Nothing was saved. "
                       + (changes_since(ctx, target) or f"The changes since revision {base}:\n"
                          f"{line_diff(target.base_text, latest_text)[:2000]}\n")
                       + MW_NEXT_STEP["editconflict"], "editconflict")
    if count == 0:
        newer = f" It is in the latest revision, {latest}: pass that as latestId." \
            if base != latest and find in latest_text else find_changed_since_read(ctx, target, find)
        raise invalid_input(f"The text to find does not occur in {where} (revision {base}); nothing was "
                            "changed. find must match the wikitext exactly, whitespace and markup included: "
                            "get-page shows it." + (newer or other_spacing(old, find)))
    if count > 1 and not every:
        raise invalid_input(f"The text to find occurs {count} times in {where}; nothing was changed. "
                            "Include more of the surrounding text to pick one, or set replaceAll=true.")
    return old.replace(find, replace) if every else old.replace(find, replace, 1)


def other_spacing(text: str, find: str) -> str:
    """Where ``find`` occurs in ``text`` but for its spaces (a no-break space read as a space, a
    tab, two spaces), a sentence quoting the text there as JSON writes it; else ''."""
    words = find.split()  # at any of Unicode's spaces, U+00A0 among them
    found = len(words) > 1 and re.search(r"\s+".join(map(re.escape, words)), text)
    if not found:
        return ""
    odd = [c for c in dict.fromkeys(found.group()) if c.isspace() and c not in " \n"]
    names = ", ".join(f"U+{ord(c):04X} " + unicodedata.name(c, "TAB" if c == "\t" else "CONTROL") for c in odd)
    shown = "".join(f"\\u{ord(c):04x}" if c in odd else "\\n" if c == "\n" else c for c in found.group())
    return f' It occurs with other spacing{f" ({names})" if names else ""}: "{shown}"; give find so.'


@tool("move-page", "Move page", toolset="edit",
      read_only=False, destructive=True, idempotent=True, idempotency_key=True, asks=True,
      watch=True, rights=("move",))
def move_page(
    ctx: ToolContext,
    fromTitle: Annotated[str, Arg("Current title.", title=True)],
    toTitle: Annotated[str, Arg("New title.", title=True)],
    comment: Annotated[str | None, ReasonArg] = None,
    moveTalk: Annotated[bool, Arg("Also the talk page.")] = True,
    moveSubpages: Annotated[bool, Arg("Also subpages.")] = False,
    leaveRedirect: Annotated[bool, Arg(
        'Redirect at the old title.')] = True,
) -> str:
    """Renames a page, by default with its talk page. Fails, moving nothing, if the new title exists
    or the account cannot move as asked."""
    if not leaveRedirect and (why := ctx.client.cannot("suppressredirect")):
        raise invalid_input(f"{why} Nothing was moved. Call again without leaveRedirect=false to leave a "
                            "redirect.")
    if moveSubpages and (why := ctx.client.cannot("move-subpages")):
        raise invalid_input(f"{why} Nothing was moved. Call again without moveSubpages to move the page alone.")
    if moveSubpages and ctx.asks and not ctx.confirmed and (subpages := subpages_of(ctx, fromTitle)):
        named = ", ".join(subpages[:MOVE_SUBPAGES_NAMED]) + (
            f" and {len(subpages) - MOVE_SUBPAGES_NAMED} more" if len(subpages) > MOVE_SUBPAGES_NAMED else "")
        raise Preview("Nothing was moved.", f"move {fromTitle!r} to {toTitle!r} on {ctx.wiki.key} with its "
                      f"{counted(len(subpages), 'subpage')}: {named}.")
    params = {"action": "move", "from": fromTitle, "to": toTitle, "reason": edit_summary(ctx, comment),
              "movetalk": moveTalk, "movesubpages": moveSubpages, "noredirect": not leaveRedirect,
              "tags": change_tags(ctx), "watchlist": ctx.watch}
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params), lambda: moved_as_shown(ctx, fromTitle, toTitle),
            what="the page was moved", look="read both titles with get-page", absent=f"The wiki shows "
            f"{fromTitle!r} still in its place, so the page was not moved. Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":
            raise missing_page(ctx, fromTitle) from None
        raise
    moved = shown or answer.get("move", {})
    status = after_lost_answer("Moved.", "the wiki shows the page at its new title") if shown else "Moved."
    to = moved.get("to", toTitle)
    for pair in [moved, {"from": moved.get("talkfrom"), "to": moved.get("talkto")},
                 *(p for key in ("subpages", "subpages-talk") if isinstance(moved.get(key), list)
                   for p in moved[key])]:
        if pair.get("from") and pair.get("to"):
            ctx.reads.moved(pair["from"], pair["to"])
    talk_errors = [wiki_words(e) for e in moved.get("talkmove-errors") or []]
    source = moved.get("from", fromTitle)
    if talk_errors and ctx.site.namespace_of(to) % 2 and not ctx.site.namespace_of(source) % 2:
        # MediaWiki tried the new title's talk page, which is the new title itself, and says a page exists
        stays = f"{talk_title(ctx, source)} stays where it is: {to} is itself a talk page"
        talk_errors = [stays + ", which has none of its own"]
    subpages_moved, subpages_kept = subpage_moves(ctx, moved)
    return status + "\n" + labelled(
        ("From", source), ("To", to),
        ("Redirect left", "yes" if moved.get("redirectcreated") else "no"),
        ("Talk page moved", f"{moved['talkfrom']} -> {moved['talkto']}" if moved.get("talkto") else None),
        ("Talk page not moved", "; ".join(talk_errors)),
        ("Subpages moved", ", ".join(subpages_moved)), ("Subpages not moved", "; ".join(subpages_kept)),
        ("URL", ctx.site.page_url(to)))


#: The subpages a question about a move names; the rest are counted.
MOVE_SUBPAGES_NAMED = 20


def moved_as_shown(ctx: ToolContext, from_title: str, to_title: str) -> dict[str, Any] | None:
    """What the wiki shows after a move whose answer was lost, as the API answers a move: the
    page at its new title, its old title a redirect there or gone; None when the page is where
    it was (a refused move, the new title taken, say)."""
    query = ctx.client.get({"action": "query", "titles": [from_title, to_title], "redirects": True}
                           ).get("query", {})
    found = batch_pages(query, [from_title, to_title])
    (at_old, via), (at_new, _) = found[from_title], found[to_title]
    if at_new is None or (at_old is not None and at_old.get("pageid") != at_new.get("pageid")):
        return None
    return {"from": from_title, "to": at_new.get("title", to_title), "redirectcreated": bool(via)}


def subpage_moves(ctx: ToolContext, moved: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Each subpage a move moved (``A/1 -> B/1``), and each it left behind with the reason:
    MediaWiki moves them one by one, and refuses all of a page's subpages at once when the
    new namespace has none (naming none of them)."""
    done, kept = [], []
    for key, parent in (("subpages", moved.get("from")), ("subpages-talk", moved.get("talkfrom"))):
        result = moved.get(key) or []
        if isinstance(result, dict):
            errors = result.get("errors") or [{}]
            why = (f"the namespace of {moved.get('to')} has no subpages" if errors[0].get("code") ==
                   "namespace-nosubpages" else "; ".join(wiki_words(e) for e in errors))
            kept.append(f"{', '.join(subpages_of(ctx, parent) if parent else []) or 'its subpages'} ({why})")
            continue
        for subpage in result:
            if "to" in subpage:
                done.append(f"{subpage['from']} -> {subpage['to']}")
            else:
                why = "; ".join(wiki_words(e) for e in subpage.get("errors") or [])
                kept.append(f"{subpage.get('from')} ({why})")
    return done, kept


def subpages_of(ctx: ToolContext, title: str) -> list[str]:
    namespace = ctx.site.namespace_of(title)
    name = title.partition(":")[2] if namespace else title
    found = ctx.client.get({"action": "query", "list": "allpages", "apnamespace": namespace,
                            "apprefix": f"{name}/", "aplimit": "max"}).get("query", {}).get("allpages") or []
    return [p["title"] for p in found]


def wiki_words(error: Mapping[str, Any]) -> str:
    """One of MediaWiki's error texts inside a sentence: wiki links as their text."""
    text = WIKI_LINK.sub(lambda m: m.group(2) or m.group(1), str(error.get("text") or error.get("code", "")))
    return strip_tags(text)


WIKI_LINK = re.compile(r"\[\[:?([^|\]]*)(?:\|([^\]]*))?\]\]")


@tool("delete-page", "Delete page", toolset="admin",
      read_only=False, destructive=True, idempotent=True, idempotency_key=True, guarded=True,
      shows="the latest revision, size and revision count", rights=("delete",),
      see={"to restore it": "undelete-page"})
def delete_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Deletes a page with its history."""
    if not ctx.confirmed:
        query = ctx.client.get({"action": "query", "titles": title, "prop": "info|revisions",
                                "rvprop": "ids", "rvlimit": "max"})
        page, _ = resolve_page(query.get("query", {}))
        check_page(ctx, page, title)
        count = len(page.get("revisions") or [])
        revisions = f"more than {count} revisions" if query.get("continue") else counted(count, "revision")
        raise Preview("Nothing was deleted.", f"delete {page['title']!r} (latest revision "
                      f"{page.get('lastrevid')}, {counted(page.get('length', 0), 'byte')}, {revisions}"
                      f"{', a redirect' if page.get('redirect') else ''}) from {ctx.wiki.key}.")
    params = {"action": "delete", "title": title, "reason": edit_summary(ctx, comment),
              "tags": change_tags(ctx)}
    def gone_as_shown() -> dict[str, Any] | None:
        page, _ = query_page(ctx, titles=title)
        return {"title": page.get("title", title)} if page.get("missing") else None
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params), gone_as_shown, what="the page was deleted",
            look="read it with get-page", absent="The wiki shows the page still there, so it was not deleted. "
            "Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":  # deleted since the confirmation, or never there
            raise missing_page(ctx, title) from None
        raise
    deleted = shown or answer.get("delete", {})
    status = after_lost_answer("Deleted.", "the wiki shows the page deleted") if shown else "Deleted."
    return status + "\n" + labelled(("Title", deleted.get("title", title)), ("Log ID", deleted.get("logid")),
                                   ("Restore with", "undelete-page"))


@tool("undelete-page", "Undelete page", toolset="admin", read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, asks=True, rights=("undelete",))
def undelete_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Restores a deleted page with all its deleted revisions. Fails if the title has none."""
    if ctx.asks and not ctx.confirmed:
        page, _ = query_page(ctx, titles=title, prop="deletedrevisions", drvprop="ids|user", drvlimit="max")
        deleted = page.get("deletedrevisions") or []  # newest first; the first answer's, at most 500
        if len(deleted) >= UNDELETE_ASKS_FROM:
            authors = list(dict.fromkeys(revision_user(r) for r in deleted))
            by = names_text(authors[:5] + ["others"] * (len(authors) > 5))
            raise Preview("Nothing was restored.", f"restore {counted(len(deleted), 'deleted revision')} of "
                          f"{title!r} on {ctx.wiki.key} (revisions {deleted[-1].get('revid')} to "
                          f"{deleted[0].get('revid')}, by {by}).")
    params = {"action": "undelete", "title": title, "reason": edit_summary(ctx, comment),
              "tags": change_tags(ctx)}
    def page_as_shown() -> dict[str, Any] | None:
        page, _ = query_page(ctx, titles=title, prop="info")
        return None if page.get("missing") or not page else page
    answer, shown = settle_write(
        lambda: ctx.client.write(params), page_as_shown, what="the page was restored",
        look="read it with get-page", absent="The wiki shows the page still deleted, so it was not restored. "
        "Call again to retry.")
    restored, page = answer.get("undelete", {}), shown or query_page(ctx, titles=title, prop="info")[0]
    status = after_lost_answer("Restored.", "the wiki shows the page restored") if shown else "Restored."
    title = page.get("title", restored.get("title", title))
    return status + "\n" + labelled(("Title", title), ("Revisions restored", restored.get("revisions")),
                                    ("Revision ID", page.get("lastrevid")), ("URL", ctx.site.page_url(title)))


#: An undelete of this many revisions or more asks the person first, where they confirm.
UNDELETE_ASKS_FROM = 10
