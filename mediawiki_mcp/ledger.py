"""The read ledger: what each client was shown of each page (revision, sections, spans), so that
a write never drops text the model did not see."""
from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from .render import utf8_len
from .sections import section_spans
from .settings import DEFAULT_READ_LEDGER_MAX_BYTES, READ_LEDGER_MAX_ENTRIES
from .siteinfo import CORE_SYNTAX, Syntax
from .store import MemoryStore, StateKey, StateStore

READ_LEDGER_TTL_SECONDS = 24 * 3600.0


#: Of a page, the revisions read in part that the ledger of clients not told apart keeps.
CUT_REVISIONS_KEPT = 20


#: The moves made here of one page that its reads under its old titles are followed through.
MOVES_FOLLOWED = 5


#: In memory, the ledger keeps this many full clients' entries of each kind in all, the least
#: recently written forgotten first: the bound of the whole process, beside each client's.
READ_LEDGER_CLIENTS_IN_MEMORY = 64


#: The caller of calls this server cannot tell apart (HTTP without sessions: stateless replicas,
#: or a protocol version that has none): ``shared``, or ``shared:<hash of the bearer token>``.
#: What is noted for it is every such client's, so no read vouches for its writes (told_apart).
SHARED_CALLER = "shared"


def told_apart(caller: str) -> bool:
    """Whether ``caller`` is one client ('' is this whole process, one client as over stdio)."""
    return caller.partition(":")[0] != SHARED_CALLER


def heading_entry(title: str, heading: str) -> str:
    """The read ledger's name for a section asked for by ``heading``, case and space aside."""
    return f"{title}|#{' '.join(heading.split()).casefold()}"


def client_entry(wiki: str, caller: str, kind: str, name: str) -> StateKey:
    """The one place entries are named: every kind is kept per caller, so that one client's
    entries never answer for another's."""
    return (wiki, kind, f"{caller}|{name}" if caller else name)


def merged_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges in order, those that overlap or touch joined."""
    joined: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return joined


@dataclasses.dataclass(frozen=True)
class PageRead:
    """What one caller has read of one page or section: of the last revision it read, which bytes."""
    revid: int
    ranges: list[tuple[int, int]]  # the bytes read of that revision, in order, joined
    total: int
    order: int   # which read came later
    section_ends: dict[int, int]  # of a whole page read in part: where each section ends
    section_starts: dict[int, int] = dataclasses.field(default_factory=dict)  # and where each starts

    @property
    def seen(self) -> int:
        """The bytes read without a gap from the start."""
        return self.ranges[0][1] if self.ranges and self.ranges[0][0] == 0 else 0

    def unread(self, section: int | None) -> tuple[int, int] | None:
        """The first bytes of ``section`` (None, or one not located: the whole text) not read, if any."""
        start, end = ((self.section_starts.get(section, 0), self.section_ends[section])
                      if section in self.section_ends else (0, self.total))
        for first, last in self.ranges:
            if first <= start < last:
                start = last
        if start >= end:
            return None
        return start, min([end, *(first for first, _ in self.ranges if first > start)])


@dataclasses.dataclass(frozen=True)
class Base:
    """A revision of a page the caller was shown (kinds ``base`` and ``outline``): ``whole``, all of
    it; ``shown``, without its wikitext (ClientReads.showed), not by a read of its wikitext or a save."""
    revid: int
    order: int
    whole: bool = False
    shown: bool = False


@dataclasses.dataclass(frozen=True)
class LedgerIndex:
    """A caller's entries (``kind|name``) with their sizes, the least recently written first, and
    whether any was dropped to keep within the bounds (kind ``ledger``)."""
    entries: dict[str, int]
    dropped: bool = False


#: Of each page (kind ``cut``), the revisions read in part with the sections each read cut.
Cuts = tuple[tuple[int, tuple[int | None, ...]], ...]


#: A change of a ledger entry: its old value and the order of the call's note -> its new value
#: (None: left as it is).
EntryChange = Callable[[Any, int], Any]


def entry_size(value: object) -> int:
    """About the bytes an entry takes as the shared store writes it: its texts, and 8 a number."""
    if hasattr(value, "__dataclass_fields__"):
        value = list(vars(value).values())
    if isinstance(value, dict):
        value = list(value.items())
    if isinstance(value, (tuple, list)):
        return 2 + sum(map(entry_size, value))
    return len(value) if isinstance(value, str) else 8


#: How many renderings of a page (Shown.rendered) are remembered.
RENDERINGS_KEPT = 4


#: The marker plain text puts after a heading (plain_text): " (section 1)", " (from Template:Notes)".
SECTION_MARKER = re.compile(r"^(=+ .*? =+) \((?:section \d+|from [^\n]+)\)$", re.MULTILINE)


def rendering_digest(text: str) -> str:
    """A text's digest with its whitespace and its headings' section markers left out, as a
    model's copy may differ in them (a model strips the markers to make it look like wikitext)."""
    return hashlib.sha256("".join(SECTION_MARKER.sub(r"\1", text).split()).encode()).hexdigest()


