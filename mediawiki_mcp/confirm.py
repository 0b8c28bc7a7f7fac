"""The person's confirmation: a destructive action asks the person (elicitation) before it runs,
and reports progress while it waits."""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from .dispatch import Accepted, connection_of
from .errors import WikiError, permission_denied
from .registry import Confirmer, Preview
from .state import ServerState
from .wire import log

#: While the person decides, the call reports progress this often, so that clients keep waiting.
CONFIRM_PROGRESS_SECONDS = 10.0


class CallProgress:
    """The progress a tools/call reports, kept rising across the stages of a guarded call (the
    preview, the wait for the person, the confirmed run, each counting from 0), as the
    specification requires: each stage counts on from the last, and a report that would not rise
    is left out."""

    def __init__(self, ctx: Any) -> None:
        import asyncio
        self.ctx, self.stage_start, self.last = ctx, 0.0, -1.0
        self.loop = asyncio.get_running_loop()

    def next_stage(self) -> None:
        self.stage_start = max(self.last, 0.0)

    async def report(self, done: float, total: float | None, message: str) -> None:
        value = self.stage_start + done
        if value <= self.last:
            return
        self.last = value
        until = None if total is None else self.stage_start + total
        await self.ctx.session.report_progress(value, until, message)

    def from_thread(self, done: float, total: float | None, message: str) -> None:
        """ToolContext.progress: a report carried onto the event loop, where the request's session
        lives, and waited for; one that cannot be sent is dropped, as progress is advisory."""
        import asyncio
        try:
            asyncio.run_coroutine_threadsafe(self.report(done, total, message), self.loop).result()
        except Exception:
            log.debug("could not report progress", exc_info=True)


async def run_guarded(state: ServerState, ctx: Any, name: str, job: Callable[..., tuple[list[Any], bool]],
                      wiki: str, write: bool) -> tuple[list[Any], bool]:
    """Runs a tools/call (``job``: run_tool) in the wiki's turn, reporting its progress. Where the
    person confirms, a guarded tool's preview is put to them outside the turn, as their minutes must
    not hold the wiki, and only their yes runs the call again, pinned to what they saw."""
    spec = state.registry.tools.get(name)
    person = bool(spec and (spec.guarded or spec.asks)) and person_confirms(state, ctx)
    # a preview must not send the model to a call that is refused: it says why, and who can confirm
    refused = unconfirmable(state, ctx) if person and not can_ask(ctx) else ""
    progress = CallProgress(ctx)
    job = functools.partial(job, progress=progress.from_thread)
    blocks, is_error = await state.calls.run(wiki, functools.partial(job, person_confirms=person,
                                                                     unconfirmable=refused), write=write)
    if not (blocks and isinstance(blocks[0], Preview)):
        return blocks, is_error
    preview = blocks[0]
    progress.next_stage()
    answer = (await ask_person(state, ctx, name, preview, progress) if can_ask(ctx) else permission_denied(
        f"{preview.nothing} {name} would {preview.would} {refused} No retry by the model changes this."))
    if isinstance(answer, WikiError):
        answer.wiki = preview.wiki if len(state.wikis) > 1 else ""
        return [str(answer)], True
    progress.next_stage()
    return await state.calls.run(wiki, functools.partial(job, person_confirms=answer), write=write)


def person_confirms(state: ServerState, ctx: Any) -> bool:
    """Whether the person, not the model's confirm=true, confirms guarded actions (MCP_CONFIRM)."""
    return state.config.confirm == "person" or state.config.confirm == "auto" and can_ask(ctx)


def confirmer(state: ServerState, ctx: Any) -> Confirmer:
    """Who confirms a request's guarded actions, as its tools/list describes them."""
    if not person_confirms(state, ctx):
        return "model"
    return "person" if can_ask(ctx) else "nobody"


def can_ask(ctx: Any) -> bool:
    """Whether the person behind a tools/call can be asked (elicitation/create) while it waits: the
    client declared form elicitation, and the connection carries a request back (not stateless
    HTTP, where the answer would reach another transport, nor the 2026 protocol)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    stateful = ctx.request is None or bool(connection_of(ctx).session_id)
    return (asks_in_forms(ctx) and stateful and ctx.session.can_send_request
            and ctx.session.protocol_version not in MODERN_PROTOCOL_VERSIONS)


def asks_in_forms(ctx: Any) -> bool:
    """Whether a request's client declared form elicitation (an empty one, as in 2025-06-18, means forms)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


#: The question's one field: the specification allows only flat fields of primitive types.
CONFIRM_SCHEMA = {"type": "object", "required": ["allow"], "properties": {"allow": {
    "type": "boolean", "title": "Allow it", "default": False,
    "description": "Yes does it; no, declining or no answer does nothing."}}}


def question_schema(preview: Preview) -> dict[str, Any]:
    """The question's fields: allow or not, or a yes or no for each choice (``choice1``, ...)."""
    if not preview.choices:
        return CONFIRM_SCHEMA
    return {"type": "object", "properties": {
        f"choice{number}": {"type": "boolean", "title": choice, "default": True}
        for number, choice in enumerate(preview.choices, 1)}}


