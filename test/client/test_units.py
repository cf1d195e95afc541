"""The client's pieces that need no server: errors, answers, the package."""

from __future__ import annotations

import ast
import datetime as dt
import glob
import http.server
import json
import os
import re
import sys
import threading
import time

import pytest
from world import ROOT

import spacekeeper
from spacekeeper import SandboxAnswer
from spacekeeper.client import _retry_after
from spacekeeper.errors import RETRIABLE_REASONS, SpacekeeperError, error_for

PKG = os.path.join(ROOT, "clients", "python")
OPENAPI = os.path.join(ROOT, "docs", "connect-api.openapi.yaml")


def openapi_reasons():
    """The error enum of docs/connect-api.openapi.yaml."""
    import yaml

    with open(OPENAPI, encoding="utf-8") as f:
        return yaml.safe_load(f)["components"]["schemas"]["Error"]["properties"]["reason"]["enum"]


def _c_defines():
    """Every `#define NAME "Value"` of pkg/ (the reasons the planner names by macro)."""
    out = {}
    for path in glob.glob(os.path.join(ROOT, "pkg", "**", "*.h"), recursive=True):
        for m in re.finditer(r'^#define\s+(\w+)\s+"(\w+)"', open(path).read(), re.M):
            out[m.group(1)] = m.group(2)
    return out


def controller_reasons():
    """Every reason the controller's code can answer, read from its source: the
    literals of each sk_ctl_reply_error call and of each `"reason", X` of a JSON
    answer in pkg/controller, and the UNAVAILABLE reasons of sk_connect_decide
    (pkg/reconcile/outcome.c), which connect.c answers as they are."""
    defines = _c_defines()
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "pkg", "controller", "*.c"))):
        text = open(path, encoding="utf-8").read()
        for call in re.finditer(r"sk_ctl_reply_error\((.*?)\);", text, re.S):
            if "const char *reason" in call.group(1):
                continue  # its definition
            for lit in re.findall(r'"([A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+)"', call.group(1)):
                found.setdefault(lit, os.path.basename(path))
        for lit in re.findall(r'"reason",\s*"(\w+)"', text):
            found.setdefault(lit, os.path.basename(path))
    outcome = open(os.path.join(ROOT, "pkg", "reconcile", "outcome.c"), encoding="utf-8").read()
    for name in re.findall(r"unavailable\(out,\s*(\w+)", outcome):
        assert name in defines, f"outcome.c: {name} is no #define of a string"
        found.setdefault(defines[name], "outcome.c")
    return found


def test_every_reason_of_the_api_has_its_exception():
    """The walk of the OpenAPI error enum: each reason is raised as its own class
    (not the base), and error_for knows no reason the enum lacks."""
    enum = openapi_reasons()
    assert len(enum) == len(set(enum)), "a reason twice in the enum"
    for reason in enum:
        cls = getattr(spacekeeper, reason, None)
        assert cls is not None, f"{reason}: no exception class in spacekeeper"
        assert issubclass(cls, SpacekeeperError) and cls is not SpacekeeperError
        assert reason in spacekeeper.__all__, reason
        e = error_for(400, {"reason": reason, "message": "m"})
        assert type(e) is cls, f"{reason} raises {type(e).__name__}"
    from spacekeeper.errors import _BY_REASON

    assert set(_BY_REASON) == set(enum), set(_BY_REASON) ^ set(enum)
    assert RETRIABLE_REASONS <= set(enum)


@pytest.mark.parametrize("doc", ["docs/connect-api.md", "clients/python/README.md"])
def test_every_reason_is_documented(doc):
    text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
    missing = [r for r in openapi_reasons() if not re.search(rf"\b{r}\b", text)]
    assert not missing, f"{doc} does not name {missing}"


def test_the_controller_answers_no_reason_missing_from_the_api():
    found = controller_reasons()
    # the scan sees the reasons of every kind of answer (a vacuous scan fails here)
    for must in ("Unauthorized", "UnknownEndpoint", "QuotaExceeded", "TooManyConnects",
                 "ModePaused", "DataPlaneUnreachable", "Timeout", "ForwardFailed"):
        assert must in found, f"the scan of pkg/ missed {must}"
    missing = {r: f for r, f in found.items() if r not in openapi_reasons()}
    assert not missing, f"reasons answered (file) but not in the OpenAPI enum: {missing}"


