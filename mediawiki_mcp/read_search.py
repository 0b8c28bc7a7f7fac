"""Read tools for search and the wiki: search-page, search-page-by-prefix, find-in-page,
get-site-info and whoami."""
from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import re
import subprocess
import sys
from typing import Annotated, Any

from .diff import DIFF_CONTEXT_CHARS, cut_at
from .dispatch import ToolContext
from .errors import NEXT_STEP, WikiError, invalid_input, not_found, upstream_failure
from .ledger import Shown
from .pages import (
    FindArg,
    Namespaces,
    TitleArg,
    check_page,
    continuation,
    listing,
    main_slot,
    no_such_revision,
    query_page,
    revision_of,
)
from .registry import Arg, tool
from .render import counted, encode_continuation, labelled, more_results_marker, strip_tags, utf8_len
from .sections import Node, as_wiki_receives, heading_plain, preprocess, wikitext_sections
from .siteinfo import Syntax


@tool("search-page", "Search pages", toolset="pages", read_only=True, continue_from=True,
      see={"for titles by prefix": "search-page-by-prefix",
           "for text in one page": "find-in-page"})
def search_page(
    ctx: ToolContext,
    query: Annotated[str, Arg("Search words (the wiki's syntax).", max_length=300,
                              max_length_listed=False)],
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most results.", minimum=1, maximum=50)] = 10,
) -> list[str]:
    """Searches page text (content namespaces by default): titles and snippets, best first."""
    if not query.strip():
        raise invalid_input("Argument 'query' must contain something to search for.")
    data = ctx.client.get({"action": "query", "list": "search", "srsearch": query, "srwhat": "text",
                           "srnamespace": namespaces or ctx.site.content_namespaces, "srlimit": limit,
                           "srprop": "snippet", "srinfo": "totalhits", **continuation(ctx, "sroffset")})
    hits = data.get("query", {}).get("search") or []
    total = data.get("query", {}).get("searchinfo", {}).get("totalhits")
    rows = [f"{h['title']}: {s}" if (s := strip_tags(h.get("snippet", ""))) else h["title"]
            for h in hits]
    matching = total if total is not None else len(rows)
    head = f"{counted(matching, 'page')} match{'es' if matching == 1 else ''}."
    return listing(data, rows, head, f"No pages match {query!r}.", "page", "search-page")


@tool("search-page-by-prefix", "Search pages by prefix", toolset="pages", read_only=True, continue_from=True,
      see={"for words inside pages": "search-page"})
def search_page_by_prefix(
    ctx: ToolContext,
    prefix: Annotated[str, Arg("Title start, with any namespace prefix.", max_length=255,
                               max_length_listed=False)],
    namespace: Annotated[int | None, Arg("Namespace ID.", minimum=0)] = None,
    limit: Annotated[int, Arg("Most titles.", minimum=1, maximum=100)] = 20,
) -> list[str]:
    """Returns titles starting with the prefix."""
    if not prefix.strip():
        raise invalid_input("Argument 'prefix' must not be empty.")
    named = ctx.site.namespace_of(prefix)
    if namespace is not None and named and named != namespace:  # MediaWiki would ignore namespace
        names = ctx.site.namespaces
        raise invalid_input(f"The prefix {prefix!r} is in namespace {named} ({names.get(named)}), but "
                            f"namespace is {namespace} ({names.get(namespace, 'unknown')}). Give the "
                            "namespace once: in the prefix or as namespace.")
    data = ctx.client.get({"action": "query", "list": "prefixsearch", "pssearch": prefix, "pslimit": limit,
                           "psnamespace": namespace, **continuation(ctx, "psoffset")})
    titles = [p["title"] for p in data.get("query", {}).get("prefixsearch") or []]
    return listing(data, titles, None, f"No page titles start with {prefix!r}.", "title",
                   "search-page-by-prefix")


FIND_LEGEND = ("section | line | byte offset, {reader}'s offset | what it is in, if a template call, "
               "reference or comment; then its line between those either side")


#: The matches find-in-page shows; it counts up to MAX_MATCHES.
FIND_SHOWN = 50


MAX_MATCHES = 10_000


@tool("find-in-page", "Find in page", toolset="pages", read_only=True, continue_from=True,
      see={"for words across pages": "search-page"})
