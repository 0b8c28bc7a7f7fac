"""replace-in-pages: one find and replace across many pages, previewed, then saved page by page."""
from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import re
from typing import Annotated, Any

from .diff import line_diff
from .dispatch import ToolContext
from .edit import unsaveable
from .errors import WikiError, invalid_input, not_found
from .pages import CommentArg, TitlesArg, invalid_reason, main_slot, revision_of
from .read_pages import batch_pages
from .read_search import run_regex
from .registry import Arg, Preview, tool
from .render import call_args, counted, labelled, one_line, slice_content, title_in_namespace, utf8_len
from .saving import EDIT_SHOWN_ONCE, LOST_ANSWER, edit_summary, removed_markup, removed_note, send_edit
from .sections import as_saved, as_wiki_receives
from .write_everyday import REDIRECT_TEXT


@tool("replace-in-pages", "Replace in pages", toolset="edit",
      read_only=False, destructive=True, idempotent=False,
      dry_run=True, dry_run_default=True, idempotency_key=True, asks=True, rights=("edit",),
      see={"for one page": "update-page"})
def replace_in_pages(
    ctx: ToolContext,
    find: Annotated[str, Arg("Exact wikitext, or a regular expression.")],
    replace: Annotated[str, Arg("Replacement; '' deletes; \\1 or $1 is a group.")],
    titles: Annotated[list[str] | None, TitlesArg] = None,
    category: Annotated[str | None, Arg("Or a category's members.", title=True)] = None,
    regex: Annotated[bool, Arg("find is a Python regular expression.")] = False,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str]:
    """Replaces find in up to 50 pages; by default a dry run showing each page's diff, then
    dryRun=false saves, skipping pages changed since the preview."""
    if (titles is None) == (category is None):
        raise invalid_input("Give titles or category (one of them): the pages to change.")
    if not find:
        raise invalid_input("Argument 'find' must not be empty.")
    find, replace = as_wiki_receives(find), as_wiki_receives(replace)
    change = json.dumps([find, replace, regex], ensure_ascii=False)  # what the ledger knows its previews by
    template = regex_template(find, replace) if regex else None  # refused before any page is read
    pages = [replaced(ctx, title, page, why, find, replace, template) for title, page, why
             in pages_to_change(ctx, titles, category)]
    if ctx.dry_run:
        return preview_replacements(ctx, pages, change, category)
    changing = [page for page in pages if page.changes]
    if ctx.asks and not ctx.confirmed and changing:  # the person picks the pages to save
        rows = "; ".join(f"{p.title} ({counted(p.count, 'replacement')}, revision {p.revid}"
                         f"{'; ' + removed_note(p.removed) if p.removed else ''})" for p in changing)
        how = " (a regular expression)" if regex else ""
        raise Preview("Nothing was saved.", f"replace {as_typed(find)} with {as_typed(replace)}{how} in "
                      f"{counted(len(changing), 'page')} on {ctx.wiki.key}: {rows}.", [p.title for p in changing])
    return save_replacements(ctx, pages, change, edit_summary(ctx, comment), ctx.picked)


def as_typed(text: str) -> str:
    """``text`` quoted for a person to check, as it was written: repr, but with its backslashes
    single, so that a regular expression's \\b or a group's \\1 reads as typed (a newline still
    shows as \\n, which a regular expression reads alike)."""
    return repr(text).replace("\\\\", "\\")


@dataclasses.dataclass(frozen=True)
class PageChange:
    """One page of a replace across pages: why it cannot be changed (None: it can), the latest
    revision as read, its text, the text with the replacements, and how many; ``removed``: the
    template calls and categories the replacements remove."""
    title: str
    why: str | None
    revid: int = 0
    old: str = ""
    new: str = ""
    count: int = 0
    removed: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return bool(self.count) and as_saved(self.new) != self.old


