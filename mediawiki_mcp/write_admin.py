"""Write tools for undoing and guarding: undo-edit, rollback-edits, protect-page and watch-page."""
from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Mapping
from typing import Annotated, Any

from .dispatch import ToolContext
from .edit import refuse_unsaveable
from .errors import WikiError, conflict, invalid_input, upstream_failure
from .merge import merge3
from .pages import (
    CommentArg,
    ReasonArg,
    TitleArg,
    check_page,
    missing_page,
    names_text,
    no_such_revision,
    query_page,
    resolve_page,
    revision_of,
    revision_texts,
)
from .read_history import revision_user
from .read_users import has_account, user_name, without_user_namespace
from .registry import Arg, Preview, tool
from .render import labelled, protection_text, until_clause
from .saving import (
    after_lost_answer,
    change_tags,
    dry_run_result,
    edit_summary,
    refuse_forbidden_dry_run,
    save_edit,
    saved_lines,
    settle_write,
)
from .sections import as_saved
from .siteinfo import WATCH_EXPIRY


@tool("undo-edit", "Undo edit", toolset="history",
      read_only=False, destructive=True, idempotent=False, dry_run=True, asks=True,
      idempotency_key=True, watch=True, rights=("edit",),
      see={"to remove a page": "delete-page", "for a user's latest edits": "rollback-edits"})
def undo_edit(
    ctx: ToolContext,
    revisionId: Annotated[int, Arg("Revision ID to undo; of a run, the latest.", minimum=1)],
    oldestRevisionId: Annotated[int | None, Arg("A run's first revision ID.", minimum=1)] = None,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str] | str:
    """Undoes an edit, or a run of them, in a new revision keeping later edits. Fails, saving
    nothing, if later edits changed the same lines, or for a page's creation."""
    oldest = oldestRevisionId or revisionId
    if oldest > revisionId:
        raise invalid_input(f"oldestRevisionId ({oldest}) is newer than revisionId ({revisionId}): give the "
                            "run's first revision as oldestRevisionId and its latest as revisionId.")
    query = ctx.client.get({"action": "query", "revids": [oldest, revisionId], "prop": "revisions|info",
                            "rvprop": "ids|user", "intestactions": "edit" if ctx.dry_run else None})
    found = {r["revid"]: (p, r) for p in query.get("query", {}).get("pages") or []
             for r in p.get("revisions") or []}
    for revid in (revisionId, oldest):
        if revid not in found:
            raise no_such_revision(ctx, revid)
    (page, newest), (other, first) = found[revisionId], found[oldest]
    if other.get("pageid") != page.get("pageid"):
        raise invalid_input(f"Revisions {oldest} and {revisionId} are of different pages "
                            f"({other.get('title')!r} and {page.get('title')!r}); a run to undo is of one page. "
                            "Nothing was saved.")
    title, latest, parent = page["title"], page.get("lastrevid", 0), first.get("parentid") or 0
    if not parent:
        raise invalid_input(f"Revision {oldest} created {title!r}, so undoing it would leave nothing; "
                            "nothing was saved. To remove the page, use delete-page.")
    # a run may hold other people's good edits: the answer, the dry run and the summary name them all,
    # and the person confirms undoing them where they are asked
    authors = [revision_user(newest)] if oldest == revisionId else run_authors(ctx, title, oldest, revisionId)
    what = (f"revision {revisionId} by {authors[0]}" if oldest == revisionId
            else f"revisions {oldest} to {revisionId} by {names_text(authors)}")
    if ctx.dry_run:  # the text MediaWiki's undo makes (ContentHandler::getUndoContent)
        refuse_forbidden_dry_run(ctx, page, "edit")
        texts = revision_texts(ctx, latest, revisionId, parent)
        now, undone, before = texts.get(latest, ""), texts.get(revisionId, ""), texts.get(parent, "")
        new = before if now == undone else merge3(undone, before, now)
        if new is None:
            raise undo_conflict(ctx, title, oldest, revisionId, parent)
        refuse_unsaveable(ctx, title, new, page.get("contentmodel"))
        preview = dry_run_result(title, latest, None, now, as_saved(new), ctx.budget)
        return preview if oldest == revisionId else [f"This would undo {what}.", *preview]
    if ctx.asks and not ctx.confirmed and len(authors) > 1:
        raise Preview("Nothing was saved.", f"undo {what} of {title!r} on {ctx.wiki.key}, whose latest revision "
                      f"is {latest}: the edits of {len(authors)} people.")
    done = f"Undid {what}" + ("; the edits made since are kept." if latest != revisionId else ".")
    # MediaWiki writes its own summary for one revision, none for a run
    summary = comment or (None if oldest == revisionId else f"Undo {what}")
    try:
        return save_edit(ctx, title, {"undo": revisionId, "undoafter": parent, "nocreate": True}, latest,
                         edit_summary(ctx, summary), done)
    except WikiError as error:
        if error.code == "undofailure":
            raise undo_conflict(ctx, title, oldest, revisionId, parent) from None
        raise