def find_in_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    find: Annotated[str, FindArg],
    regex: Annotated[bool, Arg("find is a regex.")] = False,
    revisionId: Annotated[int | None, Arg("Older revision to search.", minimum=1)] = None,
) -> list[str]:
    """Finds text in a page's wikitext: each match's section, line, offset, context and
    enclosing template, reference or comment; 50 matches a call."""
    pattern, what = find_pattern(find, regex, "find")
    first, revisionId = next_matches(ctx, revisionId)
    try:
        page, redirected = query_page(ctx, titles=title, redirects=True, prop="revisions|info", rvslots="main",
                                      rvprop="ids|content", rvstartid=revisionId, rvendid=revisionId)
    except WikiError as error:
        if error.code in ("badid_rvstartid", "badid_rvendid") and revisionId:
            raise no_such_revision(ctx, revisionId) from None
        raise
    check_page(ctx, page, title, redirected=redirected)
    revision = revision_of(page)  # the one asked for, else the latest
    if "revid" not in revision or revisionId and revision["revid"] != revisionId:
        raise not_found(f"Revision {revisionId} is not a revision of {page['title']}; "
                        "get-page-history lists its revision IDs.")
    text = main_slot(revision).get("content", "")
    spans = match_spans(ctx, pattern, find, text)
    header = labelled(("Title", page["title"]), ("Redirected from", redirected),
                      ("Revision ID", revision["revid"]))
    # the latest revision is the base of a write, and the rows number its sections
    seen = Shown(page["title"], revision["revid"], latest=revision["revid"] == page.get("lastrevid"))
    if not spans:
        return ctx.reads.showed([f"{header}\nNo match of {what}."], seen)
    count = f"{'over ' if len(spans) > MAX_MATCHES else ''}{counted(min(len(spans), MAX_MATCHES), 'match')}"
    if first >= len(spans):
        raise invalid_input(f"continueFrom starts at match {first + 1}, but there are {count} of {what}.")
    shown = spans[first:first + FIND_SHOWN]
    # get-page reads the latest revision: an older one's offsets are get-revision's
    reader = f"get-revision {revisionId}" if revisionId else "get-page"
    blocks = [f"{header}\n{count} of {what}{f', from match {first + 1}' if first else ''} "
              f"({FIND_LEGEND.format(reader=reader)}):\n"
              + "\n".join(match_rows(ctx, text, shown))]
    if first + FIND_SHOWN < min(len(spans), MAX_MATCHES):
        # the next call reads the same revision, so that its matches follow on from these
        blocks.append(more_results_marker(len(shown), "match", "find-in-page", "continueFrom",
                                          encode_continuation({"from": first + FIND_SHOWN,
                                                               "revision": revision["revid"]})))
    return ctx.reads.showed(blocks, seen)


def next_matches(ctx: ToolContext, revision_id: int | None) -> tuple[int, int | None]:
    """Where a continued find-in-page starts (the index of its first match) and the revision it
    reads: the one the first call read."""
    if not ctx.continue_from:
        return 0, revision_id
    fields = continuation(ctx, "from", "revision")
    if not all(fields.get(key, "").isdigit() for key in ("from", "revision")):
        raise invalid_input(f"continueFrom {ctx.continue_from!r} is not a continuation find-in-page produced; "
                            "pass the value from its last 'More results available' marker unchanged.")
    if revision_id and revision_id != int(fields["revision"]):
        raise invalid_input(f"continueFrom reads on in revision {fields['revision']}, not {revision_id}; "
                            "leave revisionId out, or give the one the first call had.")
    return int(fields["from"]), int(fields["revision"])


def find_pattern(find: str, regex: bool, name: str) -> tuple[re.Pattern[str] | None, str]:
    """The regular expression a call's ``name`` argument is, when ``regex`` (None for plain text), and
    how an answer names what was looked for."""
    if not find:
        raise invalid_input(f"Argument '{name}' must not be empty.")
    quoted = json.dumps(find, ensure_ascii=False)
    if not regex:
        return None, quoted
    try:
        return re.compile(find), f"the regular expression {quoted}"
    except re.error as error:
        raise invalid_input(f"{name} is not a valid regular expression: {error}.") from None


def match_spans(ctx: ToolContext, pattern: re.Pattern[str] | None, find: str,
                text: str) -> list[tuple[int, int]]:
    """Where ``find`` (plain text) or ``pattern`` matches in ``text``, up to one past MAX_MATCHES."""
    if pattern:
        return regex_spans(pattern, text, ctx.state.regex_seconds)
    # as the wiki stores text, NFC: a decomposed é finds the é the page holds
    exact = re.escape(as_wiki_receives(find))
    return [found.span() for found in itertools.islice(re.finditer(exact, text), MAX_MATCHES + 1)]