def pages_to_change(ctx: ToolContext, titles: list[str] | None,
                    category: str | None) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    """Each page to change, in one query (more if the wiki splits the answer): its title, the
    page with its latest revision's text, and why it cannot be changed, if so."""
    params: dict[str, Any] = {"action": "query", "prop": "revisions", "rvprop": "ids|content",
                              "rvslots": "main"}
    if category:
        category = title_in_namespace(ctx.site, category, 14)
        params.update(generator="categorymembers", gcmtitle=category, gcmlimit=ctx.state.pages_per_call)
    else:
        params["titles"] = titles = list(dict.fromkeys(titles or []))
    normalized: list[dict[str, str]] = []
    by_key: dict[Any, dict[str, Any]] = {}
    data: dict[str, Any] = {"continue": {}}
    while "continue" in data and not data.get("batchcomplete"):  # the wiki sends as much text as fits
        data = ctx.client.get({**params, **data["continue"]})
        normalized += data.get("query", {}).get("normalized") or []
        for page in data.get("query", {}).get("pages") or []:
            known = by_key.setdefault(page.get("pageid") or page.get("title"), {**page, "revisions": []})
            known["revisions"] += page.get("revisions") or []
    if category and "gcmcontinue" in data.get("continue", {}):
        most = ctx.state.pages_per_call
        raise invalid_input(f"{category} has more than {most} member pages; replace-in-pages changes at most "
                            f"{most} a call. get-category-members lists them: pass them as titles, {most} at a time.")
    if category:
        if not by_key:
            raise not_found(f"{category} has no member pages on {ctx.wiki.key}. search-page-by-prefix with "
                            "namespace=14 finds existing categories.")
        return [(page["title"], page, None) for page in sorted(by_key.values(), key=lambda p: p["title"])]
    found = batch_pages({"normalized": normalized, "pages": list(by_key.values())}, titles or [])
    result: dict[str, tuple[str, dict[str, Any] | None, str | None]] = {}
    for asked, (page, _) in found.items():
        title = page.get("title", asked) if page else asked
        why = ("on another wiki (an interwiki prefix)" if page is None or "interwiki" in page else
               f"not a valid title ({invalid_reason(page)})" if page.get("invalid") else
               "a special page, which cannot be edited" if page.get("special") else
               "does not exist" if page.get("missing") else None)
        result.setdefault(title, (title, None if why else page, why))
    return list(result.values())


def replaced(ctx: ToolContext, title: str, page: dict[str, Any] | None, why: str | None, find: str,
             replace: str, template: str | None) -> PageChange:
    """A page's change (``template``: of the regular expression ``find``, regex_template's); one the
    wiki's checks would refuse to save is skipped, saying why."""
    slot = main_slot(revision_of(page or {}))
    text = slot.get("content", "")
    if template is None:
        new, count = text.replace(find, replace), text.count(find)
    elif page is None:
        new, count = text, 0
    else:
        # an empty match is left alone, as find-in-page shows none (x* would put the replacement
        # between every two characters)
        substituted = run_regex(find, text, ctx.state.regex_seconds, template)
        if isinstance(substituted, str):
            raise invalid_regex(substituted)
        new, count = substituted
    if refused := count and page is not None and unsaveable(ctx, title, new, slot.get("contentmodel")):
        return PageChange(title, f"the wiki would not save the change: {refused}")
    if not count and (redirect := REDIRECT_TEXT.match(text)):  # get-page showed its target's text under it
        to = json.dumps(redirect.group(1).strip(), ensure_ascii=False)
        why = why or f"a redirect to {to}, whose own text has no match; to change that page, pass {to}"
    removed = tuple(removed_markup(ctx.site, text, new)) if count else ()
    return PageChange(title, why, int(revision_of(page or {}).get("revid", 0)), text, new, count, removed)


def regex_template(find: str, replace: str) -> str:
    """The replacement template (dollar_groups) of the regular expression ``find``; invalid_input
    when either is not valid."""
    try:
        return dollar_groups(re.compile(find), replace)
    except (re.error, IndexError) as error:
        raise invalid_regex(error) from None


def invalid_regex(error: object) -> WikiError:
    """The refusal of a find or replacement that is not a valid regular expression (what Python said)."""
    return invalid_input(f"find or replace is not a valid regular expression here: {error}. Nothing was changed.")


def dollar_groups(pattern: re.Pattern[str], replace: str) -> str:
    """``replace`` as a template for ``pattern``: $1 and ${name} (as JavaScript and PCRE write a
    group) are that group where ``pattern`` has it; any other $ is text. A group the pattern lacks
    raises re.error or IndexError, on every page, matched or not."""
    def group(mark: re.Match[str]) -> str:
        name = mark.group(1) or mark.group(2)
        known = int(name) <= pattern.groups if name.isdigit() else name in pattern.groupindex
        return rf"\g<{name}>" if known else mark.group()
    template = re.sub(r"\$(?:(\d+)|\{(\w+)\})", group, replace)
    pattern.sub(template, "")
    return template


