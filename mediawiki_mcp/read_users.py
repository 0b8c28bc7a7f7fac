"""Read tools for people and files: contributions, logs, the watchlist, and file information and
data."""
from __future__ import annotations

import base64
import ipaddress
import urllib.parse
from typing import Annotated, Any, Literal

from .dispatch import ToolContext
from .errors import invalid_input, not_found
from .guard import fetch_file
from .pages import FileTitleArg, Namespaces, check_page, continuation, listing, query_page, refuse_unknown_choice
from .read_history import row_summary, row_tags
from .read_links import ChangeFilters, ChangeLimit, ChangeTypes, ChangeUser, End, ExcludeUser, Start, time_window
from .registry import Arg, name_arg, tool
from .render import labelled, one_line, protection_text, raster_type, signed, title_in_namespace
from .siteinfo import STANDARD_CHOICES, SiteInfo
from .state import ServerState


def has_account(state: ServerState) -> bool:
    """Whether some wiki is used with an account: only an account has a watchlist."""
    return any(client.authenticated for _, _, client in state.entries())


CONTRIBUTIONS_LEGEND = ("revision ID | timestamp | page | size change | new, minor, latest (only when so) | "
                        "tags (only when any) | edit summary (quoted, only when any)")


@tool("get-user-contributions", "Get user contributions", toolset="changes",
      read_only=True, continue_from=True,
      see={"for all users": "get-recent-changes", "for one page": "get-page-history"})
