"""Saving an edit: the edit request, its summary and tags, a lost answer settled, and the no-loss
rules that refuse a save which would drop unseen text or markup."""
from __future__ import annotations

import collections
import re
import typing
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .diff import line_diff
from .dispatch import ToolContext
from .errors import NEXT_STEP, ResponseLost, WikiError, invalid_input, permission_denied, upstream_failure
from .pages import resolve_page, revision_texts
from .read_origin import few
from .render import call_args, labelled, one_line, signed, slice_content, utf8_len
from .sections import PHP_WHITESPACE, as_saved, as_wiki_receives, lost_headings, section_span, separator
from .siteinfo import SiteInfo

if TYPE_CHECKING:
    from .edit import EditTarget


#: Appended to edit summaries unless a wiki's attributeEdits is false.
EDIT_SUMMARY_SUFFIX = " (via mediawiki-mcp)"


#: MediaWiki's limit on an edit summary, in characters (CommentStore); it cuts what is longer.
MAX_SUMMARY_CHARS = 500


def edit_summary(ctx: ToolContext, comment: str | None) -> str | None:
    """The summary a write sends: the comment, attributed unless the wiki is set not to be,
    cut with an ellipsis so that the attribution fits MediaWiki's limit. Without a comment,
    none, so that MediaWiki writes its own (a new page's start, a blanking, a deletion's)."""
    comment = as_wiki_receives(comment or "").strip()
    if not comment or not ctx.wiki.attribute_edits:
        return comment or None
    room = MAX_SUMMARY_CHARS - len(EDIT_SUMMARY_SUFFIX)
    if len(comment) > room:
        comment = comment[:room - 1].rstrip() + "…"
    return comment + EDIT_SUMMARY_SUFFIX


def change_tags(ctx: ToolContext) -> list[str] | None:
    return list(ctx.wiki.tags) or None


T = typing.TypeVar("T")


def settle_write(send: Callable[[], dict[str, Any]], check: Callable[[], T | None], *, what: str, look: str,
                 absent: str) -> tuple[dict[str, Any], T | None]:
    """``send()``'s answer (a write), and None; or, when the answer is lost, ``({}, check())``: what
    the wiki shows the write did, read instead of sending it again blindly. When the check finds
    nothing done, the error is ``absent``; when it fails, the error says that ``what`` ("the page
    was moved") could not be checked, and to ``look`` before calling again."""
    try:
        return send(), None
    except ResponseLost as lost:
        try:
            found = check()
        except WikiError as error:
            raise upstream_failure(f"{lost.message} Whether {what} could not be checked ({error.message}); "
                                   f"{look} before calling again.") from None
        if found is None:
            raise upstream_failure(f"{lost.message} {absent}") from None
        return {}, found


def after_lost_answer(status: str, shown: str) -> str:
    """``status`` ("Deleted.") of a write whose answer was lost, and what the wiki ``shown`` says
    it did instead (settle_write)."""
    return f"{status.rstrip('.')} ({LOST_ANSWER}; {shown})."


LOST_ANSWER = "the wiki's answer was lost"


EDIT_SHOWN_ONCE = "its history shows the edit once"


def saved_lines(ctx: ToolContext, title: str, revid: int, parent: int | None, status: str) -> str:
    diff = ctx.site.index_url(diff=revid, oldid=parent) if parent else ctx.site.index_url(oldid=revid)
    return status + "\n" + labelled(("Title", title), ("Revision ID", revid), ("Previous revision ID", parent),
                                    ("Size change", size_change(ctx, revid, parent)),
                                    ("URL", ctx.site.page_url(title)), ("Diff", diff))


def size_change(ctx: ToolContext, revid: int, parent: int | None) -> str:
    """A saved revision's size against its parent's, as the wiki stored them: the wiki's
    pre-save transform (signatures, subst:, trailing space) can change the text sent."""
    try:
        query = ctx.client.get({"action": "query", "revids": [parent, revid] if parent else revid,
                                "prop": "revisions", "rvprop": "ids|size"}).get("query", {})
    except WikiError as error:
        return f"unknown (the wiki did not say: {error.message})"
    sizes = {r["revid"]: r.get("size", 0) for p in query.get("pages") or [] for r in p.get("revisions") or []}
    if revid not in sizes or (parent and parent not in sizes):
        return "unknown (the wiki did not say)"
    old, new = sizes.get(parent, 0) if parent else 0, sizes[revid]
    return f"{signed(new - old)} bytes ({old} to {new})"


