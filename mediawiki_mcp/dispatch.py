"""Dispatch: a tools/call resolved to its caller and wiki, checked, run on a worker thread, and its
answer or error shaped; tools/list as each caller sees it."""
from __future__ import annotations

import dataclasses
import json
import re
import secrets
import typing
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .calls import on_own_thread
from .client import MediaWikiClient
from .config import WikiConfig
from .errors import NEXT_STEP, ErrorCategory, WikiError, authentication, conflict, invalid_input, permission_denied
from .identity import PERSON_SCOPE, Person, bearer_token, token_digest
from .ledger import SHARED_CALLER, ClientReads
from .registry import Confirmer, Preview, ToolSpec, check_arguments
from .settings import TOOLSETS
from .siteinfo import RIGHTS, WITHOUT_RIGHT, Account, SiteInfo
from .state import ServerState
from .wire import log, logged


def no_progress(done: float, total: float | None, message: str) -> None:
    """The progress reporter of a call whose client asked for none."""


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who makes a request, resolved once where it comes in (caller_of): ``id``, the scope of what
    the read ledger and idempotency keys vouch for (caller_id); the person, if one signed in (with
    MCP_AUTH=login, always; none: the configured accounts act); their account on each writable
    wiki where they have one (None where its login failed), so that what they are offered asks no
    wiki; and the client that acts for them on each wiki (client)."""
    id: str = ""
    person: Person | None = None
    accounts: tuple[Account | None, ...] = ()

    def offers(self, spec: ToolSpec) -> bool:
        """Whether the caller's accounts allow a tool: for a person, one that writes only where an
        account of theirs has its rights, or its login failed (the call then tells them why, as
        hiding the tool would not)."""
        return (self.person is None or spec.read_only or not spec.scoped
                or any(account is None or all(account.can(r) for r in spec.rights) for account in self.accounts))

    def client(self, state: ServerState, wiki: WikiConfig, configured: MediaWikiClient,
               spec: ToolSpec | None = None) -> MediaWikiClient:
        """The client a call of the caller (of the tool ``spec``, if any) acts through on ``wiki``:
        ``configured`` where no one signed in. A person acts through their own account where they
        have one, never the configured one; elsewhere the configured account reads what anyone may
        read for them, unless the wiki is private; nothing writes, and nothing reads what only an
        account sees (a read tool that needs a right of the account: the watchlist)."""
        person = self.person
        if person is None:
            return configured
        if wiki.key in person.accounts:
            return state.people.client(person, wiki, state.make_client)
        if spec is not None and spec.read_only and spec.rights:
            doing = RIGHTS.get(spec.rights[0], (f"use {spec.name}",))[0]
            raise permission_denied(f"{person.name} has no account of their own on {wiki.key}, so this server "
                                    f"does not {doing} there for them: {spec.name} shows what only an account "
                                    f"sees, and the server's own account is not theirs. "
                                    f"{person.account_elsewhere(wiki.key)}.")
        if spec is not None and spec.name == "whoami":  # says who they are from what the server knows
            return configured
        if wiki.private or spec is not None and not spec.read_only:
            doing = "read the private wiki" if spec is None or spec.read_only else f"use {spec.name} on the wiki"
            raise authentication(f"{person.name} has no account of their own on {wiki.key}, so this server "
                                 f"does not {doing} {wiki.key} for them (never as its own account); nothing was "
                                 f"changed. {person.account_elsewhere('the wiki')}.")
        return configured

    def note_write(self, write: tuple[str, str, Any] | None, outcome: str) -> None:
        """The operator's record of a write a person made: the tool, wiki, page and who; no secret."""
        if self.person is not None and write is not None:
            name, key, page = write
            log.info("write by %s: %s on %s%s: %s", logged(self.person.in_log), name, key,
                     f", page {page!r}" if page else "", outcome)

    def login_failed(self, key: str) -> tuple[str, ...]:
        """What a person is told, after the wiki's error, when their own login to ``key`` failed."""
        person = self.person
        if person is None or key not in person.accounts:
            return ()
        return ((f"Nothing was done as another account. {person.name} needs a working bot password of their own "
                 f"here: {person.account_fix()}."),)


