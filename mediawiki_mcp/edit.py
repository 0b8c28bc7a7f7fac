"""The edit pipeline: every tool that changes a page's wikitext is a composer that edit_page reads
for, runs, checks and saves pinned to the revision it read."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from .diff import line_diff
from .dispatch import ToolContext
from .errors import MW_NEXT_STEP, WikiError, conflict, invalid_input, not_found
from .merge import merge3
from .pages import (
    asked_section,
    check_page,
    is_revision_of,
    main_slot,
    no_such_section,
    query_page,
    revision_of,
    revision_texts,
    why_missing,
)
from .read_history import revision_user
from .registry import Preview
from .render import counted, one_line, slice_content, utf8_len
from .saving import (
    dry_run_result,
    refuse_dropped_markup,
    refuse_forbidden_dry_run,
    refuse_partial_write,
    refuse_unread_base,
    refuse_unread_loss,
    removed_markup,
    removed_note,
    require_pinned_base,
    save_edit,
)
from .sections import (
    as_saved,
    followed_section,
    lost_subsections,
    numbered_headings,
    repeated_sections,
    replace_section,
    section_heading,
    section_list,
    section_span,
    section_text,
    shrunk_to_section,
    starts_heading,
    wikitext_sections,
)
from .siteinfo import Syntax

# Every tool that changes a page's wikitext is a composer that edit_page runs: it reads the
# page once and pins the base (read_for_edit), lets the tool compose the new text, applies
# the no-loss rules to text the model gave (refuse_lossy_write; refuse_partial_write at the
# read), then dry-runs the change through the checks the save would meet (refuse_unsaveable)
# or saves it (save_edit: a lost answer settled, the save recorded for this client). Undo and
# rollback use the wiki's own actions but share the dry run's checks and the save's steps.

@dataclasses.dataclass(frozen=True)
class EditTarget:
    """A page as an edit reads it: the page now, and the base the change is made on."""
    page: dict[str, Any]    # the query's page: info, the latest revision and its text
    title: str
    latest: int             # the latest revision; 0 when the page does not exist
    now: str                # the latest revision's text
    pin: int | None         # the base revision, sent as baserevid; None: unpinned (an addition)
    base_text: str          # the base revision's text, which MediaWiki splices a section into
    section: int | None     # the section changed, numbered as in the text it is made on
    old: str                # that section's text (or the page's), in the text the change is made on
    from_read: bool = False  # the base is this client's last read, not a latestId given
    #: a replacement with neither latestId nor a read of the page on record (refuse_unread_base, once
    #: the text shows whether it is a section read alone and written back as the page)
    unread: bool = False


@dataclasses.dataclass(frozen=True)
class Composed:
    """What a composer makes of an EditTarget: the new text of its section (or page), and how
    it goes to the wiki."""
    text: str
    note: str = ""  # labelled lines the answer ends with
    summary: str | None = None
    #: action=edit fields in place of text= (appendtext, section=new, minor), None to leave one out
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The model's own text, held to the no-loss rules with these overrides; None: the server made
    #: it (a find-replace, a category, a reply), so the model has not seen the page it leaves.
    given: Overrides | None = None
    #: The section composed, when the composer picks it (a talk topic) rather than the call.
    section: int | None = None
    #: A save of its own (a reply through DiscussionTools); when it answers None, the usual save.
    send: Callable[[], str | None] | None = None


def edit_page(ctx: ToolContext, title: str, compose: Callable[[EditTarget], Composed | str], kind: ChangeKind,
              section: int | str | None = None, latest_id: int | None = None) -> list[str] | str:
    """Reads the page as a change of ``kind`` does (read_for_edit), composes the change (or, with
    nothing to save, the answer itself), and dry-runs or saves it (finish_edit)."""
    target = read_for_edit(ctx, title, section, kind, latest_id)
    change = compose(target)
    return change if isinstance(change, str) else finish_edit(ctx, target, change)


@dataclasses.dataclass(frozen=True)
class ChangeKind:
    """A kind of change, and how it reads its page (read_for_edit). Its base, unless a latestId
    names one, is the revision this client last read (``base`` "read"), the latest ("latest"), or
    none ("now": an addition, which MediaWiki adds to the page as it then is, so parallel ones all
    land, made on the page now where any other is made on its base, whose section numbers the model
    read). ``own_text``: a redirect whose own text the model has not read is refused; ``whole``: the
    text replaced must have been read whole; ``follow``: edit a redirect's target; ``creates``: a new
    page, read only in a dry run (a save's createonly has the wiki refuse a title that exists)."""
    base: Literal["read", "latest", "now"] = "latest"
    must_exist: bool = True
    own_text: bool = False
    whole: bool = False
    follow: bool = False
    creates: bool = False
    props: Sequence[str] = ("info",)
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)


