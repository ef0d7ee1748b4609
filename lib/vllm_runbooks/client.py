"""Endpoint client for an OpenAI-compatible vLLM server, where every failure is a typed result.

Why typed failures instead of exceptions: a canary or load stage must *record* "connection
refused", "timed out after 5 s", "HTTP 400: auto tool choice requires ..." or "stream cut before
[DONE]" as evidence and move on, and a runbook cell must never die on a network error.

Secrets: the API key is read from the environment variable *named* by ``api_key_env`` at request
time; it is never stored on the client, and any echo of it in an error body is masked, so it
cannot reach a result, a repr or a scrap.

Bounded: every call has a total deadline (``timeout_s`` for a plain reply, ``total_timeout_s`` for
a stream) checked as each piece of the body arrives, not only a per-read timeout, so a server that
trickles one byte a second cannot keep a call alive; and every body is read under a byte cap
(``max_body_bytes``, 32 MiB by default: a big server's ``/metrics`` is a few MB). A call can also
be cancelled (``abort()``): later calls return a ``cancelled`` failure without sending anything and
the sockets of calls in flight are shut down, so they end at once.

Only the endpoint: proxies from the environment (``HTTP_PROXY``, ``ALL_PROXY``…) are never used
(:func:`direct_http_client`), or a corporate host's proxy would receive every request, bearer
key included; :func:`env_proxies_ignored` names the variables that were set, for the record.

Clean text: everything read from an endpoint is decoded in one place (:func:`decode_body`), where
lone surrogates (a ``\\ud800`` JSON escape, which ``json.loads`` turns into a character no UTF-8
file can hold) become U+FFFD, so no result, report or notebook fails to be written over them.
"""

from __future__ import annotations

import codecs
import enum
import json
import os
import re
import socket
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from .display import html_table
from .metrics import MetricsSnapshot, parse_metrics
from .records import Record
from .redact import mask_secret

BODY_EXCERPT_CHARS = 600
MAX_BODY_BYTES = 32 * 1024 * 1024  # generous: a large server's /metrics is a few MB
ERROR_BODY_BYTES = 64 * 1024  # an error reply is only kept as an excerpt
#: Proxy variables httpx (and curl, requests) would honour; never honoured here.
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def direct_http_client(transport: httpx.BaseTransport | None = None, **kwargs: Any) -> httpx.Client:
    """An httpx client that talks to the URL it is given and nowhere else.

    Why: httpx takes ``HTTP_PROXY`` / ``ALL_PROXY`` from the environment by default, and the
    runbooks promise traffic only to ``endpoint``. An explicit transport turns environment
    proxies off while still honouring ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` (an internal CA);
    ``trust_env=False`` also keeps ``~/.netrc`` credentials out of the requests.
    """
    return httpx.Client(transport=transport or httpx.HTTPTransport(), trust_env=False, **kwargs)


def env_proxies_ignored() -> list[str]:
    """Names (never values: a proxy URL may carry a password) of the proxy variables set here."""
    return sorted(name for name in PROXY_ENV if os.environ.get(name))


