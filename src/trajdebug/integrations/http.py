"""HTTP clients as tool steps: httpx (sync and async transports) and requests (an adapter).

Every request becomes a ``tool`` step named ``HTTP <METHOD> <host>``, with the
method and URL as input (the writer redacts credentials in it), the status as
output and ``service`` (the host), ``endpoint`` (method and URL without the
query) and ``timeout`` (when the client has one) as attributes.  Failures
record the standard error fields of a tool call
(`trajdebug.record.timeouts.tool_error`):

- a transport error (refused connection, DNS, TLS, a read cut) or a client
  timeout: the exception propagates as usual, and its error event carries
  ``error.kind`` (``transport`` or ``timeout``), ``service``, ``endpoint``, the
  request's summary and ``code`` (the exception's class, or the errno name);
- a response with status 400 or more: the call returns normally, and the step
  records an ``HttpStatusError`` (``error.kind`` ``status``, ``code`` the status).

Example:
    ```python
    import httpx, requests
    from trajdebug.integrations.http import HttpxTransport, AsyncHttpxTransport, instrument_requests

    client = httpx.Client(transport=HttpxTransport(), timeout=5.0)
    aclient = httpx.AsyncClient(transport=AsyncHttpxTransport(), timeout=5.0)
    session = instrument_requests(requests.Session())
    ```

Outside a recorded run the wrappers only pass requests on.
"""

from __future__ import annotations

import errno as _errno
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from trajdebug.record.recorder import step as _step
from trajdebug.record.timeouts import tag, tool_error


def _endpoint(method: str, url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if parts.port:
        host = f"{host}:{parts.port}"
    # No query and no credentials: they may hold tokens, and they are not the endpoint.
    return host, f"{method} {urlunsplit((parts.scheme, host, parts.path or '/', '', ''))}"


def _code(exc: BaseException) -> str:
    cur: BaseException | None = exc
    for _ in range(8):
        if cur is None:
            break
        num = getattr(cur, "errno", None)
        if isinstance(num, int) and num in _errno.errorcode:
            return _errno.errorcode[num]
        cur = cur.__cause__ or cur.__context__
    return type(exc).__name__


def _is_timeout(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"TimeoutException", "Timeout", "TimeoutError", "ReadTimeout", "ConnectTimeout"})


class _Call:
    """One HTTP request as a step."""

    def __init__(self, method: str, url: str, timeout: float | None) -> None:
        self.method = method.upper()
        self.url = url
        self.host, self.endpoint = _endpoint(self.method, url)
        attrs: dict[str, Any] = {"service": self.host, "endpoint": self.endpoint}
        self.timeout = timeout
        if timeout is not None:
            attrs["timeout"] = timeout
        self.step = _step(
            f"HTTP {self.method} {self.host}",
            kind="tool",
            input={"method": self.method, "url": url},
            attributes=attrs,
        )
        self.t0 = 0.0

    def __enter__(self) -> _Call:
        self.step.__enter__()
        self.t0 = time.perf_counter()
        return self

    def failed(self, exc: BaseException) -> None:
        """A transport error or a client timeout: the standard fields go with the exception."""
        kind = "timeout" if _is_timeout(exc) else "transport"
        tag(
            exc,
            tool_error(
                kind,
                service=self.host,
                endpoint=self.endpoint,
                request={"method": self.method, "url": self.url},
                code="timeout" if kind == "timeout" else _code(exc),
                timeout_s=self.timeout,
                elapsed_s=time.perf_counter() - self.t0,
            ),
        )

    def answered(self, status: int, size: int | None) -> None:
        """The response's status (and size, when known); 400 or more is an error of the step."""
        if self.step._run is None:
            return  # not recorded (the shared handle of recording off is left alone)
        out: dict[str, Any] = {"status": status}
        if size is not None:
            out["bytes"] = size
        self.step.output = out
        if status >= 400:
            fields = tool_error(
                "status",
                service=self.host,
                endpoint=self.endpoint,
                request={"method": self.method, "url": self.url},
                code=status,
                timeout_s=self.timeout,
                elapsed_s=time.perf_counter() - self.t0,
            )
            self.step.error(f"HTTP {status} from {self.endpoint}", type="HttpStatusError", **fields)

    def __exit__(self, *exc: Any) -> None:
        self.step.__exit__(*exc)


def _httpx_timeout(request: Any) -> float | None:
    t = request.extensions.get("timeout") if hasattr(request, "extensions") else None
    if isinstance(t, dict):
        values = [v for v in t.values() if isinstance(v, (int, float))]
        return float(max(values)) if values else None
    return None


def _length(headers: Any) -> int | None:
    try:
        raw = headers.get("content-length")
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


class HttpxTransport:
    """An httpx transport that records each request as a tool step (wraps ``httpx.HTTPTransport`` by default)."""

    def __init__(self, transport: Any = None) -> None:
        import httpx

        self.inner = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: Any) -> Any:
        """Send the request through the inner transport, recorded."""
        with _Call(request.method, str(request.url), _httpx_timeout(request)) as call:
            try:
                response = self.inner.handle_request(request)
            except Exception as exc:
                call.failed(exc)
                raise
            call.answered(response.status_code, _length(response.headers))
            return response

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()

    def __enter__(self) -> HttpxTransport:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncHttpxTransport:
    """The asyncio form of `HttpxTransport` (wraps ``httpx.AsyncHTTPTransport`` by default)."""

    def __init__(self, transport: Any = None) -> None:
        import httpx

        self.inner = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        """Send the request through the inner transport, recorded."""
        with _Call(request.method, str(request.url), _httpx_timeout(request)) as call:
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                call.failed(exc)
                raise
            call.answered(response.status_code, _length(response.headers))
            return response

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()

    async def __aenter__(self) -> AsyncHttpxTransport:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _requests_adapter() -> Any:
    from requests.adapters import HTTPAdapter

    class RequestsAdapter(HTTPAdapter):
        """A requests adapter that records each request as a tool step."""

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            timeout = kwargs.get("timeout")
            if isinstance(timeout, tuple):
                timeout = max((t for t in timeout if isinstance(t, (int, float))), default=None)
            bound = float(timeout) if isinstance(timeout, (int, float)) else None
            with _Call(str(request.method), str(request.url), bound) as call:
                try:
                    response = super().send(request, *args, **kwargs)
                except Exception as exc:
                    call.failed(exc)
                    raise
                call.answered(int(response.status_code), _length(response.headers))
                return response

    return RequestsAdapter


def instrument_requests(session: Any) -> Any:
    """Mount a recording adapter on a ``requests.Session`` for http and https; returns the session."""
    adapter = _requests_adapter()()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


__all__ = ["AsyncHttpxTransport", "HttpxTransport", "instrument_requests"]