#: The caller where no one signs in, within this process: the configured accounts act.
NO_PERSON = Caller()


@dataclasses.dataclass
class ToolContext:
    """What a tool function gets besides its arguments:

    - ``client``: the wiki's client. The tool's first use of it checks the rights of @tool: after
      the tool's own checks of its arguments, before it asks the wiki anything, so a call the
      account cannot make changes nothing (and asks no confirmation).
    - ``wiki``: the wiki's configuration; ``site``: its site info, learnt once per wiki.
    - ``continue_from``, ``dry_run``, ``watch``, ``confirmed``: those arguments (@tool's flags).
    - ``asks``: the person confirms this call's guarded actions (run_guarded); ``picked``: the
      choices of its Preview they picked; ``unconfirmable``: why they cannot from this client, and
      who could (unconfirmable()), so that a dry run does not send the model to a refused call.
    - ``budget``: the bytes of content one answer may carry (MCP_CONTENT_MAX_BYTES).
    - ``progress(done, total, message)``: MCP progress of a long call, sent only where the client
      asked for it, never failing the call.
    - ``state``: the server's; ``caller``: who calls (Caller; ``person``, theirs); ``session``: their
      MCP session, if any."""
    _client: MediaWikiClient
    wiki: WikiConfig
    state: ServerState
    progress: Callable[[float, float | None, str], None] = no_progress
    rights: tuple[str, ...] = ()  # the rights still to check
    continue_from: str | None = None
    dry_run: bool = False
    watch: str | None = None
    confirmed: bool = False
    asks: bool = False
    picked: frozenset[str] | None = None
    unconfirmable: str = ""
    caller: Caller = NO_PERSON
    session: Session | None = None

    @property
    def client(self) -> MediaWikiClient:
        rights, self.rights = self.rights, ()
        for right in rights:
            if why := self._client.cannot(right):
                instead = WITHOUT_RIGHT.get(right, NEXT_STEP["permission_denied"])
                raise permission_denied(f"{why} Nothing was changed. {instead}")
        return self._client

    @property
    def person(self) -> Person | None:
        return self.caller.person

    @property
    def budget(self) -> int:
        return self.state.config.content_max_bytes

    @property
    def reads(self) -> ClientReads:
        return self.state.reads.of(self.wiki.key, self.caller.id, lambda: self.site.syntax)

    @property
    def site(self) -> SiteInfo:
        return self._client.site


@dataclasses.dataclass(eq=False)
class Session:
    """What the server keeps of one MCP session while its connection lasts (session_of): the
    toolsets it loaded (load-toolset) on top of the operator's."""
    loaded: frozenset[str] = frozenset()  # replaced whole, as tool threads and the loop share it


def session_of(ctx: Any) -> Session | None:
    """The Session of a request's MCP session (caller_id); None where no requests share one
    (stateless HTTP, the 2026 protocol)."""
    if not caller_id(ctx).startswith(("session:", "connection:")):
        return None
    return connection_of(ctx).state.setdefault("mediawiki-mcp session", Session())


def connection_of(ctx: Any) -> Any:
    """The SDK's Connection a request came on: its session id, its state kept across requests, its
    standalone channel. The one private access to it: handlers get a ServerRequestContext, whose
    ServerSession keeps it as ``_connection`` (mcp/server/session.py:55); the public
    Context.connection (mcp/server/context.py:87) is not what ServerRunner hands handlers yet (:62)."""
    return ctx.session._connection


def toolsets_of(state: ServerState, session: Session | None) -> frozenset[str]:
    return state.config.toolsets | (session.loaded if session else frozenset())


def unlisted_arguments(state: ServerState, session: Session | None = None) -> set[str]:
    """The shared arguments tools/list leaves out: ``wiki`` with one wiki, and ``watch`` without
    the toolset of the watchlist."""
    return {name for name, unused in (("wiki", len(state.wikis) < 2),
                                      ("watch", "changes" not in toolsets_of(state, session))) if unused}