class ReadLedger:
    """What each caller read and previewed, per wiki (ClientReads: one caller's): the store of the
    no-loss checks, its entries typed values (the shared store writes them in its wire format). A
    caller's ledger holds at most ``capacity`` entries of each kind and ``max_bytes`` bytes in all,
    the least recently written dropped first (ClientReads.forgotten)."""

    def __init__(self, capacity: int = READ_LEDGER_MAX_ENTRIES, store: StateStore | None = None,
                 max_bytes: int = DEFAULT_READ_LEDGER_MAX_BYTES) -> None:
        self.capacity, self.max_bytes = capacity, max_bytes
        self.store = store or MemoryStore(capacity * READ_LEDGER_CLIENTS_IN_MEMORY)

    def of(self, wiki: str, caller: str = "",
           syntax: Callable[[], Syntax] = lambda: CORE_SYNTAX) -> ClientReads:
        return ClientReads(self, wiki, caller, syntax)

    def note(self, wiki: str, caller: str, changes: list[tuple[str, str, EntryChange]]) -> bool:
        """Makes ``changes`` to the caller's entries; whether they are written now, not kept for
        when the shared store can be reached again."""
        def write() -> None:
            order = self.store.next_order()
            sizes = []
            for kind, name, change in changes:
                key = client_entry(wiki, caller, kind, name)
                if size := self._write(key, change, order):
                    sizes.append((f"{kind}|{key[2]}", size))
            if sizes:
                self._bound(wiki, caller, sizes)
        return self.store.when_reached(write)

    def _write(self, key: StateKey, change: EntryChange, order: int) -> int:
        """Changes one entry; the bytes it now takes (0: left as it was)."""
        written = [0]

        def sized(old: Any) -> Any:
            new = change(old, order)
            written[0] = 0 if new is None else len(key[2]) + entry_size(new)
            return new
        self.store.update(key, sized, READ_LEDGER_TTL_SECONDS)
        return written[0]

    def _bound(self, wiki: str, caller: str, sizes: list[tuple[str, int]]) -> None:
        """Keeps the caller's ledger within its bounds (LedgerIndex), ``sizes`` its entries just written."""
        dropped: list[str] = []

        def bounded(old: LedgerIndex | None) -> LedgerIndex:
            entries = dict(old.entries) if old else {}
            for entry, size in sizes:  # to the end
                entries.pop(entry, None)
                entries[entry] = size
            kinds = collections.Counter(entry.partition("|")[0] for entry in entries)
            total = sum(entries.values())
            dropped[:] = []
            for entry in list(entries)[:-len(sizes)]:
                kind = entry.partition("|")[0]
                if total <= self.max_bytes and kinds[kind] <= self.capacity:
                    if max(kinds.values()) <= self.capacity:
                        break
                    continue  # another kind is over its count: its oldest goes
                dropped.append(entry)
                kinds[kind] -= 1
                total -= entries.pop(entry)
            return LedgerIndex(entries, bool(old and old.dropped or dropped))
        self.store.update(client_entry(wiki, caller, "ledger", ""), bounded, READ_LEDGER_TTL_SECONDS)
        for entry in dropped:
            kind, _, name = entry.partition("|")
            self.store.forget((wiki, kind, name))


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a read tool showed of a page (ClientReads.showed records it): of revision ``revid``, the
    page's latest or not, the bytes ``span`` of wikitext ``text`` (the page's, or section ``section``'s,
    asked for by ``heading``); or, with no text, the revision ID alone, with ``rendered`` text of it,
    and its section numbers (``outline``) or not."""
    title: str
    revid: int
    text: str | None = None
    span: tuple[int, int] = (0, 0)
    section: int | None = None
    heading: str | None = None
    latest: bool = True
    rendered: tuple[str, ...] = ()
    outline: bool = True


@dataclasses.dataclass(frozen=True)
class ClientReads:
    """The read ledger of one caller on one wiki, per page and section: which bytes of which
    revision it read, so that text seen only in part is not written back whole; the latest revision
    it showed, the base of a write without latestId, so that an edit made since is merged or
    refused; and the revision of each page a dry run across pages saw, so that its save skips a
    page changed since (the model saw a diff, not the page). Callers not told apart share one
    ledger in which no read vouches for another: a revision any of them read in part is never
    written back whole, and writes name their base."""
    ledger: ReadLedger
    wiki: str
    caller: str
    syntax: Callable[[], Syntax]  # the wiki's, asked only when a read's sections are needed

    @property
    def told_apart(self) -> bool:
        return told_apart(self.caller)

    def showed(self, blocks: list[str], *shown: Shown) -> list[str]:
        """A read tool's answer ``blocks``, once what it showed is recorded: the one place read tools
        note their reads, ahead of it a note for the model where one could not be recorded yet."""
        notes = []
        for page in shown:
            if page.text is not None:
                notes.append(self.record(page.title, page.section, page.revid, page.text, page.span,
                                         latest=page.latest, heading=page.heading))
                continue
            if page.rendered:  # neither the text whole nor as shown is wikitext to write back
                self._rendered(page.title, *page.rendered)
            if page.latest and page.revid:
                self._shown(page.title, page.revid, page.outline)
        return [*dict.fromkeys(note for note in notes if note), *blocks]

    def record(self, title: str, section: int | None, revid: int, text: str, shown: tuple[int, int], *,
               latest: bool = True, heading: str | None = None) -> str | None:
        """Notes a read of ``text`` (a page or one section) that showed the bytes ``shown``; ``latest``:
        of the page's latest revision; ``heading``: the section was asked for by it. Returns a note
        for the model when the read could not be recorded yet."""
        total = utf8_len(text)
        start, end = shown[0], min(shown[1], total)
        partial = start > 0 or end < total
        # where a page's sections are, to tell which a read in part showed whole
        spans = section_spans(text, self.syntax()) if section is None and partial else {}
        starts, ends = {n: s for n, (s, _) in spans.items()}, {n: e for n, (_, e) in spans.items()}

        whole = [not partial]  # whether the reads of this revision, this one joined, showed it all

        def after(last: PageRead | None, order: int) -> PageRead:
            if not (self.told_apart and last and last.revid == revid):  # a shared ledger joins no reads
                return PageRead(revid, [(start, end)], total, order, ends, starts)
            joined = PageRead(revid, merged_ranges([(start, end), *last.ranges]), total, order,
                              last.section_ends or ends, last.section_starts if last.section_ends else starts)
            whole[0] = joined.unread(section) is None
            return joined

        def cut(known: Cuts | None, order: int) -> Cuts | None:
            """The latest CUT_REVISIONS_KEPT revisions some read showed in part, with the parts it cut;
            rewritten by every read, so that it is dropped no sooner than the page's read."""
            if not partial:
                return known
            parts: set[int | None] = {section}
            parts |= {n for n, last in ends.items() if starts[n] < end and last > start
                      and not start <= starts[n] <= last <= end}
            parts.update(*(p for r, p in known or () if r == revid))
            ordered = tuple(sorted(parts, key=lambda n: -1 if n is None else n))
            return (*((r, p) for r, p in known or () if r != revid), (revid, ordered))[-CUT_REVISIONS_KEPT:]
        name = f"{title}|{section}"
        changes: list[tuple[str, str, EntryChange]] = [("read", name, after)]
        if latest:
            changes += [("base", part, lambda _, order: Base(revid, order, whole[0] and section is None))
                        for part in (name, *([heading_entry(title, heading)] if heading else []))]
        if not self.told_apart:
            changes.append(("cut", title, cut))
        if self._note(changes):
            return None
        return (f"Note: the state store {self.ledger.store.name} cannot be reached, so this read is not on "
                "record yet for the checks that keep a write from losing text; it is recorded once the store "
                "is back, and writes are refused until then.")

    def saved(self, title: str, section: int | None, parent: int | None, revid: int,
              sent_whole: bool) -> None:
        """Notes a save of ``revid`` over ``parent``: a read (or an outline) that showed ``parent`` now
        shows ``revid``, as they differ by the caller's own edit. ``sent_whole``: the model sent the
        whole text and nothing was merged in, so it knows ``revid`` even unread."""
        def after(sent: bool, last: Base | None, order: int) -> Base | None:
            showed_parent = bool(last and parent and last.revid == parent)
            # the whole page stays known: sent whole, or a known parent changed by this edit alone
            whole = sent and section is None or bool(showed_parent and last and last.whole)
            unread = not sent and bool(last and last.shown)  # still no wikitext read of it
            return Base(revid, order, whole, unread) if sent or showed_parent else None
        bases = [("base", f"{title}|{part}", functools.partial(after, sent_whole and part == section))
                 for part in dict.fromkeys([None, section])]
        self._note([*bases, ("outline", title, functools.partial(after, False))])

    def base(self, title: str, section: int | None, heading: str | None = None, *,
             outlined: bool = False) -> int | None:
        """The latest revision the caller's last read of this page or section showed (also by
        ``heading``, as one added above renumbers it; ``outlined``: or whose section numbers a later
        outline showed), if any; none for a caller not told apart, whose reads may be another client's."""
        names = [f"{title}|{part}" for part in dict.fromkeys([section, None])]
        found = [self._get("base", name) for name in names + ([heading_entry(title, heading)] if heading else [])]
        found += [self._get("outline", title)] if outlined else []
        if not self.told_apart:  # asked all the same: a write stops while the store cannot be reached
            return None
        known = [b for b in found if b]
        # the text the model writes back comes from its wikitext reads: a revision shown later without
        # its wikitext (shown) is the base only where there is none
        last = max([b for b in known if not b.shown] or known, key=lambda b: b.order, default=None)
        return last.revid if last else None

    def knows_whole(self, title: str, revid: int) -> bool:
        """Whether the caller's reads (and its own saves since) showed all of revision ``revid`` of
        the page, the base of a write that would drop much of it. For callers not told apart: any
        read through this server, as only the revision named vouches for theirs."""
        last = self._get("base", f"{title}|None")
        return bool(last and last.revid == revid and last.whole)

    def _shown(self, title: str, revid: int, outline: bool) -> None:
        """Notes that the caller was shown revision ``revid`` of the page, the latest, without its
        wikitext (rendered, in finds, only its ID): where the caller read none of the page's wikitext,
        it is the base of the caller's next write, as a read of its wikitext would be; where it did,
        the text it writes back was made from that read, whose revision stays its base (base), so that
        the edits made since are merged in, not reverted. ``outline``: its section numbers were shown
        too (an outline, rendered text, finds): an edit by section number takes them as that revision's."""
        def pinned(last: Base | None, order: int) -> Base | None:
            if last and not last.shown:  # a wikitext read (or a save) of the page
                return None
            return Base(revid, order, shown=True)
        self._note([("base", f"{title}|None", pinned),
                    *([("outline", title, lambda _, order: Base(revid, order))] if outline else [])])

    def previewed(self, title: str, change: str, revid: int, saved: int | None = None) -> None:
        """Notes a dry run of ``change`` to a page at ``revid`` (``saved``: the revision its save made)."""
        self._note([("preview", preview_entry(title, change), lambda *_: (revid, saved))])

    def preview(self, title: str, change: str) -> tuple[int, int | None] | None:
        """The revision the caller's last dry run of ``change`` showed, and the one its save made, if any."""
        return self._get("preview", preview_entry(title, change))  # type: ignore[no-any-return]

    def _rendered(self, title: str, *texts: str) -> None:
        """Notes rendered text of a page shown to the caller: it is refused as wikitext (shows_rendered)."""
        digests = [rendering_digest(text) for text in texts]

        def after(known: tuple[str, ...] | None, order: int) -> tuple[str, ...]:
            return (*[d for d in known or () if d not in digests][-RENDERINGS_KEPT:], *digests)
        self._note([("rendered", title, after)])

    def shows_rendered(self, title: str, text: str) -> bool:
        """Whether ``text`` is, whitespace aside, rendered text of this page shown to the caller."""
        return rendering_digest(text) in (self._get("rendered", title) or ())

    def unseen(self, title: str, section: int | None) -> PageRead | None:
        """The caller's last read of this page or section, if it showed it only in part (later reads
        of the same revision add to it). None for a caller not told apart, as it may be another
        client's: their writes are checked by the revision they name (read_cut)."""
        if not self.told_apart:
            return None
        reads: list[PageRead | None] = [self._get("read", f"{title}|{part}") for part in dict.fromkeys([section, None])]
        last = max((r for r in reads if r), key=lambda r: r.order, default=None)
        return None if last is None or last.unread(section) is None else last

    def read_cut(self, title: str, section: int | None, revid: int) -> bool:
        """Whether a read by callers not told apart showed revision ``revid`` of this page or section
        in part, or may have (a revision older than those kept)."""
        kept: Cuts = self._get("cut", title) or ()
        if len(kept) == CUT_REVISIONS_KEPT and revid < min(r for r, _ in kept):
            return True
        return any(r == revid and section in parts for r, parts in kept)

    def forgotten(self, title: str, section: int | None) -> bool:
        """Whether the caller's ledger dropped entries and holds no read of this page or section now:
        it may have dropped one that showed it in part."""
        index: LedgerIndex | None = self._get("ledger", "")
        if not (index and index.dropped):
            return False
        return all(self._get("read", f"{title}|{part}") is None for part in dict.fromkeys([section, None]))

    def moved(self, old: str, new: str) -> None:
        """Notes a move made here of page ``old`` to ``new``: what was read of it under the old title
        (in part, and of which revision) holds for the new one until it is read there."""
        self._note([("moved", new, lambda *_: old)])

    def _get(self, kind: str, name: str) -> Any:
        def entry(kind: str, name: str) -> Any:
            return self.ledger.store.get(client_entry(self.wiki, self.caller, kind, name))
        found = entry(kind, name)
        title, bar, part = name.partition("|")  # a name starts with its page's title, which never holds '|'
        for _ in range(MOVES_FOLLOWED if kind in ("read", "base", "cut", "outline") else 0):
            old = found is None and entry("moved", title)
            if not old:
                break
            title, found = old, entry(kind, old + bar + part)
        return found

    def _note(self, changes: list[tuple[str, str, EntryChange]]) -> bool:
        return self.ledger.note(self.wiki, self.caller, changes)


def preview_entry(title: str, change: str) -> str:
    return f"{title}|{hashlib.sha256(change.encode()).hexdigest()}"
