"""The console's web application: routes, sign-in, and the reviewer's pages.

Every page handler resolves the session from the ``__Host-assay`` cookie (no session: to
the sign-in page, and back to the page after), calls the services as that person
(``backends``), and renders a template with autoescaping on, so text stored by anyone
(case fields, reasons) is shown as text. Every POST checks the session's CSRF token.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import quote, urlsplit

import jwt
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from assay.client.errors import AssayCallError, InvalidArgumentError
from assay.console.backends import Backends
from assay.console.observe import Observer, RequestLog
from assay.console.oidc import OidcSignIn, SignInRefused
from assay.console.pages import adjudicator, approver, auditor, operator, reviewing
from assay.console.plain_words import refusal
from assay.console.security import CompressStatic, SecurityHeaders, csrf_ok
from assay.console.sessions import COOKIE, SIGNIN_COOKIE, Session, SessionStore, cookie_options
from assay.console.settings import DEV_MODE_ISSUER, ConsoleSettings
from assay.runtime.auth.dev_credentials import DEV_ISSUER, DevCredentials
from assay.transport import is_loopback
from assay.v1 import adjudication_service_pb2 as adj

Handler = Callable[[Request, Session], Awaitable[Response]]
QUEUE_PAGE = 50
# The next case is drawn from this many at the head of the person's queue, so colleagues
# working one tenant's queue at once are not all sent to the same case.
NEXT_SPREAD = 20
# A submit refused because colleagues' reviews completed the round (or took the case
# out of the person's queue) first: the person is sent on to another case, and told.
_TAKEN_FIRST = frozenset({"ERROR_REASON_ROUND_COMPLETE", "ERROR_REASON_CASE_NOT_FOUND"})
# A name typed at the dev-mode sign-in: what a subject looks like, nothing to escape.
DEV_MODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class Console:
    """The application's state: settings, sessions, channels, templates."""

    def __init__(self, settings: ConsoleSettings, sessions: SessionStore | None = None) -> None:
        self.settings = settings
        self.sessions = sessions or SessionStore()
        self.backends: Backends | None = None
        self.oidc = OidcSignIn(settings, self.sessions) if settings.oidc_issuer else None
        self.templates = Environment(
            loader=PackageLoader("assay.console", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
        )

    def render(self, request: Request, name: str, status: int = 200, **values: Any) -> Response:
        session = values.pop("session", None)
        html = self.templates.get_template(name).render(
            session=session, path=request.url.path, **values
        )
        return HTMLResponse(html, status_code=status)

    def session(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    def adjudication(self, session: Session) -> Any:
        assert self.backends is not None
        return self.backends.adjudication_for(session.token)


def signed_in(console: Console, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` for a signed-in person; others go to sign in and come back. A POST must
    carry the session's CSRF token. A call the services refuse is shown in plain words."""

    async def endpoint(request: Request) -> Response:
        session = console.session(request)
        if session is not None and console.oidc is not None:
            session = await console.oidc.fresh(session)  # refreshed near its token's expiry
        if session is None:
            back = quote(request.url.path, safe="/")
            return RedirectResponse(f"/signin?next={back}", status_code=303)
        if request.method == "POST":
            form = await request.form()
            if not csrf_ok(session.csrf, str(form.get("csrf", ""))):
                return console.render(
                    request,
                    "error.html",
                    403,
                    session=session,
                    headline="This form has expired. Go back, reload the page and try again.",
                    detail="",
                    request_id="",
                )
        try:
            return await handler(request, session)
        except AssayCallError as error:
            said = refusal(error)
            if said.signed_out:
                console.sessions.end(session.session_id)
                return RedirectResponse(f"/signin?next={quote(request.url.path)}", 303)
            return console.render(
                request,
                "error.html",
                403 if error.code.name == "PERMISSION_DENIED" else 400,
                session=session,
                headline=said.headline,
                detail=said.detail,
                request_id=said.request_id,
            )

    return endpoint


def _safe_next(value: str | None) -> str:
    """Only a path on this console (never another site) to return to after sign-in."""
    if not value or not value.startswith("/") or value.startswith("//"):
        return "/"
    parts = urlsplit(value)
    return "/" if parts.scheme or parts.netloc else value


def _token_expiry(token: str) -> float:
    """The token's ``exp`` (read, not verified: the services verify it on every call)."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return time.time()
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) else time.time()


def _begin(console: Console, response: Response, session: Session) -> Response:
    response.set_cookie(COOKIE, session.session_id, **cookie_options())  # type: ignore[arg-type]
    return response


def _refused(console: Console, request: Request, refused: SignInRefused) -> Response:
    return console.render(
        request, "error.html", 400, headline=str(refused), detail="", request_id=""
    )


def routes(console: Console) -> list[Any]:
    settings = console.settings

    def from_loopback(request: Request) -> bool:
        return is_loopback(request.client.host if request.client else "")

    def dev_enabled(request: Request) -> bool:
        return settings.dev_credentials is not None and from_loopback(request)

    def dev_mode(request: Request) -> bool:
        return settings.dev_mode and from_loopback(request)

    def dev_names() -> list[str]:
        assert settings.dev_credentials is not None
        folder = DevCredentials(settings.dev_credentials)
        return sorted(p.stem for p in (folder.root / "tokens").glob("*.jwt"))

    async def signin(request: Request) -> Response:
        nxt = _safe_next(request.query_params.get("next"))
        # The sign-in forms carry a token the browser also holds in a cookie of its own, so a
        # page of another site cannot sign this browser in under a name it chose.
        form_token = secrets.token_urlsafe(32)
        response = console.render(
            request,
            "signin.html",
            next=nxt,
            dev_names=dev_names() if dev_enabled(request) else [],
            dev_mode=dev_mode(request),
            oidc=bool(settings.oidc_issuer),
            form_token=form_token,
        )
        response.set_cookie(
            SIGNIN_COOKIE,
            form_token,
            max_age=600,
            httponly=True,
            secure=True,
            samesite="strict",
            path="/",
        )
        return response

    def signin_form_ok(request: Request, form: Any) -> bool:
        return csrf_ok(request.cookies.get(SIGNIN_COOKIE, ""), str(form.get("signin", "")))

    async def signin_typed(request: Request) -> Response:
        """Dev mode: the services authenticate nobody, so the typed name is who acts."""
        form = await request.form()
        if not signin_form_ok(request, form):
            return Response("this sign-in form has expired: reload the page", status_code=403)
        name = str(form.get("name", "")).strip()
        if not DEV_MODE_NAME.fullmatch(name):
            return console.render(
                request,
                "signin.html",
                400,
                next=_safe_next(str(form.get("next", "/"))),
                dev_names=[],
                dev_mode=True,
                oidc=bool(settings.oidc_issuer),
                problem="Type a name: letters, digits, and . _ @ - (at most 64).",
                form_token=request.cookies.get(SIGNIN_COOKIE, ""),
            )
        ends = time.time() + settings.session_lifetime.total_seconds()
        session = console.sessions.create(DEV_MODE_ISSUER, name, "", ends, name=name)
        target = _safe_next(str(form.get("next", "/")))
        return _begin(console, RedirectResponse(target, status_code=303), session)

    async def signin_dev(request: Request) -> Response:
        if dev_mode(request):
            return await signin_typed(request)
        if not dev_enabled(request):
            return Response("dev sign-in is not enabled", status_code=404)
        form = await request.form()
        if not signin_form_ok(request, form):
            return Response("this sign-in form has expired: reload the page", status_code=403)
        name = str(form.get("name", ""))
        if name not in dev_names():
            return Response("no such dev principal", status_code=400)
        assert settings.dev_credentials is not None
        token = DevCredentials(settings.dev_credentials).token(name)
        ends = min(_token_expiry(token), time.time() + settings.session_lifetime.total_seconds())
        session = console.sessions.create(DEV_ISSUER, name, token, ends, name=name)
        target = _safe_next(str(form.get("next", "/")))
        return _begin(console, RedirectResponse(target, status_code=303), session)

    async def signin_oidc(request: Request) -> Response:
        if console.oidc is None:
            return Response("OpenID Connect sign-in is not configured", status_code=404)
        try:
            url, binding = await console.oidc.begin(_safe_next(request.query_params.get("next")))
        except SignInRefused as refused:
            return _refused(console, request, refused)
        response = RedirectResponse(url, status_code=303)
        # Until the callback the cookie ties the pending login to this browser.
        response.set_cookie(COOKIE, binding, **cookie_options())  # type: ignore[arg-type]
        return response

    async def signin_callback(request: Request) -> Response:
        if console.oidc is None:
            return Response("OpenID Connect sign-in is not configured", status_code=404)
        binding = request.cookies.get(COOKIE, "")
        try:
            session, target = await console.oidc.finish(request.query_params, binding)
        except SignInRefused as refused:
            return _refused(console, request, refused)
        return _begin(console, RedirectResponse(_safe_next(target), status_code=303), session)

    async def signout(request: Request, session: Session) -> Response:
        console.sessions.end(session.session_id)
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="lax")
        return response

    async def healthz(request: Request) -> Response:
        """200 while every service the console calls answers its health check, else 503."""
        assert console.backends is not None
        services = await console.backends.usable()
        status = 200 if all(services.values()) else 503
        return JSONResponse({"serving": status == 200, "services": services}, status)

    async def home(request: Request, session: Session) -> Response:
        return console.render(request, "home.html", session=session)

    async def queue(request: Request, session: Session) -> Response:
        reply = await console.adjudication(session).list_queue(
            adj.ListQueueRequest(reviewer_id=session.subject, page_size=QUEUE_PAGE)
        )
        cases = list(reply.cases)
        return console.render(
            request,
            "queue.html",
            session=session,
            cases=cases,
            more=bool(reply.next_page_token),
            own=[
                {"case": own.case, **reviewing.shown_answer(own.review)}
                for own in session.own_reviews.newest_first()
            ],
            withdrawn=request.query_params.get("withdrawn") == "1",
            reviewed=reviewed(session),
        )

    def reviewed(session: Session) -> adj.BlindedCase | None:
        """The case reviewed just before, to say once that the review is recorded."""
        own = session.own_reviews.just_kept()
        return own.case if own is not None else None

    async def next_case(request: Request, session: Session) -> Response:
        """A case from the head of the queue, at random; the queue page when it is empty.
        ``gone``: the case the person had went to others first (said on the next one)."""
        waiting = await console.adjudication(session).list_queue(
            adj.ListQueueRequest(reviewer_id=session.subject, page_size=NEXT_SPREAD)
        )
        after = request.query_params.get("after", "")
        # The server lists the person's assigned cases first: those are drawn from first.
        others = [c for c in waiting.cases if c.case_id != after]
        left = [c.case_id for c in others if c.assigned] or [c.case_id for c in others]
        gone = "?gone=1" if request.query_params.get("gone") else ""
        if not left:
            return RedirectResponse(f"/review?done=1{gone.replace('?', '&')}", status_code=303)
        return RedirectResponse(f"/review/{quote(secrets.choice(left))}{gone}", status_code=303)

    async def case(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        try:
            reply = await console.adjudication(session).get_blinded_case(
                adj.GetBlindedCaseRequest(case_id=case_id)
            )
        except AssayCallError as error:
            if error.reason != "ERROR_REASON_CASE_NOT_FOUND" or request.query_params.get("gone"):
                raise
            if session.own_reviews.get(case_id) is not None:
                # Reviewed in this sign-in: their review, to read, amend or withdraw.
                return RedirectResponse(f"/review/{quote(case_id, safe='')}/mine", 303)
            # Not (or no longer) waiting for this person: finished by colleagues first.
            return RedirectResponse("/review/next?gone=1", status_code=303)
        shown = reply.case
        return console.render(
            request,
            "case.html",
            session=session,
            case=shown,
            values=reviewing.values_of(shown),
            attempt=secrets.token_urlsafe(16),
            gone=bool(request.query_params.get("gone")),
            reviewed=reviewed(session),
            answer=reviewing.Answer(),
        )

    async def submit(request: Request, session: Session) -> Response:
        case_id = request.path_params["case_id"]
        form = await request.form()
        client = console.adjudication(session)
        try:
            asked = adj.GetBlindedCaseRequest(case_id=case_id)
            shown = (await client.get_blinded_case(asked)).case
        except AssayCallError as error:
            if error.reason not in _TAKEN_FIRST:
                raise
            return RedirectResponse("/review/next?gone=1", status_code=303)
        answer = reviewing.Answer.posted(form)
        attempt = str(form.get("attempt", ""))[:64]
        review = adj.SubmitReviewRequest(
            # One id per rendered form: a double click or a reload repeats the same review.
            request_id=f"console-{attempt}" if attempt else "",
            case_id=case_id,
            reviewer_id=session.subject,
            round=shown.round,
        )

        def again(attempt: str) -> Response:
            """The form once more, as it was filled, with its problems beside its fields (a
            fresh request id once the service refused the last one)."""
            return console.render(
                request,
                "case.html",
                400,
                session=session,
                case=shown,
                values=reviewing.values_of(shown),
                attempt=attempt,
                answer=answer,
            )

        if not answer.fill(review, shown.candidate_values):
            return again(attempt)
        try:
            reply = await client.submit_review(review)
        except InvalidArgumentError as error:
            answer.refused(error)
            return again(secrets.token_urlsafe(16))
        except AssayCallError as error:
            if error.reason not in _TAKEN_FIRST:
                raise
            return RedirectResponse("/review/next?gone=1", status_code=303)
        session.own_reviews.keep(shown, reply.review)
        return RedirectResponse(f"/review/next?after={quote(case_id)}", status_code=303)

    static = resources.files("assay.console") / "static"
    return [
        Route("/healthz", healthz),
        Route("/signin", signin),
        Route("/signin/dev", signin_dev, methods=["POST"]),
        Route("/signin/oidc", signin_oidc),
        Route("/signin/callback", signin_callback),
        Route("/signout", signed_in(console, signout), methods=["POST"]),
        Route("/", signed_in(console, home)),
        Route("/review", signed_in(console, queue)),
        Route("/review/next", signed_in(console, next_case)),
        Route("/review/{case_id}", signed_in(console, case)),
        Route("/review/{case_id}", signed_in(console, submit), methods=["POST"]),
        *reviewing.routes(console),
        *adjudicator.routes(console),
        *approver.routes(console),
        *operator.routes(console),
        *auditor.routes(console),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]


def build_app(
    settings: ConsoleSettings,
    sessions: SessionStore | None = None,
    observer: Observer | None = None,
) -> Starlette:
    """The console application over ``settings`` (checked here); each request is logged, and
    counted once ``observer`` has metrics."""
    settings.check()
    console = Console(settings, sessions)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        console.backends = Backends.open(settings)
        try:
            yield
        finally:
            await console.backends.close()

    app = Starlette(routes=routes(console), lifespan=lifespan)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(CompressStatic)
    app.add_middleware(RequestLog, observer=observer or Observer())
    app.state.console = console
    return app