#: Runs in a child process, which is stopped if it runs past ServerState.regex_seconds. Without a
#: replacement: the spans of the non-empty matches, up to one past ``most``; with one: the text with
#: every match replaced and how many, or why the replacement cannot be made.
REGEX_CHILD = """import json, re, sys
pattern, text, most, replace, seconds = json.load(sys.stdin)
try:  # the kernel stops it too, should this server end first and leave it running (Unix)
    import resource
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
except (ImportError, ValueError, OSError):
    pass
if replace is not None:  # a template (dollar_groups): each non-empty match replaced, as find-in-page shows them
    parts, count, at = [], 0, 0
    try:
        for found in re.finditer(pattern, text):
            if found.end() > found.start():
                parts += [text[at:found.start()], found.expand(replace)]
                at, count = found.end(), count + 1
    except (re.error, IndexError) as error:
        json.dump(str(error), sys.stdout)
        sys.exit()
    json.dump(["".join(parts) + text[at:], count], sys.stdout)
    sys.exit()
spans = []
for found in re.finditer(pattern, text):
    if found.end() > found.start():
        spans.append(found.span())
        if len(spans) > most:
            break
json.dump(spans, sys.stdout)"""


def run_regex(pattern: str, text: str, seconds: float, replace: str | None = None) -> Any:
    """REGEX_CHILD's answer for a model's regular expression on ``text``. It runs in a child process,
    stopped after ``seconds``: Python cannot stop a pattern that backtracks without end (such as
    (a+)+b) in its own thread, and holds every other call of the server while it runs."""
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", REGEX_CHILD], capture_output=True,
                              input=json.dumps([pattern, text, MAX_MATCHES, replace,
                                                int(seconds) + 1]).encode(),
                              timeout=seconds, check=True)
    except subprocess.TimeoutExpired:
        raise invalid_input(f"The regular expression ran over {seconds:g} s on this page without "
                            "finishing (it backtracks without end); simplify it, or find plain text."
                            ) from None
    except (OSError, subprocess.CalledProcessError) as error:
        raise upstream_failure(f"The regular expression could not be run ({type(error).__name__}). "
                               + NEXT_STEP["upstream_failure"]) from None
    return json.loads(done.stdout)


def regex_spans(pattern: re.Pattern[str], text: str, seconds: float) -> list[tuple[int, int]]:
    """Where a model's regular expression matches (non-empty) in ``text``, stopped after ``seconds``."""
    return [(start, end) for start, end in run_regex(pattern.pattern, text, seconds)]


def match_rows(ctx: ToolContext, text: str, spans: list[tuple[int, int]]) -> list[str]:
    """Each match: its section, line, byte offset and what it is inside, then its line (cut around
    it when long) between the lines either side; a match on the line of the one before, its row alone."""
    syntax = ctx.site.syntax
    sections = wikitext_sections(text, syntax)
    nodes = inner_nodes(text, syntax)
    line_starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    lines = text.split("\n")
    rows, last_line, position, offset = [], -1, 0, 0
    for start, end in spans:
        offset += utf8_len(text[position:start])
        position = start
        line = bisect.bisect_right(line_starts, start) - 1
        section = next((s for s in reversed(sections) if s.start <= offset), None)
        where = match_place(text, nodes, start)
        rows.append(" | ".join(filter(None, [
            f"{section.number} ({heading_plain(section.heading)})" if section else "0 (Lead)",
            f"line {line + 1}", str(offset), where])))
        if line != last_line:
            column = start - line_starts[line]
            if line and (before := lines[line - 1]).strip():
                rows.append(f"  {line}: {around(before, len(before), len(before))}")
            rows.append(f"> {line + 1}: {around(lines[line], column, column + end - start)}")
            if line + 1 < len(lines) and lines[line + 1].strip():
                rows.append(f"  {line + 2}: {around(lines[line + 1], 0, 0)}")
        last_line = line
    return rows


def around(line: str, start: int, end: int) -> str:
    """A line cut to DIFF_CONTEXT_CHARS either side of ``line[start:end]``."""
    before, after = line[:start], line[end:]
    if len(before) > DIFF_CONTEXT_CHARS:
        before = "…" + before[len(before) - cut_at(before[::-1], DIFF_CONTEXT_CHARS):]
    if len(after) > DIFF_CONTEXT_CHARS:
        after = after[:cut_at(after, DIFF_CONTEXT_CHARS)] + "…"
    return before + line[start:end] + after


def inner_nodes(text: str, syntax: Syntax) -> list[Node]:
    """The template calls, parameters, tags and comments of wikitext, with those inside <ref> tags,
    whose content the preprocessor leaves for Cite to read."""
    nodes = preprocess(text, syntax)[1]
    for node in list(nodes):
        if node.kind == "tag" and node.name == "ref" and text[node.end - 2:node.end] != "/>":
            inside = text.index(">", node.start) + 1
            nodes += [dataclasses.replace(n, start=n.start + inside, end=n.end + inside,
                                          parts=tuple((a + inside, b + inside) for a, b in n.parts))
                      for n in preprocess(text[inside:text.rindex("<", inside, node.end)], syntax)[1]]
    return nodes