def offered_tools(state: ServerState, session: Session | None = None, caller: Caller = NO_PERSON) -> list[ToolSpec]:
    """The tools offered to a caller in a session: those of its toolsets, a tool that writes only
    where a wiki is writable (and the caller's accounts allow it: Caller.offers), and only while its
    ``offered`` holds. Asks no wiki."""
    writable, toolsets = state.any_writable(), toolsets_of(state, session)
    return [spec for spec in state.registry.tools.values()
            if spec.toolset in toolsets and (spec.read_only or not spec.scoped or writable)
            and (spec.offered is None or spec.offered(state)) and (session or not spec.in_session)
            and caller.offers(spec)]


def listed_tools(state: ServerState, session: Session | None = None, caller: Caller = NO_PERSON,
                 confirmer: Confirmer = "model") -> list[Any]:
    """tools/list's answer; without ``confirm`` where the model does not confirm guarded actions."""
    import mcp_types as mt

    offered, unlisted = offered_tools(state, session, caller), unlisted_arguments(state, session)
    unlisted |= {"confirm"} if confirmer != "model" else set()
    absent = state.registry.tools.keys() - {spec.name for spec in offered}
    return [mt.Tool(name=spec.name, title=spec.title,
                    description=spec.description(state.config, absent, spec.live(state, session, caller)
                                                 if spec.live else "", confirmer),
                    input_schema=spec.schema(unlisted),
                    annotations=mt.ToolAnnotations(
                        read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                        idempotent_hint=spec.idempotent, open_world_hint=spec.open_world))
            for spec in offered]


def known_account(client: MediaWikiClient) -> Account | None:
    """The account a client acts as (a login, the first time); None where its login fails."""
    try:
        return client.account
    except WikiError:
        return None


def writing_clients(state: ServerState, person: Person) -> list[MediaWikiClient]:
    """A person's client on each writable wiki where they have an account."""
    return [state.people.client(person, wiki, state.make_client) for key, wiki, _ in state.entries()
            if key in person.accounts and not wiki.read_only]


def require_extension(state: ServerState, spec: ToolSpec, key: str, client: MediaWikiClient) -> None:
    """Refuses a tool on a wiki without the extension it needs, if any, naming the wikis that have it."""
    needed = (spec.needs_extension or "").lower()
    if not needed or needed in client.extensions:
        return
    others = []
    for other, other_client in state.clients.items():
        try:
            if other != key and needed in other_client.extensions:
                others.append(other)
        except WikiError:  # an unreachable wiki cannot say; leave it out
            continue
    raise invalid_input(f"{spec.name} needs the {spec.needs_extension} extension, which the wiki {key} "
                        "does not have. " + (f"Wikis that have it: {', '.join(others)}; pass one as wiki."
                                             if others else "No configured wiki has it."))