async def ask_person(state: ServerState, ctx: Any, name: str, preview: Preview,
                     progress: CallProgress) -> Accepted | WikiError:
    """Puts a guarded action's preview to the person and waits, reporting progress so that the
    client keeps waiting for the call: what they accepted, else the error saying why nothing was
    done. No answer within MCP_CONFIRM_TIMEOUT_SECONDS is a decline, as is picking no choice."""
    import anyio
    from mcp.shared.exceptions import MCPError

    timeout = state.config.confirm_timeout_seconds
    question = "\n".join(line for line in (
        f"{name} would {preview.would}", f"Wiki: {preview.wiki}",
        f"Account: {preview.account}" if preview.account else "",
        "Pick what to do; nothing else is done." if preview.choices else "Nothing is done unless you allow it.")
        if line)

    async def keep_waiting() -> None:
        start = anyio.current_time()
        while True:
            try:
                await progress.report(anyio.current_time() - start, timeout,
                                      "Waiting for the person to answer in the client")
            except Exception:  # advisory, as in CallProgress.from_thread
                log.debug("could not report progress", exc_info=True)
            await anyio.sleep(CONFIRM_PROGRESS_SECONDS)

    action = f"to let {name} {preview.would.rstrip('.')}"

    def declined(why: str) -> WikiError:
        log.info("the person was asked %s on %s, and did not allow it", name, preview.wiki)
        return permission_denied(f"{why} {preview.nothing} Do not call {name} again for this unless the person "
                                 "asks for it.")
    async with anyio.create_task_group() as waiting:
        waiting.start_soon(keep_waiting)
        try:
            with anyio.fail_after(timeout):
                answer = await ctx.session.elicit_form(question, question_schema(preview),
                                                       related_request_id=ctx.request_id)
        except TimeoutError:
            return declined(f"The person did not answer within {timeout:g} seconds (MCP_CONFIRM_TIMEOUT_SECONDS) "
                            f"the question {action}, which counts as declined.")
        except (MCPError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            # the client claimed it could ask, then failed (an error answer, a malformed one, a
            # lost connection): nobody said yes
            log.info("asking the person to confirm %s failed: %s", name, error)
            return declined(f"The client could not put the question {action} to the person "
                            f"({type(error).__name__}), which counts as declined.")
        finally:
            waiting.cancel_scope.cancel()
    said = answer.content or {}
    if answer.action == "accept" and (unread := unanswered_fields(preview, said)):
        for_what = f" for {', '.join(unread)}" if any(unread) else ""
        return declined(f"The client accepted the question {action} without a yes or no{for_what}, so the "
                        "person's answer is not known (the client may not show this form), which counts as "
                        "declined.")
    picked = frozenset(choice for number, choice in enumerate(preview.choices, 1)
                       if said.get(f"choice{number}") is True)
    if answer.action == "accept" and (picked if preview.choices else said.get("allow") is True):
        log.info("the person was asked %s on %s, and allowed it", name, preview.wiki)
        return Accepted(preview.would, picked if preview.choices else None)
    if answer.action == "cancel":
        return declined(f"The person dismissed the question {action}, which counts as declined.")
    return declined(f"The person declined, in the client, {action}.")


def unanswered_fields(preview: Preview, said: Mapping[str, Any]) -> list[str] | None:
    """What an accepted answer left without a boolean: the choices given otherwise (a string "true"
    is no answer, rather than a page silently skipped; a choice left out is not picked), [''] where
    every field is; None where none is."""
    fields = [f"choice{number}" for number in range(1, len(preview.choices) + 1)] or ["allow"]
    unread = [field for field in fields if not isinstance(said.get(field), bool)]
    if len(unread) == len(fields):
        return [""]
    return [preview.choices[fields.index(field)] for field in unread if field in said] or None


def unconfirmable(state: ServerState, ctx: Any) -> str:
    """Why the person cannot confirm a guarded action from this client (MCP_CONFIRM=person, and the
    client cannot ask them: can_ask), and who could, which refuses it (run_guarded); a stateless server asks no one, whatever the
    client, so only its operator can change that."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    who = ("Clients that ask, such as Claude Code, VS Code and the MCP Inspector, can do it over stdio or a "
           "Streamable HTTP session, connecting with the handshake (protocol 2025-06-18 to 2025-11-25).")
    if state.stateless:
        why = ("no client can ask them on this server: it serves stateless HTTP (--stateless or "
               "MCP_STATELESS), where the answer could reach another replica")
        who = "Only its operator can change this: serve HTTP with sessions, or stdio."
    elif ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        why = (f"this client cannot ask them: it connected with the {ctx.session.protocol_version} protocol, "
               "whose calls cannot carry a question")
    elif not asks_in_forms(ctx):
        why = "this client cannot ask them: it did not declare MCP elicitation (form mode) when it connected"
    else:
        why = "this client cannot ask them: its connection cannot carry a question"
    return f"This server requires the person to confirm it in the client (MCP_CONFIRM=person), and {why}. {who}"