REPLACEMENT = ChangeKind(base="read", own_text=True, whole=True)  # update-page's text for a page or section
IN_PLACE = ChangeKind(own_text=True)  # in the latest text: update-page's find, a prepend below a heading
ADDITION = ChangeKind(base="now", own_text=True)  # to the page as it then is: an append, a prepend
CREATION = ChangeKind(must_exist=False, creates=True)  # create-page, copy-page to a free title
OVERWRITE = ChangeKind(base="read", must_exist=False)  # copy-page with overwrite
CATEGORY_CHANGE = ChangeKind(props=("categories", "info"), params={"cllimit": "max"})
NEW_TOPIC = ChangeKind(must_exist=False, follow=True, props=())  # on a talk page it makes if missing
REPLY = ChangeKind(follow=True, props=())


def read_for_edit(ctx: ToolContext, title: str, section: int | str | None, kind: ChangeKind,
                  latest_id: int | None = None) -> EditTarget:
    """The page and the base of a change of ``kind``, read once."""
    from_read, on_now, own_text = kind.base == "read", kind.base == "now", kind.own_text
    if kind.creates and not ctx.dry_run:
        return EditTarget({}, title, 0, "", None, "", None, "")
    # in a dry run, prop=info too, for whether the account may edit the page at all
    props = dict.fromkeys(["revisions", *kind.props, *(["info"] if ctx.dry_run else [])])
    page, _ = query_page(ctx, **{"prop": "|".join(props), "rvprop": "ids|content|user|size|timestamp",
                                 "rvslots": "main",
                                 "intestactions": ctx.dry_run and ("create" if kind.creates else "edit") or None, "titles": title,
                                 "redirects": kind.follow or None, **kind.params})
    title = page.get("title", title)
    if page.get("missing") and kind.must_exist:
        raise not_found(f"Page {title!r} does not exist on {ctx.wiki.key}; nothing was saved. "
                        + (why_missing(ctx, title) or "To make it, use create-page; search-page-by-prefix "
                           "finds existing titles."))
    check_page(ctx, page, title, kind.must_exist or not page.get("missing") or page.get("special", False))
    for action in page.get("actions") or {}:  # asked in a dry run
        refuse_forbidden_dry_run(ctx, page, action)
    current = revision_of(page)
    latest: int = current.get("revid", 0)
    now = main_slot(current).get("content", "")
    heading = section if isinstance(section, str) else None
    number = asked_section(ctx, title, section, text=now, revid=latest).number
    if number and heading is None and not from_read and latest_id is None:  # made on the page now
        number = as_read(ctx, title, number, now, latest)
    own_base = latest_id is None or latest_id == latest or is_revision_of(ctx, latest_id, page)
    read_base = ctx.reads.base(title, number, heading and section_heading(now, number, ctx.site.syntax)) \
        if from_read and not latest_id else None
    # Asked even when the page is no redirect: a write stops here when the read ledger's store is down.
    own_text_read = own_text and ctx.reads.base(title, None) is not None
    if own_text and page.get("redirect") and not (own_base and (latest_id or own_text_read)):
        refuse_redirect_edit(ctx, title)  # get-page showed the target's text, not this page's
    if not own_base and latest_id is not None:  # only a given latestId can be another page's
        raise invalid_input(f"latestId {latest_id} is not a revision of {title!r} (its latest is {latest}); "
                            "nothing was saved. Pass the revision ID get-page returned for this page.")
    pin = latest_id or read_base or (latest if not on_now and latest else None)
    base = (revision_texts(ctx, pin).get(pin, "") if pin and pin != latest and (not on_now or ctx.dry_run)
            else now)
    seen = now if on_now else base
    if heading is not None and seen is not now:  # numbered anew: a section above may have come or gone since
        number = asked_section(ctx, title, heading, text=seen, revid=pin).number
    span = None if number is None else section_span(seen, number, ctx.site.syntax)
    if number is not None and span is None:
        raise no_such_section(ctx, title, number, pin or latest)
    if kind.whole:
        require_pinned_base(ctx, title, number, latest_id)
    unread = kind.whole and latest_id is None and read_base is None
    if kind.whole and not unread:  # else refused whole in finish_edit (refuse_unread_base)
        refuse_partial_write(ctx, title, number)
    old = seen if span is None else section_text(seen, span)
    return EditTarget(page, title, latest, now, pin, base, number, old, bool(read_base), unread=unread)