def run_tool(state: ServerState, name: str, arguments: Mapping[str, Any] | None,
             progress: Callable[[float, float | None, str], None] = no_progress,
             caller: Caller = NO_PERSON, session: Session | None = None,
             person_confirms: bool | Accepted = False, unconfirmable: str = "") -> tuple[list[Any], bool]:
    """Runs one tool call (on a worker thread) for ``caller`` in ``session``, as the caller's
    person where one signed in: content blocks and is_error; never raises, so nothing but
    ``category: message`` reaches the model. ``person_confirms`` (run_guarded): the model's
    confirm counts for nothing, and a guarded action's Preview comes back as the one block; or
    what the person Accepted, done now unless it changed since (as_shown). ``unconfirmable``: why
    the person cannot confirm from this client (ToolContext.unconfirmable)."""
    accepted = person_confirms if isinstance(person_confirms, Accepted) else None
    spec = state.registry.tools.get(name)
    offered = offered_tools(state, session, caller)
    write = None  # what a write is about, for the operator's log of a person's writes
    source = ""  # the wiki an error comes from: none until the arguments are good
    try:
        if spec is None:
            raise invalid_input(f"Unknown tool {name!r}.{closest_tool(name, offered)}")
        if spec not in offered:
            raise unoffered_error(state, spec, session, caller)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise invalid_input("Tool arguments must be an object.")
        arguments = dict(arguments or {})
        key = state.resolve_wiki(arguments.get("wiki") if spec.scoped else None)
        values = check_arguments(spec, arguments)
        source = key if spec.scoped else ""
        wiki, client = state.wiki_and_client(key)
        if spec.scoped and not spec.read_only and wiki.read_only:
            raise permission_denied(f"The wiki {key} is configured read-only; the "
                                    "operator decides this, and no retry by the model changes it.")
        if spec.scoped:
            client = caller.client(state, wiki, client, spec)
            write = None if spec.read_only or spec.dry_run and values["dryRun"] else (
                name, key, values.get("newTitle") or values.get("title") or values.get("fromTitle"))
        require_extension(state, spec, key, client)
        if spec.idempotency_key:  # a write that the store keeps track of: its keys, what it read and saved
            state.reads.store.require()  # so none goes on while the store is down, with a key or not
        watch = values["watch"] if spec.watch else None
        ctx = ToolContext(client, wiki, state, progress,
                          spec.rights + (("editmywatchlist",) if watch in ("watch", "unwatch") else ()),
                          continue_from=values["continueFrom"] if spec.continue_from else None,
                          dry_run=spec.dry_run and values["dryRun"], watch=watch,
                          confirmed=spec.guarded and values["confirm"] and not person_confirms,
                          asks=bool(person_confirms), picked=accepted.picked if accepted else None,
                          unconfirmable=unconfirmable, caller=caller, session=session)
        own = {arg: values[arg] for arg in spec.params}

        def act() -> list[Any]:
            return as_blocks(as_shown(spec, ctx, own, accepted.would) if accepted else spec.fn(ctx, **own))
        idempotency_key = values["idempotencyKey"] if spec.idempotency_key and not ctx.dry_run else None
        result = once_per_key(state, spec, key, ctx, own, idempotency_key, act) if idempotency_key else act()
        result = naming_the_wiki(state, key, as_blocks(result)) if spec.scoped else result
    except Preview as preview:
        if person_confirms:
            account = known_account(client)
            preview.wiki, preview.account = key, account.name if account else ""
            return [preview], True
        return [str(preview.answer(name))], True
    except WikiError as error:
        caller.note_write(write, error.category)
        error.wiki = source if len(state.wikis) > 1 else ""
        error.notes = unoffered_notes(error.message, state, {s.name for s in offered} | {name}, session)
        if error.category == "authentication":
            error.notes += caller.login_failed(source)
        return [str(error)], True
    except Exception as exc:  # a bug here must still answer in the contract's shape
        log.exception("tool %s failed", name)
        return [str(WikiError("upstream_failure", f"{name} failed unexpectedly ({type(exc).__name__}); the "
                              "server log has the details."))], True
    caller.note_write(write, "done")
    return as_blocks(result), False


def unoffered_error(state: ServerState, spec: ToolSpec, session: Session | None, caller: Caller) -> WikiError:
    """Why a tool the caller is not offered is refused: a person's missing account or right, where
    the configured accounts would be offered it; else its toolset (tools/list lists those offered)."""
    name, person = spec.name, caller.person
    if person and spec in offered_tools(state, session):
        if not caller.accounts:  # no right is missing: they have nowhere to write as themselves
            writable = " or ".join(key for key, wiki, _ in state.entries() if not wiki.read_only)
            return authentication(f"{person.name} has no account of their own on a wiki this server writes to, "
                                  f"so it does not use {name} for them (never as its own account); nothing "
                                  f"was changed. {person.account_elsewhere(writable)}.")
        grants = sorted({grant for client in writing_clients(state, person) if "@" in (client.username or "")
                         for right in spec.rights if (grant := client.missing_grant(right))})
        if grants:  # their own to give: a bot password has the grants its owner ticked
            named = " and ".join(repr(grant) for grant in grants)
            again = ("then sign in again from the MCP client" if person.signed_in
                     else "then ask this server's operator to restart it, which logs in again")
            return permission_denied(
                f"The tool {name} is not offered to {person.name}: their bot password lacks the grant {named}, "
                f"which their account could use. They can tick it at Special:BotPasswords on the wiki, {again}; "
                "no retry by the model changes it.")
        return permission_denied(
            f"The tool {name} is not offered to {person.name}: their account lacks the right "
            f"{' and '.join(repr(r) for r in spec.rights)} on every wiki where they may write. Only the "
            "wiki's administrators can give it; no retry by the model changes it.")
    final = "" if spec.toolset in loadable_now(state, session) else "; no retry by the model changes it"
    return permission_denied(f"The tool {name} is not offered with this server's configuration"
                             f"{toolset_hint(state, spec, session)}{final}.")


