"""A fault-injecting reverse proxy (pure stdlib, threaded) to put in front of a real server.

    proxy = FaultProxy("127.0.0.1:9000").start()      # upstream host:port
    proxy.url                                         # http://127.0.0.1:PORT, give this to a client
    proxy.fail(503, times=2)                          # the next 2 matching requests get 503
    proxy.fail(403, path="/bkt/a.zarr/zarr.json")     # every such request gets 403 (times=None)
    proxy.delay(0.5, method="GET")                    # hold matching requests for 0.5 s
    proxy.truncate(keep=0.5, path_contains="/c/")     # send half the body, then close
    proxy.count(method="GET", ranged=True)            # requests seen (injected ones included)
    proxy.bytes_sent(method="GET")                    # body bytes those requests got back
    proxy.listings()                                  # S3 ListObjects requests: prefix, delimiter
    proxy.max_in_flight                               # the most requests it handled at once
    proxy.stop()

Every request is recorded (`proxy.requests`: method, path, query, Range header, the status sent
back and whether it was injected). Rules are checked in the order they were added; the first
matching rule with uses left applies, and a rule's `times` counts down only on requests it
actually took. Requests no rule takes are passed through unchanged: the request line, every
end-to-end header (Host included, so AWS SigV4 signatures stay valid) and the body; the
upstream answer comes back with its status, headers and body.

Injected errors carry an S3-style XML body (`<Error><Code>SlowDown</Code>...`), so S3 clients
parse them as they would parse AWS's; plain HTTP clients just see the status.

A truncated answer keeps the upstream status and headers (so Content-Length announces the whole
body), sends only the first part of the body and closes the connection.
"""

from __future__ import annotations

import dataclasses
import http.client
import http.server
import re
import socket
import threading
import time
import urllib.parse
from typing import Callable, Optional

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
}

S3_CODES = {
    400: "BadRequest",
    403: "AccessDenied",
    404: "NoSuchKey",
    429: "SlowDown",
    500: "InternalError",
    502: "BadGateway",
    503: "SlowDown",
    504: "GatewayTimeout",
}
REASONS = {429: "Too Many Requests"}
LIST_PARAMS = {"list-type", "prefix", "delimiter", "continuation-token", "start-after", "marker", "max-keys", "encoding-type"}
UPSTREAM_TIMEOUT = 60


@dataclasses.dataclass
class Request:
    """One request the proxy received."""

    method: str
    path: str  # without the query string, percent-decoded
    query: dict  # parsed query (values: the first of each name)
    range: Optional[str]  # the Range header, if any
    status: Optional[int] = None  # what the client got (None: connection dropped first)
    injected: Optional[str] = None  # "fail", "truncate", "delay" (a delay still passes through)
    sent: int = 0  # bytes of body sent back to the client

    @property
    def ranged(self) -> bool:
        return self.range is not None

    @property
    def is_listing(self) -> bool:
        """An S3 ListObjects / ListObjectsV2 request (GET on a bucket with list parameters)."""
        bucket_level = self.path.strip("/") != "" and "/" not in self.path.strip("/")
        return self.method == "GET" and bucket_level and (not self.query or bool(LIST_PARAMS & set(self.query)))


@dataclasses.dataclass
class Rule:
    action: str  # "fail", "delay", "truncate"
    times: Optional[int]  # None: forever
    method: Optional[str] = None
    path: Optional[str] = None  # exact path
    path_contains: Optional[str] = None
    path_regex: Optional[str] = None
    ranged: Optional[bool] = None
    status: int = 503
    seconds: float = 0.0
    keep: float | int = 0.5  # truncate: a fraction (float < 1) or a byte count (int)
    retry_after: Optional[int] = None
    used: int = 0

    def matches(self, req: Request) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.method is not None and req.method != self.method.upper():
            return False
        if self.path is not None and req.path != self.path:
            return False
        if self.path_contains is not None and self.path_contains not in req.path:
            return False
        if self.path_regex is not None and not re.search(self.path_regex, req.path):
            return False
        if self.ranged is not None and req.ranged != self.ranged:
            return False
        return True

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.used >= self.times


