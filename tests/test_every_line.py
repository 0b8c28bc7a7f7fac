"""Tests: Every line answered: bad JSON, bad UTF-8 and lone surrogates over stdio and HTTP."""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from typing import Any

import pytest
import requests

from realwiki import (
    RealWiki,
)
from tests.support import INIT_PARAMS, http_servers, post_rpc, rpc_result, tool_text


def raw_call(rpc_id: int, name: str, arguments: str) -> bytes:
    """A tools/call line exactly as written: JSON escapes such as a lone \\ud800 stay as they are."""
    return (f'{{"jsonrpc":"2.0","id":{rpc_id},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments}}}}}').encode()


#: (line, answer): a JSON-RPC error code, or the category of a tool's error; and the answer's id.
BAD_LINES: list[tuple[bytes, tuple[int | str, int | None]]] = [
    (b"not json", (-32700, None)),
    (b'{"jsonrpc":"2.0","id":3,"method":"ping"', (-32700, None)),  # cut short
    (b'\xff\xfe{"jsonrpc":"2.0","id":4,"method":"ping"}', (-32700, None)),
    # Latin-1 inside a readable request: refused, never read as U+FFFD and saved so
    (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get-page","arguments":{"title":"Caf\xe9"}}}',
     (-32700, 5)),
    (raw_call(6, "get-page", '{"title":"\\ud800"}'), ("invalid_input", 6)),  # a lone surrogate in an argument
    (raw_call(7, "get-pages", '{"titles":["Apple","x\\udc00"]}'), ("invalid_input", 7)),
    (raw_call(8, "get-page", '{"ti\\ud800tle":"Apple"}'), (-32700, 8)),  # in an argument's name
    (b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"x":"\\ud800"}}}', (-32700, 9)),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', (-32700, None)),  # in the id itself
    (b'{"jsonrpc":"2.0","method":"notifications/\\ud800"}', (-32700, None)),
    (b"[1,2]", (-32600, None)),
    (b'{"jsonrpc":"2.0","id":12,"method":7}', (-32600, 12)),  # JSON, but no JSON-RPC request
    (b'{"jsonrpc":"2.0","id":12}', (-32600, None)),  # nor a response: its id is no request's of ours
]


def check_bad_line_answer(answer: dict[str, Any], expected: tuple[int | str, int | None]) -> None:
    code, rpc_id = expected
    assert answer.get("id") == rpc_id, answer
    if isinstance(code, int):
        assert answer["error"]["code"] == code and answer["error"]["message"], answer
    else:
        result = answer["result"]
        assert result["isError"] is True and len(result["content"]) == 1, result
        assert result["content"][0]["text"].startswith(f"{code}: "), result
        assert "surrogate" in result["content"][0]["text"], result


def test_every_bad_line_on_stdin_is_answered_and_the_next_line_served(wiki: RealWiki) -> None:
    script = shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    process = subprocess.Popen([script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(os.environ, **wiki.env()))
    assert process.stdin and process.stdout
    answers: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [answers.put(line) for line in process.stdout], daemon=True).start()

    def send(line: bytes) -> None:
        assert process.stdin
        process.stdin.write(line + b"\n")
        process.stdin.flush()

    def exchange(line: bytes) -> dict[str, Any]:
        send(line)
        try:
            return json.loads(answers.get(timeout=30))
        except queue.Empty:
            raise AssertionError(f"no answer to {line!r}") from None

    try:
        assert exchange(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                    "params": INIT_PARAMS}).encode())["id"] == 1
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for line, expected in BAD_LINES:
            check_bad_line_answer(exchange(line), expected)
        send(b"")  # a blank line is no message: nothing to answer (the next answer would show it)
        pair = exchange(raw_call(13, "get-page", '{"title":"Grinning \\ud83d\\ude00"}'))  # one character
        assert pair["id"] == 13 and pair["result"]["content"][0]["text"].startswith("not_found: "), pair
        apple = exchange(raw_call(14, "get-page", '{"title":"Apple"}'))
        assert apple["id"] == 14 and not apple["result"].get("isError"), apple
        assert "Apple" in apple["result"]["content"][0]["text"]
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


#: Bodies of a POST to /mcp that no JSON-RPC message can be read from.
BAD_BODIES = [b"not json", b'{"jsonrpc":"2.0","id":3,"method":"ping"', b'\xff\xfe{"jsonrpc":"2.0","id":4}',
              b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get-page","arguments":{"title":"Caf\xe9"}}}',
              b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"x":"\\ud800"}}}',
              b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', b""]


@pytest.mark.parametrize("stateless", [False, True])
def test_every_bad_body_over_http_is_answered_400_and_the_next_request_served(wiki: RealWiki,
                                                                              stateless: bool) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with http_servers((wiki.env(), ("--stateless",) if stateless else ())) as (server,):
        for body in BAD_BODIES:  # as the first message, before any session
            refused = requests.post(server.url, data=body, headers=headers, timeout=30)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700, (body, refused.text)
        session = post_rpc(server.url, "initialize", INIT_PARAMS).headers.get("Mcp-Session-Id")
        sent = {**headers, "MCP-Protocol-Version": INIT_PARAMS["protocolVersion"],
                **({"Mcp-Session-Id": session} if session else {})}
        post_rpc(server.url, "notifications/initialized", rpc_id=None, session=session)
        for body in BAD_BODIES + [raw_call(6, "get-page", '{"title":"\\ud800"}')]:  # within the session
            refused = requests.post(server.url, data=body, headers=sent, timeout=30)
            assert refused.status_code == 400, (body, refused.status_code, refused.text)
            error = refused.json()
            assert error["jsonrpc"] == "2.0" and error["id"] is None and error["error"]["code"] == -32700, error
        served = post_rpc(server.url, "tools/call", {"name": "get-page", "arguments": {"title": "Apple"}},
                          rpc_id=7, session=session)
        assert "Apple" in tool_text(rpc_result(served))
        assert server.process.poll() is None and "Traceback" not in server.log, server.log


def test_a_lone_surrogate_in_a_tool_argument_of_a_2026_request_is_invalid_input(wiki: RealWiki) -> None:
    """Requests of protocol 2026-07-28 stand alone (no session): the SDK reads them with Python's
    JSON reader, which keeps a lone surrogate, so the tool's argument check refuses it, as over stdio."""
    version = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": "get-page"}

    def call(title: str) -> requests.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "get-page", "arguments": {"title": title}, "_meta": meta}}
        return requests.post(server.url, data=json.dumps(body), headers=headers, timeout=30)

    with http_servers((wiki.env(), ())) as (server,):
        for body in BAD_BODIES[:4]:
            refused = requests.post(server.url, data=body, headers=headers, timeout=30)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700, (body, refused.text)
        refused = rpc_result(call("\ud800"))  # json.dumps writes it as the escape \ud800
        assert refused["isError"] is True and refused["content"][0]["text"].startswith("invalid_input: ")
        assert "Apple" in tool_text(rpc_result(call("Apple")))
        assert server.process.poll() is None and "Traceback" not in server.log, server.log