def once_per_key(state: ServerState, spec: ToolSpec, key: str, ctx: ToolContext, own: Mapping[str, Any],
                 idempotency_key: str, act: Callable[[], list[Any]]) -> list[Any]:
    """``act()`` run once per idempotencyKey of the caller on wiki ``key``; a repeat answers the first
    result, marked. A question to the person and its answer are one confirmed call."""
    asked = {**own, "confirm": ctx.confirmed or ctx.asks} if spec.guarded else own
    fingerprint = json.dumps([spec.name, key, asked], sort_keys=True, ensure_ascii=False)
    result, repeated = state.idempotency.run(idempotency_key, fingerprint, act, key, ctx.caller.id)
    return [REPEAT_NOTE + result[0], *result[1:]] if repeated else result


def note_tool_call(state: ServerState, ctx: Any, person: Person | None, tool: str, wiki: str,
                   blocks: list[Any], is_error: bool) -> None:
    """The operator's line of one tool call (INFO) and its count in /metrics: who, which tool on which
    wiki, how it ended (an error's category, or done), from which address. Never the arguments or
    the answer, which hold a page's text."""
    outcome = "done"
    if is_error:
        category = str(blocks[0]).partition(":")[0] if blocks else ""
        outcome = category if category in typing.get_args(ErrorCategory) else "error"
    client = ctx.request.client if ctx.request is not None else None
    log.info("tool call: person=%s tool=%s wiki=%s outcome=%s client=%s", logged(person.in_log) if person else "-",
             logged(tool), wiki or "-", outcome, client.host if client else "-")
    if state.metrics is not None:  # an unknown tool's name is the model's, and would make a series each
        state.metrics.tool_calls.labels(tool if tool in state.registry.tools else "unknown", outcome).inc()


@dataclasses.dataclass(frozen=True)
class Accepted:
    """What the person accepted (run_guarded): Preview.would, and the choices picked (None: it had none)."""
    would: str
    picked: frozenset[str] | None = None


def as_shown(spec: ToolSpec, ctx: ToolContext, own: Mapping[str, Any], shown: str) -> Any:
    """Runs a guarded call the person accepted having been shown that it would do ``shown``:
    unconfirmed first, where anything else it would do now is a conflict; then confirmed. A call
    that no longer needs confirming has run by then."""
    try:
        return spec.fn(ctx, **own)
    except Preview as preview:
        if preview.would != shown:
            raise conflict(f"What {spec.name} would do changed while the person was being asked, so it was "
                           f"not done: they accepted that it would {shown} Now it would {preview.would} "
                           f"{preview.nothing} Call {spec.name} again to ask them about this.") from None
    ctx.confirmed = True
    return spec.fn(ctx, **own)


def naming_the_wiki(state: ServerState, key: str, blocks: list[Any]) -> list[Any]:
    """An answer whose first line names its wiki, when there are several; a block that is not text
    (an image) gets a text block of its own before it."""
    line = f"Wiki: {key}"
    if len(state.wikis) < 2 or blocks and isinstance(blocks[0], str) and blocks[0].startswith(line + "\n"):
        return blocks
    if blocks and isinstance(blocks[0], str):
        return [f"{line}\n{blocks[0]}", *blocks[1:]]
    return [line, *blocks]


def closest_tool(name: str, offered: Iterable[ToolSpec]) -> str:
    """A guess at the tool an unknown name means, short: the list itself is tools/list's."""
    import difflib  # seldom needed: left out of the start
    near = difflib.get_close_matches(name, [spec.name for spec in offered], n=1)
    return f" Did you mean {near[0]}?" if near else " tools/list names the tools offered."


