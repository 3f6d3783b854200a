"""The agent's body written back in its own spelling: the parts the engine did not change.

Bodies are spelled at random (spaces and newlines between tokens, `\\uXXXX` escapes,
key order, number forms) and compared as bytes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.gateway import OUTCOME, GatewayThread, gateway_for
from orchestrator.gateway.spelling import Verdicts, read_spelled
from orchestrator.policy import get_policy

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
OBJECTS = st.dictionaries(st.text(max_size=4), JSON, min_size=1, max_size=5)
SPACE = st.sampled_from(["", " ", "  ", "\n", "\n  ", "\t"])


def spelled_as(draw: st.DrawFn, value: Any) -> str:
    """`value` as JSON with spacing and escapes drawn at random."""
    before, after = draw(SPACE), draw(SPACE)
    if isinstance(value, dict):
        members = [
            f"{spelled_as(draw, key)}{draw(SPACE)}:{spelled_as(draw, item)}"
            for key, item in value.items()
        ]
        inner = f"{draw(SPACE)},".join(members)
        return f"{before}{{{after}{inner}{draw(SPACE)}}}"
    if isinstance(value, list):
        inner = ",".join(spelled_as(draw, item) for item in value)
        return f"{before}[{after}{inner}{draw(SPACE)}]"
    if isinstance(value, float) and draw(st.booleans()):
        return (
            f"{before}{value!r}".replace("e+", "E+") if "e" in repr(value) else f"{before}{value}e0"
        )
    return before + json.dumps(value, ensure_ascii=draw(st.booleans())) + after


def changed(draw: st.DrawFn, value: Any) -> Any:
    """A copy of `value` with changes drawn at random at every depth."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            choice = draw(st.sampled_from(["keep", "keep", "drop", "change"]))
            if choice != "drop":
                out[key] = item if choice == "keep" else changed(draw, item)
        if draw(st.booleans()):
            out[draw(st.text(max_size=3))] = draw(JSON)
        return out
    if isinstance(value, list):
        items = [changed(draw, item) if draw(st.booleans()) else item for item in value]
        edit = draw(st.sampled_from(["none", "insert", "drop"]))
        if edit == "insert":
            items.insert(draw(st.integers(0, len(items))), draw(JSON))
        elif edit == "drop" and items:
            del items[draw(st.integers(0, len(items) - 1))]
        return items
    return draw(JSON) if draw(st.booleans()) else value