def get_user_contributions(
    ctx: ToolContext,
    user: Annotated[str, name_arg("Account, IP address or CIDR range.")],
    namespaces: Namespaces = None,
    start: Start = None,
    end: End = None,
    oldestFirst: Annotated[bool, Arg("Oldest first.")] = False,
    limit: Annotated[int, Arg("Most edits.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns a user's (or IP range's) edits, newest first: revision ID, time, page, size change,
    then new, minor, latest, tags and summary."""
    name = user_name(user)
    oldest, newest = time_window(start, end)
    by_range = "/" in name
    params: dict[str, Any] = {
        "action": "query", "list": "usercontribs", "uciprange" if by_range else "ucuser": name,
        "ucnamespace": namespaces, "ucdir": "newer" if oldestFirst else "older",
        "ucstart": oldest if oldestFirst else newest, "ucend": newest if oldestFirst else oldest,
        "ucprop": "ids|title|timestamp|comment|sizediff|flags|tags", "uclimit": limit,
        **continuation(ctx, "uccontinue")}
    data = user_checked(ctx, params, None if by_range else name)
    rows = [contribution_row(edit) for edit in data.get("query", {}).get("usercontribs") or []]
    order = "oldest" if oldestFirst else "newest"
    return listing(data, rows, f"Edits by {name}, {order} first ({CONTRIBUTIONS_LEGEND}):",
                   f"No edits by {name} match.", "edit", "get-user-contributions")


def user_checked(ctx: ToolContext, params: dict[str, Any], name: str | None) -> dict[str, Any]:
    """The answer to a listing by user ``name``; not_found when there is no such account (asked in the
    same request, on a first call): an empty listing would otherwise read as "this user did nothing"."""
    if name and not ctx.continue_from:
        params = {**params, "list": [params["list"], "users"], "ususers": name}
    data = ctx.client.get(params)
    if (data.get("query", {}).get("users") or [{}])[0].get("missing"):
        raise not_found(f"There is no user {name!r} on {ctx.wiki.key}. User names are as the wiki shows "
                        "them, case-sensitive after the first letter.")
    return data


def user_name(text: str) -> str:
    """A user name, IP address or IP range as MediaWiki writes it (underscores as spaces, the
    first letter capital, IPv6 in capitals); '|' would name several users."""
    name = " ".join(text.replace("_", " ").split())
    if not name or "|" in name:
        raise invalid_input(f"Argument 'user' must name one user (an account, IP address or IP range), "
                            f"without '|'; got {text!r}.")
    try:
        ipaddress.ip_network(name, strict=False)
    except ValueError:
        return name[:1].upper() + name[1:]
    return name.upper()


def without_user_namespace(site: SiteInfo, text: str) -> str:
    """A user name given as a user page's title (User:Name, Benutzer:Name: any of the wiki's
    names for the namespace) as the name alone; any other text as it is."""
    return text.partition(":")[2] if site.namespace_of(text) == 2 else text


def contribution_row(edit: dict[str, Any]) -> str:
    flags = ", ".join(flag for flag, key in (("new", "new"), ("minor", "minor"), ("latest", "top"))
                      if edit.get(key))
    parts = [str(edit.get("revid", "")), edit.get("timestamp", ""), edit.get("title", ""),
             signed(edit["sizediff"]) if "sizediff" in edit else "", flags, row_tags(edit), row_summary(edit)]
    return " | ".join(p for p in parts if p)


LOG_LEGEND = "time | type/action | user | page | details (only when any) | reason (quoted, only when any)"


@tool("get-log-events", "Get log events", toolset="changes", read_only=True, continue_from=True,
      see={"for edits": "get-recent-changes"})
def get_log_events(
    ctx: ToolContext,
    type: Annotated[str | None, name_arg(f"Log type: {', '.join(STANDARD_CHOICES['log type'][:7])}, ...")] = None,
    title: Annotated[str | None, Arg("Only about this page.", title=True)] = None,
    user: Annotated[str | None, name_arg("Only by this account.")] = None,
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Arg("Most events.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns log events (deletions, moves, protections, uploads, blocks, ...), newest first: time,
    type/action, user, page, then details and reason."""
    oldest, newest = time_window(start, end)
    refuse_unknown_choice(ctx, "log type", type, "")
    name = user_name(user) if user is not None else None
    params: dict[str, Any] = {"action": "query", "list": "logevents", "letype": type, "letitle": title,
                              "leuser": name, "lestart": newest, "leend": oldest, "lelimit": limit,
                              "leprop": "title|type|user|timestamp|comment|details",
                              **continuation(ctx, "lecontinue")}
    data = user_checked(ctx, params, name)
    rows = [log_row(event) for event in data.get("query", {}).get("logevents") or []]
    return listing(data, rows, f"Log events, newest first ({LOG_LEGEND}):", "No log events match.", "event",
                   "get-log-events")


def log_row(event: dict[str, Any]) -> str:
    hidden = event.get("actionhidden")
    parts = [event.get("timestamp", ""), f"{event.get('type')}/{event.get('action')}",
             "(hidden)" if event.get("userhidden") else event.get("user", ""),
             "(hidden)" if hidden else event.get("title", ""), "" if hidden else log_details(event),
             row_summary(event)]
    return " | ".join(p for p in parts if p)


def log_details(event: dict[str, Any]) -> str:
    """What a log event's parameters say: a move's target, protection levels, else each one."""
    params = event.get("params") or {}
    if event.get("type") == "move" and params.get("target_title"):
        return f"to {params['target_title']}" + (", no redirect" if params.get("suppressredirect") else "")
    if event.get("type") == "protect" and "details" in params:
        return protection_text(params["details"])
    shown = {k: v for k, v in params.items() if v not in (None, "", [], {}, False) and k != "description"}
    return "; ".join(k if v is True else f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}"
                     for k, v in shown.items())


@tool("get-watchlist", "Get watchlist", toolset="changes",
      read_only=True, continue_from=True, rights=("viewmywatchlist",),
      offered=has_account)
def get_watchlist(
    ctx: ToolContext, start: Start = None, end: End = None, namespaces: Namespaces = None,
    types: ChangeTypes = None, user: ChangeUser = None, excludeUser: ExcludeUser = None,
    hide: Annotated[list[Literal["minor", "bot", "anonymous", "registered"]] | None, Arg(
        "Changes to leave out.", max_items=4)] = None,
    limit: ChangeLimit = 50,
) -> list[str]:
    """Returns recent changes to the pages the account watches, newest first, in the rows of
    get-recent-changes and with its filters but tag."""
    return ChangeFilters(start, end, namespaces, types, user, excludeUser, hide, limit).listed(
        ctx, "watchlist", {"wlallrev": True}, "Changes to watched pages", "changes to watched pages",
        "get-watchlist")


def file_info(ctx: ToolContext, title: str, **extra: Any) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """The file page and its latest imageinfo, and the title it was redirected from (a moved
    file's old title redirects to its new one); not_found when there is no file. A Media: link's
    title (namespace -2, the file itself) names the file."""
    bare = title.partition(":")[2] if ctx.site.namespace_of(title) == -2 else title
    name = title_in_namespace(ctx.site, bare, 6)
    page, redirected = query_page(ctx, titles=name, redirects=True, prop="imageinfo", **extra)
    check_page(ctx, page, title, must_exist=False)
    info = next(iter(page.get("imageinfo") or []), None)
    if info is None:  # a page without a file, or neither (a file from a shared repository has no page)
        raise not_found(f"File {page.get('title', name)!r} not found on {ctx.wiki.key}"
                        + (" (its page exists, but no file was uploaded)" if not page.get("missing") else "")
                        + ". search-page-by-prefix with namespace=6 finds existing files.")
    return page, info, redirected


@tool("get-file", "Get file", toolset="files", read_only=True,
      see={"for the image itself": "get-file-data"})
def get_file(ctx: ToolContext, title: Annotated[str, FileTitleArg]) -> str:
    """Returns a file's metadata: URLs, MIME type, size, dimensions, uploader, upload time and comment;
    notes a followed redirect."""
    page, info, redirected = file_info(ctx, title, iiprop="timestamp|user|comment|size|mime|mediatype|url")
    width, height = info.get("width"), info.get("height")
    return labelled(
        ("Title", page.get("title")), ("Redirected from", redirected),
        ("URL", info.get("url")), ("Description URL", info.get("descriptionurl")),
        ("MIME type", info.get("mime")), ("Media type", info.get("mediatype")),
        ("Size", f"{info.get('size', 0)} bytes"),
        ("Dimensions", f"{width}×{height} pixels" if width and height else None),
        ("Duration", f"{info['duration']:g} s" if info.get("duration") else None),
        ("Uploaded", f"{info.get('timestamp')} by {'(hidden)' if info.get('userhidden') else info.get('user')}"),
        ("Upload comment", one_line(info.get("comment", ""))),
        ("Repository", "shared (another wiki's file)" if page.get("imagerepository") == "shared" else None))


@tool("get-file-data", "Get file data", toolset="files", read_only=True,
      see={"for metadata and URLs": "get-file"})
def get_file_data(
    ctx: ToolContext,
    title: Annotated[str, FileTitleArg],
    width: Annotated[int, Arg("Largest width, in pixels.", minimum=16, maximum=4000)] = 1024,
) -> list[Any]:
    """Returns a file's image as an image block, for clients that cannot reach the wiki; scaled to
    width (PNG, JPEG, GIF, WebP). Capped at {file_data_max_bytes:bytes of base64}."""
    page, info, redirected = file_info(ctx, title, iiprop="size|mime|url", iiurlwidth=width)
    name, mime = page.get("title", title), info.get("mime", "")
    thumb = info.get("thumburl") or ""
    # a thumbnail of a file MediaWiki cannot render is a file-type icon
    if thumb and "/file-type-icons/" not in urllib.parse.urlsplit(thumb).path:
        url, shown = thumb, (info.get("thumbwidth"), info.get("thumbheight"))
    elif mime.startswith("image/") and info.get("url"):
        url, shown = info["url"], (info.get("width"), info.get("height"))
    else:
        raise invalid_input(f"{name} is {mime or 'not an image'}, which the wiki does not render as an "
                            "image. get-file gives its metadata and URL.")
    limit = ctx.state.config.file_data_max_bytes
    data = fetch_file(ctx.client, url, limit * 3 // 4)
    if data is None:
        again = "Call get-file-data again with a smaller width." if url != info.get("url") else ""
        raise invalid_input(f"The image of {name} is over the {limit}-byte cap (MCP_FILE_DATA_MAX_BYTES, in "
                            f"base64). {again or 'The wiki cannot scale it; get-file gives its URL.'}")
    kind = raster_type(data)
    if kind is None:
        raise invalid_input(f"The wiki sent {name} as {mime or 'unknown data'}, not a PNG, JPEG, GIF or WebP "
                            "image. get-file gives its metadata and URL.")
    import mcp_types as mt  # the SDK's types, imported when first needed
    scaled = url != info.get("url")
    header = labelled(("Title", name), ("Redirected from", redirected), ("MIME type", kind),
                      ("Rendition", f"{shown[0]}×{shown[1]} pixels, scaled from {info.get('width')}×"
                                    f"{info.get('height')}" if scaled else
                       f"original, {shown[0]}×{shown[1]} pixels" if shown[0] else "original"),
                      ("Bytes", len(data)))
    return [header, mt.ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=kind)]
