"""create_server: the SDK's server wired to this server's tools, prompts, resources and completion."""
from __future__ import annotations

import functools
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import WikiError
from .wire import __version__, log

# isort: off
# The tool modules: importing one registers its tools (@tool), and tools/list shows them in this order.
from . import read_pages, read_search, read_history, read_origin, read_links, read_users  # noqa: F401
from . import write_pages, write_admin, write_files, write_everyday, write_replace, write_copy  # noqa: F401
# isort: on
from .config import Config
from .confirm import confirmer, run_guarded
from .dispatch import (
    Session,
    caller_of,
    connection_of,
    listed_tools,
    note_tool_call,
    offered_tools,
    run_tool,
    session_of,
    unlisted_arguments,
)
from .prompts import completion_values, listed_prompt, offered_prompts, prompt_arguments, prompt_text, prompts_using
from .state import ServerState
from .wikis import WIKI_RESOURCE_TEMPLATE, wiki_resources, wiki_summary

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server

    class WikiServer(Server[Any]):
        state: ServerState


@functools.cache
def wiki_server_class() -> Any:
    """WikiServer, made on first use: the SDK is imported only when a server is built."""
    from mcp.server.lowlevel.server import NotificationOptions, Server

    class WikiServer(Server[Any]):
        """The SDK's low-level server with the state it serves (``server.state``), for embedders and tests."""

        def __init__(self, state: ServerState, name: str, **options: Any) -> None:
            super().__init__(name, **options)
            self.state = state

        def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                          *more: Any, **named: Any) -> Any:
            # Handshake-era sessions learn listChanged only from this argument, which the SDK's
            # transports leave out when they call it (mcp/server/lowlevel/server.py, TODO L53).
            changed = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
            return super().create_initialization_options(notification_options or changed, *more, **named)
    return WikiServer


