"""The web UI as an ASGI application (Starlette): the run list, a run's report, two runs compared.

Pages are rendered on the server by Jinja2 with autoescaping on, so every
name, message and output from a run reaches the page as text; the run page
is the HTML report (`trajdebug.report.html`), built from the source as it is
at the request.  Every response carries a Content-Security-Policy (the
pages' own script and style only, no inline script outside the report's
hashed one), ``nosniff``, ``no-referrer`` and a ban on framing.

Access control is the server's (see `trajdebug.serve.server`): on the
loopback interface only requests whose ``Host`` is a loopback name are
served (a web page elsewhere cannot reach the server through DNS
rebinding); bound elsewhere, every request must carry the server's token,
as ``?token=`` (then kept in an HttpOnly, SameSite=Strict cookie), the
cookie, or an ``Authorization: Bearer`` header.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from trajdebug.analysis import GraphError
from trajdebug.scores import parse_score_filter
from trajdebug.serve.catalog import SORT_KEYS, Catalog, Query, RunEntry
from trajdebug.sources.load import SourceError
from trajdebug.usage import format_cost, format_tokens


TOKEN_COOKIE = "trajdebug_token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


class BadQuery(ValueError):
    """A filter of the run list that cannot be read; the message names the field."""


def _time(value: str | None, field: str, *, end: bool = False) -> int | None:
    """An ISO date or date-time (local time unless it says otherwise) as nanoseconds since the epoch."""
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadQuery(f"{field}: {value!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
    if end and len(value.strip()) == 10:
        dt = dt.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return int(dt.astimezone().timestamp() * 1_000_000_000)


def query_from(params: Any) -> Query:
    """The run list's filters from a request's query parameters.

    Raises:
        BadQuery: a malformed date or outcome.
    """
    outcome = params.get("outcome") or None
    if outcome not in (None, "success", "failure", "incomplete"):
        raise BadQuery(f"outcome: {outcome!r} is not success, failure or incomplete")
    sort = params.get("sort") or "started"
    if sort not in SORT_KEYS:
        raise BadQuery(f"sort: {sort!r} is not one of {', '.join(SORT_KEYS)}")
    try:
        # The same filter as `runs --score`, each ``score`` parameter one (all must hold).
        given = params.getlist("score") if hasattr(params, "getlist") else [params.get("score") or ""]
        scores = tuple(parse_score_filter(t) for t in given if t.strip())
    except ValueError as exc:
        raise BadQuery(f"score: {exc}") from None
    order = params.get("order") or "desc"
    if order not in ("asc", "desc"):
        raise BadQuery(f"order: {order!r} is not asc or desc")
    return Query(
        session=params.get("session") or None,
        user=params.get("user") or None,
        sort=sort,
        descending=order == "desc",
        outcome=outcome,
        name=params.get("name") or None,
        since_ns=_time(params.get("since"), "since"),
        until_ns=_time(params.get("until"), "until", end=True),
        tag=params.get("tag") or None,
        cause=params.get("cause") or None,
        text=params.get("q") or None,
        derived=params.get("all") in ("1", "on", "true"),
        scores=scores,
    )


def _when(ns: int | None) -> str:
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _duration(e: RunEntry) -> str:
    from trajdebug.report.text import fmt_duration

    return fmt_duration(None if e.end_ns is None else e.end_ns - e.start_ns)


def _sort_links(params: dict[str, str], q: Query) -> dict[str, tuple[str, str]]:
    """Per sortable column: the link that sorts by it (flipping the order when it is the current one) and its arrow."""
    out = {}
    for key in SORT_KEYS:
        current = key == q.sort
        order = ("asc" if q.descending else "desc") if current else ("asc" if key == "name" else "desc")
        link = "?" + urlencode({**{k: v for k, v in params.items() if k not in ("sort", "order")}, "sort": key, "order": order})
        out[key] = (link, ("▼" if q.descending else "▲") if current else "")
    return out


#: How many passing original runs of the failed run's agent the compare page reads to find one given the same
#: input (each is loaded whole; the newest first).
SAME_INPUT_SCAN = 50


def _passing_for(catalog: Catalog, bad: Any, choices: list[RunEntry]) -> Any:
    """The run to compare a failed run with: the passing original run of the same name given the same input
    (`trajdebug.same_input`: only its values can say which value is wrong), else the newest passing original run
    of the same name, else the reference run recorded for it, else the newest passing replay of it."""
    from trajdebug.api import same_input

    passing = [e for e in choices if e.outcome == "success" and e.name == bad.name and e.run_id != bad.run_id]
    originals = [catalog.run(e.run_id) for e in passing if e.derived is None][:SAME_INPUT_SCAN]
    twin = same_input(bad, originals)
    if twin is not None:
        return twin
    for want in (None, "reference", "replay"):
        for e in passing:
            if e.derived != want:
                continue
            run = catalog.run(e.run_id)
            md = run.metadata
            if want is None or bad.run_id in (md.get("reference_for"), md.get("replay_of")):
                return run
    return None


def _value(v: Any) -> str:
    """A step's value as one line of text (a string as it is, anything else as JSON)."""
    import json

    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(v)


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("trajdebug.serve", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    env.filters["path"] = lambda v: quote(str(v), safe="")
    env.filters["value"] = _value
    env.filters["short"] = lambda v: str(v)[-6:] if v else "-"
    env.filters["cost"] = format_cost
    env.filters["tokens"] = format_tokens
    env.filters["clip"] = lambda v, n=160: (lambda t: t if len(t) <= n else t[: n - 1] + "…")(
        " ".join(str(v).split())
    )
    return env


class _Guard(BaseHTTPMiddleware):
    """The token check (when the server has one) and the security headers of every response."""

    def __init__(self, app: Any, token: str | None) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        from_query = request.query_params.get("token")
        if self.token is not None:
            auth = request.headers.get("authorization", "")
            given = from_query or request.cookies.get(TOKEN_COOKIE) or (
                auth[7:] if auth.lower().startswith("bearer ") else ""
            )
            if not given or not secrets.compare_digest(given.encode(), self.token.encode()):
                return PlainTextResponse(
                    "401 Unauthorized: this trajdebug server needs the token it printed when it "
                    "started (open the URL it printed, with ?token=...)\n",
                    status_code=401,
                )
        response = await call_next(request)
        if self.token is not None and from_query:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", PAGE_POLICY)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cache-Control"] = "no-store"
        return response