def match_place(text: str, nodes: list[Node], at: int) -> str:
    """What a match at ``at`` is inside: ``in {{Cite note}} parameter title, in a reference``."""
    places = []
    for node in sorted((n for n in nodes if n.start <= at < n.end), key=lambda n: n.end - n.start):
        if node.kind == "comment":
            places.append("in a comment")
        elif node.kind == "tag":
            places.append("in a reference" if node.name in ("ref", "references") else f"in <{node.name}>")
        elif node.kind == "tplarg":
            places.append(f"in {{{{{{{node.name}}}}}}}")
        else:
            part = next((k for k, (a, b) in enumerate(node.parts) if a <= at <= b), 0)
            names = [argument_name(text[a:b]) for a, b in node.parts[1:part + 1]]
            param = names[-1] if names and names[-1] else str(names.count(None)) if names else ""
            places.append(f"in {{{{{node.name}}}}}" + (f" parameter {param}" if param else ""))
    return ", ".join(dict.fromkeys(places))


def argument_name(argument: str) -> str | None:
    """The name of a template call's argument (``name=value``); None for a positional one."""
    named = re.match(r"([^=\{\[<]*)=", argument)
    return named.group(1).strip() if named else None


@tool("get-site-info", "Get site info", toolset="pages", read_only=True,
      see={"for every wiki": "list-wikis", "to reach another wiki": "add-wiki"})
def get_site_info(ctx: ToolContext) -> str:
    """Returns which wiki this is (key, name, address), its version, language, read-only state,
    namespaces and extensions."""
    query = ctx.client.refresh_site("extensions")
    site = ctx.site
    extensions = sorted({e.get("name", "") for e in query.get("extensions") or []} - {""})
    return labelled(
        ("Wiki", ctx.wiki.key), ("Name", site.name), ("MediaWiki", site.generator),
        ("Language", site.lang), ("Main page", site.main_page),
        ("Main page URL", site.page_url(site.main_page) if site.main_page else None),
        ("API", ctx.client.api_url),
        ("Read-only", f"yes: {site.read_only_reason}" if site.read_only else None),
        ("Writes from this server", writes_from_here(ctx)),
        ("Namespaces", site.namespace_list()), ("Extensions", ", ".join(extensions)))


def writes_from_here(ctx: ToolContext) -> str:
    """Whether this server writes to the call's wiki for its caller: not where the operator made it
    read-only, nor for a person with no account of their own there."""
    if ctx.wiki.read_only:
        return "off (configured read-only)"
    if ctx.person is not None and ctx.wiki.key not in ctx.person.accounts:
        return f"off for {ctx.person.name}. {ctx.person.account_elsewhere('this wiki')}."
    return "on"


@tool("whoami", "Who am I", toolset="pages", read_only=True)
def whoami(ctx: ToolContext) -> str:
    """Returns the account this server acts as (or anonymous), its groups and rights."""
    person = ctx.person
    if person is not None and ctx.wiki.key not in person.accounts:  # the configured account is not theirs
        return labelled(
            ("Wiki", ctx.wiki.key),
            ("User", (f"none: {person.name} has no account of their own on this wiki (signed in to "
                      f"{', '.join(person.accounts)})")),
            ("Reads", "none: the wiki is private, and this server reads it for no one through its own account"
             if ctx.wiki.private else "what anyone may read, through this server's own account; not the watchlist"),
            ("Writes from this server", writes_from_here(ctx)))
    info = ctx.client.get({"action": "query", "meta": "userinfo",
                           "uiprop": "groups|rights|editcount"}).get("query", {}).get("userinfo", {})
    notable = ("edit", "createpage", "move", "delete", "undelete", "upload", "reupload",
               "upload_by_url", "protect", "block", "bot", "apihighlimits", "writeapi")
    rights = [r for r in notable if r in set(info.get("rights") or [])]
    anonymous = "anon" in info
    return labelled(
        ("Wiki", ctx.wiki.key),
        ("User", f"anonymous (IP {info.get('name')})" if anonymous else info.get("name")),
        login_line(ctx.client.username, bool(ctx.wiki.token)),
        ("User ID", None if anonymous else info.get("id")),
        ("Groups", ", ".join(g for g in info.get("groups") or [] if g != "*")),
        ("Edit count", None if anonymous else info.get("editcount")),
        ("Rights", ", ".join(rights)),
        ("Writes from this server", writes_from_here(ctx)))


def login_line(username: str | None, token: bool) -> tuple[str, str | None]:
    """whoami's line on how the server logs in: a bot password (User@app) logs in as User, so
    its app is named apart."""
    _, at, app = (username or "").partition("@")
    if at:
        return "App", f"{app} (bot password)"
    return "Login", f"{username} (password)" if username else "OAuth 2 access token" if token else None
