"""The command line: arguments, --check of the configured wikis, sign-in, and main()."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import logging
import os
import sys
import textwrap
import typing
from collections.abc import Mapping, Sequence

from .client import MediaWikiClient
from .config import Config
from .dispatch import offered_tools
from .errors import WikiError
from .http import HttpOptions, http_options, login_module, serve_http
from .server import create_server
from .settings import SETTINGS, TOOLSETS, ConfigError, setting, upload_directories
from .state import ServerState
from .stdio import serve_stdio
from .store import MemoryStore, store_problem_at_start
from .wire import __version__, log


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediawiki-mcp", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serves the Model Context Protocol for MediaWiki wikis, over stdio by default "
                    "(default wiki: English Wikipedia, anonymous and read-only).",
        epilog="environment variables:\n" + "\n".join(
            textwrap.fill(row.described, 100, initial_indent=f"  {row.variable:<24} ", subsequent_indent=" " * 27)
            for row in SETTINGS.values()))
    parser.add_argument("--version", action="version", version=f"mediawiki-mcp {__version__}")
    parser.add_argument("--check", action="store_true",
                        help="connect to each configured wiki, print what it offers, and exit (non-zero on a failure)")
    # these do what the variable named does (below), and win over it
    parser.add_argument("--config", metavar="PATH", help="as CONFIG")
    parser.add_argument("--transport", choices=["stdio", "http"], help="as MCP_TRANSPORT")
    parser.add_argument("--host", help="as MCP_BIND")
    parser.add_argument("--port", type=int, help="as PORT")
    parser.add_argument("--stateless", action="store_true", default=None, help="as MCP_STATELESS")
    parser.add_argument("--upload-dirs", nargs="*", default=[], metavar="DIR",
                        help="directories uploads may read files from, besides those of MCP_UPLOAD_DIRS")
    parser.add_argument("--empty-means-unset", action="store_true",
                        help="read a variable set to nothing as unset, for installers that set every "
                             "variable (the Claude Desktop bundle)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sign_in = commands.add_parser(
        "sign-in", help="who is signed in (MCP_AUTH=login): list, or revoke WIKI:USER",
        description="Lists or revokes the sign-ins of MCP_AUTH=login, in the shared store of MCP_STATE_URL; "
                    "run it with the server's environment (MCP_STATE_URL, MCP_AUTH_SECRET, the wikis).")
    actions = sign_in.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="each person signed in: wiki, account, when, and their live tokens")
    revoke = actions.add_parser("revoke", help="signs a person out: every token of theirs stops working")
    revoke.add_argument("person", metavar="WIKI:USER", help="the person, as list names them")
    return parser


def sign_in_to_check(args: argparse.Namespace, env: Mapping[str, str], config: Config) -> HttpOptions | None:
    """--check without --transport http: the HTTP options all the same when MCP_AUTH=login, as the
    HTTP server would read them, so that a key or public URL that would stop it fails the check first."""
    if setting(env, "MCP_AUTH") != "login":
        return None
    return http_options(argparse.Namespace(**{**vars(args), "transport": "http"}), env, config)


def sign_in_command(args: argparse.Namespace, config: Config, env: Mapping[str, str], out: typing.TextIO) -> int:
    """``mediawiki-mcp sign-in list|revoke``: the sign-ins kept in the shared store; the exit status."""
    if not config.state_url:
        raise ConfigError("sign-in list and revoke read the shared store of MCP_STATE_URL, which is not set: "
                          "without it, sign-ins live in the server process's own memory, which no other process "
                          "can see (restarting that server signs everyone out)")
    options = login_module("login_forms").sign_in_options(env, True, decrypts=False)
    sign_ins = login_module().SignIns(ServerState.from_config(config), options, "http://localhost")
    try:
        if args.action == "revoke":  # as list shows them, or as they are
            person = next((person["person"] for person in sign_ins.signed_in_people()
                           if args.person in (person["person"], unreordered(person["person"]))), None)
            if person is None:
                print(f"No one is signed in as {unreordered(args.person)}; 'mediawiki-mcp sign-in list' names who "
                      "is.", file=out)
                return 1
            sign_ins.sign_out_person(person)
            print(f"Signed out {unreordered(person)}: every token of theirs is revoked; their MCP client asks them "
                  "to sign in again.", file=out)
            return 0
        people = sign_ins.signed_in_people()
    except WikiError as error:  # the store cannot be reached
        print(f"mediawiki-mcp: {error.message}", file=sys.stderr)
        return 1
    if not people:
        print("No one is signed in.", file=out)
    rows = [("PERSON", "WIKI", "ACCOUNT", "SIGNED IN", "LIVE TOKENS")] + [
        (unreordered(p["person"]), p["wiki"], unreordered(p["account"] or "-"), datetime.datetime.fromtimestamp(
            p["since"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if p["since"] else "-",
         str(p["tokens"])) for p in people]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows if people else ():
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out)
    return 0


def unreordered(text: str) -> str:
    """A name a person chose as a terminal should show it (sign-in list): with any control or bidi
    character escaped (U+202E as \\u202e, as logged() does), which MediaWiki keeps in user names or
    strips only as it logs in, so that no name reorders the table."""
    return text if text.isprintable() else repr(text)[1:-1]


def check_wikis(config: Config, out: typing.TextIO, http: HttpOptions | None = None) -> int:
    """--check: connects to each wiki and prints its name, MediaWiki version, the account
    the server acts as and the tools it can use there (the account's rights, the upload
    directories), and with MCP_AUTH=login (``http.sign_in``) how people sign in. Returns the
    exit status."""
    state = ServerState.from_config(config)
    offered = offered_tools(state)
    failures = 0
    for key, wiki, client in state.entries():
        try:
            site, account = client.site, client.account
            tools = [spec.name for spec in offered if spec.scoped and (spec.read_only or not wiki.read_only)
                     and (not spec.needs_extension or spec.needs_extension.lower() in client.extensions)
                     and all(account.can(right) for right in spec.rights)
                     and (config.upload_dirs or not spec.needs_upload_dirs)]
        except WikiError as error:
            failures += 1
            print(f"{key}: FAILED: {error}", file=out)
            continue
        identity = ("anonymous" if account.anonymous else account.name
                    + (f" (bot password {client.username})" if client.username else " (OAuth token)"))
        unusable = [] if wiki.read_only else tags_not_applicable(client, wiki.tags)
        failures += bool(unusable)
        writes = ("read-only" if wiki.read_only else f"read; every write FAILS: the wiki does not let the "
                  f"configured change tag{'s' * (len(unusable) > 1)} {', '.join(unusable)} be applied "
                  "(Special:Tags defines them)" if unusable else "read and write")
        print(f"{key}{' (default)' if key == config.default_wiki else ''}: {site.name}, {site.generator}, "
              f"as {identity}, {writes}\n"
              f"  API: {client.api_url}\n  Tools: {', '.join(tools)}", file=out)
    unscoped = [spec.name for spec in offered if not spec.scoped]
    if unscoped:
        print(f"Server tools: {', '.join(unscoped)}", file=out)
    store, store_down = state.reads.store, store_problem_at_start(state.reads.store)
    if store.name != MemoryStore.name:
        print(f"State store: {store.name}, " + (f"FAILED: it cannot be reached ({store_down}), so every write "
                                                "is refused" if store_down else "reached"), file=out)
    if http is not None and http.sign_in:
        keys = len(http.sign_in.keys)
        print(f"Sign-in: MCP_AUTH=login, public URL {http.public_url}"
              + ("" if http.sign_in.public_url else " (the address listened on: MCP_PUBLIC_URL is not set)")
              + f", {keys} key{'s' * (keys > 1)} in MCP_AUTH_SECRET", file=out)
    chosen = (f"from {config.toolsets_from}" if config.toolsets_from else
              "by default (MCP_TOOLSETS, or toolsets in a configuration file, chooses others)")
    print(f"Toolsets: {', '.join(t for t in TOOLSETS if t in config.toolsets)} (of {', '.join(TOOLSETS)}), "
          f"{chosen}", file=out)
    if failures:
        print(f"{failures} of {len(config.wikis)} wikis failed the check.", file=out)
    return 1 if failures or store_down else 0


def tags_not_applicable(client: MediaWikiClient, tags: Sequence[str]) -> list[str]:
    """Those of ``tags`` that no write could carry: not defined on the wiki by hand, or not active
    (MediaWiki's own tags, such as mw-undo, it applies itself)."""
    if not tags:
        return []
    listed = client.get({"action": "query", "list": "tags", "tgprop": "defined|active", "tglimit": "max"})
    usable = {t.get("name") for t in listed.get("query", {}).get("tags") or []
              if t.get("defined") and t.get("active")}
    return [tag for tag in tags if tag not in usable]


#: Libraries whose DEBUG lines hold what a page says, kept at INFO even at DEBUG: sse-starlette logs each
#: event it sends (a tool's answer, page text and all), urllib3 each request's URL (a read's parameters,
#: such as wikitext to render or compare).
TEXT_LOGGERS = ("sse_starlette", "urllib3")


def main(argv: list[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)
    env = {name: value for name, value in os.environ.items() if value.strip() or not args.empty_means_unset}
    try:
        logging.basicConfig(level=setting(env, "MEDIAWIKI_MCP_LOG_LEVEL"), stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        for name in TEXT_LOGGERS:
            logging.getLogger(name).setLevel(max(logging.getLogger().level, logging.INFO))
        config = Config.from_env(env, config_path=args.config)
        config = dataclasses.replace(config, upload_dirs=tuple(dict.fromkeys(
            config.upload_dirs + upload_directories(args.upload_dirs, "--upload-dirs"))))
        if args.command == "sign-in":
            return sign_in_command(args, config, env, sys.stdout)
        http = http_options(args, env, config)
        state = ServerState.from_config(config, stateless=http is not None and http.stateless)
        problem = store_problem_at_start(state.reads.store)
    except ConfigError as error:
        print(f"mediawiki-mcp: {error}", file=sys.stderr)
        return 2
    if args.check:
        try:
            signing_in = http if http is not None and http.sign_in else sign_in_to_check(args, env, config)
        except ConfigError as error:
            print(f"mediawiki-mcp: {error}", file=sys.stderr)
            return 2
        return check_wikis(config, sys.stdout, signing_in)
    store = state.reads.store
    if store.name != MemoryStore.name:
        down = f", which cannot be reached now ({problem}): writes are refused until it is" if problem else ""
        log.log(logging.WARNING if problem else logging.INFO, "Idempotency keys and reads are shared through %s%s",
                store.name, down)
    server = create_server(state=state)
    if http is not None:
        blank = [name for name, value in os.environ.items() if name in SETTINGS and not value.strip()]
        return serve_http(server, http, blank if args.empty_means_unset else ())
    import anyio
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve_stdio, server)
    return 0
