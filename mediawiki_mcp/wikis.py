"""Wikis and toolsets: list-wikis, add-wiki, remove-wiki and load-toolset, and the wikis as
resources."""
from __future__ import annotations

import re
import urllib.parse
from typing import Annotated, Any

from .client import MediaWikiClient
from .config import WikiConfig, normalise_server, wiki_key
from .dispatch import NO_PERSON, Caller, Session, ToolContext, loadable_now, offered_tools, toolsets_of
from .errors import WikiError, conflict, invalid_input, permission_denied
from .registry import Arg, tool
from .render import call_args, labelled
from .settings import TOOLSETS
from .siteinfo import SiteInfo
from .state import ServerState
from .wire import split_userinfo


def managing_wikis(state: ServerState) -> bool:
    """add-wiki and remove-wiki: unless the operator froze the list, or replicas share no state."""
    return state.config.allow_wiki_management and not state.stateless


def wiki_facts(state: ServerState, key: str, contact: bool) -> dict[str, Any]:
    """A wiki's public facts (never a credential); ``contact`` fetches site info if not known."""
    wiki, client = state.wiki_and_client(key)
    site, api = client.learnt
    problem = None
    if contact and site is None:
        try:
            site, api = client.site, client.api_url
        except WikiError as error:  # a refused login or account is no network trouble
            problem = (PROBLEM_LABELS.get(error.category, "problem"), error.message)
    parts = urllib.parse.urlsplit(wiki.url)
    return {"key": key, "name": site.name if site else wiki.sitename,
            "server": site.server if site else f"{parts.scheme}://{parts.netloc}", "api": api,
            "read_only": wiki.read_only, "default": key == state.config.default_wiki,
            "private": wiki.private, "problem": problem}


#: How list-wikis and the wiki resources name a wiki's problem, by its error category.
PROBLEM_LABELS = {"authentication": "no access", "permission_denied": "no access",
                  "upstream_failure": "unreachable", "rate_limited": "unreachable"}


def wiki_summary(state: ServerState, key: str) -> str:
    """The text of the resource mcp://wikis/{key}."""
    facts = wiki_facts(state, key, contact=True)
    return labelled(("Wiki", key), ("Name", facts["name"]), ("Server", facts["server"]),
                    ("API", facts["api"]), ("Read-only", facts["read_only"] and "yes"),
                    ("Default", facts["default"] and "yes"), ("Private", facts["private"] and "yes"),
                    *([(facts["problem"][0].capitalize(), facts["problem"][1])] if facts["problem"] else []))


#: The resource template of the wikis, whose {key} completion/complete offers.
WIKI_RESOURCE_TEMPLATE = "mcp://wikis/{key}"


def wiki_resources(state: ServerState) -> list[dict[str, Any]]:
    """resources/list entries, one per wiki, from what is known (no request)."""
    resources = []
    for key in state.wikis:
        facts = wiki_facts(state, key, contact=False)
        resources.append({"uri": f"mcp://wikis/{key}", "name": key, "title": facts["name"] or None,
                          "mime_type": "text/plain", "description": f"The wiki at {facts['server']}"
                          + (" (default)" if facts["default"] else "")})
    return resources


def serves_url(wiki_url: str, site: SiteInfo | None, url: str) -> bool:
    """Whether ``url``, any URL of a wiki, is one of the wiki whose API is ``wiki_url``: on its
    host, and the bare host or a path under its script or article path. Two wikis may share a
    host (/w/ and /de/w/): the host alone does not tell them apart."""
    if wiki_key(wiki_url) != wiki_key(url):
        return False
    path = urllib.parse.urlsplit(url).path.rstrip("/")
    if not urllib.parse.urlsplit(wiki_url).path.strip("/"):
        return True  # configured by its server alone: the host is all there is to go by
    script = urllib.parse.urlsplit(wiki_url).path.rpartition("/")[0]
    # until its site info says, the usual short URLs: /w/ for scripts, /wiki/ for pages
    prefixes = {script, script.removesuffix("/w") + "/wiki" if script.endswith("/w") else ""}
    if site and wiki_key(site.server) == wiki_key(url):  # its paths are on its own server
        prefixes |= {site.script_path, site.article_path.split("$1")[0]}
    return not path or any(p.strip("/") and f"{path}/".startswith(f"/{p.strip('/')}/") for p in prefixes)