def as_read(ctx: ToolContext, title: str, number: int, now: str, latest: int) -> int:
    """Section ``number``, as this client last read the page, numbered in its text ``now``
    (followed_section): an edit made on the page now (an addition, a find) goes where the model saw
    that section."""
    read = ctx.reads.base(title, number, outlined=True)
    if not read or read == latest:
        return number
    seen = revision_texts(ctx, read).get(read, "")
    found = followed_section(seen, now, number, ctx.site.syntax)
    if len(found) == 1:
        return found[0]
    heading = section_heading(seen, number, ctx.site.syntax)
    raise invalid_input(f"Nothing was saved: section {number} of {title!r}, as read here (revision {read}), is "
                        f"headed {heading!r}, and sections were added or removed since (revision {latest} now), "
                        f"where {'several' if found else 'no'} sections have that heading under the same one as "
                        "then. Read the page again with get-page, then call again with the section's number there.")


def finish_edit(ctx: ToolContext, target: EditTarget, change: Composed) -> list[str] | str:
    """The last steps of every edit: the no-loss rules for the model's own text, then the dry
    run, or the save."""
    section = target.section if change.section is None else change.section
    if target.unread:
        if section is None and not (change.given and change.given.remove_sections) \
                and shrunk_to_section(target.old, change.text, ctx.site.syntax) is not None:
            refuse_shrinking(target.title, target.old, change.text, ctx.site.syntax)  # a section's text
        refuse_unread_base(ctx, target.title, section, revision_of(target.page))
    if change.given is not None:
        if section is not None:
            refuse_repeated_sections(target.title, target.base_text, section, change.text, ctx.site.syntax)
        if change.text.strip() and ctx.reads.shows_rendered(target.title, change.text):
            raise rendered_text(target.title, "it is what get-page returned as content text or html")
        if section is None and target.latest:
            refuse_unread_loss(ctx, target, change.text)
        refuse_lossy_write(target.title, section, target.old, change.text, ctx.site.syntax, change.given)
        if section is None and not (change.given.remove_sections or change.given.blank):
            refuse_dropped_markup(ctx.site, target.title, target.old, change.text)
        if section is None and ctx.asks and not ctx.confirmed and not ctx.dry_run:
            ask_before_overriding(ctx, target, change.text)
    # those the composer's own answer names already (update-page-categories') once
    removed = [r for r in removed_markup(ctx.site, replaced_text(ctx, target, section), change.text)
               if r.strip("[]{}") not in change.note]
    if removed and target.latest:
        change = dataclasses.replace(change, note="\n".join(filter(None, [removed_note(removed), change.note])))
    if ctx.dry_run:
        after = page_after(ctx, target, section, change.text)
        refuse_unsaveable(ctx, target.title, after, target.page.get("contentmodel"),
                          change.fields.get("contentmodel"))
        merged = target.pin and target.pin != target.latest
        model = change.fields.get("contentmodel") or target.page.get("contentmodel")
        saved_text = pre_save_transformed(ctx, target.title, change.text, as_saved(after), model)
        blocks = dry_run_result(target.title, target.pin or target.latest or None, section, target.now,
                                saved_text, ctx.budget, merged_into=target.latest if merged else None)
        expanded = PRE_SAVE_SHOWN if saved_text != as_saved(after) else ""
        note = "\n".join(filter(None, [expanded, change.note]))
        return [f"{blocks[0]}\n\n{note}" if note else blocks[0], *blocks[1:]]
    saved = change.send() if change.send is not None else None
    if saved is None:
        fields = {"text": change.text, "section": section, "baserevid": target.pin,
                  **({"nocreate": True} if target.latest else {"createonly": True}), **change.fields}
        saved = save_edit_of(ctx, target, {k: v for k, v in fields.items() if v is not None}, change)
    return f"{saved}\n{change.note}" if change.note else saved