def run_authors(ctx: ToolContext, title: str, oldest: int, newest: int) -> list[str]:
    """Who made the revisions oldest to newest of a page, each once, in the order of their
    first edit in the run, and 'others' for a run longer than one answer."""
    data = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "rvprop": "ids|user",
                           "rvdir": "newer", "rvstartid": oldest, "rvendid": newest, "rvlimit": "max"})
    page, _ = resolve_page(data.get("query", {}))
    return list(dict.fromkeys(revision_user(r) for r in page.get("revisions") or [])) + ["others"] * (
        "continue" in data)


def undo_conflict(ctx: ToolContext, title: str, oldest: int, newest: int, parent: int) -> WikiError:
    """The conflict of an undo that later edits stand in the way of, naming them."""
    page, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user", rvdir="newer",
                         rvstartid=newest, rvlimit=11)
    since = [r for r in page.get("revisions") or [] if r.get("revid") != newest]
    named = ", ".join(f"{r['revid']} by {revision_user(r)}" for r in since[:10]) + ", ..." * (len(since) > 10)
    what = f"Revision {newest}" if oldest == newest else f"Revisions {oldest} to {newest}"
    return conflict(f"{what} of {title!r} cannot be undone cleanly: the edits made since (revision"
                    f"{'s' * (len(since) > 1)} {named}) changed the same lines. Nothing was saved. To undo it "
                    f"by hand, compare-pages with fromRevision={parent} and toRevision={newest} shows what it "
                    "changed; then update-page with find and replace changes that back in the current text.",
                    "undofailure")


@tool("rollback-edits", "Roll back edits", toolset="admin",
      read_only=False, destructive=True, idempotent=True, guarded=True,
      shows="the edits and the revision it returns to", idempotency_key=True, watch=True, rights=("rollback",),
      see={"for an older edit": "undo-edit"})
def rollback_edits(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    user: Annotated[str, Arg("The page's last editor, whose edits are reverted.")],
    comment: Annotated[str | None, CommentArg] = None,
) -> str:
    """Reverts the latest edits to a page by its last editor, back to the last revision by someone
    else."""
    name = user_name(without_user_namespace(ctx.site, user))
    run = rollback_run(ctx, title, name)
    if not ctx.confirmed:
        ctx.reads.previewed(run.title, f"rollback|{name}", run.latest)
        raise Preview("Nothing was rolled back.", f"revert {run.edits}, returning it to revision "
                      f"{run.target} by {run.target_user}.")
    previewed = (ctx.reads.preview(run.title, f"rollback|{name}") or (None, None))[0]
    if previewed and previewed != run.latest:
        raise conflict(f"{run.title!r} was edited since the preview the user confirmed (its latest "
                       f"revision was {previewed}, now {run.latest}); nothing was rolled back. rollback-edits "
                       f"would now revert {run.edits}: ask the user to confirm that, then call again with "
                       "confirm=true.")
    # action=rollback takes no base revision: an edit landing between the read above and the
    # rollback (one round trip) would be reverted too, unseen.
    params = {"action": "rollback", "title": run.title, "user": name, "summary": edit_summary(ctx, comment),
              "tags": change_tags(ctx), "watchlist": ctx.watch}
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params, token="rollback"),
            lambda: rollback_as_shown(ctx, run.title, name),
            what="the rollback was saved", look="check get-page-history", absent=f"The wiki shows the latest "
            f"edit still by {name}, so nothing was rolled back. Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":
            raise missing_page(ctx, title) from None
        if error.code == "alreadyrolled":
            raise not_latest_editor(run.title, name, None) from None
        raise
    done = shown or answer.get("rollback", {})
    status = (after_lost_answer(f"Rolled back {run.edits}.", "its history shows the rollback") if shown
              else f"Rolled back {run.edits}, to revision {done.get('last_revid')}.")
    return saved_lines(ctx, done.get("title", run.title), done["revid"], done.get("old_revid") or None, status)