class _Pages:
    """The web UI's routes over one source: each method is one page or API endpoint."""

    def __init__(self, source: str | Path, fmt: str | None) -> None:
        self.source = source
        self.fmt = fmt
        self.catalog = Catalog(source, fmt=fmt)
        self.env = _env()
        # The last run page's `parting` by its two runs (the catalog's objects, new when a run changes): reloading a
        # page does not align the two runs again (seconds on a run of thousands of steps).
        self._parted: tuple[Any, Any, dict[str, Any]] | None = None

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(source=str(self.source), short=self.catalog.short, **ctx), status_code=status)

    def problem(self, message: str, status: int) -> HTMLResponse:
        return self.page("message.html", status, title="trajdebug", message=message)

    def run_list(self, request: Request) -> Response:
        try:
            q = query_from(request.query_params)
            entries = self.catalog.query(q)
        except BadQuery as exc:
            return self.problem(str(exc), 400)
        except SourceError as exc:
            return self.problem(str(exc), 500)
        params = {k: v for k, v in request.query_params.items() if k != "token"}
        return self.page(
            "runs.html",
            entries=entries,
            matched={e.run_id: self.catalog.matched(e.run_id, q.text) for e in entries} if q.text else {},
            q=params,
            hidden=0 if q.derived else self.catalog.hidden(),
            # The scores column only when a listed run has a score, as `runs` (a store nobody scored lists as before).
            scored=any(e.scores for e in entries),
            sort_links=_sort_links(params, q),
            heading=None,
        )

    def session_list(self, request: Request) -> Response:
        try:
            sessions = self.catalog.sessions()
        except SourceError as exc:
            return self.problem(str(exc), 500)
        rows = [
            {
                **s.to_dict(),
                "tokens": sum(e.tokens or 0 for e in entries) if any(e.tokens for e in entries) else None,
                "cost": sum(e.cost or 0.0 for e in entries) if any(e.cost is not None for e in entries) else None,
            }
            for s, entries in sessions
        ]
        if request.url.path.startswith("/api/"):
            return JSONResponse({"sessions": rows})
        return self.page("sessions.html", title="sessions", sessions=rows)

    def session_page(self, request: Request) -> Response:
        """A session as a conversation: its turns in order (`trajdebug.serve.conversation`)."""
        from trajdebug.serve.conversation import turns

        sid = request.path_params["session"]
        try:
            found = turns(self.catalog, sid)
        except SourceError as exc:
            return self.problem(str(exc), 500)
        if not found:
            return self.problem(f"no session {sid!r}", 404)
        return self.page("session.html", title=f"session {sid}", session=sid, turns=found)

    def api_runs(self, request: Request) -> Response:
        try:
            q = query_from(request.query_params)
            entries = self.catalog.query(q)
        except BadQuery as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except SourceError as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)
        rows = []
        for e in entries:
            d = e.to_dict()
            d["started"] = _when(e.start_ns)
            d["duration"] = _duration(e)
            d["tokens_text"] = format_tokens(e.tokens)
            d["cost_text"] = format_cost(e.cost)
            d["short_id"] = self.catalog.short(e.run_id)
            d["scores_text"] = e.scores_text
            if q.text:
                d["matched"] = [m.to_dict() for m in self.catalog.matched(e.run_id, q.text)]
            rows.append(d)
        return JSONResponse({"runs": rows, "hidden": 0 if q.derived else self.catalog.hidden()})

    def run_page(self, request: Request) -> Response:
        from trajdebug.report.html import content_security_policy, page_parts, report_html

        run_id = request.path_params["run_id"]
        try:
            analysis = self.catalog.analysis(run_id)
        except KeyError as exc:
            return self.problem(str(exc.args[0]) if exc.args else f"no run {run_id!r}", 404)
        except GraphError as exc:
            return self.problem(str(exc), 422)
        rid = analysis.run.run_id
        nav = [("← all runs", "/")]
        if analysis.run.outcome == "failure":
            nav.append(("compare with a passing run", "/compare?" + urlencode({"bad": rid})))
        nav += self._session_nav(analysis.run)
        endpoint = "/api/runs/" + quote(rid, safe="") + "/ask"
        body = report_html(
            analysis,
            source=str(self.source),
            nav=nav,
            ask_endpoint=endpoint,
            same_input=self._parting(analysis),
            score_endpoint="/api/runs/" + quote(rid, safe="") + "/scores",
        )
        style, script = page_parts()
        # connect-src: the "find the cause" panel talks to this server (serve/ask.py).
        policy = content_security_policy(style, script) + "; connect-src 'self'; frame-ancestors 'none'"
        return HTMLResponse(body, headers={"Content-Security-Policy": policy})

    def _session_nav(self, run: Any) -> list[tuple[str, str]]:
        """The run page's links to its session and its neighbouring turns (`trajdebug.serve.conversation`)."""
        from trajdebug.serve.conversation import session_nav

        return session_nav(self.catalog, run)

    def _parting(self, analysis: Any) -> dict[str, Any] | None:
        """The passing run of the same input the analysis compared first and where the runs part, as the
        report file says it (`trajdebug.replay.diffview.parting`); None when there is none."""
        from trajdebug.replay.diffview import parting

        if not analysis.same_input or analysis.run.outcome == "success":
            return None
        try:
            twin = self.catalog.run(analysis.same_input[0])
            bad = self.catalog.run(analysis.run.run_id)
        except KeyError:
            return None
        last = self._parted
        if last is not None and last[0] is twin and last[1] is bad:
            return last[2]
        found = parting(twin, bad)
        self._parted = (twin, bad, found)
        return found

    def compare(self, request: Request) -> Response:
        from trajdebug.replay import align

        good_id = request.query_params.get("good") or ""
        bad_id = request.query_params.get("bad") or ""
        try:
            self.catalog.refresh()
            bad = self.catalog.run(bad_id) if bad_id else None
            good = self.catalog.run(good_id) if good_id else None
        except KeyError as exc:
            return self.problem(str(exc.args[0]) if exc.args else "no such run", 404)
        choices = self.catalog.query(Query(derived=True, limit=300))
        if bad is not None and good is None:
            good = _passing_for(self.catalog, bad, choices)
        # Offered as good: passing runs that are not replays (a reference run is a passing run of
        # the same input); as bad: the failing and unfinished original runs.  A run named in the
        # URL stays selectable whatever it is, in its own select only (nu64b: the failing run named
        # as bad was offered as good, a passing run named as good as bad).
        g_id, b_id = (None if r is None else r.run_id for r in (good, bad))
        good_choices = [e for e in choices if (e.outcome == "success" and e.derived != "replay") or e.run_id == g_id]
        bad_choices = [e for e in choices if (e.outcome != "success" and not e.derived) or e.run_id == b_id]
        if good is None or bad is None:
            return self.page(
                "compare.html",
                title="compare runs",
                al=None,
                good=good,
                bad=bad,
                good_choices=good_choices,
                bad_choices=bad_choices,
            )
        if good.run_id == bad.run_id:
            return self.problem("GOOD and BAD are the same run: choose two runs", 400)
        from trajdebug.replay.diffview import inputs_line, outcome_warning, step_maps, values, words

        al = align(good, bad)
        first = al.first_divergence
        maps = step_maps(al)
        impact = [f"{maps[1][s].name}#{s[-6:]}" for s in al.impact(first)] if first else []
        differ = al.inputs_differ
        return self.page(
            "compare.html",
            title="compare runs",
            al=al,
            good=good,
            bad=bad,
            first=first,
            impact=impact,
            inputs=None if differ is None else inputs_line(differ),
            warning=outcome_warning(al),
            words=[words(p) for p in al.pairs],
            shown=[values(al, p, 240, maps) for p in al.pairs],
            good_choices=good_choices,
            bad_choices=bad_choices,
        )

    async def api_ask(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        body = await request.body() if request.method == "POST" else b""
        # The analysis and the store are synchronous: off the event loop, like the other routes.
        return await run_in_threadpool(self._ask, request, body)

    def _ask(self, request: Request, body: bytes) -> Response:
        from trajdebug.serve.ask import BadAnswer, ask_state, parse_answer, store_answer, stored_answers

        run_id = request.path_params["run_id"]
        try:
            analysis = self.catalog.analysis(run_id)
            if request.method == "POST":
                answer = parse_answer(
                    body, request.headers.get("content-type", ""), request.headers.get("origin"),
                    request.headers.get("host"),
                )
                store_answer(self.source, analysis, answer, stored_answers(self.source, analysis.run.run_id, self.fmt))
            state = ask_state(analysis, stored_answers(self.source, analysis.run.run_id, self.fmt))
        except KeyError as exc:
            return JSONResponse({"error": str(exc.args[0]) if exc.args else f"no run {run_id!r}"}, status_code=404)
        except BadAnswer as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except (GraphError, SourceError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)
        return JSONResponse(state)


    async def api_scores(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        body = await request.body()
        return await run_in_threadpool(self._score, request, body)

    def _score(self, request: Request, body: bytes) -> Response:
        """Serve's score form: a score posted on the run or a step, checked and stored (`trajdebug.serve.scores`)."""
        from trajdebug.serve.scores import BadScore, parse_score, store_score

        run_id = request.path_params["run_id"]
        try:
            run = self.catalog.analysis(run_id).run
            h = request.headers
            score = parse_score(body, h.get("content-type", ""), h.get("origin"), h.get("host"), run)
            stored = store_score(self.source, run, score)
        except KeyError as exc:
            return JSONResponse({"error": str(exc.args[0]) if exc.args else f"no run {run_id!r}"}, status_code=404)
        except BadScore as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except (GraphError, SourceError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)
        return JSONResponse({"score": stored})


def create_app(
    source: str | Path,
    *,
    fmt: str | None = None,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The web UI over one source.

    Args:
        source: A store (read live), a trajdebug JSONL file or a foreign trace.
        fmt: The source's format (auto-detected by default).
        token: When given, every request must carry it (see the module's doc).
        allowed_hosts: ``Host`` header values to accept (None: the loopback names).
    """
    pages = _Pages(source, fmt)
    static = Path(__file__).with_name("static")
    routes = [
        Route("/", pages.run_list),
        Route("/api/runs", pages.api_runs),
        Route("/api/runs/{run_id:path}/ask", pages.api_ask, methods=["GET", "POST"]),
        Route("/api/runs/{run_id:path}/scores", pages.api_scores, methods=["POST"]),
        Route("/sessions", pages.session_list),
        Route("/api/sessions", pages.session_list),
        Route("/sessions/{session:path}", pages.session_page),
        Route("/runs/{run_id:path}", pages.run_page),
        Route("/compare", pages.compare),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    hosts = allowed_hosts if allowed_hosts is not None else list(LOOPBACK_HOSTS)
    middleware = [
        Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
        Middleware(_Guard, token=token),
    ]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.catalog = pages.catalog
    return app


__all__ = ["LOOPBACK_HOSTS", "PAGE_POLICY", "TOKEN_COOKIE", "BadQuery", "create_app", "query_from"]