#: What an edit that changed nothing answers first.
UNCHANGED = "No change: the text is what the page already holds; nothing was saved."


def save_edit(ctx: ToolContext, title: str, fields: Mapping[str, Any], base: int | None,
              summary: str | None, done: str = "Saved.", composed: bool = False) -> str:
    """Sends one action=edit (send_edit) and describes the saved revision (``done`` says what
    it did)."""
    edit = send_edit(ctx, title, fields, base, summary, composed)
    title = edit.get("title", title)
    if edit.get("nochange"):
        return (UNCHANGED + "\n" + labelled(("Title", title), ("Revision ID", base), ("URL", ctx.site.page_url(title))))
    pin, parent = fields.get("baserevid"), edit.get("oldrevid") or None
    status = (after_lost_answer("Saved.", EDIT_SHOWN_ONCE) if edit.get("lost") else
              "Created." if edit.get("new") else done if not pin or pin == parent else
              f"Saved, merged with the edits made since revision {pin} (this change's base); read the page "
              "again before replacing it whole.")
    return saved_lines(ctx, title, edit["newrevid"], parent, status)


def send_edit(ctx: ToolContext, title: str, fields: Mapping[str, Any], base: int | None,
              summary: str | None, composed: bool = False) -> dict[str, Any]:
    """Sends one action=edit and returns MediaWiki's answer (its ``edit``). If that answer is
    lost, the page history tells whether the edit landed (the answer then says ``lost``): it
    is never sent twice. ``composed``: this server made the text (a find-replace, a reply), so
    the model has not seen the page it leaves."""
    data, landed = settle_edit(ctx, lambda: ctx.client.write(
        {"action": "edit", "title": title, **fields, "summary": summary, "tags": change_tags(ctx),
         "watchlist": ctx.watch}), title, base, summary, fields)
    if landed is not None:
        return landed
    edit = data.get("edit") or {}
    if edit.get("result") != "Success":
        if "captcha" in edit:
            raise permission_denied(f"{ctx.wiki.key} asks for a CAPTCHA to save this edit, which this server "
                                    "cannot solve; nothing was saved. The account needs the skipcaptcha "
                                    "right (for example the bot group).")
        detail = " ".join(f"{k}={v}" for k, v in edit.items() if k != "result")
        raise upstream_failure(f"The wiki did not save the edit ({detail or 'no reason'}). "
                               + NEXT_STEP["upstream_failure"])
    # an undo's text is the wiki's, made from edits the model may never have read: the text the model
    # read stays based on the revision it read, so that writing it back merges the undo in
    if not edit.get("nochange") and "undo" not in fields:
        pin, parent = fields.get("baserevid"), edit.get("oldrevid")
        ctx.reads.saved(edit.get("title", title), fields.get("section"), parent, edit["newrevid"],
                        "text" in fields and (pin or 0) == (parent or 0) and not composed)  # 0: created
    return edit


def settle_edit(ctx: ToolContext, send: Callable[[], dict[str, Any]], title: str, base: int | None,
                summary: str | None, fields: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """settle_write for an edit: when its answer is lost, the revision the page history shows it
    saved (find_landed_edit)."""
    # Not finding the edit is no proof it never lands: a slow wiki may still be saving it.
    return settle_write(send, lambda: find_landed_edit(ctx, title, base, summary, fields),
                        what="the edit was saved", look="read the page with get-page",
                        absent="The page's history shows no edit by this account "
                        f"{f'after revision {base}' if base else 'creating it'} yet. A slow wiki may still "
                        "save it: check with get-page-history before calling again.")


def find_landed_edit(ctx: ToolContext, title: str, base: int | None, summary: str | None,
                     fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The revision after ``base`` that this account saved with this summary, if any, as MediaWiki
    answers an edit (``lost`` set). Without a summary, or for an edit that adds text (parallel ones
    by this account may share a summary), it must also hold the text that ``fields`` sent, in its
    place. An undo sends no text (the wiki makes it): it must carry the wiki's mw-undo tag instead."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "meta": "userinfo",
                            "rvprop": "ids|user|comment|tags", "rvdir": "newer", "rvstartid": base,
                            "rvlimit": 20}).get("query", {})
    me = query.get("userinfo", {}).get("name")
    page, _ = resolve_page(query)
    undo = "undo" in fields
    candidates = [r for r in page.get("revisions") or [] if r.get("revid") != base and r.get("user") == me
                  and (not summary or stored_as(r.get("comment", ""), summary))
                  and (not undo or "mw-undo" in (r.get("tags") or []))]
    holds = sent_text_check(fields) if not undo and (not summary or "text" not in fields) else None
    if holds is not None and candidates:
        held = revision_texts(ctx, *(r["revid"] for r in candidates))
        candidates = [r for r in candidates if holds(held.get(r["revid"], ""))]
    found = next(iter(candidates), None)
    return found and {"result": "Success", "title": title, "newrevid": found["revid"],
                      "oldrevid": found.get("parentid") or None, "lost": True}