def test_retry_policy():
    """429 QuotaExceeded and TooManyConnects are tried again; what waiting does not
    change is not."""
    assert {"TooManyConnects", "QuotaExceeded", "Starting", "ForwardFailed"} <= RETRIABLE_REASONS
    for never in ("NotFound", "UnknownEndpoint", "Unauthorized", "DataPlaneUnreachable",
                  "ModePaused", "Timeout"):
        assert never not in RETRIABLE_REASONS, never


def test_unknown_endpoint_is_not_an_unknown_user():
    e = error_for(404, {"reason": "UnknownEndpoint", "message": "no such endpoint"})
    assert type(e) is spacekeeper.UnknownEndpoint
    assert not isinstance(e, spacekeeper.NotFound)


@pytest.mark.parametrize("reason,cls", [
    ("ModePaused", spacekeeper.ModePaused),
    ("DataPlaneUnreachable", spacekeeper.DataPlaneUnreachable),
    ("NotFound", spacekeeper.NotFound),
    ("Unauthorized", spacekeeper.Unauthorized),
    ("TooManyConnects", spacekeeper.TooManyConnects),
    ("Timeout", spacekeeper.Timeout),
    ("Starting", spacekeeper.Starting),
])
def test_reason_maps_to_its_class(reason, cls):
    e = error_for(503, {"reason": reason, "message": "m"}, 2.0)
    assert type(e) is cls and isinstance(e, SpacekeeperError)
    assert (e.reason, e.message, e.retry_after, e.status) == (reason, "m", 2.0, 503)


def test_unknown_reason_is_the_base_class():
    e = error_for(503, {"reason": "SomethingNew", "message": "m"})
    assert type(e) is SpacekeeperError and e.reason == "SomethingNew"
    assert type(error_for(500, None)) is SpacekeeperError
    assert type(error_for(401, None)) is spacekeeper.Unauthorized


def test_retry_after():
    assert _retry_after("1") == 1.0
    assert _retry_after(" 2 ") == 2.0
    assert _retry_after(None) is None and _retry_after("soon") is None
    when = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30)).strftime(
        "%a, %d %b %Y %H:%M:%S GMT")
    assert 25 <= _retry_after(when) <= 31


def test_answer_fields_and_secret():
    a = SandboxAnswer.from_json({
        "name": "alice", "userID": "u1", "sandboxID": "s1", "state": "Running",
        "ready": True, "path": "replace", "envdURL": "http://h:1", "provider": "default",
        "envdHeaders": {"E2b-Sandbox-Id": "s1"}, "envdVersion": "0.2.0",
        "envdAccessToken": "sekrit", "deadline": "2026-12-01T10:00:00Z",
        "previousSandboxID": "s0", "replacedAt": "2026-12-01T09:00:00.123Z",
        "workspaceLost": True,
    })
    assert a.headers == {"E2b-Sandbox-Id": "s1", "X-Access-Token": "sekrit"}
    assert a.deadline == dt.datetime(2026, 12, 1, 10, tzinfo=dt.timezone.utc)
    assert a.replaced and a.previous_sandbox_id == "s0" and a.path == "replace"
    assert a.workspace_lost
    assert "sekrit" not in repr(a) and "sekrit" not in str(a)
    b = SandboxAnswer.from_json({"name": "b", "userID": "b", "sandboxID": "s", "state": "Running",
                                 "ready": True, "path": "fast", "envdURL": "http://h"})
    assert b.headers == {} and b.deadline is None and not b.replaced and not b.workspace_lost


def test_client_arguments(tmp_path):
    f = tmp_path / "token"
    f.write_text("abc\n")
    c = spacekeeper.Client("http://127.0.0.1:9", token_file=str(f))
    assert c._headers["Authorization"] == "Bearer abc"
    with pytest.raises(ValueError):
        spacekeeper.Client("http://127.0.0.1:9", token="a", token_file=str(f))
    with pytest.raises(ValueError):
        spacekeeper.Client("ftp://x")
    with pytest.raises(spacekeeper.ConnectionFailed):
        spacekeeper.Client("http://127.0.0.1:9", timeout=2).connect("u")


