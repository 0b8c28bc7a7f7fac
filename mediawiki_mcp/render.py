"""Text for a model: byte budgets cut on character boundaries, labelled lines, continuation tokens,
and the wiki's timestamps and protections in words."""
from __future__ import annotations

import dataclasses
import datetime
import html
import html.parser
import json
import re
import typing
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import invalid_input
from .siteinfo import SiteInfo


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


@dataclasses.dataclass(frozen=True)
class Slice:
    """A window of a content body, in UTF-8 bytes."""
    text: str
    start: int
    end: int
    total: int

    @property
    def truncated(self) -> bool:
        return self.end < self.total


def slice_content(text: str, offset: int, budget: int) -> Slice:
    """The part of ``text`` from byte ``offset`` that fits ``budget`` bytes, cut on
    character boundaries (an offset inside a character starts at that character; a budget
    smaller than the first character still shows it)."""
    data = text.encode("utf-8")
    if offset > len(data):
        raise invalid_input(f"offset {offset} is past the end of the content ({len(data)} bytes).")
    start = utf8_len(data[:max(offset, 0)].decode("utf-8", "ignore"))  # back to a character's start
    shown = (data[start:start + budget].decode("utf-8", "ignore")  # drops a character cut at the end
             or data[start:start + 4].decode("utf-8", "ignore")[:1])
    return Slice(shown, start, start + utf8_len(shown), len(data))


#: The share of a budget a truncation marker's list of sections may take (1/4): the rest is
#: content, so that a call always reads on.
OUTLINE_SHARE = 4


def fitted(text: str, offset: int, budget: int, marker: Callable[[Slice], str]) -> tuple[Slice, str | None]:
    """The part of ``text`` from ``offset`` that fits ``budget`` bytes together with its truncation
    marker (made by ``marker`` for a cut), and that marker; None when the rest of the text fits whole.
    The marker names the cut, so its length changes with it: a few digits, fitted in a few tries."""
    piece = slice_content(text, offset, budget)
    note = marker(piece) if piece.truncated else None
    while note is not None and piece.end - piece.start + utf8_len(note) > budget:
        smaller = slice_content(text, offset, max(budget - utf8_len(note), 1))
        if smaller.end >= piece.end:
            break  # a budget the marker alone overruns: a character still, so that a call reads on
        piece, note = smaller, marker(smaller)
    return piece, note


def call_args(**args: Any) -> str:
    """Renders arguments the way markers name them: ``section=2 and offset=50000``."""
    return " and ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())


class Batch(typing.NamedTuple):
    """What a truncation marker of several pages (get-pages) says besides the page it cut: the bytes
    it shows of all the pages and their total (said when it cut none), the pages it left out, and the
    other arguments of the call that reads those."""
    shown: tuple[int, int]
    left_out: Sequence[str]
    fields: Mapping[str, Any]


def more_results_marker(count: int, item: str, tool: str, param: str, value: Any) -> str:
    return (f"More results available. Returned {counted(count, item)}. To fetch the next segment, "
            f"call {tool} again with {param}={json.dumps(value, ensure_ascii=False)}.")


def counted(number: int, noun: str) -> str:
    """``1 page``, ``2 pages``, ``2 matches``: a count with its noun (a regular one) in the right number."""
    return f"{number} {noun}{'' if number == 1 else 'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def labelled(*pairs: tuple[str, Any]) -> str:
    """Compact ``Label: value`` lines; empty and default values are left out. A number is a
    value, 0 included (section 0 is the lead), so only None, False and empty text or lists go."""
    return "\n".join(f"{label}: {value}" for label, value in pairs
                     if value is not None and value is not False and (isinstance(value, int) or value))