@tool("add-wiki", "Add wiki", toolset="wikis",
      read_only=False, destructive=False, idempotent=True, open_world=True,
      scoped=False, offered=managing_wikis)
def add_wiki(
    ctx: ToolContext,
    wikiUrl: Annotated[str, Arg("Any URL of the wiki: a page, its address or api.php.",
                                max_length=2000, max_length_listed=False)],
) -> str:
    """Adds a wiki until the server stops, from any URL of it, keyed by its server name (e.g.
    en.wikipedia.org); then every tool takes a wiki argument, and the client is told the tool list
    changed. Anonymous and read-only unless configured with credentials. Fails for private addresses
    and for a wiki already configured."""
    state = ctx.state
    try:
        url = normalise_server(wikiUrl)
    except ValueError:
        raise invalid_input(f"{wikiUrl!r} is not an http(s) URL of a wiki.") from None
    if split_userinfo(url)[1]:
        raise invalid_input("wikiUrl must not carry a user name or password; a wiki that needs them is one "
                            "for the operator to configure.")
    options = {"user_agent_prefix": state.config.user_agent, **state.client_options}
    wiki = next((w for k, w in state.config.wikis.items()  # the operator's entry, since removed
                 if k not in state.wikis and serves_url(w.url, None, url)), None)
    known = next((k for k, w, c in state.entries() if serves_url(w.url, c.learnt[0], url)), None)
    if wiki is None and known is None:  # a URL from a model: every request passes the address guard
        client = MediaWikiClient(url, guard=state.guard, **options)
        site = client.site
        known = next((k for k, c in state.clients.items() if c.learnt[1] == client.api_url), None)
    if known:
        raise conflict(f"{known} is already configured, and {url} is one of its addresses; pass it as wiki "
                       "to other tools.")
    if wiki is None:
        key = wiki_key(site.server) or wiki_key(client.api_url)
        names = {name for k, w, c in state.entries()
                 for name in (k, wiki_key(w.url), wiki_key(c.learnt[0].server) if c.learnt[0] else None)}
        if key in names or key in state.config.wikis:  # another wiki on this host
            key += site.script_path or urllib.parse.urlsplit(client.api_url).path.rpartition("/")[0]
        wiki = next((w for k, w in state.config.wikis.items()  # the operator's entry by this name, removed
                     if k not in state.wikis and key in (k, wiki_key(w.url))),
                    WikiConfig(key=key, url=client.api_url, sitename=site.name))
    if wiki.key in state.config.wikis:  # the operator's entry, with its credentials
        client = wiki.client(**options)
        site = client.site
    state.add_wiki(wiki, client)
    return labelled(("Added wiki", wiki.key), ("Name", site.name), ("MediaWiki", site.generator),
                    ("Server", site.server), ("API", client.api_url),
                    ("Access", "read-only" if wiki.read_only else "read and write")
                    ) + f"\nPass {call_args(wiki=wiki.key)} to other tools to use it."


@tool("remove-wiki", "Remove wiki", toolset="wikis",
      read_only=False, destructive=True, idempotent=True, open_world=False,
      scoped=False, offered=lambda state: managing_wikis(state) and len(state.wikis) > 1,
      see={"to bring it back": "add-wiki"})
def remove_wiki(
    ctx: ToolContext,
    wiki: Annotated[str, Arg("Key of the wiki to remove.", max_length=300)],
) -> str:
    """Removes a wiki from this server, added or configured (never the default wiki). Nothing
    changes on the wiki itself."""
    if not wiki.strip():
        raise invalid_input("Argument 'wiki' must name the wiki to remove.")
    key = ctx.state.resolve_wiki(wiki)
    removed = ctx.state.remove_wiki(key)
    return f"Removed wiki {key}" + (f" ({removed.sitename})" if removed.sitename else "") + "."


@tool("list-wikis", "List wikis", toolset="pages", read_only=True, scoped=False,
      offered=lambda state: len(state.wikis) > 1)
def list_wikis(ctx: ToolContext) -> str:
    """Returns the configured wikis, one per line: key (the wiki argument of other tools), name,
    public and API addresses, then "default" and "read-only" where so. The resource
    mcp://wikis/{{key}} holds the same for one wiki."""
    rows = []
    for key in ctx.state.wikis:
        facts = wiki_facts(ctx.state, key, contact=True)
        marks = [m for m, on in (("default", facts["default"]), ("read-only", facts["read_only"]),
                                 ("private", facts["private"])) if on]
        if facts["problem"]:
            marks.append(": ".join(facts["problem"]))
        rows.append(f"{key}: " + ", ".join(str(v) for v in (
            facts["name"], facts["server"], f"API {facts['api']}" if facts["api"] else None) if v)
            + (f" ({'; '.join(marks)})" if marks else ""))
    return "\n".join(rows)