_SURROGATE = re.compile("[\ud800-\udfff]")
#: A JSON escape: a surrogate pair, a lone high or low surrogate, or any other ``\\x`` (matched so
#: that ``\\\\ud800``, an escaped backslash then text, is never read as an escape).
_JSON_ESCAPE = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|u[dD][c-fC-F][0-9a-fA-F]{2}|.)", re.S
)
_MAYBE_LONE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_escape(match: re.Match[str]) -> str:
    text = match.group()
    return "\\ufffd" if len(text) == 6 and text[1] == "u" else text


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate, raw or as a JSON ``\\uD8xx`` escape, made U+FFFD.

    A valid escaped pair (an emoji) is kept; so is the rest of the text, byte for byte.
    """
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    if _MAYBE_LONE.search(text):
        text = _JSON_ESCAPE.sub(_lone_escape, text)
    return text


def decode_body(raw: bytes, encoding: str = "utf-8") -> str:
    """The one decoder of what an endpoint sends: bytes that do not decode are replaced, and
    lone surrogates (see :func:`clean_text`) too, so ``json.loads`` of the result cannot make one."""
    return clean_text(raw.decode(encoding, errors="replace"))


class FailureKind(enum.StrEnum):
    CONNECTION_REFUSED = "connection_refused"
    CONNECT_ERROR = "connect_error"  # DNS, unreachable, TLS
    TIMEOUT = "timeout"  # connect/read/write timeout, or the total deadline of a plain reply
    STREAM_TIMEOUT = "stream_timeout"  # total-time limit of a stream reached
    HTTP_STATUS = "http_status"  # non-2xx, with a body excerpt
    MALFORMED_JSON = "malformed_json"  # 2xx body that is not the JSON expected
    MALFORMED_SSE = "malformed_sse"  # a stream line that is not valid SSE / JSON
    STREAM_INCOMPLETE = "stream_incomplete"  # stream ended (or was cut) before [DONE]
    STREAM_ERROR = "stream_error"  # the server sent an error object inside the stream
    PROTOCOL_ERROR = "protocol_error"  # broken HTTP framing outside a stream
    BODY_TOO_LARGE = "body_too_large"  # reply (or one stream line) over max_body_bytes
    CANCELLED = "cancelled"  # the client was aborted (an abandoned canary step)
    CLIENT_ERROR = "client_error"  # anything else from the transport


@dataclass
class Failure(Record):
    """Why a call did not succeed; ``body_excerpt`` is the start of the server's reply, if any."""

    SCHEMA = "client_failure"
    kind: FailureKind
    message: str
    status_code: int | None = None
    body_excerpt: str = ""

    @property
    def error_message(self) -> str:
        """The server's own error message (vLLM's ``{"error": {"message": ...}}``), else the excerpt."""
        try:
            data = json.loads(self.body_excerpt)
        except ValueError:
            return self.body_excerpt
        err = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(err, dict):
            return str(err.get("message") or err.get("detail") or err)
        return str(err)


@dataclass
class Response(Record):
    """Outcome of one non-streaming call: status, timing, parsed JSON (``data``) or a failure."""

    SCHEMA = "client_response"
    endpoint: str
    ok: bool
    status_code: int | None = None
    elapsed_s: float = 0.0
    data: Any = None
    failure: Failure | None = None

    def _repr_html_(self) -> str:
        return html_table([_summary(self.endpoint, self.ok, self.status_code, self.elapsed_s, self.failure)])

    @property
    def model_ids(self) -> list[str]:
        """For ``/v1/models``: the served model names."""
        if isinstance(self.data, dict):
            return [m.get("id", "") for m in self.data.get("data", []) if isinstance(m, dict)]
        return []