class FaultProxy:
    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0):
        if "://" in upstream:
            upstream = upstream.split("://", 1)[1]
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._rules: list[Rule] = []
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests handled at once (concurrency of the client)
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = _Server((host, port), Handler)
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FaultProxy":
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"faultproxy:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- configuration -------------------------------------------------------------------

    def _add(self, rule: Rule) -> Rule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def fail(self, status: int = 503, times: Optional[int] = None, retry_after: Optional[int] = None, **match) -> Rule:
        """Answer matching requests with `status` (and an S3 error body) instead of forwarding."""
        return self._add(Rule("fail", times, status=status, retry_after=retry_after, **match))

    def delay(self, seconds: float, times: Optional[int] = None, **match) -> Rule:
        """Hold matching requests for `seconds`, then forward them."""
        return self._add(Rule("delay", times, seconds=seconds, **match))

    def truncate(self, keep: float | int = 0.5, times: Optional[int] = None, **match) -> Rule:
        """Forward, then send only `keep` (fraction or byte count) of a non-empty body and close."""
        return self._add(Rule("truncate", times, keep=keep, **match))

    def clear(self) -> None:
        """Drop every rule (the request log stays)."""
        with self._lock:
            self._rules.clear()

    def reset(self) -> None:
        """Drop every rule, the request log and the concurrency high-water mark."""
        with self._lock:
            self._rules.clear()
            self.requests.clear()
            self.max_in_flight = self.in_flight

    # -- what was seen -------------------------------------------------------------------

    def seen(
        self,
        method: Optional[str] = None,
        ranged: Optional[bool] = None,
        path_contains: Optional[str] = None,
        status: Optional[int] = None,
        injected: Optional[bool] = None,
        where: Optional[Callable[[Request], bool]] = None,
        path_regex: Optional[str] = None,
    ) -> list[Request]:
        with self._lock:
            reqs = list(self.requests)
        out = []
        for r in reqs:
            if method is not None and r.method != method.upper():
                continue
            if ranged is not None and r.ranged != ranged:
                continue
            if path_contains is not None and path_contains not in r.path:
                continue
            if path_regex is not None and not re.search(path_regex, r.path):
                continue
            if status is not None and r.status != status:
                continue
            if injected is not None and bool(r.injected in ("fail", "truncate")) != injected:
                continue
            if where is not None and not where(r):
                continue
            out.append(r)
        return out

    def count(self, **filters) -> int:
        return len(self.seen(**filters))

    def bytes_sent(self, **filters) -> int:
        """Body bytes sent back for the requests `seen(**filters)` selects."""
        return sum(r.sent for r in self.seen(**filters))

    def counts(self) -> dict[str, int]:
        """Requests per method, ranged GETs apart: {"GET": n, "GET+range": m, "PUT": k, ...}."""
        out: dict[str, int] = {}
        for r in self.seen():
            key = r.method + ("+range" if r.ranged else "")
            out[key] = out.get(key, 0) + 1
        return out

    def listings(self) -> list[dict]:
        """The S3 listings requested: [{"bucket", "prefix", "delimiter"}] (None when absent)."""
        return [
            {"bucket": r.path.strip("/").split("/")[0], "prefix": r.query.get("prefix"), "delimiter": r.query.get("delimiter")}
            for r in self.seen(where=lambda r: r.is_listing)
        ]

    def summary(self) -> str:
        """One line per request, for assertion messages."""
        return "\n".join(
            f"{r.method} {r.path}{'?' + urllib.parse.urlencode(r.query) if r.query else ''}"
            f"{' Range=' + r.range if r.range else ''} -> {r.status}{' [' + r.injected + ']' if r.injected else ''}"
            for r in self.seen()
        )

    # -- used by the handler -------------------------------------------------------------

    def _record(self, req: Request) -> None:
        with self._lock:
            self.requests.append(req)

    def _take_rules(self, req: Request) -> list[Rule]:
        """Every delay rule that matches (they add up), then at most one fail/truncate rule."""
        taken = []
        with self._lock:
            for rule in self._rules:
                if rule.action == "delay" and rule.matches(req):
                    rule.used += 1
                    taken.append(rule)
            for rule in self._rules:
                if rule.action != "delay" and rule.matches(req):
                    rule.used += 1
                    taken.append(rule)
                    break
        return taken


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for idle keep-alive connections
    allow_reuse_address = True
    request_queue_size = 64


