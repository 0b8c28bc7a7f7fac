"""Read tools for structure: categories and their trees, links, recent changes, parsing and
templates' parameters."""
from __future__ import annotations

import dataclasses
import functools
import json
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal

from .dispatch import ToolContext
from .errors import invalid_input, not_found
from .pages import (
    Namespaces,
    OffsetArg,
    TitleArg,
    check_page,
    continuation,
    listing,
    main_slot,
    query_page,
    resolve_page,
    revision_of,
)
from .read_history import MAX_TEXT_CHARS, row_summary, row_tags
from .read_pages import content_blocks, run_each
from .registry import Arg, name_arg, tool
from .render import (
    OUTLINE_SHARE,
    call_args,
    labelled,
    one_line,
    signed,
    strip_tags,
    title_in_namespace,
    utf8_len,
    wiki_timestamp,
)
from .sections import joined_within, preprocess


@tool("get-category-members", "Get category members", toolset="pages", read_only=True, continue_from=True)
def get_category_members(
    ctx: ToolContext,
    category: Annotated[str, Arg("Category name; Category: optional.", title=True)],
    types: Annotated[list[Literal["page", "subcat", "file"]] | None, Arg(
        'Member types.', max_items=3)] = None,
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most members.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns a category's member counts, then its members."""
    title = title_in_namespace(ctx.site, category, 14)
    data = ctx.client.get({"action": "query", "list": "categorymembers", "cmtitle": title, "cmtype": types,
                           "cmprop": "title|type", "cmnamespace": namespaces, "cmlimit": limit, "titles": title,
                           "prop": "categoryinfo", **continuation(ctx, "cmcontinue")})
    query = data.get("query", {})
    members = query.get("categorymembers") or []
    page = next(iter(query.get("pages") or []), None)  # absent when continuing
    if page is not None:
        check_page(ctx, page, category, must_exist=False)
        title = page.get("title", title)
        if page.get("missing") and not members and not page.get("categoryinfo"):
            raise not_found(f"{title} has no page and no members on {ctx.wiki.key}. "
                            "search-page-by-prefix with namespace=14 finds existing categories.")
    rows = [m["title"] + (f" | {m['type']}" if m.get("type", "page") != "page" else "") for m in members]
    head = title + (" (no category page)" if page and page.get("missing") else "")
    if page is not None and (info := page.get("categoryinfo")):
        head += (f" (pages: {info.get('pages', 0)}, subcategories: {info.get('subcats', 0)}, "
                 f"files: {info.get('files', 0)})")
    return listing(data, rows, f"{head}:", f"{head}\nNo members match.", "member", "get-category-members")


#: The most requests one get-category-tree call sends: one for the category, one for each category
#: whose members it lists; past them the answer is capped, naming the next call.
CATEGORY_TREE_REQUESTS = 50


@tool("get-category-tree", "Get category tree", toolset="pages", read_only=True)
def get_category_tree(
    ctx: ToolContext,
    category: Annotated[str, Arg("Category name; Category: optional.", title=True)],
    depth: Annotated[int, Arg("Subcategory levels.", minimum=1, maximum=5)] = 2,
    pages: Annotated[bool, Arg("Also list pages and files.")] = False,
) -> list[str]:
    """Returns a category's subcategories to a depth with member counts; names cycles."""
    title = title_in_namespace(ctx.site, category, 14)
    page, _ = query_page(ctx, titles=title, prop="categoryinfo")
    check_page(ctx, page, category, must_exist=False)
    root = CategoryNode(page.get("title", title), page.get("categoryinfo") or {}, ())
    if page.get("missing") and not root.info:
        raise not_found(f"{root.title} has no page and no members on {ctx.wiki.key}. "
                        "search-page-by-prefix with namespace=14 finds existing categories.")
    seen, level, requests = {root.title}, [root], 1
    for step in range(depth + 1 if pages else depth):
        last = step == depth  # the categories at the depth asked: their pages only
        wanted = [node for node in level if node.listed(pages, last)]
        level = []
        for node, members in zip(wanted, run_each(
                functools.partial(category_members, ctx, pages=pages, last=last),
                [node.title for node in wanted[:CATEGORY_TREE_REQUESTS - requests]])):
            node.expand(members, seen)
            level += [child for child in node.children if not child.note]
        requests += min(len(wanted), CATEGORY_TREE_REQUESTS - requests)
    return category_tree_blocks(root, depth, pages, ctx.budget)


@dataclasses.dataclass(eq=False)
class CategoryNode:
    """A category in get-category-tree's answer: its counts (categoryinfo), the categories above it,
    what its members are once listed, and why it is not listed further (a cycle, a repeat)."""
    title: str
    info: Mapping[str, int]
    above: tuple[str, ...]
    children: list[CategoryNode] = dataclasses.field(default_factory=list)
    pages: list[str] = dataclasses.field(default_factory=list)
    listed_all: bool | None = None  # None: its members were not listed; False: only the first request's
    note: str = ""

    def listed(self, pages: bool, last: bool) -> bool:
        """Whether its members are worth a request: it has subcategories to show, or pages asked for."""
        return not self.note and (bool(self.info.get("subcats")) and not last
                                  or pages and bool(self.info.get("pages") or self.info.get("files")))

    def expand(self, members: tuple[list[dict[str, Any]], bool], seen: set[str]) -> None:
        found, self.listed_all = members
        path = (*self.above, self.title)
        for member in sorted(found, key=lambda m: m.get("title", "")):
            name = member.get("title", "")
            if member.get("ns") != 14:
                self.pages.append(name)
                continue
            child = CategoryNode(name, member.get("categoryinfo") or {}, path)
            if name in path:
                child.note = "cycle: " + " → ".join((*path[path.index(name):], name))
            elif name in seen:
                child.note = "shown elsewhere in this tree"
            seen.add(name)
            self.children.append(child)

    def walk(self) -> Iterator[CategoryNode]:
        """It and the categories below it, each before its children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def row(self) -> str:
        """Its row in the tree, indented by its depth: its title, counts and notes."""
        counts = [f"{label}: {self.info[key]}" for key, label in
                  (("pages", "pages"), ("subcats", "subcategories"), ("files", "files")) if self.info.get(key)]
        notes = [*counts, self.note, "" if self.listed_all is not False else "first members only"]
        shown = ", ".join(filter(None, notes))
        return f"{'  ' * len(self.above)}{self.title}" + (f" ({shown})" if shown else "")


def category_members(ctx: ToolContext, title: str, pages: bool,
                     last: bool) -> tuple[list[dict[str, Any]], bool]:
    """A category's subcategories (at the ``last`` level none) and, if ``pages``, its pages and files,
    each subcategory with its counts: one request; and whether that was all of them."""
    kinds = ["page", "file"] if pages else []
    data = ctx.client.get({"action": "query", "generator": "categorymembers", "gcmtitle": title,
                           "gcmtype": kinds if last else ["subcat", *kinds], "gcmlimit": "max",
                           "prop": "categoryinfo"})
    return (data.get("query") or {}).get("pages") or [], "continue" not in data


def category_tree_blocks(root: CategoryNode, depth: int, pages: bool, budget: int) -> list[str]:
    """The tree as indented rows, within ``budget`` bytes; a marker naming the first category cut,
    and the categories shown whose members were left unlisted (the request cap), if any."""
    legend = (f"Subcategories of {root.title} to depth {depth}, each under its parent with its counts "
              "(0 left out)" + ("; its pages and files as '- ' rows" if pages else "") + ":")
    rows, size, cut, count = [legend], utf8_len(legend), None, 0
    unlisted: list[CategoryNode] = []
    for node in root.walk():
        lines = [node.row()] + [f"{'  ' * len(node.above)}  - {name}" for name in node.pages]
        more = utf8_len("\n".join(lines)) + 1
        if size + more > budget and node.pages:  # else a call from this category would be cut here again
            lines = pages_within(lines, budget - size, node)
            more = utf8_len("\n".join(lines)) + 1
        if size + more > budget:
            cut = node
            break
        if node.listed_all is None and node.listed(pages, last=len(node.above) == depth):
            unlisted.append(node)
        rows += lines
        size, count = size + more, count + 1
    blocks = ["\n".join(rows)]
    said = []
    if cut is not None:
        # the levels left below the category cut, and its pages if they were asked for
        rest = call_args(category=cut.title, depth=max(depth - len(cut.above), 1),
                         **({"pages": True} if pages else {}))
        said.append(f"Result capped at {count} {'category' if count == 1 else 'categories'}. Additional "
                    f"categories may exist — to see them, call get-category-tree again with {rest}.")
    if unlisted:
        said.append(unlisted_members(unlisted, depth, pages))
    return blocks + [" ".join(said)] if said else blocks


def unlisted_members(nodes: list[CategoryNode], depth: int, pages: bool) -> str:
    """The marker of the categories shown whose members the request cap left unlisted, and the
    calls that list them: the subcategories (and pages) of those above the depth asked, the pages
    and files of the others."""
    above = [node for node in nodes if node.info.get("subcats") and len(node.above) < depth]
    rest = [node for node in nodes if node not in above]
    kinds, calls = [], []
    if above:
        what = "subcategories and pages" if pages else "subcategories"
        first = call_args(category=above[0].title, depth=depth - len(above[0].above),
                          **({"pages": True} if pages else {}))
        kinds.append(f"the {what} of {', '.join(node.title for node in above)}")
        calls.append(f"get-category-tree again with {first} (a category's {what})")
    if rest:
        kinds.append(f"the pages and files of {', '.join(node.title for node in rest)}")
        calls.append(f"get-category-members with {call_args(category=rest[0].title)} "
                     "(a category's pages and files)")
    return (f"Result capped at {CATEGORY_TREE_REQUESTS} requests (the counts, then one a category listed): "
            f"{'' if above else 'every category is shown, but '}{' and '.join(kinds)} are not listed. To list "
            f"them, call {', or '.join(calls)}.")


def pages_within(lines: list[str], room: int, node: CategoryNode) -> list[str]:
    """A category's row and the rows of as many of its pages as fit in ``room`` bytes, then a row
    naming the call that lists the rest."""
    def rest(left: int) -> str:
        return (f"{'  ' * len(node.above)}  - … {left} more: get-category-members with "
                f"category={json.dumps(node.title, ensure_ascii=False)} lists them")
    kept = lines[:1]
    for line in lines[1:]:
        if utf8_len("\n".join([*kept, line, rest(len(lines) - len(kept) - 1)])) + 1 > room:
            break
        kept.append(line)
    return [*kept, rest(len(lines) - len(kept))]


#: Each kind of get-links-here: its list module, that module's parameter prefix, how a row says it,
#: and whether it follows redirects.
LINK_KINDS = {"wikilinks": ("backlinks", "bl", "", True),
              "transclusions": ("embeddedin", "ei", "transclusion", False),
              "fileusage": ("imageusage", "iu", "file link", True)}


@tool("get-links-here", "Get links here", toolset="pages", read_only=True, continue_from=True,
      see={"for what a page uses": "get-page-links"})
def get_links_here(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    types: Annotated[list[Literal["wikilinks", "transclusions", "fileusage"]] | None, Arg(
        'Link kinds.', max_items=3)] = None,
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most pages per kind.", minimum=1, maximum=250)] = 50,
) -> list[str]:
    """Returns pages that link to, transclude or (files) show a page, marked by how."""
    is_file = ctx.site.namespace_of(title) == 6
    if types and "fileusage" in types and not is_file:
        raise invalid_input(f"types 'fileusage' applies to File: pages only; {title!r} is not one.")
    kinds = list(dict.fromkeys(types)) if types else [k for k in LINK_KINDS if k != "fileusage" or is_file]
    used = [LINK_KINDS[k] for k in kinds]
    params: dict[str, Any] = {"action": "query", "titles": title, "list": [module for module, *_ in used]}
    for _, prefix, _, redirects in used:
        params.update({f"{prefix}title": title, f"{prefix}limit": limit,
                       f"{prefix}namespace": namespaces, f"{prefix}redirect": redirects})
    data = ctx.client.get({**params, **continuation(ctx, "blcontinue", "eicontinue", "iucontinue")})
    query = data.get("query", {})
    page = next(iter(query.get("pages") or []), None)  # absent when continuing
    if page is not None:
        check_page(ctx, page, title, must_exist=False)
        title = page.get("title", title)
    rows = []
    for module, _, how, _ in used:
        for link in query.get(module) or []:
            redirect = "redirect" if link.get("redirect") else ""
            rows.append(" | ".join(filter(None, [link["title"], how, redirect])))
            rows += [" | ".join(filter(None, [via["title"], how, f"via {link['title']}"]))
                     for via in link.get("redirlinks") or []]
    missing = " (the page does not exist)" if page and page.get("missing") else ""
    return listing(data, rows, f"Pages that link to {title}{missing}:", f"No pages link to {title}{missing}.",
                   "page", "get-links-here")


#: What a page links to and uses, in the order a get-page-links answer lists them: the prop module,
#: its parameters' prefix, how a row says it.
PAGE_USES = (("links", "pl", "link"), ("templates", "tl", "template"), ("categories", "cl", "category"),
             ("images", "im", "file"))


#: Rows of each kind a get-page-links call returns before its continueFrom marker (its description says it).
PAGE_USES_CAP = 100


@tool("get-page-links", "Get page links", toolset="pages", read_only=True, continue_from=True,
      see={"for pages linking to it": "get-links-here"})
def get_page_links(ctx: ToolContext, title: Annotated[str, TitleArg]) -> list[str]:
    """Returns the links, templates, categories and files a page uses. At most 100 of each a
    call."""
    data = ctx.client.get({"action": "query", "titles": title, "redirects": True,
                           **{f"{prefix}limit": PAGE_USES_CAP for _, prefix, _ in PAGE_USES},
                           "prop": "|".join(prop for prop, _, _ in PAGE_USES), "clprop": "hidden",
                           **continuation(ctx, *(f"{prefix}continue" for _, prefix, _ in PAGE_USES))})
    page, redirected = resolve_page(data.get("query", {}))
    check_page(ctx, page, title, redirected=redirected)
    rows = [f"{used['title']} | {note}" + (", hidden" if used.get("hidden") else "")
            for prop, _, note in PAGE_USES for used in page.get(prop) or []]
    name = page["title"] + (f" (redirected from {redirected})" if redirected else "")
    return listing(data, rows, f"{name} uses:", f"{name} has no links, templates, categories or files.",
                   "row", "get-page-links")


RC_HIDE = {"minor": "!minor", "bot": "!bot", "anonymous": "!anon", "registered": "anon",
           "redirects": "!redirect"}


RC_LEGEND = ("time | page | change | user | size change | flags (minor, bot; only when any) | "
             "tags (only when any) | edit summary (quoted, only when any)")


Start = Annotated[str | None, name_arg(
    "Earliest time listed: ISO 8601 (UTC unless zoned), a date, today, yesterday or an age (3 days ago).")]


End = Annotated[str | None, name_arg("Latest time listed, in start's forms; a date means its end.")]


ChangeTypes = Annotated[list[Literal["edit", "new", "log", "categorize"]] | None,
                        Arg("Default: edit, new, log.", max_items=4)]


ChangeUser = Annotated[str | None, name_arg("Only this account's.")]


ExcludeUser = Annotated[str | None, name_arg("Not this account's.")]


ChangeLimit = Annotated[int, Arg("Most changes.", minimum=1, maximum=500)]


@tool("get-recent-changes", "Get recent changes", toolset="changes", read_only=True, continue_from=True,
      see={"for one page": "get-page-history"})
def get_recent_changes(
    ctx: ToolContext, start: Start = None, end: End = None, namespaces: Namespaces = None,
    types: ChangeTypes = None, user: ChangeUser = None, excludeUser: ExcludeUser = None,
    tag: Annotated[str | None, name_arg("Only with this change tag.")] = None,
    hide: Annotated[list[Literal["minor", "bot", "anonymous", "registered", "redirects"]] | None, Arg(
        "Changes to leave out.", max_items=5)] = None,
    limit: ChangeLimit = 50,
) -> list[str]:
    """Returns the wiki's recent changes, newest first: time, page, revision ID or log action, user,
    size change, then flags, tags and summary."""
    return ChangeFilters(start, end, namespaces, types, user, excludeUser, hide, limit).listed(
        ctx, "recentchanges", {"rctag": tag}, "Recent changes", "changes", "get-recent-changes")


class ChangeFilters(typing.NamedTuple):
    """The filters that get-recent-changes and get-watchlist share, as the call gives them."""
    start: str | None
    end: str | None
    namespaces: list[int] | None
    types: Sequence[str] | None
    user: str | None
    exclude_user: str | None
    hide: Sequence[str] | None
    limit: int

    def listed(self, ctx: ToolContext, module: str, params: Mapping[str, Any], heading: str, what: str,
               tool_name: str) -> list[str]:
        """One page of list=recentchanges or list=watchlist so filtered, newest first, a row each."""
        if self.user and self.exclude_user:
            raise invalid_input("Give user or excludeUser, not both.")
        if self.hide and {"anonymous", "registered"} <= set(self.hide):
            raise invalid_input("Hiding both anonymous and registered users leaves no changes; hide one.")
        oldest, newest = time_window(self.start, self.end)
        prefix = {"recentchanges": "rc", "watchlist": "wl"}[module]
        data = ctx.client.get({"action": "query", "list": module, **params, **{
            f"{prefix}{name}": value for name, value in (
                ("dir", "older"), ("start", newest), ("end", oldest),
                ("prop", "title|ids|sizes|flags|user|timestamp|comment|loginfo|tags"),
                ("namespace", self.namespaces), ("type", self.types or ["edit", "new", "log"]),
                ("user", self.user), ("excludeuser", self.exclude_user),
                ("show", [RC_HIDE[h] for h in self.hide or []] or None), ("limit", self.limit))},
            **continuation(ctx, f"{prefix}continue")})
        rows = [change_row(c) for c in data.get("query", {}).get(module) or []]
        return listing(data, rows, f"{heading}, newest first ({RC_LEGEND}):", f"No {what} match.", "change",
                       tool_name)


def time_window(start: str | None, end: str | None) -> tuple[str | None, str | None]:
    """The oldest and newest time asked for, in MediaWiki's form; a start after the end is refused."""
    oldest = wiki_timestamp(start, "start") if start else None
    newest = wiki_timestamp(end, "end", day_end=True) if end else None
    if newest and oldest and oldest > newest:
        raise invalid_input(f"start ({oldest}) is after end ({newest}).")
    return oldest, newest


def change_row(change: dict[str, Any]) -> str:
    kind = str(change.get("type"))
    what = {"edit": f"revision {change.get('revid')}", "new": f"new page, revision {change.get('revid')}",
            "log": f"log {change.get('logtype')}/{change.get('logaction')}"}.get(kind, kind)
    size = (signed(change["newlen"] - change.get("oldlen", 0))
            if kind in ("edit", "new") and "newlen" in change else "")
    flags = ", ".join(f for f in ("minor", "bot") if change.get(f))
    parts = [change.get("timestamp", ""), change.get("title", ""), what,
             "(hidden)" if change.get("userhidden") else change.get("user", ""), size, flags,
             row_tags(change), row_summary(change)]
    return " | ".join(p for p in parts if p)


@tool("parse-wikitext", "Preview wikitext", toolset="pages", read_only=True)
def parse_wikitext(
    ctx: ToolContext,
    wikitext: Annotated[str, Arg("Wikitext to render.", max_length=MAX_TEXT_CHARS,
                                      max_length_listed=False)],
    title: Annotated[str | None, Arg("Page title it renders as; default: API.",
                                     title=True)] = None,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Renders wikitext unsaved (signatures, subst: expanded): HTML, warnings, links, templates,
    categories. HTML truncated at {content_max_bytes:bytes}."""
    if not wikitext.strip():
        raise invalid_input("Argument 'wikitext' must contain something to render.")
    lists = "" if offset else "|links|templates|categories|externallinks|parsewarnings|displaytitle"
    parsed = ctx.client.get({
        "action": "parse", "text": wikitext, "title": title, "contentmodel": "wikitext", "pst": True,
        "prop": "text" + lists,
        "disableeditsection": True, "disablelimitreport": True,
    }).get("parse", {})
    display = strip_tags(parsed.get("displaytitle", ""))
    lines = [("Rendered as", parsed.get("title"))]
    if not offset:  # the lists came with the first call
        lines += [
            ("Display title", display if display != parsed.get("title") else None),
            ("Warnings", "; ".join(one_line(w) for w in parsed.get("parsewarnings") or []))]
        listed = {"Links": existence_list(parsed.get("links")), "Templates": existence_list(parsed.get("templates")),
                  "Categories": [c["category"].replace("_", " ") + (" (missing)" if c.get("missing") else "")
                                 for c in parsed.get("categories") or []],
                  "External links": parsed.get("externallinks") or []}
        left = ctx.budget // OUTLINE_SHARE  # the lists share what a marker's list of sections may take
        shown: dict[str, str] = {}
        # the shortest first, each at most an even share of what is left: hundreds of links leave
        # room for the few categories
        for n, label in enumerate(sorted(listed, key=lambda label: utf8_len(", ".join(listed[label])))):
            shown[label] = joined_within(listed[label], left // (len(listed) - n))
            left = max(left - utf8_len(shown[label]), 0)
        lines += [(label, shown[label]) for label in listed]
    return content_blocks(labelled(*lines), parsed.get("text", ""), offset, ctx.budget, "parse-wikitext",
                          sections=None, again=None)[0]


TEMPLATE_LEGEND = ("name | type | required, suggested or deprecated | label | aliases | default | example | "
                   "description (quoted); each only when set")


@tool("get-template-info", "Get template info", toolset="pages", read_only=True)
def get_template_info(
    ctx: ToolContext,
    title: Annotated[str, Arg("Template name; Template: optional.", title=True)],
) -> str:
    """Returns a template's parameters and description from TemplateData, else from its
    {{{{{{name|default}}}}}} uses."""
    name = title_in_namespace(ctx.site, title, 10)
    if "templatedata" in ctx.client.extensions:
        data = ctx.client.get({"action": "templatedata", "titles": name, "redirects": True,
                               "lang": ctx.site.lang, "includeMissingTitles": True})
        found: dict[str, Any] = next(iter((data.get("pages") or {}).values()), {})
        redirected = next((r.get("from") for r in data.get("redirects") or []), None)
        check_page(ctx, found, title)
        if not found.get("notemplatedata"):
            params = found.get("params") or {}
            order = [p for p in found.get("paramOrder") or [] if p in params] or list(params)
            shape = found.get("format")  # 'inline', 'block', or a custom format string
            header = labelled(("Template", found.get("title")), ("Redirected from", redirected),
                              ("Description", found.get("description")),
                              ("Format", shape if shape in ("inline", "block", None)
                               else json.dumps(shape, ensure_ascii=False)))
            return header + (f"\nParameters ({TEMPLATE_LEGEND}):\n" + "\n".join(
                template_param_row(p, params[p]) for p in order) if order else "\nIt takes no parameters.")
    page, redirected = query_page(ctx, titles=name, redirects=True, prop="revisions", rvprop="content",
                                  rvslots="main")
    check_page(ctx, page, title, redirected=redirected)
    source = main_slot(revision_of(page)).get("content", "")
    inferred: dict[str, tuple[int, str | None]] = {}  # name: where it first is, its default
    for node in preprocess(source, ctx.site.syntax, inclusion=True)[1]:
        if node.kind == "tplarg" and node.name and "{" not in node.name:
            default = source[slice(*node.parts[1])] if len(node.parts) > 1 else None
            first, known = inferred.get(node.name, (node.start, None))
            inferred[node.name] = (min(first, node.start), known if known is not None else default)
    header = labelled(("Template", page.get("title")), ("Redirected from", redirected))
    if not inferred:
        return f"{header}\nIt has no TemplateData, and its source reads no parameters ({{{{{{name}}}}}})."
    rows = [name + (f" | default: {json.dumps(default, ensure_ascii=False)}" if default is not None else "")
            for name, (_, default) in sorted(inferred.items(), key=lambda item: (
                not item[0].isdigit(), int(item[0]) if item[0].isdigit() else item[1][0]))]
    return (f"{header}\nIt has no TemplateData: its parameters are inferred from {{{{{{name|default}}}}}} "
            "in its source (name | default, only when it has one):\n" + "\n".join(rows))


def template_param_row(name: str, param: Mapping[str, Any]) -> str:
    # TemplateData's deprecated is true or the reason, as text
    flags = [f"deprecated: {json.dumps(one_line(param[flag]), ensure_ascii=False)}"
             if flag == "deprecated" and isinstance(param[flag], str) else flag
             for flag in ("required", "suggested", "deprecated") if param.get(flag)]
    parts = [name, param.get("type") if param.get("type") not in (None, "unknown") else "", ", ".join(flags)]
    parts += [f"{key}: {one_line(param[key]) if key != 'aliases' else ', '.join(param[key])}"
              for key in ("label", "aliases", "default", "example") if param.get(key)]
    if param.get("description"):
        parts.append(json.dumps(one_line(param["description"]), ensure_ascii=False))
    return " | ".join(p for p in parts if p)


def existence_list(items: list[dict[str, Any]] | None) -> list[str]:
    return [i["title"] + ("" if i.get("exists") else " (missing)") for i in items or []]