@dataclasses.dataclass(frozen=True)
class RollbackRun:
    """The latest edits of a page by one user, which a rollback reverts."""
    title: str
    latest: int       # the page's latest revision
    edits: str        # "the 2 latest edits to 'X', all by Y (revisions 39 to 40)"
    target: int       # the revision it returns to
    target_user: str


def rollback_run(ctx: ToolContext, title: str, name: str) -> RollbackRun:
    """What a rollback would do now: which edits it reverts, and the revision it returns to."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "rvprop": "ids|user",
                            "rvlimit": "max"})
    page, _ = resolve_page(query.get("query", {}))
    check_page(ctx, page, title)
    revisions = page.get("revisions") or [{}]
    if revision_user(revisions[0]) != name:
        raise not_latest_editor(page["title"], name, revision_user(revisions[0]))
    run = list(itertools.takewhile(lambda r: revision_user(r) == name, revisions))
    target = revisions[len(run)] if len(run) < len(revisions) else None
    count = str(len(run))
    if target is None and query.get("continue"):  # the run goes on past this answer
        more, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user", rvexcludeuser=name)
        target, count = revision_of(more) or None, f"more than {len(run)}"
    if target is None:
        raise invalid_input(f"Every revision of {page['title']!r} is by {name}, so rollback has no earlier "
                            "version to return to; nothing was changed. To remove the page, use delete-page.")
    edits = (f"the latest edit to {page['title']!r}, by {name} (revision {run[0]['revid']})" if len(run) == 1
             else f"the {count} latest edits to {page['title']!r}, all by {name} (revisions "
                  f"{run[-1]['revid']} to {run[0]['revid']})")
    return RollbackRun(page["title"], run[0]["revid"], edits, target["revid"], revision_user(target))


def not_latest_editor(title: str, name: str, latest: str | None) -> WikiError:
    who = f"is by {latest}, not {name}" if latest else f"is no longer by {name} (edited or rolled back since)"
    return conflict(f"The latest edit to {title!r} {who}; nothing was rolled back. rollback-edits reverts "
                    "only the latest editor's edits: get-page-history shows them, and undo-edit undoes an older "
                    "one.", "alreadyrolled")


def rollback_as_shown(ctx: ToolContext, title: str, name: str) -> dict[str, Any] | None:
    """A rollback by this account at the top of the history, over the edits of ``name``, as the
    API answers one; None while the latest edit is still by ``name``."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "meta": "userinfo",
                            "rvprop": "ids|user|tags", "rvlimit": 2}).get("query", {})
    page, _ = resolve_page(query)
    latest, before = [*(page.get("revisions") or []), {}, {}][:2]
    mine = latest.get("user") == query.get("userinfo", {}).get("name")
    if mine and "mw-rollback" in (latest.get("tags") or []) and before.get("user") == name:
        return {"title": page.get("title", title), "revid": latest["revid"], "old_revid": before.get("revid")}
    if latest.get("user") == name:
        return None
    raise upstream_failure(f"the latest edit is by {latest.get('user')}")


LevelArg = Arg("Same choices as edit.")