def test_package_metadata():
    import tomllib

    with open(os.path.join(PKG, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    p = meta["project"]
    assert p["name"] == "spacekeeper" and p["dependencies"] == []
    assert any(d.startswith("e2b") for d in p["optional-dependencies"]["e2b"])
    assert os.path.exists(os.path.join(PKG, "src", "spacekeeper", "py.typed"))
    assert p["version"] == spacekeeper.__version__


def test_core_imports_the_standard_library_only():
    src = os.path.join(PKG, "src", "spacekeeper")
    for name in os.listdir(src):
        if not name.endswith(".py") or name == "_e2b.py":
            continue  # _e2b is the optional extra's glue
        tree = ast.parse(open(os.path.join(src, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                mods = [node.module]
            for m in mods:
                top = m.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", (name, m)


def test_example_is_ten_lines():
    lines = open(os.path.join(PKG, "example.py"), encoding="utf-8").read().splitlines()
    assert len(lines) <= 10


@pytest.mark.no_openapi
def test_pool_replaces_connections_the_server_closed():
    """A keep-alive connection closed by the server while idle (as the connect
    listener does after 10 s) is replaced, never surfaced as an error."""
    import http.server
    import threading

    from spacekeeper import _http

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path == "/slow":
                time.sleep(0.3)  # four at once: four connections in the pool
            self.send_response(204)
            self.end_headers()
            self.close_connection = True  # closed without a word, as after an idle timeout

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        pool = _http.Pool(f"http://127.0.0.1:{srv.server_address[1]}")
        ts = [threading.Thread(target=pool.request, args=("GET", "/slow", {}, 5)) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(pool._idle) == 4  # kept: the answers did not say close
        for _ in range(5):  # every idle one is closed at the server: never an error
            assert pool.request("GET", "/", {}, 5).status == 204
    finally:
        srv.shutdown()


class _Scripted:
    """A local server answering each request with the next of its answers
    (status, reason, Retry-After), then 200 with a sandbox; records the paths."""

    SANDBOX = {"name": "u", "userID": "u", "sandboxID": "s1", "state": "Running",
               "ready": True, "envdURL": "http://127.0.0.1:1", "path": "fast"}

    def __init__(self, answers):
        self.answers = list(answers)
        self.paths = []
        scripted = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                scripted.paths.append(self.path)
                if scripted.answers:
                    status, reason, retry = scripted.answers.pop(0)
                    body = {"reason": reason, "message": f"{reason} at the test server"}
                else:
                    status, retry, body = 200, None, scripted.SANDBOX
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry is not None:
                    self.send_header("Retry-After", str(retry))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.mark.no_openapi
@pytest.mark.parametrize("reason", ["QuotaExceeded", "TooManyConnects"])
def test_429_is_retried_after_retry_after_within_the_timeout(reason):
    srv = _Scripted([(429, reason, 1), (429, reason, 1)])
    try:
        c = spacekeeper.Client(srv.url, timeout=10)
        t0 = time.monotonic()
        a = c.connect("u")
        took = time.monotonic() - t0
        assert a.sandbox_id == "s1" and c.stats()["retries"] == 2
        assert took >= 1.9, f"Retry-After: 1 twice honoured, took {took:.2f}s"
        # a Retry-After past the call's timeout: the answer is raised at once
        srv.answers = [(429, reason, 5)]
        t0 = time.monotonic()
        with pytest.raises(getattr(spacekeeper, reason)) as e:
            c.connect("u", timeout=2)
        assert e.value.status == 429 and e.value.retry_after == 5.0
        assert time.monotonic() - t0 < 1.0
    finally:
        srv.close()


@pytest.mark.no_openapi
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_base_url_with_or_without_v1(suffix):
    srv = _Scripted([])
    try:
        c = spacekeeper.Client(srv.url + suffix)
        assert c.connect("alice").sandbox_id == "s1"
        assert srv.paths[-1].split("?")[0] == "/v1/users/alice/sandbox", srv.paths
    finally:
        srv.close()


@pytest.mark.no_openapi
def test_unknown_endpoint_says_which_url_to_give():
    srv = _Scripted([(404, "UnknownEndpoint", None)])
    try:
        with pytest.raises(spacekeeper.UnknownEndpoint) as e:
            spacekeeper.Client(srv.url).connect("alice")
        assert "connect listener" in str(e.value) and srv.url in str(e.value)
    finally:
        srv.close()
