"""The client's pieces that need no server: errors, answers, the package."""

from __future__ import annotations

import ast
import datetime as dt
import os
import sys
import time

import pytest
from world import ROOT

import spacekeeper
from spacekeeper import SandboxAnswer
from spacekeeper.client import _retry_after
from spacekeeper.errors import SpacekeeperError, error_for

PKG = os.path.join(ROOT, "clients", "python")


@pytest.mark.parametrize("reason,cls", [
    ("ModePaused", spacekeeper.ModePaused),
    ("DataPlaneUnreachable", spacekeeper.DataPlaneUnreachable),
    ("RestoreFailed", spacekeeper.RestoreFailed),
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
