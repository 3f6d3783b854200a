"""`Gateway`: an HTTP proxy that renders each agent request under the budget.

The agent points its base URL at the gateway; the gateway points at the provider (or
any endpoint that speaks its API). For each model call to a path a wire serves
(`GatewayWire.routes`, the providers' in `context_graph.formats.gateways`):

1. the session is read from what the client sends (`orchestrator.gateway.identity`)
   and the request goes to the conversation it continues (`threads.SessionTable`);
2. what is new in its history is taken in, and the engine renders the conversation
   under the budget: the body goes upstream with the rendered `system`, `messages` and
   `tools` in place of the agent's, every other field as the agent sent it;
3. the answer comes back as the upstream sent it, streamed byte for byte, errors
   included. Its usage (a stream's: from its events) calibrates the engine's count and
   adds to the session's usage (`manager.stats().usage`, its `cache_hit_rate`).

A token count (`GatewayWire.count`) for a conversation the gateway holds is answered by
the upstream's count of what the gateway would send, not of the agent's whole history
(an agent that sizes its own compaction from this count would otherwise compact itself
for nothing). Every other request is passed through unchanged, as is any request when
the engine fails on it (a warning is logged and the answer carries
`x-context-graph-proxy: passthrough`), unless `strict`, which answers such a request
with an error instead. A request that already went through a context-graph gateway
(`x-context-graph-forwarded`) is passed through, so that two gateways in a chain do not
render one request twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple

from context_graph.errors import ConfigurationError, ContextGraphError
from orchestrator.gateway.activity import Activity, note_request, take_note
from orchestrator.gateway.identity import session_of
from orchestrator.gateway.replicas import take_and_render
from orchestrator.gateway.spelling import Spelled, compact, read_spelled
from orchestrator.gateway.threads import SessionTable, Thread
from orchestrator.gateway.usage import USAGE_SCAN, Answer, report_answer
from orchestrator.gateway.wires import WIRES, Wire, wire_of_path
from orchestrator.integrations.extras import missing_extra

try:
    from aiohttp import ClientError, ClientSession, ClientTimeout, web
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "aiohttp", "proxy", "aiohttp") from exc

__all__ = ["FORWARDED", "OUTCOME", "Gateway", "RequestBody"]

LOG = logging.getLogger("context_graph.gateway")

FORWARDED = "x-context-graph-forwarded"
"""Set on every request the gateway sends upstream."""
OUTCOME = "x-context-graph-proxy"
"""On every answer: `rendered` (the engine's request went upstream) or `passthrough`."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)


@dataclass(frozen=True)
class _Prepared:
    """A request as it goes upstream, and the thread it was rendered for (`None`: passed)."""

    body: bytes
    thread: Thread | None
    note: str
    wire: Wire | None = None
    counting: bool = False
    """A count_tokens request: its answer is a count, not a model call's usage."""
    activity: Activity | None = None
    """The note to keep in the thread's store once the answer is back (`activity`)."""


class RequestBody(NamedTuple):
    """An agent's request body: its bytes, what they say, and how they spell it."""

    raw: bytes
    value: dict[str, Any]
    spelled: Spelled | None

    def write(self, sent: dict[str, Any], wire: Wire, thread: Thread) -> bytes:
        """`sent` as it goes upstream: what the engine left as it was, as the agent wrote it.

        The upstream caches the request by its prefix: bytes the agent sent the same
        from call to call must go the same, not re-serialized in another spacing, key
        order or escaping.
        """
        if self.spelled is None:
            return compact(sent)
        return self.spelled.write(
            sent, self.value, shorthand=wire.http.text_shorthand, verdicts=thread.verdicts
        )


class Gateway:
    """The proxy's request handling, as an aiohttp application (`app`).

    Args:
        upstream: The provider's base URL (`https://...`, no trailing `/v1`).
        tables: The sessions' conversations, one table per wire format served, by
            the wire's name (`orchestrator.gateway.wires.WIRES`).
        budget: The budget of every request (the engine's renders are under it).
        strict: Answer a request the engine fails on with an error instead of passing
            it through unchanged.
    """

    def __init__(
        self,
        upstream: str,
        tables: Mapping[str, SessionTable],
        *,
        budget: int | None,
        strict: bool = False,
    ) -> None:
        self._upstream = upstream.rstrip("/")
        self._tables = dict(tables)
        self._budget = budget
        self._strict = strict
        self._client: ClientSession | None = None

    @property
    def table(self) -> SessionTable:
        """The conversations of the first wire format served (of a gateway's only one)."""
        return next(iter(self._tables.values()))

    def table_of(self, wire: str) -> SessionTable:
        """The conversations of the sessions of one wire format."""
        return self._tables[wire]

    def app(self, middlewares: Sequence[Any] = ()) -> web.Application:
        """The aiohttp application serving the gateway (with these aiohttp middlewares)."""
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=middlewares)
        # Every wire's routes, served or not: a wire not served passes its requests through.
        for wire in WIRES.values():
            for route in wire.http.routes:
                app.router.add_post(route, self._handler(wire))
        app.router.add_route("*", "/{tail:.*}", self._passthrough)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, app: web.Application) -> None:
        # No total timeout: a streamed answer may take minutes; the agent has its own.
        self._client = ClientSession(
            timeout=ClientTimeout(total=None, connect=30), auto_decompress=False
        )

    async def _stop(self, app: web.Application) -> None:
        if self._client is not None:
            await self._client.close()
        for table in self._tables.values():
            table.close()

    def _handler(self, wire: Wire) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            kind = wire.http.request_kind(request.path, await request.read())
            if kind is None or (kind == "count" and wire.http.count is None):
                return await self._passthrough(request)
            return await self._managed(request, wire, counting=kind == "count")

        return handle

    async def _managed(
        self, request: web.Request, wire: Wire, *, counting: bool = False
    ) -> web.StreamResponse:
        raw = await request.read()
        if wire.name not in self._tables:
            return await self._forward(request, _Prepared(raw, None, "passthrough"))
        prepared = await self._prepare(request, raw, wire, counting=counting)
        if isinstance(prepared, web.Response):
            return prepared
        return await self._forward(request, prepared)

    async def _passthrough(self, request: web.Request) -> web.StreamResponse:
        return await self._forward(request, _Prepared(await request.read(), None, "passthrough"))

    async def _prepare(
        self, request: web.Request, raw: bytes, wire: Wire, *, counting: bool = False
    ) -> _Prepared | web.Response:
        """The body to send upstream: the engine's rendering, or the agent's own."""
        if request.headers.get(FORWARDED):
            return _Prepared(raw, None, "passthrough")
        try:
            body, spelled = read_spelled(raw)
        except ValueError:
            return _Prepared(raw, None, "passthrough")  # the upstream names what is wrong
        if not isinstance(body, dict) or wire.http.held_upstream(body):
            return _Prepared(raw, None, "passthrough")
        try:
            return await self._render(
                request.headers,
                RequestBody(raw, body, spelled),
                wire,
                counting=counting,
                path=request.path,
            )
        except ContextGraphError as error:
            return self._failed(raw, error, wire)
        except Exception as error:  # a bug must not stop the agent: see `strict`
            LOG.exception("context-graph gateway: the engine failed on a request")
            return self._failed(raw, error, wire)

    async def _render(
        self,
        headers: Mapping[str, str],
        source: RequestBody,
        wire: Wire,
        *,
        counting: bool,
        path: str = "",
    ) -> _Prepared:
        body = source.value
        http = wire.http
        readable = http.readable(body)
        session = session_of(headers, body)
        table = self._tables[wire.name]
        # Once, and only what is new since the session's last request: a long history's
        # copy and keys are most of a request's cost.
        read = table.read(readable, session)
        if counting:
            # A count for a conversation the gateway does not hold (a tool list, a
            # file) is counted as sent, and starts no thread.
            found = table.find(session, readable, read)
            if found is None:
                return _Prepared(source.raw, None, "passthrough")
            thread = found
        else:
            thread = table.route(session, readable, read)
        api = wire.api
        tools = api.read_tools(readable)
        beside = 0
        if not http.engine_tools and tools:
            # Sent as the agent sent them: the manager counts them off the budget, and
            # knows that the prompt tokens the provider reports count them too.
            beside = wire.tool_tokens(tools)
            if self._budget is not None and beside >= self._budget:
                msg = f"the agent's tools alone are over the budget of {self._budget} tokens"
                raise ConfigurationError(msg)
        async with thread.lock:
            with _one_write(thread):
                result = await take_and_render(
                    thread,
                    readable,
                    read,
                    lambda: thread.manager.render(
                        format=api.format,
                        budget=self._budget,
                        tools=tools if http.engine_tools else None,
                        model=body.get("model") or http.model_of(path),
                        sent_beside=beside,
                    ),
                )
                activity = (
                    None if counting else take_note(thread.manager, session=session, wire=wire.name)
                )
        sent = api.write(dict(readable), result.payload)
        if not http.engine_tools and "tools" in readable:
            sent["tools"] = readable["tools"]
        if counting and http.count is not None:
            sent = http.count.request(sent, body)
        encoded = source.write(sent, wire, thread)
        return _Prepared(encoded, thread, "rendered", wire, counting, activity)

    def _failed(self, raw: bytes, error: Exception, wire: Wire) -> _Prepared | web.Response:
        if self._strict:
            message = f"context-graph gateway (--strict): {type(error).__name__}: {error}"
            return web.json_response(
                wire.http.refusal(message),
                status=400,
                headers={OUTCOME: "refused"},
            )
        LOG.warning("context-graph gateway: passed a request through unchanged: %s", error)
        return _Prepared(raw, None, "passthrough")

    async def _forward(self, request: web.Request, prepared: _Prepared) -> web.StreamResponse:
        """Send the request upstream and stream its answer back; then note it (`activity`)."""
        answered: list[Answer] = []
        try:
            return await self._relay(request, prepared, answered)
        finally:
            # After the answer has gone back, so that the session file's write costs the
            # agent no time; also when the upstream or the agent broke off. The usage and
            # the note land in one transaction.
            if prepared.thread is not None:
                with _one_write(prepared.thread):
                    if answered and prepared.wire is not None:
                        report_answer(
                            prepared.thread, prepared.wire, answered[0], counting=prepared.counting
                        )
                    _keep_note(prepared)

    async def _relay(
        self, request: web.Request, prepared: _Prepared, answered: list[Answer]
    ) -> web.StreamResponse:
        """Send the request upstream and stream its answer back as it comes.

        What the answer says (its status, type and ends) is put in `answered` once the
        whole answer is through.
        """
        assert self._client is not None, "the application is started"
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        headers.append((FORWARDED, "1"))
        headers.append(("accept-encoding", "identity"))  # the stream is read for its usage
        url = self._upstream + request.rel_url.path_qs
        try:
            upstream = await self._client.request(
                request.method, url, headers=headers, data=prepared.body
            )
        except ClientError as error:
            message = f"context-graph gateway: the upstream {self._upstream} failed: {error}"
            body = wire_of_path(request.path).http.unreachable(message)
            return web.json_response(body, status=502, headers={OUTCOME: prepared.note})
        async with upstream:
            answer = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    answer.headers.add(name, value)
            answer.headers[OUTCOME] = prepared.note
            await answer.prepare(request)
            head = tail = b""
            streaming = upstream.content_type == "text/event-stream"
            async for chunk in upstream.content.iter_any():
                await answer.write(chunk)
                if not streaming or len(head) < USAGE_SCAN:  # a JSON answer is read whole
                    head += chunk
                tail = (tail + chunk)[-USAGE_SCAN:]
            try:
                await answer.write_eof()
            except ConnectionResetError:
                # The agent hung up once it had the stream's last event (the openai SDK
                # may, after `data: [DONE]`): the call was made, so its usage still counts.
                LOG.debug("context-graph gateway: the agent left before the answer's end")
        answered.append(Answer(upstream.status, upstream.content_type, head, tail))
        return answer


def _one_write(thread: Thread) -> AbstractContextManager[object]:
    """A block whose writes to the thread's store commit together, when it ends.

    A request's record and the state its render leaves are one transaction, as are the
    answer's usage and the note: each request costs the session file two commits, one
    before the request goes upstream and one after its answer. A shared thread writes
    as it goes, so that a lost race is found (and retried) at the write that lost it.
    """
    store = thread.manager.store
    if store is None or thread.shared:
        return contextlib.nullcontext()
    return store.atomic()


def _keep_note(prepared: _Prepared) -> None:
    if prepared.thread is not None and prepared.activity is not None:
        note_request(prepared.thread.manager, prepared.activity)