def sent_text_check(fields: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a revision's text shows the edit that ``fields`` sent: the appended text at its
    end, the prepended at its start, the section in it, or the whole text as it is."""
    if "appendtext" in fields:
        return lambda text: text.rstrip(PHP_WHITESPACE).endswith(as_saved(fields["appendtext"]))
    if "prependtext" in fields:
        return lambda text: text.startswith(fields["prependtext"])
    sent = as_saved(fields.get("text") or "")
    if fields.get("section") is not None:
        return lambda text: sent in text
    return lambda text: text.rstrip(PHP_WHITESPACE) == sent


def stored_as(stored: str, sent: str) -> bool:
    """Whether MediaWiki stored summary ``sent`` as ``stored``: in NFC, trimmed, after a section
    edit's ``/* heading */``, and cut to 500 characters with '...' when longer."""
    stored, sent = (unicodedata.normalize("NFC", s).strip() for s in (stored, sent))
    stored = re.sub(r"^/\*.*?\*/\s*", "", stored) if not sent.startswith("/*") else stored
    return stored == sent or stored.endswith("...") and sent.startswith(stored[:-3].rstrip())


def dry_run_result(title: str, base: int | None, section: int | None, old: str, new: str,
                   budget: int, merged_into: int | None = None) -> list[str]:
    """What a dry run answers: the diff between the page now and the page the save would
    leave, both whole, so its line numbers are compare-pages' after the save."""
    header = "Dry run: nothing was saved. The diff that would be saved:\n" + labelled(
        ("Title", title), ("Base revision ID", base), ("Section", section),
        ("Merged into", f"revision {merged_into}, the latest, as the save merges edits made since the base"
         if merged_into else None))
    diff = line_diff(old, new)
    if not diff:
        return [header + "\n\nNo change: the text is what the page already holds."]
    piece = slice_content(diff, 0, budget)
    blocks = [f"{header}\n\n{piece.text}"]
    if piece.truncated:
        blocks.append(f"Content truncated at {piece.end} of {piece.total} bytes. To review the rest, "
                      "dry-run smaller changes, such as one section at a time (section=N).")
    return blocks


def refuse_forbidden_dry_run(ctx: ToolContext, page: dict[str, Any], action: str) -> None:
    """Refuses a dry run of what the save would be refused for: a protected title or page, a
    blocked account (the query asked intestactions for ``action``)."""
    if (page.get("actions") or {}).get(action) is False:
        raise permission_denied(f"Nothing was saved (dry run): the account cannot {action} "
                                f"{page.get('title')!r} on {ctx.wiki.key} (protected, or the account is "
                                "blocked), so the save would be refused. Ask a wiki administrator, since "
                                f"this account cannot {action} it.")


def refuse_partial_write(ctx: ToolContext, title: str, section: int | None) -> None:
    """Refuses to write back a page or section that this caller's reads of the revision it last
    read did not show whole (a truncated read, and what it read on with offset)."""
    read = ctx.reads.unseen(title, section)
    if read is None:
        return
    what = f"Section {section} of {title!r}" if section is not None else f"Page {title!r}"
    start, end = read.unread(section) or (0, 0)
    shown = ", ".join(f"{first} to {last}" for first, last in read.ranges)
    if section is not None and read.section_ends:  # the page was read, in part
        seen = (f"the reads here of the page (revision {read.revid}) showed bytes {shown} of {read.total}, "
                f"not bytes {start} to {end}, in section {section}")
        rest = f"get-page with section={section}"
    else:
        if read.ranges == [(0, read.seen)]:
            seen = f"its last read here showed {read.seen} of {read.total} bytes"
        else:
            seen = (f"its reads here showed bytes {shown} of {read.total}, not "
                    + (f"the first {end}" if start == 0 else f"bytes {start} to {end}"))
        again = {k: v for k, v in (("section", section), ("offset", start or None)) if v is not None}
        rest = f"get-page with {call_args(**again)}" if again else "get-page"
        seen += f" (revision {read.revid})"
    raise invalid_input(f"Nothing was saved: {what} was not read whole ({seen}), so writing it back would "
                        "drop the part that was not read. To change part of it, use update-page with find "
                        f"and replace. To replace it whole, first read the rest ({rest}).")


def require_pinned_base(ctx: ToolContext, title: str, section: int | None, latest_id: int | None) -> None:
    """Refuses a whole-page or section write that no read of this caller's vouches for: without
    sessions, any read noted may be another client's; a read the full ledger dropped may have
    been a truncated one."""
    what = f"section {section} of {title!r}" if section is not None else repr(title)
    instead = ("To change part of the page, use update-page with find and replace, or replace one section "
               "(section=N) that get-page showed whole, with latestId.")
    if not ctx.reads.told_apart:
        if latest_id is None:
            raise invalid_input(f"Nothing was saved: this server cannot tell its clients apart (HTTP without "
                                f"sessions), so no read here shows which revision of {what} this text is based "
                                "on. Pass latestId, the revision ID get-page returned with the text. " + instead)
        if ctx.reads.read_cut(title, section, latest_id):
            raise invalid_input(f"Nothing was saved: revision {latest_id} of {what} was read in part "
                                "(truncated) through this server, which cannot tell its clients apart (HTTP "
                                "without sessions), so it cannot know that this text holds the rest. " + instead)
    if ctx.reads.forgotten(title, section):
        raise invalid_input(f"Nothing was saved: the record of this client's reads is full and no longer "
                            f"holds its read of {what}, so whether it was read whole is not known. Read it "
                            "again (get-page), then write it with the latestId that read returns.")


def refuse_unread_base(ctx: ToolContext, title: str, section: int | None, latest: Mapping[str, Any]) -> None:
    """Refuses a whole-page or section write without latestId from a client with no read of the page
    on record (a new session, after a restart): its text may be made from any revision, and saved on
    the latest it would undo the edits made since. The latest revision's author and size let the model
    tell whether its text was made from it."""
    what = f"section {section} of {title!r}" if section is not None else repr(title)
    revid = latest.get("revid")
    raise invalid_input(
        f"Nothing was saved: no read of {what} is on record for this client (a new session, or the page "
        "was not read here), so which revision this text was made from is not known, and saving it over "
        f"the latest would undo the edits made since. The latest is revision {revid}, by "
        f"{latest.get('user', 'an unknown user')} at {latest.get('timestamp', 'an unknown time')}, "
        f"{latest.get('size', 0)} bytes. If the text was made from that revision, call again with "
        f"latestId={revid}; if from an earlier one, pass that one's ID (the edits made since are then "
        "merged in, or refused as a conflict where they overlap); else read the page with get-page first.")


def refuse_unread_loss(ctx: ToolContext, target: EditTarget, new: str) -> None:
    """Refuses a whole-page write that would remove sections of its base, or more than half of its
    bytes, unless this client read that revision whole: a write made from a cut read, or from a read
    in another session, drops what the model never saw, whatever latestId it names."""
    base = target.pin or target.latest
    if ctx.reads.knows_whole(target.title, base):
        return
    old = target.old
    lost = lost_headings(old, new, ctx.site.syntax)
    shrunk = utf8_len(new) * 2 < utf8_len(old)
    if not lost and not shrunk:
        return
    going = [f"sections {few(lost, MAX_NAMED)}"] if lost else []
    going += [f"{utf8_len(old) - utf8_len(new)} of its {utf8_len(old)} bytes"] if shrunk else []
    raise invalid_input(
        f"Nothing was saved: this text would remove {' and '.join(going)} from {target.title!r} (revision "
        f"{base}), and this client has not read that revision whole, so the model has not seen all it would "
        "drop. To change part of the page, use update-page with find and replace, or section=N. To replace "
        "it whole, read it whole first with get-page (when the answer is cut, call again with the offset its "
        "marker names until the end), then call again with latestId left out or set to the revision ID that "
        "read showed.")


#: How many removed headings, templates or categories an answer names, the rest counted.
MAX_NAMED = 12


#: A template call's name ({{Infobox river|...}}, {{DEFAULTSORT:...}}), not a parameter ({{{1}}}).
TEMPLATE_CALL = re.compile(r"(?<!\{)\{\{(?!\{)\s*([^{}|\n<>\[\]]+?)\s*(?=\||\}\})")


#: A link with a prefix ([[Category:X|key]], [[de:Rhein]]) but not one led by a colon ([[:Category:X]]).
PREFIXED_LINK = re.compile(r"\[\[\s*([^\[\]|:\n]+?)\s*:\s*([^\[\]|\n]+?)\s*(?:\|[^\[\]\n]*)?\]\]")


HIDDEN_MARKUP = re.compile(r"<!--.*?(?:-->|$)|<(nowiki|pre)\b[^>]*>.*?(?:</\1\s*>|$)", re.DOTALL | re.IGNORECASE)


def template_calls_and_categories(site: SiteInfo, text: str) -> collections.Counter[str]:
    """The template calls ({{Name}}) and categories ([[Category:Name]]) of wikitext, as an answer
    names them, counted: what rendered text loses."""
    return collections.Counter(shown for shown, _ in named_markup(site, text))


def named_markup(site: SiteInfo, text: str) -> list[tuple[str, str]]:
    """Each template call and category of wikitext as an answer names it, with what makes it the
    same call when changed: a parser function's or magic word's name ({{DEFAULTSORT:B}} is
    {{DEFAULTSORT:A}} changed), a template's name, a category whole."""
    text = HIDDEN_MARKUP.sub("", text)
    found = []
    for name in TEMPLATE_CALL.findall(text):
        if name.lower().startswith(("subst:", "safesubst:")):
            continue
        shown = "{{" + as_named(name) + "}}"
        function, colon, _ = name.partition(":")
        # {{Template:Name}} and {{:Main page}} are templates, named by the whole
        is_function = colon and function.strip() and not site.namespace_of(name)
        found.append((shown, function.strip().lower() if is_function else shown))
    category = site.namespaces.get(14, "Category")
    for prefix, name in PREFIXED_LINK.findall(text):
        if site.namespace_ids.get(prefix.replace("_", " ").lower()) == 14:
            shown = f"[[{category}:{as_named(name)}]]"
            found.append((shown, shown))
    return found


def as_named(name: str) -> str:
    """A page name as the wiki names it: spaces for underscores, one at a time, first letter capital."""
    name = " ".join(name.replace("_", " ").split())
    return name[:1].upper() + name[1:]


def removed_markup(site: SiteInfo, old: str, new: str) -> list[str]:
    """The template calls and categories of ``old`` that ``new`` has fewer of (each once): a call
    whose argument changed ({{DISPLAYTITLE:Foo}} to {{DISPLAYTITLE:Bar}}) is not removed."""
    kept = collections.Counter(same for _, same in named_markup(site, new))
    removed = []
    for shown, same in named_markup(site, old):
        if kept[same]:
            kept[same] -= 1
        elif shown not in removed:
            removed.append(shown)
    return removed


def removed_note(removed: Sequence[str]) -> str:
    """The line of a write's answer that names the template calls and categories it removes."""
    return f"Removed: {few(list(removed), MAX_NAMED)}" if removed else ""


def refuse_dropped_markup(site: SiteInfo, title: str, old: str, new: str) -> None:
    """Refuses whole-page text that keeps none of the template calls and categories the page has:
    rendered text (get-page's content text) with its markers removed looks so, whichever session
    read it."""
    had = template_calls_and_categories(site, old)
    if not had or not new.strip() or template_calls_and_categories(site, new) & had:
        return
    raise invalid_input(
        f"Nothing was saved: the new text keeps none of the template calls and categories {title!r} has "
        f"({few(list(had), MAX_NAMED)}), as rendered text (get-page with content='text') would not: saved "
        "as wikitext, it would drop them all. Read the wikitext with get-page (content='source', the "
        "default) and change that. To remove them all the same, call again with removeSections=true.")


#: What may close a page after its text: links ([[Category:X|key]], [[de:Rhein]]), a default sort key.
CLOSING_ITEM = re.compile(PREFIXED_LINK.pattern + r"|\{\{\s*(DEFAULTSORT|DEFAULTSORTKEY|DEFAULTCATEGORYSORT)"
                          r"\s*:[^{}\n]*\}\}")


#: An interlanguage link's prefix: a language code ([[de:Rhein]], [[zh-yue:...]]).
LANGUAGE_PREFIX = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})*")