@dataclass
class Usage(Record):
    SCHEMA = "client_usage"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None  # None = the server did not report prompt_tokens_details

    @classmethod
    def from_api(cls, usage: Mapping[str, Any] | None) -> Usage | None:
        if not isinstance(usage, Mapping):
            return None
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
        return cls(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens"), cached)


@dataclass
class ToolCall(Record):
    SCHEMA = "client_tool_call"
    id: str
    name: str
    arguments: str  # as sent by the server: a JSON string that may or may not parse

    def __post_init__(self) -> None:
        # streamed arguments are joined from fragments, so an escape can arrive split in two
        self.arguments = clean_text(self.arguments) if isinstance(self.arguments, str) else self.arguments

    def parsed_arguments(self) -> tuple[Any, str | None]:
        """(value, None) when ``arguments`` is JSON, else (None, the parse error)."""
        try:
            return json.loads(self.arguments), None
        except ValueError as exc:
            return None, str(exc)


@dataclass
class ChatResult(Record):
    """A chat completion, plain or streamed. Streaming adds TTFT, inter-token gaps and chunk counts.

    ``ttft_s`` is measured from sending the request to the first chunk carrying content or a tool
    call delta (vLLM's first chunk only carries the role). ``e2e_s`` runs to ``[DONE]``.
    """

    SCHEMA = "client_chat_result"
    ok: bool
    stream: bool = False
    status_code: int | None = None
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    e2e_s: float = 0.0
    ttft_s: float | None = None
    inter_token_s: list[float] = field(default_factory=list)
    chunks: int = 0
    done: bool = False  # saw data: [DONE]
    failure: Failure | None = None
    raw: Any = None  # the JSON body (plain) or None (stream)

    @property
    def cached_tokens(self) -> int | None:
        return self.usage.cached_tokens if self.usage else None

    def _repr_html_(self) -> str:
        row = _summary("chat (stream)" if self.stream else "chat", self.ok, self.status_code, self.e2e_s, self.failure)
        row.update(
            ttft_s=None if self.ttft_s is None else round(self.ttft_s, 4),
            finish_reason=self.finish_reason,
            prompt_tokens=self.usage.prompt_tokens if self.usage else None,
            completion_tokens=self.usage.completion_tokens if self.usage else None,
            cached_tokens=self.cached_tokens,
            tool_calls=[f"{t.name}({t.arguments})" for t in self.tool_calls],
            content=self.content[:200],
        )
        return html_table([row])


@dataclass
class MetricsResult(Record):
    SCHEMA = "client_metrics_result"
    ok: bool
    status_code: int | None = None
    elapsed_s: float = 0.0
    snapshot: MetricsSnapshot | None = None
    failure: Failure | None = None


class EndpointClient:
    """Calls one vLLM server. Use as a context manager or call ``close()``.

    ``model=None`` means "the first model ``/v1/models`` lists", looked up once on first use.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = "VLLM_API_KEY",
        model: str | None = None,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[:-3]
        self.api_key_env = api_key_env
        self.model = model
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_body_bytes = max_body_bytes
        self._http = direct_http_client(transport, follow_redirects=False)
        self._cancel = threading.Event()
        self._streams: weakref.WeakSet[Any] = weakref.WeakSet()  # network streams this client opened
        self._streams_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EndpointClient({self.base_url!r}, api_key_env={self.api_key_env!r}, model={self.model!r})"

    def __enter__(self) -> EndpointClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def abort(self) -> None:
        """Cancel this client from any thread: no further requests are sent (each call returns a
        ``cancelled`` failure) and calls in flight end now, their sockets shut down under them."""
        self._cancel.set()
        with self._streams_lock:
            streams = list(self._streams)
        for stream in streams:
            sock = stream.get_extra_info("socket")
            if isinstance(sock, socket.socket):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:  # already closed
                    pass
        self.close()

    # -- plumbing ----------------------------------------------------------------------------
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _timeout(self, timeout_s: float | None) -> httpx.Timeout:
        t = self.timeout_s if timeout_s is None else timeout_s
        return httpx.Timeout(t, connect=min(self.connect_timeout_s, t))

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace extension: remember each connection's network stream for ``abort()``."""
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            with self._streams_lock:
                self._streams.add(info["return_value"])

    def _cancelled_failure(self, detail: str = "") -> Failure:
        suffix = f" ({detail})" if detail else ""
        return Failure(FailureKind.CANCELLED, "client aborted; request not completed" + suffix)

    def _mask(self, text: str) -> str:
        key = self._key()
        return mask_secret(text, key) if key and len(key) >= 4 else text

    def _transport_failure(self, exc: Exception) -> Failure:
        msg = self._mask(f"{type(exc).__name__}: {exc}")
        if self.cancelled:
            return self._cancelled_failure(msg)
        if isinstance(exc, httpx.TimeoutException):
            return Failure(FailureKind.TIMEOUT, msg)
        if isinstance(exc, httpx.ConnectError):
            refused = "refused" in str(exc).lower() or "errno 111" in str(exc).lower()
            return Failure(FailureKind.CONNECTION_REFUSED if refused else FailureKind.CONNECT_ERROR, msg)
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
            return Failure(FailureKind.PROTOCOL_ERROR, msg)
        return Failure(FailureKind.CLIENT_ERROR, msg)

    def _status_failure(self, status: int, body: str) -> Failure:
        excerpt = self._mask(body[:BODY_EXCERPT_CHARS])
        return Failure(FailureKind.HTTP_STATUS, f"HTTP {status}", status, excerpt)

    def _request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        timeout_s: float | None = None,
        expect_json: bool = True,
    ) -> Response:
        """One plain call, streamed in so the total deadline and the byte cap hold for the body too."""
        start = time.monotonic()
        total = self.timeout_s if timeout_s is None else timeout_s
        deadline = start + total

        def fail(failure: Failure, status: int | None = None) -> Response:
            return Response(path, False, status, time.monotonic() - start, failure=failure)

        if self.cancelled:
            return fail(self._cancelled_failure())
        try:
            with self._http.stream(
                method,
                self.base_url + path,
                json=json_body,
                headers=self._headers(),
                timeout=self._timeout(timeout_s),
                extensions={"trace": self._trace},
            ) as r:
                status = r.status_code
                if not 200 <= status < 300:
                    return fail(self._status_failure(status, _read_bounded(r, deadline, ERROR_BODY_BYTES)), status)
                try:
                    raw = b"".join(_capped_chunks(r, deadline, self.max_body_bytes))
                except _DeadlineExceeded as exc:
                    return fail(
                        Failure(
                            FailureKind.TIMEOUT,
                            f"reply not complete within the total deadline of "
                            f"{total:g} s ({exc.received} bytes received)",
                            status,
                        ),
                        status,
                    )
                except _BodyTooLarge as exc:
                    return fail(Failure(FailureKind.BODY_TOO_LARGE, exc.message(), status), status)
                encoding = r.encoding or "utf-8"
        except httpx.HTTPError as exc:
            failure = self._transport_failure(exc)
            return fail(failure)
        except RuntimeError as exc:  # httpx: the client was closed under us (abort from another thread)
            if self.cancelled:
                return fail(self._cancelled_failure(str(exc)))
            return fail(Failure(FailureKind.CLIENT_ERROR, self._mask(f"{type(exc).__name__}: {exc}")))
        if self.cancelled:
            # abort() shut the socket down mid-body: what was read ends early, it is not the reply
            # (without this a trickled '{' read as malformed JSON, a race seen in CI).
            return fail(self._cancelled_failure(f"{len(raw)} bytes read before the abort"))
        elapsed = time.monotonic() - start
        text = decode_body(raw, encoding)
        if not expect_json:
            return Response(path, True, status, elapsed, data=text)
        try:
            data = json.loads(text) if raw else None
        except ValueError as exc:
            return Response(
                path,
                False,
                status,
                elapsed,
                failure=Failure(
                    FailureKind.MALFORMED_JSON,
                    f"body is not JSON: {exc}",
                    status,
                    self._mask(text[:BODY_EXCERPT_CHARS]),
                ),
            )
        return Response(path, True, status, elapsed, data=data)

    def _model(self) -> str:
        if self.model is None:
            ids = self.models().model_ids
            self.model = ids[0] if ids else ""
        return self.model

    # -- endpoints ---------------------------------------------------------------------------
    def health(self, timeout_s: float | None = 5.0) -> Response:
        return self._request("GET", "/health", timeout_s=timeout_s, expect_json=False)

    def models(self, timeout_s: float | None = None) -> Response:
        return self._request("GET", "/v1/models", timeout_s=timeout_s)

    def version(self, timeout_s: float | None = None) -> Response:
        """``/version``: ``data["version"]`` is vLLM's version string."""
        return self._request("GET", "/version", timeout_s=timeout_s)

    def tokenize(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        timeout_s: float | None = None,
        **extra: Any,
    ) -> Response:
        """``/tokenize`` for a prompt or chat messages (rendered by the server's chat template)."""
        body: dict[str, Any] = {"model": self._model(), **extra}
        if messages is not None:
            body["messages"] = list(messages)
        else:
            body["prompt"] = prompt or ""
        return self._request("POST", "/tokenize", json_body=body, timeout_s=timeout_s)

    def token_ids(
        self, messages: Sequence[Mapping[str, Any]], *, timeout_s: float | None = 30.0, **extra: Any
    ) -> tuple[list[int] | None, str]:
        """Token ids of a chat request as the server renders it, or None and why not."""
        given = {k: v for k, v in extra.items() if v is not None}
        resp = self.tokenize(messages=messages, timeout_s=timeout_s, **given)
        if resp.ok and isinstance(resp.data, dict) and isinstance(resp.data.get("tokens"), list):
            return [int(t) for t in resp.data["tokens"]], ""
        if resp.failure is None:
            return None, "no tokens in reply"
        return None, (resp.failure.error_message or resp.failure.message)[:200]

    def completion(
        self, prompt: str, *, max_tokens: int = 16, timeout_s: float | None = None, **params: Any
    ) -> Response:
        body = {"model": self._model(), "prompt": prompt, "max_tokens": max_tokens, **params}
        return self._request("POST", "/v1/completions", json_body=body, timeout_s=timeout_s)

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 16,
        timeout_s: float | None = None,
        **params: Any,
    ) -> ChatResult:
        """Non-streaming chat completion. ``params`` go into the request body (tools, tool_choice...)."""
        body = {"model": self._model(), "messages": list(messages), "max_tokens": max_tokens, **params}
        body.pop("stream", None)
        resp = self._request("POST", "/v1/chat/completions", json_body=body, timeout_s=timeout_s)
        result = ChatResult(
            ok=False, status_code=resp.status_code, e2e_s=resp.elapsed_s, failure=resp.failure, raw=resp.data
        )
        if not resp.ok:
            return result
        try:
            choice = resp.data["choices"][0]
            message = choice.get("message") or {}
        except (TypeError, KeyError, IndexError) as exc:
            result.failure = Failure(
                FailureKind.MALFORMED_JSON,
                f"no choices[0] in reply: {exc!r}",
                resp.status_code,
                self._mask(json.dumps(resp.data)[:BODY_EXCERPT_CHARS]),
            )
            return result
        result.ok = True
        result.content = message.get("content") or ""
        result.tool_calls = [
            ToolCall(
                tc.get("id", ""),
                (tc.get("function") or {}).get("name", ""),
                _args_text((tc.get("function") or {}).get("arguments")),
            )
            for tc in message.get("tool_calls") or []
        ]
        result.finish_reason = choice.get("finish_reason")
        result.usage = Usage.from_api(resp.data.get("usage"))
        result.model = resp.data.get("model", "")
        return result

    def chat_stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 16,
        timeout_s: float | None = None,
        total_timeout_s: float = 120.0,
        include_usage: bool = True,
        **params: Any,
    ) -> ChatResult:
        """Streaming chat completion with TTFT, inter-token gaps and end-to-end time.

        ``timeout_s`` bounds each network wait (capped at ``total_timeout_s``); the total limit is
        checked between chunks, so a stream takes at most about ``total_timeout_s`` + one wait.
        """
        body = {
            "model": self._model(),
            "messages": list(messages),
            "max_tokens": max_tokens,
            "stream": True,
            **params,
        }
        if include_usage:
            body["stream_options"] = {"include_usage": True, **(params.get("stream_options") or {})}
        result = ChatResult(ok=False, stream=True)
        if self.cancelled:
            result.failure = self._cancelled_failure()
            return _finish(result, time.monotonic())
        start = time.monotonic()
        deadline = start + total_timeout_s
        last_token: float | None = None
        calls: dict[int, dict[str, str]] = {}
        try:
            with self._http.stream(
                "POST",
                self.base_url + "/v1/chat/completions",
                json=body,
                headers=self._headers(),
                timeout=self._timeout(min(self.timeout_s if timeout_s is None else timeout_s, total_timeout_s)),
                extensions={"trace": self._trace},
            ) as r:
                result.status_code = r.status_code
                if not 200 <= r.status_code < 300:
                    text = _read_bounded(r, deadline, ERROR_BODY_BYTES)
                    result.failure = self._status_failure(r.status_code, text)
                    return _finish(result, start)
                lines = _lines(_capped_chunks(r, deadline, self.max_body_bytes))
                for event in _sse_events(lines, deadline):
                    if isinstance(event, Failure):
                        result.failure = Failure(
                            event.kind,
                            self._mask(event.message),
                            r.status_code,
                            self._mask(event.body_excerpt),
                        )
                        return _finish(result, start)
                    if event == "[DONE]":
                        result.done = True
                        break
                    now = time.monotonic()
                    result.chunks += 1
                    if (
                        isinstance(event, dict)
                        and "choices" not in event
                        and ("error" in event or event.get("object") == "error")
                    ):
                        result.failure = Failure(
                            FailureKind.STREAM_ERROR,
                            "server reported an error mid-stream",
                            r.status_code,
                            self._mask(json.dumps(event)[:BODY_EXCERPT_CHARS]),
                        )
                        return _finish(result, start)
                    if not isinstance(event, dict):
                        result.failure = Failure(
                            FailureKind.MALFORMED_SSE,
                            "stream chunk is not a JSON object",
                            r.status_code,
                            self._mask(json.dumps(event)[:BODY_EXCERPT_CHARS]),
                        )
                        return _finish(result, start)
                    result.model = event.get("model", result.model)
                    if event.get("usage"):
                        result.usage = Usage.from_api(event["usage"])
                    for choice in event.get("choices") or []:
                        delta = choice.get("delta") or {}
                        produced = bool(delta.get("content")) or bool(delta.get("tool_calls"))
                        result.content += delta.get("content") or ""
                        for tc in delta.get("tool_calls") or []:
                            slot = calls.setdefault(int(tc.get("index", 0)), {"id": "", "name": "", "arguments": ""})
                            slot["id"] = tc.get("id") or slot["id"]
                            fn = tc.get("function") or {}
                            slot["name"] += fn.get("name") or ""
                            slot["arguments"] += fn.get("arguments") or ""
                        if choice.get("finish_reason"):
                            result.finish_reason = choice["finish_reason"]
                        if produced:
                            if result.ttft_s is None:
                                result.ttft_s = now - start
                            elif last_token is not None:
                                result.inter_token_s.append(now - last_token)
                            last_token = now
        except _DeadlineExceeded as exc:
            result.failure = Failure(
                FailureKind.STREAM_TIMEOUT,
                f"stream exceeded its total-time limit of {total_timeout_s:g} s ({exc.received} bytes received)",
                result.status_code,
            )
        except _BodyTooLarge as exc:
            result.failure = Failure(FailureKind.BODY_TOO_LARGE, exc.message(), result.status_code)
        except RuntimeError as exc:  # httpx: the client was closed under us (abort from another thread)
            kind = FailureKind.CANCELLED if self.cancelled else FailureKind.CLIENT_ERROR
            result.failure = Failure(kind, self._mask(f"{type(exc).__name__}: {exc}"), result.status_code)
        except httpx.RemoteProtocolError as exc:
            if self.cancelled:
                result.failure = self._cancelled_failure(self._mask(str(exc)))
                result.failure.status_code = result.status_code
                return _finish(result, start)
            result.failure = Failure(
                FailureKind.STREAM_INCOMPLETE,
                self._mask(f"connection closed mid-stream: {exc}"),
                result.status_code,
            )
        except httpx.HTTPError as exc:
            result.failure = self._transport_failure(exc)
            result.failure.status_code = result.status_code
        result.tool_calls = [ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
        if result.failure is None and not result.done:
            result.failure = Failure(
                FailureKind.STREAM_INCOMPLETE,
                f"stream ended after {result.chunks} chunks without data: [DONE]",
                result.status_code,
            )
        return _finish(result, start)

    def metrics(self, timeout_s: float | None = None) -> MetricsResult:
        """Scrape ``/metrics`` and parse it by family (see ``vllm_runbooks.metrics``).

        ``timeout_s=None``: the client's ``timeout_s``, at most 10 s (a scrape must not stall a run).
        """
        total = min(self.timeout_s, 10.0) if timeout_s is None else timeout_s
        resp = self._request("GET", "/metrics", timeout_s=total, expect_json=False)
        if not resp.ok:
            return MetricsResult(False, resp.status_code, resp.elapsed_s, failure=resp.failure)
        snap = parse_metrics(resp.data or "")
        if not snap.families:
            return MetricsResult(
                False,
                resp.status_code,
                resp.elapsed_s,
                snap,
                Failure(
                    FailureKind.MALFORMED_JSON,
                    "no Prometheus metric families in /metrics",
                    resp.status_code,
                    self._mask((resp.data or "")[:BODY_EXCERPT_CHARS]),
                ),
            )
        return MetricsResult(True, resp.status_code, resp.elapsed_s, snap)


def _summary(what: str, ok: bool, status: int | None, elapsed: float, failure: Failure | None) -> dict[str, Any]:
    return {
        "call": what,
        "ok": ok,
        "status": status,
        "elapsed_s": round(elapsed, 4),
        "failure": f"{failure.kind.value}: {failure.error_message or failure.message}" if failure else None,
    }


def _finish(result: ChatResult, start: float) -> ChatResult:
    result.e2e_s = time.monotonic() - start
    result.ok = result.failure is None
    return result


def _args_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)