async def caller_of(state: ServerState, ctx: Any) -> Caller:
    """The Caller of a request (a ServerRequestContext): its person as resolved where the request
    came in, with their accounts on the writable wikis (each logged in to once, off the event loop);
    else its session or token."""
    person = person_of(state, ctx)
    if person is None:
        return Caller(caller_id(ctx))
    clients = writing_clients(state, person)
    if all(client.account_known for client in clients):  # the usual case, which needs no thread
        accounts = tuple(map(known_account, clients))
    else:
        accounts = await on_own_thread(lambda: tuple(map(known_account, clients)))
    return Caller(caller_id(ctx, person), person, accounts)


def person_of(state: ServerState, ctx: Any) -> Person | None:
    """The person a request comes from, resolved once where it came in (http_app; with
    MCP_AUTH=login, SignIns.require_person) and carried in its scope; None where no one signs in.
    Where everyone must (People.required), a request without a person is refused here, never
    served as the configured accounts."""
    import mcp_types as mt
    from mcp.shared.exceptions import MCPError

    person = ctx.request.scope.get(PERSON_SCOPE) if ctx.request is not None else None
    if person is None and state.people.required:
        raise MCPError(code=mt.INVALID_REQUEST, message="This request comes from no signed-in person; sign in "
                       "again.")
    return person


def caller_id(ctx: Any, person: Person | None = None) -> str:
    """Who makes a tools/call, the scope of what the read ledger and idempotency keys vouch for:
    the person, whichever session they call from; else the MCP session (Streamable HTTP's, or a
    handshake-era connection that serves several calls); over HTTP without one, every client
    alike (SHARED_CALLER, told apart by the bearer token's hash alone); otherwise (a connection
    per call: the 2026 protocol over stdio or in memory) this whole process (''), whose one client
    is the process that started it."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if person is not None:
        return f"person:{person.id}"
    connection = connection_of(ctx)
    if connection.session_id:
        return f"session:{connection.session_id}"
    if ctx.request is not None:  # HTTP without a session: nothing tells one client from another
        token = bearer_token(ctx.request.headers.get("authorization", ""))
        return f"{SHARED_CALLER}:{token_digest(token).hex()[:16]}" if token else SHARED_CALLER
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return ""
    return "connection:" + connection.state.setdefault("mediawiki-mcp caller", secrets.token_hex(8))


REPEAT_NOTE = ("Repeat: a call with this idempotencyKey and these arguments already ran; nothing was "
               "written again. Its result:\n")


def unoffered_notes(message: str, state: ServerState, listed: Collection[str],
                    session: Session | None = None) -> tuple[str, ...]:
    """A note for each tool an error's message names that is not ``listed`` (the tools offered and
    the one called), rather than send the model to it."""
    named = set(re.findall(r"[\w-]+", message)) - set(listed)
    return tuple(f"{spec.name} is not offered by this server{toolset_hint(state, spec, session)}."
                 for spec in state.registry.tools.values() if spec.name in named)


def toolset_hint(state: ServerState, spec: ToolSpec, session: Session | None = None) -> str:
    """Why a tool is not offered, when it is its toolset's doing, and how it comes."""
    if spec.toolset in toolsets_of(state, session):
        return ""
    if spec.toolset in loadable_now(state, session):
        return f" (it is in the toolset {spec.toolset}, which load-toolset loads)"
    return f" (it is in the toolset {spec.toolset}, which the operator can add to MCP_TOOLSETS)"


def as_blocks(result: list[Any] | str) -> list[Any]:
    return result if isinstance(result, list) else [result]


def loadable_now(state: ServerState, session: Session | None) -> list[str]:
    """The toolsets a session may still load (load-toolset), in TOOLSETS' order: those the
    operator allows (MCP_LOADABLE_TOOLSETS) that it lacks, where the loader is offered to it."""
    if not any(spec.name == "load-toolset" for spec in offered_tools(state, session)):
        return []
    have = toolsets_of(state, session)
    return [name for name in TOOLSETS if name in state.config.loadable_toolsets and name not in have]