def is_closing_item(site: SiteInfo, found: re.Match[str]) -> bool:
    """Whether a CLOSING_ITEM match is a category, an interlanguage link or a default sort key."""
    if found.group(3):
        return True
    prefix = found.group(1).replace("_", " ").lower()
    namespace = site.namespace_ids.get(prefix)
    return namespace == 14 or namespace is None and bool(LANGUAGE_PREFIX.fullmatch(prefix))


def closing_links(site: SiteInfo, text: str) -> int | None:
    """Where the lines of categories, interlanguage links and default sort key that close ``text``
    start (a character index), if it ends with some: what a reader of the last section sees at its
    end but belongs to the page."""
    def closing_only(line: str) -> bool:  # blank, or nothing but closing items and comments
        return not CLOSING_ITEM.sub(lambda found: "" if is_closing_item(site, found) else found.group(0),
                                    HIDDEN_MARKUP.sub("", line)).strip()
    lines = text.rstrip(PHP_WHITESPACE).split("\n")
    first = len(lines)
    while first and closing_only(lines[first - 1]):
        first -= 1
    while first < len(lines) and not lines[first].strip():
        first += 1
    block = "\n".join(lines[first:])
    if first == len(lines) or not any(is_closing_item(site, f) and not f.group(3)
                                      for f in CLOSING_ITEM.finditer(HIDDEN_MARKUP.sub("", block))):
        return None
    return len("\n".join(lines[:first])) + (1 if first else 0)