def _read_bounded(r: httpx.Response, deadline: float, limit: int = ERROR_BODY_BYTES) -> str:
    """The start of an error body: at most ``limit`` bytes, whatever arrived by ``deadline``."""
    buf = b""
    try:
        for chunk in r.iter_bytes():
            buf += chunk
            if len(buf) >= limit or time.monotonic() > deadline:
                break
    except httpx.HTTPError:
        pass
    return decode_body(buf[:limit])


class _DeadlineExceeded(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _BodyTooLarge(Exception):
    def __init__(self, received: int, cap: int, what: str = "reply body") -> None:
        super().__init__(received, cap, what)
        self.received, self.cap, self.what = received, cap, what

    def message(self) -> str:
        cap = f"{self.cap / 2**20:g} MiB" if self.cap >= 2**20 else f"{self.cap} byte"
        return f"{self.what} exceeds the {cap} cap (max_body_bytes={self.cap}); {self.received} bytes seen"


def _capped_chunks(r: httpx.Response, deadline: float, cap: int) -> Iterator[bytes]:
    """The body as it arrives; raises _DeadlineExceeded / _BodyTooLarge as soon as either is hit.

    The deadline is checked after every piece the network delivers, so a trickling server is cut
    at the deadline plus one gap between bytes (a silent one is cut by the per-read timeout).
    """
    declared = r.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > cap:
        raise _BodyTooLarge(int(declared), cap, "declared Content-Length")
    received = 0
    for chunk in r.iter_bytes():
        received += len(chunk)
        if received > cap:
            raise _BodyTooLarge(received, cap)
        yield chunk
        if time.monotonic() > deadline:
            raise _DeadlineExceeded(received)


_LINE_END = re.compile(r"\r\n|\r|\n")


def _lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Split a byte stream into lines (CRLF, LF or CR, as SSE allows). Unlike ``iter_lines`` the
    chunks come from ``_capped_chunks``, so a line that never ends still meets the deadline and cap."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    for chunk in chunks:
        text = pending + decoder.decode(chunk)
        held = text.endswith("\r")  # may be the first half of CRLF
        parts = _LINE_END.split(text[:-1] if held else text)
        pending = parts.pop() + ("\r" if held else "")
        yield from map(clean_text, parts)
    text = pending + decoder.decode(b"", final=True)
    if text:
        yield from map(clean_text, _LINE_END.split(text[:-1] if text.endswith("\r") else text))


def _sse_events(lines: Iterator[str], deadline: float) -> Iterator[Any]:
    """Yield decoded ``data:`` payloads ("[DONE]" as a string), or one Failure and stop.

    Multi-line ``data:`` fields are joined per the SSE spec; comments and event/id/retry fields
    are skipped; any other line is malformed.
    """
    data: list[str] = []
    for line in lines:
        if time.monotonic() > deadline:
            yield Failure(FailureKind.STREAM_TIMEOUT, "stream exceeded its total-time limit")
            return
        if line == "":
            if data:
                event = _sse_payload(data)
                data = []
                yield event
                if isinstance(event, Failure):
                    return
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name in ("event", "id", "retry"):
            continue
        else:
            yield Failure(
                FailureKind.MALFORMED_SSE,
                "line is not a server-sent event field",
                body_excerpt=line[:BODY_EXCERPT_CHARS],
            )
            return
    if data:  # last event without its blank line
        yield _sse_payload(data)


def _sse_payload(data: list[str]) -> Any:
    """One event's joined data lines: "[DONE]", the decoded JSON, or a MALFORMED_SSE failure."""
    payload = "\n".join(data)
    if payload.strip() == "[DONE]":
        return "[DONE]"
    try:
        return json.loads(payload)
    except ValueError as exc:
        return Failure(FailureKind.MALFORMED_SSE, f"data is not JSON: {exc}", body_excerpt=payload[:BODY_EXCERPT_CHARS])


__all__ = [
    "ChatResult",
    "EndpointClient",
    "clean_text",
    "decode_body",
    "direct_http_client",
    "env_proxies_ignored",
    "Failure",
    "FailureKind",
    "MetricsResult",
    "Response",
    "ToolCall",
    "Usage",
]