class _Handler(http.server.BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive towards the client
    server_version = "faultproxy"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def do_GET(self):
        self._proxy()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_PATCH = do_PROPFIND = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _proxy(self) -> None:
        owner = self.owner
        with owner._lock:
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
        self._counted = True
        try:
            self._handle()
        finally:
            self._answered()

    def _answered(self) -> None:
        """The request stops counting as in flight once its answer is ready, before the answer
        is sent: a client that waits for an answer before sending its next request must never
        be seen with both in flight (this thread might otherwise only get to the decrement after
        the client's next request arrived)."""
        if self._counted:
            self._counted = False
            with self.owner._lock:
                self.owner.in_flight -= 1

    def _handle(self) -> None:
        owner = self.owner
        split = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()}
        req = Request(self.command, urllib.parse.unquote(split.path), query, self.headers.get("Range"))
        owner._record(req)
        body = self._read_body()
        rules = owner._take_rules(req)
        for rule in rules:
            if rule.action == "delay":
                req.injected = "delay"
                time.sleep(rule.seconds)
        final = next((r for r in rules if r.action != "delay"), None)
        if final is not None and final.action == "fail":
            req.injected = "fail"
            self._answered()
            self._send_error(req, final)
            return
        try:
            status, reason, headers, payload = self._forward(body)
        except OSError as exc:
            req.status = 502
            self._answered()
            self._send_simple(502, f"upstream {owner.upstream} failed: {exc}".encode(), "text/plain")
            return
        req.status = status
        self._answered()
        if final is not None and final.action == "truncate" and payload and self.command != "HEAD":
            req.injected = "truncate"
            keep = final.keep if isinstance(final.keep, int) else int(len(payload) * final.keep)
            keep = max(0, min(keep, len(payload) - 1))
            self._send_head(status, reason, headers, len(payload))
            req.sent = keep
            self.wfile.write(payload[:keep])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self._send_head(status, reason, headers, len(payload))
        if self.command != "HEAD":
            req.sent = len(payload)
            self.wfile.write(payload)

    def _forward(self, body: bytes):
        conn = http.client.HTTPConnection(self.owner.upstream, timeout=UPSTREAM_TIMEOUT)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() in HOP_BY_HOP or name.lower() == "content-length":
                    continue
                conn.putheader(name, value)
            if body or self.command in ("PUT", "POST") or "Content-Length" in self.headers:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            resp = conn.getresponse()
            payload = resp.read()
            headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"]
            # A HEAD answer announces the object's length: keep it.
            if self.command == "HEAD" and resp.getheader("Content-Length") is not None:
                headers.append(("Content-Length", resp.getheader("Content-Length")))
            return resp.status, resp.reason, headers, payload
        finally:
            conn.close()

    def _send_head(self, status: int, reason: str, headers, length: int) -> None:
        self.send_response_only(status, reason)
        has_length = False
        for name, value in headers:
            if name.lower() == "content-length":
                has_length = True
            self.send_header(name, value)
        if not has_length:
            self.send_header("Content-Length", str(length))
        self.send_header("Server", "faultproxy")
        self.end_headers()

    def _send_simple(self, status: int, body: bytes, ctype: str, extra=()) -> None:
        self.send_response_only(status, REASONS.get(status))
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_error(self, req: Request, rule: Rule) -> None:
        req.status = rule.status
        code = S3_CODES.get(rule.status, "InternalError")
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>injected by faultproxy</Message>"
            f"<Resource>{req.path}</Resource><RequestId>faultproxy</RequestId></Error>"
        ).encode()
        extra = [("Retry-After", str(rule.retry_after))] if rule.retry_after is not None else []
        self._send_simple(rule.status, body, "application/xml", extra)