def replaced_text(ctx: ToolContext, target: EditTarget, section: int | None) -> str:
    """The text a change of ``section`` replaces: the target's, or, where the composer picked the
    section (a reply's topic) on a target read whole, that section's text in it."""
    if section is None or section == target.section:
        return target.old
    span = section_span(target.base_text, section, ctx.site.syntax)
    return section_text(target.base_text, span) if span else ""


#: What MediaWiki's pre-save transform expands in the text a save sends: signatures (~~~,
#: ~~~~, ~~~~~), subst: and safesubst:, the pipe trick ([[Help:Links|]]).
PRE_SAVE_MARKS = re.compile(r"~~~|subst:|\|\]\]", re.IGNORECASE)


PRE_SAVE_SHOWN = ("Expanded: signatures, subst: and the pipe trick are shown as the wiki expands them on saving "
                  "now (a signature's time is the save's)")


def pre_save_transformed(ctx: ToolContext, title: str, given: str, after: str, model: str | None) -> str:
    """The page text ``after`` as a save stores it, once the wiki expands what the text ``given``
    holds for its pre-save transform (PRE_SAVE_MARKS): one request, made only when it holds any."""
    if (model or "wikitext") != "wikitext" or not PRE_SAVE_MARKS.search(given):
        return after
    parsed = ctx.client.get({"action": "parse", "title": title, "text": after, "contentmodel": "wikitext",
                             "onlypst": True}).get("parse", {})
    return as_saved(str(parsed.get("text", after)))


def ask_before_overriding(ctx: ToolContext, target: EditTarget, new: str) -> None:
    """Puts to the person (a Preview), where they confirm, a whole-page write that the no-loss
    rules let through only because the call says so (blank, removeSections)."""
    try:
        refuse_lossy_write(target.title, None, target.old, new, ctx.site.syntax)
    except WikiError:
        what = "empty it" if not new.strip() else "drop the rest of its text"
        raise Preview("Nothing was saved.", f"replace all of {target.title!r} on {ctx.wiki.key} (revision "
                      f"{target.latest}, {counted(utf8_len(target.old), 'byte')}) with "
                      f"{counted(utf8_len(new), 'byte')} of new text, which would {what}.") from None