def as_blocks(value: Any) -> Any:
    """`value` with each string in a list or object made a list of one text block."""
    if isinstance(value, dict):
        return {key: as_blocks(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_blocks(item) for item in value]
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return value


def as_strings(value: Any) -> Any:
    """`value` with each list of one text block made the string it holds."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        if value[0].keys() == {"type", "text"} and value[0]["type"] == "text":
            return as_strings(value[0]["text"]) if isinstance(value[0]["text"], str) else value
    if isinstance(value, dict):
        return {key: as_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_strings(item) for item in value]
    return value


@st.composite
def spelled_objects(draw: st.DrawFn) -> tuple[dict[str, Any], bytes]:
    value = draw(OBJECTS)
    return value, spelled_as(draw, value).encode()


class TestSpelled:
    @given(spelled_objects())
    def test_an_unchanged_body_is_written_as_its_bytes(self, case: tuple[Any, bytes]) -> None:
        _, raw = case
        read, spelled = read_spelled(raw)
        assert read == json.loads(raw)
        assert spelled is not None
        assert spelled.write(read, read) == raw

    @given(spelled_objects(), OBJECTS, st.data())
    def test_a_changed_body_reads_as_the_change_and_keeps_what_it_did_not_change(
        self, case: tuple[Any, bytes], change: dict[str, Any], data: st.DataObject
    ) -> None:
        """Members replaced, added or dropped: the result says the new body; the rest is kept."""
        _, raw = case
        read, spelled = read_spelled(raw)
        assert spelled is not None
        dropped = data.draw(st.sets(st.sampled_from(sorted(read))))
        sent = {key: item for key, item in read.items() if key not in dropped} | change
        written = spelled.write(sent, read)
        assert json.loads(written) == sent
        text, start = raw.decode(), len(raw) - len(raw.lstrip())
        last = {key: (key_at, value_end) for key, key_at, _, value_end in spelled.members(start)}
        for key, item in sent.items():
            if key in read and item == read[key] and type(item) is type(read[key]):
                key_at, value_end = last[key]
                assert text[key_at:value_end].encode() in written, key

    @given(spelled_objects(), st.data())
    def test_any_change_at_any_depth_reads_as_the_change(
        self, case: tuple[Any, bytes], data: st.DataObject
    ) -> None:
        """Items inserted, dropped or changed, members added or dropped, anywhere."""
        _, raw = case
        read, spelled = read_spelled(raw)
        assert spelled is not None
        sent = changed(data.draw, read)
        assert json.loads(spelled.write(sent, read)) == sent

    @given(spelled_objects(), st.data())
    def test_a_string_goes_as_sent_where_the_engine_made_it_one_text_block(
        self, case: tuple[Any, bytes], data: st.DataObject
    ) -> None:
        """With `shorthand`: `"x"` and `[{"type": "text", "text": "x"}]` are one content."""
        _, raw = case
        read, spelled = read_spelled(raw)
        assert spelled is not None
        sent = as_blocks(read)
        assert spelled.write(sent, read, shorthand=True) == raw
        later = changed(data.draw, sent)
        assert as_strings(json.loads(spelled.write(later, read, shorthand=True))) == as_strings(
            later
        )

    @given(spelled_objects(), st.data())
    def test_the_verdicts_of_the_last_request_change_nothing_written(
        self, case: tuple[Any, bytes], data: st.DataObject
    ) -> None:
        """A conversation's next request, written with the verdicts of its last: as without."""
        _, raw = case
        read, spelled = read_spelled(raw)
        assert spelled is not None
        verdicts = Verdicts()
        first = as_blocks(read)
        spelled.write(first, read, shorthand=True, verdicts=verdicts)
        sent = changed(data.draw, first)
        again, fresh = read_spelled(raw)[1], read_spelled(raw)[1]
        assert again is not None and fresh is not None
        remembered = again.write(sent, read, shorthand=True, verdicts=verdicts)
        assert remembered == fresh.write(sent, read, shorthand=True)

    @pytest.mark.parametrize(
        "raw", [b'{"a":1,}', b'{"a":1 "b":2}', b'{"a":1}x', b'{"a"}', b"{", b'{"a":[1,]}']
    )
    def test_what_is_not_json_is_refused_as_json_loads_refuses_it(self, raw: bytes) -> None:
        with pytest.raises(ValueError):
            read_spelled(raw)

    def test_a_body_that_is_not_an_object_is_read_without_its_spelling(self) -> None:
        assert read_spelled(b" [1, 2]") == ([1, 2], None)

    def test_a_list_of_another_length_keeps_its_head_and_tail(self) -> None:
        """A compacted stretch: the items before and after it keep the agent's spelling."""
        raw = b'{"m": [ {"a" : "\\u00e9"}, {"b": 2}, {"c": 3}, {"d" : 4 } ]}'
        read, spelled = read_spelled(raw)
        assert spelled is not None
        sent = {"m": [read["m"][0], {"summary": "é"}, read["m"][3]]}
        assert (
            spelled.write(sent, read)
            == b'{"m": [ {"a" : "\\u00e9"},{"summary":"\xc3\xa9"}, {"d" : 4 } ]}'
        )


class _Recorder(BaseHTTPRequestHandler):
    """A fake Anthropic API that keeps the bytes of every body it gets."""

    bodies: list[bytes]

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        answer = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(name="recorded")
def recorded_fixture() -> Iterator[tuple[str, list[bytes]]]:
    """A gateway in front of a recording fake upstream: its URL and the bodies upstream got."""
    bodies: list[bytes] = []
    handler = type("Handler", (_Recorder,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    worker = threading.Thread(target=server.serve_forever, daemon=True)
    worker.start()
    gateway = gateway_for(
        f"http://127.0.0.1:{server.server_address[1]}",
        budget=50_000,
        policy=get_policy("coding"),
        store=None,
    )
    with GatewayThread(gateway) as url:
        yield url, bodies
    server.shutdown()
    server.server_close()


MARK = ',"cache_control":{"type":"ephemeral"}'


class TestForwardedBytes:
    def test_an_uncompacted_request_goes_upstream_as_the_agent_spelled_it(
        self, recorded: tuple[str, list[bytes]]
    ) -> None:
        """Spaces, escapes, key order, number forms and string contents kept; marks added."""
        url, bodies = recorded

        def body(system_mark: str, last_mark: str) -> str:
            return (
                '{ "max_tokens" : 100,\n  "model":"claude-test", "temperature": 1.0e0,'
                ' "system": [ {"text":"Caf\\u00e9 rules", "type" : "text"' + system_mark + "} ],\n"
                ' "messages" : [ {"content":"Bonjour caf\\u00e9", "role":"user"},'
                ' {"role":"assistant","content":[{"type":"text","text":"Oui, 1.50 \\u20ac"}]},'
                ' {"content":[{"text":"et \\u00e0 toi \\ud83d\\ude00", "type":"text"'
                + last_mark
                + '}],"role":"user"} ],'
                ' "metadata": {"user_id": "someone"} }'
            )

        raw = body("", "").encode()
        answer = httpx.post(
            f"{url}/v1/messages",
            content=raw,
            headers={"content-type": "application/json", "x-context-graph-session": "s-1"},
        )
        assert answer.status_code == 200 and answer.headers[OUTCOME] == "rendered"
        assert bodies[-1].decode() == body(MARK, MARK)

    def test_a_count_for_a_conversation_not_held_goes_as_the_agent_sent_it(
        self, recorded: tuple[str, list[bytes]]
    ) -> None:
        url, bodies = recorded
        raw = b'{ "model" : "claude-test", "messages": [{"role":"user","content":"caf\\u00e9"}] }'
        httpx.post(
            f"{url}/v1/messages/count_tokens",
            content=raw,
            headers={"content-type": "application/json"},
        )
        assert bodies[-1] == raw