def preview_replacements(ctx: ToolContext, pages: list[PageChange], change: str,
                         category: str | None) -> list[str]:
    """The dry run: the diff of each page that would change, as many as the budget holds, and
    the rest named; each page's revision is noted, so that the save skips a page changed since."""
    diffs: dict[str, str] = {}
    for page in pages:
        if page.why is None:
            ctx.reads.previewed(page.title, change, page.revid)
        if page.changes:
            removed = f"\n{removed_note(page.removed)}" if page.removed else ""
            diffs[page.title] = (f"{page.title} | {counted(page.count, 'replacement')} | base revision ID "
                                 f"{page.revid}{removed}\n{line_diff(page.old, as_saved(page.new))}")
    save = ("There is nothing to save." if not diffs else
            f"No call of replace-in-pages saves them from here. {ctx.unconfirmable} The person can also "
            "make these changes on the wiki themselves." if ctx.unconfirmable else
            "To save them, call replace-in-pages again with dryRun=false; a page changed since this preview is "
            "then skipped.")
    head = (f"Dry run: nothing was saved. {len(diffs)} of {counted(len(pages), 'page')} would change "
            f"({counted(sum(p.count for p in pages if p.changes), 'replacement')}). {save}\n"
            + labelled(("Unchanged (no match)", ", ".join(p.title for p in pages
                                                          if not p.why and not p.changes)),
                       ("Skipped", "; ".join(f"{p.title} ({p.why})" for p in pages if p.why))))
    ends = list(itertools.accumulate(utf8_len(text) for text in diffs.values()))
    fit = bisect.bisect_right(ends, ctx.budget)  # the diffs that fit whole, in order
    shown, used = list(diffs.values())[:fit], ends[fit - 1] if fit else 0
    left = list(diffs)[fit:]
    if left and not shown:  # not even the first diff fits: it is cut, and named with the rest
        piece = slice_content(diffs[left[0]], 0, ctx.budget)
        shown, used = [piece.text], piece.end
    blocks = ["\n\n".join([head.rstrip(), *shown])]
    if left:
        instead = " in place of category" if category else ""
        blocks.append(f"Content truncated at {used} of {sum(utf8_len(t) for t in diffs.values())} bytes. To "
                      f"review the diffs of {', '.join(left)}, call replace-in-pages again with "
                      f"{call_args(titles=left)}{instead}.")
    return blocks


def save_replacements(ctx: ToolContext, pages: list[PageChange], change: str,
                      summary: str | None, picked: frozenset[str] | None = None) -> list[str]:
    """Saves each page that changes on its own, pinned to the revision read, one row each, but
    those held_back; a wiki that throttles stops it."""
    rows: list[str] = []
    stopped: WikiError | None = None
    left: list[str] = []  # the titles not saved from the one it stopped at
    saved = 0
    # Every preview is looked up before the first save: a store that fails later stops nothing midway.
    previews = [ctx.reads.preview(page.title, change) or (None, None) for page in pages]
    for number, (page, (previewed, saved_as)) in enumerate(zip(pages, previews), 1):
        outcome = "not attempted" if stopped else held_back(page, previewed, saved_as, picked)
        if outcome is None:
            fields = {"text": page.new, "nocreate": True, "baserevid": page.revid}
            try:
                edit = send_edit(ctx, page.title, fields, page.revid, summary, composed=True)
            except WikiError as error:
                # the wiki throttles this account, or does not answer as it should: the pages after
                # would fare no better
                if error.category in ("rate_limited", "upstream_failure", "authentication"):
                    stopped, left = error, [p.title for p in pages[number - 1:]]
                outcome = f"{'failed' if stopped else 'skipped'} | {one_line(str(error))}"
            else:
                outcome = "unchanged | no change"
                if not edit.get("nochange"):  # noted, so that the same call again saves nothing twice
                    saved += 1
                    ctx.reads.previewed(page.title, change, previewed or page.revid, edit["newrevid"])
                    merged = edit.get("oldrevid", page.revid) != page.revid
                    outcome = f"saved | {edit['newrevid']}" + (
                        f" | {LOST_ANSWER}; {EDIT_SHOWN_ONCE}" if edit.get("lost") else
                        f" | merged with the edits made since revision {page.revid}" if merged else "") + (
                        f" | {removed_note(page.removed)}" if page.removed else "")
        rows.append(f"{page.title} | {outcome}")
        ctx.progress(number, len(pages), rows[-1])
    if stopped and not saved:
        raise stopped
    head = f"Saved {saved} of {counted(len(pages), 'page')}."
    if stopped:
        head = (f"Stopped early: {stopped}\n{head} Not saved: {', '.join(left)}. To save them, wait a "
                f"minute, then call replace-in-pages again with {call_args(titles=left)} and dryRun=false.")
    return [head + "\npage | outcome | revision ID, or why\n" + "\n".join(rows)]


def held_back(page: PageChange, previewed: int | None, saved_as: int | None,
              picked: frozenset[str] | None) -> str | None:
    """Why a replace does not save ``page``, as its row's outcome (None: it saves it): it cannot be
    changed, the person did not pick it (``picked``: those they did, where they were asked), this
    change saved it before (unless previewed again since), it changed since its preview, or it has
    no match."""
    if page.why:
        return f"skipped | {page.why}"
    if picked is not None and page.changes and page.title not in picked:
        return "skipped | not picked by the person; nothing was saved"
    if saved_as == page.revid:
        return f"unchanged | saved by this change before, as revision {saved_as}"
    if saved_as:
        return (f"skipped | saved by this change before, as revision {saved_as}, and changed since (now "
                f"{page.revid}); nothing was saved: preview it again to change it once more")
    if previewed and previewed != page.revid:
        return (f"skipped | changed since the preview (revision {previewed}, now {page.revid}); nothing was "
                "saved: preview it again")
    return None if page.changes else "unchanged | no match"
