"""The stdio transport: lines screened before the SDK reads them, and the server run on stdin and
stdout."""
from __future__ import annotations

import contextlib
import json
import re
import sys
import typing
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from .wire import log

if TYPE_CHECKING:
    from mcp.server.lowlevel.server import Server


#: A surrogate code point: in a decoded string, the trace of a JSON escape such as \ud800 with no
#: partner, which is no Unicode character and cannot be written as UTF-8.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogates(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """Where the strings of a decoded JSON value hold a lone surrogate: (path, whether in a key)."""
    if isinstance(value, str):
        if LONE_SURROGATE.search(value):
            yield path, False
    elif isinstance(value, dict):
        for key, item in value.items():
            if LONE_SURROGATE.search(key):
                yield (*path, key), True
            yield from lone_surrogates(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from lone_surrogates(item, (*path, index))


def screen_line(line: bytes) -> tuple[Any, Any]:
    """One line of stdin read as a JSON-RPC message: (message, None), or (None, the JSON-RPC
    error that answers it), or (None, None) for a blank line. An error carries the request's id
    where one can be read, else null. A lone surrogate passes only in a value of a tool's
    arguments, where the tool's argument check refuses it as invalid_input; anywhere else the
    answer could not even be written (the SDK's JSON writer fails on it)."""
    import mcp_types as mt
    from pydantic import ValidationError

    def refusal(code: int, message: str, value: Any = None) -> tuple[Any, Any]:
        rpc_id = value.get("id") if isinstance(value, dict) and "method" in value else None
        readable = isinstance(rpc_id, int) and not isinstance(rpc_id, bool) or (
            isinstance(rpc_id, str) and not LONE_SURROGATE.search(rpc_id))
        return None, mt.JSONRPCError(jsonrpc="2.0", id=rpc_id if readable else None,
                                     error=mt.ErrorData(code=code, message=message))

    if not line.strip():
        return None, None
    value: Any = None
    unreadable = ""
    try:  # read as UTF-8 would be, for the request's id when the line is not UTF-8
        value = json.loads(line.decode("utf-8", "replace"))
        surrogates = list(lone_surrogates(value))
    except (ValueError, RecursionError) as error:
        unreadable = f"Parse error: {error}."
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"byte {line[error.start]:#04x} at offset {error.start}"
        return refusal(mt.PARSE_ERROR, f"Parse error: the line is not UTF-8 ({where}); send JSON in UTF-8.",
                       value)
    if unreadable:
        return refusal(mt.PARSE_ERROR, unreadable)
    for path, in_key in surrogates:
        in_arguments = len(path) > 2 and path[:2] == ("params", "arguments") and value.get("method") == "tools/call"
        if in_key or not in_arguments:
            where = ".".join(map(str, path)).encode("utf-8", "backslashreplace").decode() or "the message"
            message = (f"Parse error: {where} holds a lone surrogate, which is no Unicode character; send "
                       "text as UTF-8 or as paired \\u escapes.")
            return refusal(mt.PARSE_ERROR, message, value)
    try:
        return mt.jsonrpc_message_adapter.validate_python(value, by_name=False), None
    except (ValidationError, RecursionError):
        return refusal(mt.INVALID_REQUEST, "Invalid Request: the line is JSON but no JSON-RPC 2.0 request, "
                                           "notification or response.", value)


async def serve_stdio(server: Server[Any]) -> None:
    """Serves MCP over stdin and stdout, answering every line.

    The SDK's stdio reader drops a line it cannot read without answering it, so the client waits
    until it times out (modelcontextprotocol/python-sdk#2751), and it reads invalid UTF-8 as U+FFFD,
    which an edit would then save. Here screen_line reads each line; the SDK still writes stdout
    and keeps stray output off it."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async def none() -> AsyncIterator[str]:  # the SDK's reader gets no lines: they are read below
        return
        yield

    messages, read_stream = anyio.create_memory_object_stream[Any](0)
    async with stdio_server(stdin=typing.cast(Any, none())) as (_, write_stream):
        async def read_lines() -> None:
            async with messages:
                async for line in anyio.wrap_file(sys.stdin.buffer):
                    message, refusal = screen_line(line)
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        if message is not None:
                            await messages.send(SessionMessage(message))
                        elif refusal is not None:
                            log.warning("stdin: %s", refusal.error.message)
                            await write_stream.send(SessionMessage(refusal))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            await server.run(read_stream, write_stream, server.create_initialization_options())