def create_server(config: Config | None = None, state: ServerState | None = None) -> WikiServer:
    """Builds the MCP server for a configuration (default: the environment's) or a server state."""
    import mcp_types as mt
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
    from mcp.shared.exceptions import MCPError

    state = state or ServerState.from_config(config or Config.from_env())
    bus = InMemorySubscriptionBus()  # our own, so that tool calls can publish list changes
    changes = ListChanges(state, bus)

    # The SDK's low-level server, as MCPServer builds schemas with pydantic, keeps unknown arguments
    # quiet and answers failures as "Error executing tool", where the tool contract needs otherwise,
    # and cannot remove a resource (remove-wiki must): all is served from the registry here.
    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        changes.listening(ctx)
        caller = await caller_of(state, ctx)
        return mt.ListToolsResult(tools=listed_tools(state, session_of(ctx), caller, confirmer(state, ctx)))

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        # Tools run on threads, which cannot talk to the session; so the lists are compared
        # before and after the call, and a change is announced from here.
        changes.listening(ctx)
        session, caller = session_of(ctx), await caller_of(state, ctx)
        before, loaded = changes.lists(), session.loaded if session else None
        wiki, write = turn_of(state, params.name, params.arguments)
        job = functools.partial(run_tool, state, params.name, params.arguments, caller=caller, session=session)
        try:
            blocks, is_error = await run_guarded(state, ctx, params.name, job, wiki, write)
        except WikiError as error:  # the server is stopping
            blocks, is_error = [str(error)], True
        note_tool_call(state, ctx, caller.person, params.name, wiki, blocks, is_error)
        await changes.announce(before)
        if session and loaded is not None and session.loaded != loaded:
            await changes.announce_to(ctx, loaded)
        return mt.CallToolResult(content=[
            mt.TextContent(type="text", text=b) if isinstance(b, str) else b for b in blocks],
            is_error=is_error)

    async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
        changes.listening(ctx)
        return mt.ListResourcesResult(resources=[mt.Resource(**r) for r in wiki_resources(state)])

    async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        key = uri.removeprefix("mcp://wikis/")
        if not uri.startswith("mcp://wikis/") or key not in state.wikis:
            raise MCPError(code=mt.INVALID_PARAMS, data={"uri": uri}, message=(
                f"Unknown resource {uri}; the wikis are {', '.join(f'mcp://wikis/{k}' for k in state.wikis)}."))
        try:
            text = await state.calls.run(key, functools.partial(wiki_summary, state, key), write=False)
        except WikiError as error:  # the server is stopping
            raise MCPError(code=mt.INTERNAL_ERROR, message=error.message) from None
        return mt.ReadResourceResult(contents=[mt.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])

    # Prompts and completion come from PROMPTS, listed as offered_prompts allows each session.
    async def list_prompts(ctx: Any, params: Any) -> mt.ListPromptsResult:
        changes.listening(ctx)
        return mt.ListPromptsResult(prompts=listed_prompts(state, session_of(ctx)))

    async def get_prompt(ctx: Any, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        try:
            prompt, text = prompt_text(state, params.name, params.arguments, session_of(ctx))
        except WikiError as error:
            raise MCPError(code=mt.INVALID_PARAMS, message=str(error)) from None
        return mt.GetPromptResult(description=prompt.description, messages=[
            mt.PromptMessage(role="user", content=mt.TextContent(type="text", text=text))])

    async def complete(ctx: Any, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        kind = completed_kind(state, params.ref, params.argument.name, session_of(ctx))
        named = (params.context.arguments or {}).get("wiki") if params.context else None
        try:
            key = state.resolve_wiki(named) if kind in ("page", "category") else ""
            job = functools.partial(completion_values, state, kind, params.argument.value, key,
                                    await caller_of(state, ctx))
            values, more = await state.calls.run(key, job, write=False)
        except WikiError as error:  # completion is a convenience: a wiki that cannot answer offers none
            log.info("no completion for %s: %s", params.argument.name, error)
            values, more = [], False
        return mt.CompleteResult(completion=mt.Completion(values=values, has_more=more or None))

    return wiki_server_class()(
        state, "mediawiki-mcp", version=__version__, instructions=(
            "Reads, searches and edits MediaWiki wikis. Wiki pages are addressed by page title; "
            f"the default wiki is {state.config.default_wiki}."),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates, on_read_resource=read_resource,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_completion=complete,
        on_subscriptions_listen=ListenHandler(bus),
        # No tool declares Mcp-Param headers; without this the SDK would list the tools at each
        # 2026-protocol call over HTTP to find that out.
        get_tool_input_schema=lambda name: None)


class ListChanges:
    """Tells every session that can hear it when the lists of wikis and tools change, and one session
    when its own do (load-toolset): subscriptions/listen streams through the bus, handshake-era
    sessions on their own streams, which the SDK does not list, so each connection that asks for
    a list is noted here, weakly."""

    def __init__(self, state: ServerState, bus: Any) -> None:
        self.state, self.bus = state, bus
        self.listeners: weakref.WeakSet[Any] = weakref.WeakSet()

    def listening(self, ctx: Any) -> None:
        connection = connection_of(ctx)
        if connection.has_standalone_channel:
            self.listeners.add(connection)

    def lists(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The wikis, the tools offered with the shared arguments left out, and the prompts."""
        offered = [spec.name for spec in offered_tools(self.state)]
        tools = (*offered, *sorted(unlisted_arguments(self.state)))
        prompts = (*(prompt.name for prompt in prompts_using(offered)), f"wiki argument: {len(self.state.wikis) > 1}")
        return tuple(self.state.wikis), tools, prompts

    async def announce(self, before: tuple[tuple[str, ...], ...]) -> None:
        """Announces the lists that differ from ``before``."""
        from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
        after = self.lists()
        for changed, event, send in (
                (before[0] != after[0], ResourcesListChanged(), "send_resource_list_changed"),
                (before[1] != after[1], ToolsListChanged(), "send_tool_list_changed"),
                (before[2] != after[2], PromptsListChanged(), "send_prompt_list_changed")):
            if changed:
                await self.bus.publish(event)
                for connection in list(self.listeners):
                    try:
                        await getattr(connection, send)()
                    except Exception:  # advisory: a lost notification must not fail the call
                        log.debug("could not announce a list change", exc_info=True)

    async def announce_to(self, ctx: Any, loaded: frozenset[str]) -> None:
        """Tells one session that its tools changed (it had ``loaded``), and its prompts if they did."""
        prompts = [offered_prompts(self.state, session) for session in (Session(loaded), session_of(ctx))]
        try:
            await ctx.session.send_tool_list_changed()
            if prompts[0] != prompts[1]:
                await ctx.session.send_prompt_list_changed()
        except Exception:  # advisory, as above
            log.debug("could not announce a list change", exc_info=True)


async def list_resource_templates(ctx: Any, params: Any) -> Any:
    """resources/templates/list's answer, the same for every server."""
    import mcp_types as mt

    return mt.ListResourceTemplatesResult(resource_templates=[mt.ResourceTemplate(
        uri_template=WIKI_RESOURCE_TEMPLATE, name="wiki", mime_type="text/plain",
        description="A configured wiki: its name, public address, API address and access.")])


def listed_prompts(state: ServerState, session: Session | None = None) -> list[Any]:
    import mcp_types as mt

    return [mt.Prompt(name=prompt.name, title=prompt.title, description=prompt.description,
                      arguments=[mt.PromptArgument(name=a.name, description=a.description, required=a.required)
                                 for a in prompt_arguments(state, prompt)])
            for prompt in offered_prompts(state, session)]


def completed_kind(state: ServerState, ref: Any, argument: str, session: Session | None) -> str | None:
    """What an argument of completion/complete names (PromptArg's ``completes``); an unknown
    reference is an MCP error."""
    import mcp_types as mt
    from mcp.shared.exceptions import MCPError

    if isinstance(ref, mt.ResourceTemplateReference):
        if ref.uri != WIKI_RESOURCE_TEMPLATE:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown resource template {ref.uri}; this server's "
                           f"is {WIKI_RESOURCE_TEMPLATE}.")
        return "wiki" if argument == "key" else None
    try:
        prompt = listed_prompt(state, ref.name, session)
    except WikiError as error:
        raise MCPError(code=mt.INVALID_PARAMS, message=str(error)) from None
    return next((a.completes for a in prompt_arguments(state, prompt) if a.name == argument), None)


def turn_of(state: ServerState, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
    """The wiki whose turn a tools/call waits for ('' for none), and whether the call may change it."""
    spec = state.registry.tools.get(name)
    if spec is None or not spec.scoped:
        return "", False
    try:
        return state.resolve_wiki((arguments or {}).get("wiki")), not spec.read_only
    except WikiError:
        return "", not spec.read_only
