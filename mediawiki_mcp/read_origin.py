"""find-text-origin: the revision that added a text, found by bisecting the page's history."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from typing import Annotated, Any

from .diff import DIFF_CONTEXT_CHARS, compact_diff, diff_lines
from .dispatch import ToolContext
from .errors import NEXT_STEP, WikiError, not_found, permission_denied
from .merge import line_changes
from .pages import FindArg, TitleArg, check_page, main_slot, no_such_revision, resolve_page, revision_of
from .read_history import revision_user
from .read_search import around, find_pattern, match_spans
from .registry import Arg, tool
from .render import counted, labelled

#: Requests find-text-origin spends reading a page's history (500 revisions a request, 5000 for a
#: bot); past them it traces the text within the revisions read and says so.
ORIGIN_HISTORY_REQUESTS = 10


#: MediaWiki's change tags of an edit that restored earlier text.
REVERT_TAGS = ("mw-undo", "mw-rollback", "mw-manual-revert")


#: The longest line of the diff find-text-origin shows whole; a longer one is cut around the text.
ORIGIN_LINE_CHARS = 3 * DIFF_CONTEXT_CHARS


#: The most lines of the text find-text-origin shows in its diff (a regular expression may span many).
ORIGIN_DIFF_LINES = 10


@tool("find-text-origin", "Find text origin", toolset="history", read_only=True)
def find_text_origin(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    text: Annotated[str, FindArg],
    regex: Annotated[bool, Arg("text is a regex.")] = False,
    revisionId: Annotated[int | None, Arg("Revision to search back from.", minimum=1)] = None,
) -> list[str]:
    """Finds who last added a text to a page and when, bisecting its history. Reads at most
    {text_origin_max_reads:revisions}."""
    pattern, what = find_pattern(text, regex, "text")
    page, redirected, history, complete = origin_history(ctx, title, revisionId)
    trail = TextTrail(ctx, functools.partial(match_spans, ctx, pattern, text),
                      [r for r in history if not r.get("sha1hidden")], ctx.state.config.text_origin_max_reads)
    header = labelled(("Title", page["title"]), ("Redirected from", redirected))
    start = history[0]["revid"]
    where = f"revision {start}" if revisionId else f"the page's current revision ({start})"
    if history[0].get("sha1hidden"):
        raise permission_denied(f"The text of revision {start} is hidden (revision deletion). "
                                + NEXT_STEP["permission_denied"])
    if not trail.has(0):
        return [(f"{header}\nNo match of {what} in the wikitext of {where}, so there is no addition to "
                 "trace. To trace a text since removed, call find-text-origin again with the revisionId of a "
                 "revision that has it (get-page-history lists them); a text a template shows, with the "
                 "template's title.")]
    try:
        trail.latest_addition()
        unchecked = trail.check_reverts()
    except ReadsSpent:
        return [f"{header}\n{origin_progress(trail, what)}",
                (f"Result capped at {counted(trail.most, 'revision read')}. To read on, call find-text-origin "
                 f"again with revisionId={trail.revisions[trail.present]['revid']}.")]
    return [f"{header}\n{origin_found(ctx, trail, history, complete, what, unchecked)}"]


class ReadsSpent(Exception):
    """find-text-origin read as many revisions as one call may (Config.text_origin_max_reads)."""


@dataclasses.dataclass
class TextTrail:
    """find-text-origin's bisection of a page's history: the revisions whose text can be read,
    newest first, and for each one read, or of the same text as one read (by SHA-1), whether the
    text is in it. ``present`` and ``absent`` are the positions the search has narrowed to."""
    ctx: ToolContext
    matches: Callable[[str], list[tuple[int, int]]]  # where the text is in a revision's (match_spans)
    revisions: list[dict[str, Any]]
    most: int
    reads: int = 0
    present: int = 0
    absent: int | None = None
    known: dict[str, bool] = dataclasses.field(default_factory=dict)  # by SHA-1
    texts: dict[str, str] = dataclasses.field(default_factory=dict)   # of present and absent, by SHA-1
    spans: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # the first match in each

    def key(self, position: int) -> str:
        revision = self.revisions[position]
        return revision.get("sha1") or f"#{revision['revid']}"

    def has(self, position: int) -> bool:
        """Whether the text is in the revision at ``position``: read once per distinct text."""
        key = self.key(position)
        if key not in self.known:
            if self.reads >= self.most:
                raise ReadsSpent
            revid = self.revisions[position]["revid"]
            self.ctx.progress(self.reads, self.most, f"reading revision {revid}")
            query = self.ctx.client.get({"action": "query", "revids": revid, "prop": "revisions",
                                         "rvprop": "content", "rvslots": "main"}).get("query", {})
            slot = main_slot(revision_of(next(iter(query.get("pages") or []), {})))
            self.reads += 1
            text = slot.get("content", "")  # hidden since the history was read: as if without it
            spans = self.matches(text)
            self.known[key] = bool(spans)
            self.texts[key] = text
            if spans:
                self.spans[key] = spans[0]
        return self.known[key]

    def latest_addition(self) -> None:
        """Narrows ``present`` and ``absent`` to the revision that added the text, last, and the one
        before it: back from the newest in doubling steps until a revision without it, then by
        halves. ``absent`` stays None when every revision back to the oldest has it."""
        last, step = len(self.revisions) - 1, 1
        while self.absent is None and self.present < last:
            self.found_at(min(self.present + step, last))
            step *= 2
        while self.absent is not None and self.absent - self.present > 1:
            self.found_at((self.present + self.absent) // 2)

    def found_at(self, position: int) -> None:
        if self.has(position):
            self.present = position
        else:
            self.absent = position
        # the newest is kept too, where a revert found after sends the search back to it
        kept = {self.key(p) for p in (0, self.present, self.absent) if p is not None}
        self.texts = {k: v for k, v in self.texts.items() if k in kept}  # a page's text may be large

    def check_reverts(self) -> list[dict[str, Any]]:
        """Checks each revision after the addition found that is tagged as a revert (REVERT_TAGS), newest
        first: a text removed and then restored by a revert is in the newest revision and the one found
        alike, and the bisection's steps can pass over both. Where the text is not in the revert, or not
        in the revision before it, the latest addition is after that one, and is narrowed to again. The
        reverts left unread when the reads run out, which the answer names."""
        checked: set[int] = set()
        while True:
            reverts = [p for p in range(self.present) if p not in checked
                       and set(self.revisions[p].get("tags") or ()) & set(REVERT_TAGS)]
            if not reverts:
                return []
            checked.add(reverts[0])
            try:
                lacks = next((p for p in (reverts[0], reverts[0] + 1) if not self.has(p)), None)
            except ReadsSpent:
                return [self.revisions[p] for p in reverts]
            if lacks == reverts[0] + 1:  # the revert brought it back
                self.present, self.absent = reverts[0], lacks
            elif lacks is not None:  # removed again since the revert: added after it
                self.present, self.absent = 0, lacks
                self.latest_addition()


def origin_history(ctx: ToolContext, title: str, start: int | None
                   ) -> tuple[dict[str, Any], str | None, list[dict[str, Any]], bool]:
    """A page's revisions, newest first from ``start`` (None: the latest), without their text, as many
    as ORIGIN_HISTORY_REQUESTS bring; its page, the title it was redirected from, and whether they
    reach back to its first revision."""
    params = {"action": "query", "titles": title, "redirects": True, "prop": "revisions", "rvlimit": "max",
              "rvprop": "ids|timestamp|user|comment|sha1|tags", "rvstartid": start}
    history: list[dict[str, Any]] = []
    data: dict[str, Any] = {"continue": {}}
    page: dict[str, Any] = {}
    redirected = None
    for _ in range(ORIGIN_HISTORY_REQUESTS):
        try:
            data = ctx.client.get({**params, **data["continue"]})
        except WikiError as error:
            if error.code == "badid_rvstartid" and start:
                raise no_such_revision(ctx, start) from None
            raise
        if not history:
            page, redirected = resolve_page(data.get("query", {}))
            check_page(ctx, page, title, redirected=redirected)
        history += resolve_page(data.get("query", {}))[0].get("revisions") or []
        if "continue" not in data:
            break
    if not history or (start and history[0]["revid"] != start):
        raise not_found(f"Revision {start} is not a revision of {page.get('title', title)}; "
                        "get-page-history lists its revision IDs.")
    return page, redirected, history, "continue" not in data


def origin_progress(trail: TextTrail, what: str) -> str:
    """Where a stopped bisection got to: the oldest revision read with the text, and the newest
    without it, if one was read."""
    have = trail.revisions[trail.present]
    text = f"{what[:1].upper()}{what[1:]} is in revision {have['revid']} ({have.get('timestamp')})"
    if trail.absent is None:
        return f"{text}; it came in an older revision, not read yet (revisions read: {trail.reads})."
    lacks = trail.revisions[trail.absent]
    return (f"{text} and not in revision {lacks['revid']} ({lacks.get('timestamp')}): one of the "
            f"{trail.absent - trail.present} revisions from there to {have['revid']} added it "
            f"(revisions read: {trail.reads}).")


def few(items: list[str], most: int = 5) -> str:
    """The first ``most`` items, comma-separated, and "and more" when there are more."""
    return ", ".join(items[:most]) + (" and more" if len(items) > most else "")


def adding_lines(old: str, new: str, span: tuple[int, int]) -> str:
    """The changes from ``old`` to ``new`` on the lines of ``new`` that ``span`` (the text found) is
    on, as compare-pages shows them; a long line cut around the text."""
    a, b = old.splitlines(), new.splitlines()
    first = new.count("\n", 0, span[0])
    last = min(new.count("\n", 0, max(span[1] - 1, span[0])), first + ORIGIN_DIFF_LINES - 1)
    blocks = line_changes(a, b, shown=True)
    touching = [(i1, i2, j1, j2) for i1, i2, j1, j2 in blocks
                if (j1 <= last and j2 > first if j2 > j1 else first < j1 <= last)] or blocks[:1]
    touching = [within_lines(block, first, last) for block in touching]
    column = span[0] - (new.rfind("\n", 0, span[0]) + 1)
    shown = []
    for line in compact_diff(diff_lines(a, b, touching)).split("\n"):
        if len(line) > ORIGIN_LINE_CHARS:
            own = line[1:] == b[first] if first < len(b) else False
            line = (line[0] + around(b[first], column, min(column + span[1] - span[0], len(b[first]))) if own
                    else line[:ORIGIN_LINE_CHARS] + "…")
        shown.append(line)
    return "\n".join(shown)


def within_lines(block: tuple[int, int, int, int], first: int, last: int) -> tuple[int, int, int, int]:
    """A changed block (line_changes) whose new side reaches past lines ``first`` to ``last`` (a page
    made, a passage pasted with the text) cut to those: added after the old line they follow."""
    i1, i2, j1, j2 = block
    if j1 >= first and j2 <= last + 1 or i1 < i2 and j2 - j1 <= last - first + 1:
        return block  # within the text's lines, or lines replaced (their old side shown whole)
    at = min(i1 + max(first - j1, 0), i2)
    return at, at, max(j1, first), min(j2, last + 1)


def origin_found(ctx: ToolContext, trail: TextTrail, history: list[dict[str, Any]], complete: bool,
                 what: str, unchecked: list[dict[str, Any]]) -> str:
    """The answer of a finished bisection: the revision that added the text, its diff line, the
    revisions after it that were not read (and the reverts among them, ``unchecked``, that the reads
    did not reach), what the reads showed of earlier additions, and the gaps in the history."""
    added = trail.revisions[trail.present]
    before = trail.revisions[trail.absent] if trail.absent is not None else None
    if before is not None:
        found = (f"its latest addition: {what} is in revision {added['revid']} and each one read after it, "
                 f"not in revision {before['revid']} before it")
    elif complete and added is history[-1]:
        found = f"the page's first revision: {what} is in it and in each one read after it"
    elif complete:
        found = f"the oldest revision whose text is not hidden: {what} is in it and in each one read after it"
    else:
        found = (f"the oldest revision read: the history reads back no further (call find-text-origin again "
                 f"with revisionId={added['revid']} to go on)")
    # what the reads passed over after it: a text removed and put back there would not show
    unread = [r for position, r in enumerate(trail.revisions[:trail.present])
              if trail.key(position) not in trail.known]
    unread_reverts = any(set(r.get("tags") or ()) & set(REVERT_TAGS) for r in unread)
    earlier = earlier_evidence(trail, added)  # it may read one more revision: before they are counted
    read = f"{trail.reads} of {len(history)}{'' if complete else ' and more'} in the history"
    reverts = ", ".join(f"{r['revid']} ({', '.join(t for t in r.get('tags') or () if t in REVERT_TAGS)})"
                        for r in unchecked)
    lines = [labelled(
        ("Added in revision", added["revid"]), ("Found", found), ("Timestamp", added.get("timestamp")),
        ("User", revision_user(added)),
        ("Edit summary", "(hidden)" if added.get("commenthidden") else added.get("comment")),
        ("Tags", ", ".join(added.get("tags") or [])),
        ("Diff", ctx.site.index_url(diff=added["revid"], oldid=before["revid"]) if before
         else ctx.site.index_url(oldid=added["revid"])),
        ("Revisions read", read),
        ("Not read after it", unread and (
            f"{few([str(r['revid']) for r in unread])} ({len(unread)} of the {trail.present} after it"
            f"{'' if unread_reverts else ', none tagged as a revert'}): a text removed and put back there by "
            "an edit not tagged as a revert would not show")),
        ("Unchecked reverts", unchecked and (
            f"{reverts}, after it, restore earlier text, and the reads ran out before them: where one "
            f"restored this text after a removal, it is the latest addition. To check, call find-text-origin "
            f"again with revisionId={unchecked[0]['revid']}.")))]
    key = trail.key(trail.present)
    old = trail.texts.get(trail.key(trail.absent), "") if trail.absent is not None else ""
    lines.append("Diff line that added it:\n" + adding_lines(old, trail.texts[key], trail.spans[key]))
    lines += filter(None, [earlier, history_gaps(history, complete, added, before)])
    return "\n".join(lines)


def earlier_evidence(trail: TextTrail, added: dict[str, Any]) -> str | None:
    """What says the text was in the page before its latest addition, found cheaply: an older revision
    of the same text as one with it (by SHA-1), the page's oldest revision read when reads are left,
    or a revert tag on the revision that added it."""
    if trail.absent is not None:
        last = len(trail.revisions) - 1
        with contextlib.suppress(ReadsSpent):
            trail.has(last)
        for position in range(trail.absent + 1, last + 1):
            if trail.known.get(trail.key(position)):
                revision = trail.revisions[position]
                return (f"Earlier: it was also in revision {revision['revid']} ({revision.get('timestamp')}, "
                        f"{revision_user(revision)}): it was removed and added again since.")
    reverts = [tag for tag in added.get("tags") or [] if tag in REVERT_TAGS]
    if reverts:
        return (f"Earlier: the revision that added it is a revert ({', '.join(reverts)}), which restores "
                "older text.")
    return None


def history_gaps(history: list[dict[str, Any]], complete: bool, added: dict[str, Any],
                 before: dict[str, Any] | None) -> str | None:
    """The history's gaps: revisions whose text is hidden, and revisions whose parent is not the one
    before them (deleted revisions, out of reach)."""
    hidden = [str(r["revid"]) for r in history if r.get("sha1hidden")]
    follows = [r["revid"] for r in history[1:]] + ([0] if complete else [])
    orphans = [f"{r['revid']} ({r.get('parentid')})" for r, parent in zip(history, follows)
               if r.get("parentid") != parent]
    if not hidden and not orphans:
        return None
    parts = [f"the text of {few(hidden)} is hidden" if hidden else "",
             f"the parent{'s' if len(orphans) > 1 else ''} of {few(orphans)} "
             f"{'are' if len(orphans) > 1 else 'is'} deleted" if orphans else ""]
    between = added.get("parentid") != (before["revid"] if before else 0)
    return ("History gaps: " + "; ".join(filter(None, parts)) + ". Those revisions are out of reach"
            + (f"; one of them, before revision {added['revid']}, may have added it." if between else "."))