def toolset_tools(state: ServerState, session: Session | None, name: str, caller: Caller = NO_PERSON) -> list[str]:
    """The tools a toolset would add for a session of ``caller``, as offered_tools offers them (a
    read-only server offers no tool that writes; a person, none their account lacks the rights for)."""
    with_it = Session(toolsets_of(state, session) | {name})
    return [spec.name for spec in offered_tools(state, with_it, caller) if spec.toolset == name]


def toolsets_to_load(state: ServerState, session: Session | None, caller: Caller) -> str:
    """load-toolset's live sentence: each toolset the session can load that adds a tool, by its
    name, with what it is for (a model given examples of what toolsets hold took them for names)."""
    names = [name for name in loadable_now(state, session) if toolset_tools(state, session, name, caller)]
    if not names:
        return "This session has every toolset it can load."
    return "Toolsets: " + "; ".join(f"'{name}': {TOOLSETS[name]}" for name in names) + "."


def toolsets_holding(word: str, state: ServerState) -> list[str]:
    """The toolsets whose description or tool names hold ``word``, a plural as its singular: where
    a model that named a toolset by what it holds ('logs', 'contributions') finds it."""
    wanted = word.removesuffix("s")
    if len(wanted) < 3:
        return []
    found = []
    for name, holds in TOOLSETS.items():
        words = re.findall("[a-z]+", " ".join([holds, *(spec.name for spec in state.registry.tools.values()
                                                          if spec.toolset == name)]))
        if wanted in {w.removesuffix("s") for w in words}:
            found.append(name)
    return found


@tool("load-toolset", "Load toolset", toolset="pages", read_only=True, open_world=False, scoped=False,
      in_session=True, offered=lambda state: bool(state.config.loadable_toolsets - state.config.toolsets),
      live=toolsets_to_load)
def load_toolset(
    ctx: ToolContext,
    toolset: Annotated[str | None, Arg("Omitted: lists their tools.", max_length=50,
                                       max_length_listed=False)] = None,
) -> str:
    """Adds a toolset's tools to this session."""
    state, session, caller = ctx.state, ctx.session, ctx.caller
    assert session is not None  # in_session: offered to sessions only
    choices = loadable_now(state, session)
    if toolset is None:
        rows = [f"{name}: {TOOLSETS[name]}; tools: {', '.join(tools)}"
                for name in choices if (tools := toolset_tools(state, session, name, caller))]
        barred = [name for name in TOOLSETS if name not in toolsets_of(state, session) | set(choices)]
        return "\n".join(rows or ["There is no toolset left for this session to load."]) + (
            f"\nNot loadable (the operator's choice): {', '.join(barred)}." if barred else "")
    name = toolset.strip().lower()
    if name not in TOOLSETS:
        holding = toolsets_holding(name, state)
        raise invalid_input(f"There is no toolset {toolset!r}; the toolsets are {', '.join(TOOLSETS)}" + (
            f". {toolset.strip()!r} is in the toolset {' and '.join(holding)}." if holding else "."))
    if name in toolsets_of(state, session):
        return f"The toolset {name} is already loaded: {', '.join(toolset_tools(state, session, name, caller))}."
    if name not in choices:
        raise permission_denied(f"The operator does not let a session load the toolset {name} "
                                "(MCP_LOADABLE_TOOLSETS); no retry by the model changes it.")
    tools = toolset_tools(state, session, name, caller)
    if not tools and caller.person and toolset_tools(state, session, name):
        raise permission_denied(f"The toolset {name} offers {caller.person.name} no tool: their account lacks the "
                                "rights of each on every wiki where they may write. Only the wiki's administrators "
                                "can give them; no retry by the model changes it.")
    if not tools:
        raise permission_denied(f"The toolset {name} offers no tool with this server's configuration (on "
                                "read-only wikis, none that writes).")
    session.loaded |= {name}
    return f"Loaded the toolset {name} for this session; the tool list now has {', '.join(tools)}."