@tool("protect-page", "Protect page", toolset="admin", read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, guarded=True, shows="the old and new levels", rights=("protect",))
def protect_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    edit: Annotated[str | None, Arg("autoconfirmed, sysop; all lifts it.")] = None,
    move: Annotated[str | None, LevelArg] = None,
    upload: Annotated[str | None, LevelArg] = None,
    create: Annotated[str | None, LevelArg] = None,
    expiry: Annotated[str | None, Arg("Of the levels given: 1 week, ISO 8601 or infinite (default).")] = None,
    cascade: Annotated[bool | None, Arg("Protects transcluded pages too.")] = None,
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Sets or lifts a page's edit, move, upload (files) and create (missing pages) protection;
    levels not given stay as they are."""
    asked = {kind: level for kind, level in (("edit", edit), ("move", move), ("upload", upload),
                                             ("create", create)) if level is not None}
    check_protection(ctx, asked, cascade, expiry)
    page, _ = query_page(ctx, titles=title, prop="info", inprop="protection")
    check_page(ctx, page, title, must_exist=False)
    title, kinds = page.get("title", title), page.get("restrictiontypes") or []
    for kind in asked:
        if kind not in kinds:
            missing = " (it does not exist)" if page.get("missing") else ""
            raise invalid_input(f"{title!r} cannot be protected against {kind}: it can be protected against "
                                f"{', '.join(kinds) or 'nothing'}{missing}. Nothing was changed.")
    # MediaWiki lifts every kind of protection a change leaves out: those not asked about go along.
    # Another page's cascading protection (its source) is not this page's to change, and stays.
    imposed = [p for p in page.get("protection") or [] if p.get("source")]
    now = {p["type"]: p for p in page.get("protection") or [] if p.get("level") and not p.get("source")}
    new = {kind: now.get(kind, {"type": kind, "level": ""}) for kind in kinds}
    new.update({kind: {"type": kind, "level": "" if level == "all" else level, "expiry": expiry or "infinite"}
                for kind, level in asked.items()})
    cascading = any(p.get("cascade") for p in now.values())
    cascades = cascading if cascade is None else cascade
    allowed = ctx.site.restrictions.get("cascadinglevels") or ["sysop"]
    if cascades and new.get("edit", {}).get("level") not in allowed:
        if cascade:
            raise invalid_input(f"cascade protects pages this one transcludes only at edit level "
                                f"{' or '.join(allowed)}; give edit={allowed[0]} with it. Nothing was "
                                "changed.")
        cascades = False  # MediaWiki ends cascading when the edit level drops below it
    if not ctx.confirmed:
        changes = [f"{kind}: {level_text(now.get(kind))} -> {level_text(new[kind])}" if kind in asked
                   else f"{kind}: {level_text(now[kind])} (kept)" for kind in kinds
                   if kind in asked or kind in now]
        if cascades != cascading:
            changes.append(f"cascading: {'on' if cascading else 'off'} -> {'on' if cascades else 'off'}")
        staying = f" It stays protected whatever is set: {protection_text(imposed)}." if imposed else ""
        raise Preview("Nothing was changed.", f"change the protection of {title!r} on {ctx.wiki.key}: "
                      f"{'; '.join(changes)}.{staying}")
    params = {"action": "protect", "title": title, "cascade": cascades, "reason": edit_summary(ctx, comment),
              "protections": [f"{kind}={p['level'] or 'all'}" for kind, p in new.items()],
              "expiry": [p.get("expiry") or "infinite" for p in new.values()], "tags": change_tags(ctx)}

    def protection_as_shown() -> list[dict[str, Any]] | None:
        shown = query_page(ctx, titles=title, prop="info", inprop="protection")[0].get("protection") or []
        if {p["type"]: p["level"] for p in shown} != {k: p["level"] for k, p in new.items() if p["level"]}:
            return None
        return [p for p in shown if not p.get("source")]
    def protect() -> dict[str, Any]:
        try:
            return ctx.client.write(params)
        except WikiError as error:
            raise bad_expiry(ctx, expiry or "", error.code) if error.code in ("invalidexpiry", "pastexpiry") else error
    answer, shown = settle_write(
        protect, protection_as_shown, what="the protection was changed",
        look="read it with get-page", absent=f"The wiki shows the protection of {title!r} unchanged, so "
        "nothing was changed. Call again to retry.")
    done = answer.get("protect", {})
    result = shown if shown is not None else [
        {"type": kind, "level": level, "expiry": entry.get("expiry"), "cascade": done.get("cascade")}
        for entry in done.get("protections") or [] for kind, level in entry.items() if kind != "expiry"]
    status = "Protection changed." if shown is None else \
        after_lost_answer("Protection changed.", "the wiki shows the new protection")
    return status + "\n" + labelled(("Title", title), ("Protection", protection_text([*result, *imposed])),
                                    ("URL", ctx.site.page_url(title)))


def check_protection(ctx: ToolContext, asked: Mapping[str, str], cascade: bool | None, expiry: str | None) -> None:
    """Refuses, asking the wiki nothing, the arguments of protect-page it would refuse: the wiki
    judges an expiry itself (bad_expiry), but one with a character no time has is refused here."""
    if not asked and cascade is None:
        raise invalid_input("Give a level for edit, move, upload or create (or cascade); nothing was "
                            "changed.")
    if expiry is not None and not expiry.strip():
        raise invalid_input("Argument 'expiry' must not be empty: give a time, such as 1 week, or infinite.")
    if expiry is not None and re.search(r"[{}|\[\]<>\n]", expiry):  # in no time; the wiki judges the others
        raise bad_expiry(ctx, expiry, "invalidexpiry")
    levels = [level for level in ctx.site.restrictions.get("levels") or () if level]
    for kind, level in asked.items():
        if levels and level not in (*levels, "all"):
            raise invalid_input(f"Argument {kind!r} must be a protection level of {ctx.wiki.key}: "
                                f"{', '.join(levels)}, or all to lift it; got {level!r}.")


def bad_expiry(ctx: ToolContext, expiry: str, code: str) -> WikiError:
    """The refusal of an expiry the wiki cannot read as a time (MediaWiki's invalidexpiry), or one in
    the past (pastexpiry): the model's to change."""
    if code == "pastexpiry":
        return invalid_input(f"Argument 'expiry' is {expiry!r}, which is in the past; nothing was changed. Give "
                             "a duration such as 1 week, a later time, or infinite.")
    return invalid_input(f"Argument 'expiry' is {expiry!r}, which {ctx.wiki.key} does not read as a time; "
                         "nothing was changed. Give a duration such as 1 week, a time such as "
                         "2030-01-31T00:00:00Z, or infinite.")


def level_text(entry: Mapping[str, Any] | None) -> str:
    """``sysop until 1 week``: one kind's protection level, or none."""
    return f"{entry['level']}{until_clause(entry.get('expiry'))}" if entry and entry.get("level") else "none"


@tool("watch-page", "Watch page", toolset="changes", read_only=False, destructive=True, idempotent=True,
      rights=("editmywatchlist",), offered=has_account,
      see={"for their changes": "get-watchlist"})
def watch_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    unwatch: Annotated[bool, Arg("Removes it instead.")] = False,
    expiry: Annotated[str | None, Arg("Until: 1 week or ISO 8601; default: for good.")] = None,
) -> str:
    """Adds a page, existing or not, to the account's watchlist (until an expiry, if given), or
    removes it."""
    if unwatch and expiry is not None:
        raise invalid_input("expiry goes with watching: give unwatch or expiry, not both.")
    if expiry is not None and not expiry.strip():
        raise invalid_input("Argument 'expiry' must not be empty: give a time, such as 1 week.")
    if expiry and WATCH_EXPIRY not in ctx.client.parameters:  # MediaWiki would watch it for good
        raise invalid_input(f"{ctx.wiki.key} keeps watchlist entries without expiry; nothing was changed. "
                            "Call again without expiry to watch the page until it is unwatched.")
    done = "unwatched" if unwatch else "watched"

    def watch_as_shown() -> dict[str, Any] | None:
        entry, _ = query_page(ctx, titles=title, prop="info", inprop="watched")
        if bool(entry.get("watched")) == unwatch:
            return None
        return {**entry, "expiry": entry.get("watchlistexpiry")}
    answer, shown = settle_write(
        lambda: ctx.client.write({"action": "watch", "titles": title, "unwatch": unwatch, "expiry": expiry},
                                 token="watch"), watch_as_shown, what=f"the page was {done}",
        look="read the watchlist", absent=f"The wiki shows {title!r} still "
        f"{'watched' if unwatch else 'unwatched'}, so nothing was changed. Call again to retry.")
    entry: dict[str, Any] = shown or next(iter(answer.get("watch") or []), {})
    status = f"{done.title()}."
    status = after_lost_answer(status, f"the wiki shows the page {done}") if shown else status
    check_page(ctx, entry, title, must_exist=False)
    if entry.get("special"):
        raise invalid_input(f"{entry.get('title', title)!r} is a special page, which cannot be watched.")
    listed = entry.get("title", title) + (" (does not exist yet)" if entry.get("missing") else "")
    expires = entry.get("expiry") if until_clause(entry.get("expiry")) else None
    return status + "\n" + labelled(("Title", listed), ("Until", expires))