def has_closing_items(site: SiteInfo, text: str) -> bool:
    return any(is_closing_item(site, f) for f in CLOSING_ITEM.finditer(HIDDEN_MARKUP.sub("", text)))


def closes_page(ctx: ToolContext, target: EditTarget) -> int | None:
    """Where the links that close the page start in the text an edit changes (closing_links), when
    that text is the page's end (the page, or its last section)."""
    if target.section is not None:
        span = section_span(target.base_text, target.section, ctx.site.syntax)
        if not span or span[1] < utf8_len(target.base_text):
            return None
    return closing_links(ctx.site, target.old)


def keeping_closing_links(ctx: ToolContext, target: EditTarget, new: str) -> tuple[str, str]:
    """New text for the page's last section, with the categories and interlanguage links that close
    the page kept below it when it has none of its own (the model read them as the section's end,
    and rewrote the section's prose); and a note saying so."""
    at = None if target.section is None else closes_page(ctx, target)
    # rendered text is left as given, for finish_edit to recognise and refuse
    if at is None or has_closing_items(ctx.site, new) or ctx.reads.shows_rendered(target.title, new):
        return new, ""
    block = target.old[at:]
    note = (f"Kept: {one_line(block)} (they close the page, and the text of section {target.section}, its "
            "last, had none; to change them, give them in source, or use update-page-categories)")
    return new.rstrip(PHP_WHITESPACE) + "\n\n" + block, note


def above_closing_links(ctx: ToolContext, target: EditTarget, added: str, at: int) -> str:
    """The text of an append, put above the links that close the page (at ``at`` in the text changed)."""
    body, block = target.old[:at].rstrip(PHP_WHITESPACE), target.old[at:]
    text = added.lstrip("\n")
    return f"{body}{separator(body, text)}{text}\n\n{block}"