def strip_tags(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def encode_continuation(cont: Mapping[str, Any]) -> str:
    return urllib.parse.urlencode({k: str(v) for k, v in cont.items()}, safe="|:")


def decode_continuation(token: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """Parses a continueFrom token back into API fields, accepting only the
    continuation fields this tool's query produces (never other API parameters)."""
    try:
        fields = dict(urllib.parse.parse_qsl(token, keep_blank_values=True, strict_parsing=True))
    except ValueError:
        fields = {}
    if not fields or any(k not in allowed and k != "continue" for k in fields):
        raise invalid_input(f"continueFrom {token!r} is not a continuation this tool produced; pass the "
                            "value from the last 'More results available' marker unchanged.")
    return fields


#: How MediaWiki writes the expiry of what never expires.
NEVER = ("infinite", "infinity", "indefinite", "never", "")


def until_clause(expiry: Any) -> str:
    """`` until 2026-12-08T04:23:48Z``, or nothing for what never expires."""
    return "" if str(expiry or "").lower() in NEVER else f" until {expiry}"


def protection_text(entries: Iterable[Mapping[str, Any]]) -> str:
    """``edit=sysop until 2026-12-08T04:23:48Z, move=sysop; cascading``, or ``none``: protection
    levels as prop=info and the protection log give them (type, level, expiry, cascade); then
    those another page's cascading protection imposes (prop=info names it as their source)."""
    levels = [e for e in entries if e.get("level")]
    own = [e for e in levels if not e.get("source")]
    text = ", ".join(f"{e.get('type')}={e['level']}{until_clause(e.get('expiry'))}" for e in own)
    text = text + ("; cascading" if any(e.get("cascade") for e in own) else "") if text else "none"
    for source in dict.fromkeys(e["source"] for e in levels if e.get("source")):
        imposed = ", ".join(f"{e.get('type')}={e['level']}" for e in levels if e.get("source") == source)
        text += f"; yet {imposed} by the cascading protection of {source}, which only that page can lift"
    return text


def one_line(text: str) -> str:
    """Collapses whitespace (edit summaries may hold newlines) so a row stays one line."""
    return " ".join(str(text).split())


def signed(number: int) -> str:
    return f"{number:+d}" if number else "0"


#: The units of an age a person says ("3 days ago"), in seconds.
AGE_UNITS = {"minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def wiki_timestamp(value: str, name: str, *, day_end: bool = False) -> str:
    """A time as a person says it, in MediaWiki's UTC form 2026-11-29T15:00:00Z: an ISO 8601 time
    (UTC when it names no zone), an age (24 hours ago, 1 week ago), or a day (an ISO 8601 date,
    today, yesterday; UTC): its first moment, or with ``day_end`` its last, as an end means it."""
    text = " ".join(value.lower().split())
    now = datetime.datetime.now(datetime.timezone.utc)
    age = re.fullmatch(r"(\d{1,4}|an?) (minute|hour|day|week)s? ago", text)
    days_ago = {"today": 0, "yesterday": 1}.get(text)
    moment: datetime.datetime | None
    if age:
        count = int(age[1]) if age[1].isdigit() else 1
        moment = now - datetime.timedelta(seconds=count * AGE_UNITS[age[2]])
    elif days_ago is not None:
        moment = datetime.datetime.combine(now.date() - datetime.timedelta(days=days_ago), datetime.time(),
                                           datetime.timezone.utc)
    else:
        moment = iso_moment(value)
    if moment is None:
        raise invalid_input(f"Argument {name!r} must be a date or time in ISO 8601 (2026-11-29, "
                            "2026-11-29T15:00:00Z; UTC when no zone is given), an age such as 24 hours "
                            f"ago or 3 days ago, today or yesterday; got {value!r}.")
    # a day: today, yesterday or an ISO 8601 date (calendar or week), never an age or a time
    if day_end and (days_ago is not None or re.fullmatch(r"\d{4}-(\d\d-\d\d|w\d\d-\d)", text)):
        moment += datetime.timedelta(days=1, seconds=-1)
    try:
        moment = moment.astimezone(datetime.timezone.utc)
    except OverflowError:  # a zone that moves it before the year 1 or past 9999
        raise invalid_input(f"Argument {name!r} is {value!r}, which in UTC falls outside the years 1 to "
                            "9999.") from None
    # MediaWiki reads four digits of year; strftime writes the year 1 as "1"
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%SZ")


def iso_moment(value: str) -> datetime.datetime | None:
    """An ISO 8601 date or time as an aware datetime (UTC when it names no zone); None if it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(re.sub("[Zz]$", "+00:00", value.strip()))  # 3.10 reads no Z
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def title_in_namespace(site: SiteInfo, title: str, namespace: int) -> str:
    """``title`` in ``namespace``: kept when it already carries any of the wiki's names
    for that namespace (local, canonical or alias), else prefixed with the local name."""
    if site.namespace_of(title) == namespace:
        return title
    return f"{site.namespaces.get(namespace) or CANONICAL_NAMESPACES[namespace]}:{title}"


#: The English names every wiki also accepts, for namespaces that tools add to titles.
CANONICAL_NAMESPACES = {6: "File", 10: "Template", 14: "Category"}


#: Image formats a model can view, by their first bytes.
RASTER_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                     (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def raster_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, read from the bytes themselves."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in RASTER_SIGNATURES if data.startswith(magic)), None)