def save_edit_of(ctx: ToolContext, target: EditTarget, fields: Mapping[str, Any], change: Composed) -> str:
    """save_edit for the pipeline: an unpinned addition waits for this server's others to the
    same page, and a conflict with the client's last read says so."""
    # This server's own unpinned additions to one page go one at a time, so that many at once
    # do not pile up in the wiki's queue for its database lock (as SQLite's) past the timeout.
    serial = ctx.state.page_lock(ctx.wiki.key, target.title) if not target.pin else contextlib.nullcontext()
    try:
        with serial:
            return save_edit(ctx, target.title, fields, target.latest or None, change.summary,
                             composed=change.given is None)
    except WikiError as error:
        if error.code == "editconflict" and target.pin:
            which = "the one last read here" if target.from_read else "this change's base (latestId)"
            raise conflict(f"{target.title!r} changed since revision {target.pin}, {which}, on lines this edit "
                           "changes too; nothing was saved. " + changes_since(ctx, target)
                           + MW_NEXT_STEP["editconflict"], error.code) from None
        raise


def changes_since(ctx: ToolContext, target: EditTarget) -> str:
    """The revisions made since the base of a change that conflicts, with their authors and
    summaries, and their change as a compact diff (within a share of the budget): what the model
    must reconcile. Two requests, made only once the edit is refused."""
    try:
        since = revisions_since(ctx, target.title, target.pin or 0)
        newest = since[-1]["revid"] if since else target.latest
        now = target.now if newest == target.latest else revision_texts(ctx, newest).get(newest, target.now)
    except WikiError:
        return ""  # the conflict stands: what it is made of is a help, not the answer
    diff = line_diff(target.base_text, now)
    piece = slice_content(diff, 0, max(ctx.budget // 2, 1))
    cut = f"\n(diff cut at {piece.end} of {piece.total} bytes)" if piece.truncated else ""
    return (f"The edits made since: {revision_rows(since)}. Their change (revision {target.pin} to {newest}):\n"
            f"{piece.text}{cut}\n")


def revisions_since(ctx: ToolContext, title: str, revid: int) -> list[dict[str, Any]]:
    """The revisions of a page after ``revid``, oldest first, one more than CONFLICT_REVISIONS_NAMED at most."""
    page, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user|comment", rvdir="newer",
                         rvstartid=revid, rvlimit=CONFLICT_REVISIONS_NAMED + 2)
    return [r for r in page.get("revisions") or [] if r.get("revid") != revid]


def revision_rows(since: list[dict[str, Any]]) -> str:
    """'253 by Editor ("Port added"), 254 by Admin': revisions, their authors and summaries."""
    rows = [f"{r['revid']} by {revision_user(r)}" + (f' ("{one_line(r["comment"])}")' if r.get("comment") else "")
            for r in since[:CONFLICT_REVISIONS_NAMED]]
    return ", ".join(rows) + (" and later ones" if len(since) > CONFLICT_REVISIONS_NAMED else "")


def find_changed_since_read(ctx: ToolContext, target: EditTarget, find: str) -> str:
    """Of a find that does not occur in the page now: a sentence saying that it was in the revision
    this client last read, and who changed it since; '' when it was not."""
    read = ctx.reads.base(target.title, target.section)
    if not read or read in (target.latest, target.pin):
        return ""
    text = revision_texts(ctx, read).get(read, "")
    if find not in text:
        return ""
    return (f" It is in revision {read}, the one last read here, and was changed since, by the revisions "
            f"{revision_rows(revisions_since(ctx, target.title, read))}: read the page again with get-page and "
            "find the text as it is now.")


#: How many revisions made since its base a conflict names.
CONFLICT_REVISIONS_NAMED = 10


def page_after(ctx: ToolContext, target: EditTarget, section: int | None, new: str) -> str:
    """The page text a save of ``new`` (the text of ``section``, or of the page) leaves, made as
    MediaWiki makes it: the section spliced into the base revision, and that merged into the
    latest when the base is older (a conflict when they overlap)."""
    old = target.base_text
    span = None if section is None else section_span(old, section, ctx.site.syntax)
    mine = new if section is None else replace_section(old, span, new) if span else old
    if not target.pin or target.pin == target.latest:
        return mine
    merged = merge3(old, mine, target.now)
    if merged is None:
        raise conflict(f"Nothing was saved (dry run): {target.title!r} changed since revision {target.pin} "
                       f"(its latest is {target.latest}) on lines this edit changes too, so the save would be "
                       "refused as an edit conflict. " + changes_since(ctx, target) + MW_NEXT_STEP["editconflict"],
                       "editconflict")
    return merged


def refuse_unsaveable(ctx: ToolContext, title: str, text: str, model: str | None,
                      asked: str | None = None) -> None:
    """Refuses in a dry run what the wiki's own checks would refuse the save for (unsaveable).
    A save meets the wiki's checks themselves."""
    why = unsaveable(ctx, title, text, model, asked)
    if why:
        raise invalid_input(f"Nothing was saved (dry run): {why}, so the save would be refused.")


def unsaveable(ctx: ToolContext, title: str, text: str, model: str | None,
               asked: str | None = None) -> str | None:
    """Why the wiki would refuse to save ``text`` on a page of content ``model``, if it would: a
    JSON that does not parse on a JSON page (or one ``asked`` to be JSON), a text over its
    maximum page size."""
    if (asked or model) == "json":
        try:
            json.loads(text)
        except ValueError as error:
            return f"{title!r} holds JSON, and the new text is not valid JSON ({error})"
    limit = int(ctx.site.raw.get("maxarticlesize") or 0)
    size = utf8_len(as_saved(text))
    if limit and size > limit:
        return (f"the new text of {title!r} is {size} bytes, over {ctx.wiki.key}'s maximum page size of "
                f"{limit} bytes")
    return None


def refuse_redirect_edit(ctx: ToolContext, title: str) -> None:
    """Refuses an edit through a redirect page whose own text the model has not seen."""
    query = ctx.client.get({"action": "query", "titles": title, "redirects": True}).get("query", {})
    target = str((query.get("redirects") or [{}])[0].get("to", ""))
    raise invalid_input(f"Nothing was saved: {title!r} is a redirect to {target!r}, so get-page shows the "
                        "target's text under it. To change that text, call update-page with "
                        f"title={json.dumps(target, ensure_ascii=False)}. To change the redirect page "
                        "itself, first read it with get-page and followRedirects=false.")


@dataclasses.dataclass(frozen=True)
class Overrides:
    """What a call explicitly lets a replacement lose (update-page's flags of the same names)."""
    remove_sections: bool = False
    remove_subsections: bool = False
    remove_heading: bool = False
    blank: bool = False


def refuse_lossy_write(title: str, section: int | None, old: str, new: str, syntax: Syntax,
                       allow: Overrides = Overrides()) -> None:
    """The no-loss rules of a replacement of ``old`` (the page, or section ``section``) by
    ``new``: never rendered text for wikitext; no page blanked, or shrunk to one section's
    shape; no section's heading or subsections dropped; each unless ``allow`` says so."""
    refuse_rendered_text(title, new)
    if section is None:
        if not new.strip() and old.strip() and not allow.blank:
            raise invalid_input(f"Nothing was saved: the new text is empty, so saving it would blank "
                                f"{title!r} ({utf8_len(old)} bytes). To delete the page, use delete-page. To "
                                "leave it empty, call again with blank=true.")
        if not allow.remove_sections and not allow.blank:
            refuse_shrinking(title, old, new, syntax)
        return
    if section and not allow.remove_heading and starts_heading(old) and not starts_heading(new):
        heading = old.lstrip("\n").partition("\n")[0].strip()
        raise invalid_input(f"Nothing was saved: the new text of section {section} of {title!r} lacks its "
                            f"heading ({heading}), so saving it would merge the section into the one before. "
                            f"Start source with the heading (get-page with section={section} shows it), or "
                            "set removeHeading=true to drop it.")
    if section and not allow.remove_subsections and (lost := lost_subsections(old, new, syntax)):
        raise invalid_input(f"Nothing was saved: section {section} of {title!r} has subsections that the new "
                            f"text lacks ({', '.join(lost)}), so replacing it would delete them. Include "
                            "them in source, replace a subsection on its own (section=N), or set "
                            "removeSubsections=true to delete them.")


def refuse_repeated_sections(title: str, whole: str, section: int, new: str, syntax: Syntax) -> None:
    """Refuses new text for a section that holds sections the page has besides it (repeated_sections)."""
    twice = repeated_sections(whole, section, new, syntax)
    if twice:
        raise invalid_input(f"Nothing was saved: the new text of section {section} of {title!r} holds sections "
                            f"the page has besides it ({', '.join(twice)}), so saving it would put them on the "
                            "page twice. To replace them too, call update-page without section, with the whole "
                            f"page's text; to replace section {section} alone, send only its text.")


#: What get-page's rendered content carries and wikitext does not: the plain text's section
#: markers ("== History == (section 1)") and the HTML of MediaWiki's parser output.
RENDERED_MARKERS = re.compile(r"^(=+) .*? \1 \((?:section \d+|from [^\n]+)\)$|"
                              r"<div class=\"mw-parser-output\"|<span class=\"mw-headline\"", re.MULTILINE)


#: The labelled lines get-page's answer starts with (page_header), up to its revision ID.
ANSWER_HEADER = re.compile(r"\A\s*Title: [^\n]+\n(?:[A-Z][\w ]*: [^\n]*\n)*?Revision ID: \d+\n")


def refuse_rendered_text(title: str, text: str) -> None:
    """Refuses text that get-page rendered (content text or html) written as wikitext: its
    templates, references and categories are gone from it. Also text that starts with the
    header of get-page's answer, which would be saved in the page."""
    if ANSWER_HEADER.match(text):
        raise invalid_input(f"Nothing was saved: the new text for {title!r} starts with the header of "
                            "get-page's answer (Title:, Revision ID: and the lines between), which is not part "
                            "of any page's text. Send only the text after the header's blank line.")
    found = RENDERED_MARKERS.search(text)
    if found:
        raise rendered_text(title, f"it holds {found.group(0)[:60]!r}, as get-page's content text or html "
                                   "shows a page")


def rendered_text(title: str, sign: str) -> WikiError:
    """The refusal of rendered text written as wikitext; ``sign``: how it shows."""
    return invalid_input(f"Nothing was saved: the new text for {title!r} is rendered text, not wikitext "
                         f"({sign}), so saving it would drop the page's templates, references and categories. "
                         "Read the wikitext with get-page (content='source', the default) and change that.")


def refuse_shrinking(title: str, whole: str, new: str, syntax: Syntax) -> None:
    """Refuses a whole-page write of text shaped like one of the page's sections: most likely
    that section, read alone and written back without section=N."""
    section = shrunk_to_section(whole, new, syntax)
    if section is None and utf8_len(new) * 2 < utf8_len(whole) and not wikitext_sections(whole, syntax):
        raise invalid_input(f"Nothing was saved: the new text ({utf8_len(new)} bytes) would replace all of "
                            f"{title!r} ({utf8_len(whole)} bytes), less than half of it. To change part of "
                            "it, use update-page with find and replace. To make this text the whole page, "
                            "call again with removeSections=true.")
    if section is None:
        return
    sections = wikitext_sections(whole, syntax)
    span = section_span(whole, section, syntax) or (0, 0)
    others = [(0, "Lead")] * (section != 0) + numbered_headings(s for s in sections
                                                                if not span[0] <= s.start < span[1])
    shape = "no headings, as the lead" if section == 0 else f"the headings of section {section}"
    raise invalid_input(f"Nothing was saved: the new text ({utf8_len(new)} bytes, {shape}) would replace all "
                        f"of {title!r} ({utf8_len(whole)} bytes), deleting the rest of the page: sections "
                        f"{section_list(others)}. To change only that section, call update-page with "
                        f"section={section} and this source. To make this text the whole page, call again "
                        "with removeSections=true.")
