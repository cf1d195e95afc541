"""Fixtures of the client suite: one real world per session, every answer checked.

The world (FerretDB, sandboxsim, spacekeeper with a connect token) starts once;
its logs are kept in build/test-out/client/ when a test failed. Every answer
the client receives from spacekeeper (200 and errors) is validated against
docs/connect-api.openapi.yaml at the end of each test.
"""

from __future__ import annotations

import os
import re
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from world import ROOT, World  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))

# The application holds no provider API key: nothing of the provider's in its env.
for _k in [k for k in os.environ if k.startswith("E2B_")]:
    del os.environ[_k]

import jsonschema  # noqa: E402
import referencing  # noqa: E402
import yaml  # noqa: E402

import spacekeeper._http as sk_http  # noqa: E402

OPENAPI = os.path.join(ROOT, "docs", "connect-api.openapi.yaml")
KEEP = os.path.join(ROOT, "build", "test-out", "client")


def _openapi():
    with open(OPENAPI, encoding="utf-8") as f:
        return yaml.safe_load(f)


class AnswerChecker:
    """Validates (method, path, status, body) against the OpenAPI document."""

    def __init__(self, doc):
        self.doc = doc
        res = referencing.Resource.from_contents(
            doc, default_specification=referencing.jsonschema.DRAFT202012
        )
        self.registry = referencing.Registry().with_resource("urn:connect-api", res)
        self.routes = []
        for template, item in doc["paths"].items():
            rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, item))
        self.seen = []

    def check(self, method, path, status, headers, body):
        path = path.split("?", 1)[0]
        for rx, template, item in self.routes:
            if rx.match(path):
                break
        else:
            # unknown routes answer 404 NotFound: the shape of every error
            assert status == 404, f"{method} {path}: {status} from an undocumented route"
            template, item = None, {"x": {"responses": {"404": {"$ref": "#/components/responses/NotFound"}}}}
            method = "x"
        op = item.get(method.lower())
        if op is None:  # the route refuses this method: 405
            assert status == 405, f"{method} {template}: {status}, want 405"
            ref = "#/components/responses/MethodNotAllowed"
        else:
            resp = op["responses"].get(str(status))
            assert resp is not None, f"{method} {template}: status {status} is not documented"
            ref = resp.get("$ref")
        resp = self._resolve(ref) if ref else resp
        self.seen.append((method, template, status))
        content = resp.get("content")
        if content is None:
            assert body == b"", f"{method} {template} {status}: body where none is documented"
            return
        assert headers.get("content-type", "").startswith("application/json"), headers
        schema = {"$ref": "urn:connect-api#" + self._pointer(content["application/json"]["schema"])}
        import json

        jsonschema.Draft202012Validator(
            schema, registry=self.registry, format_checker=jsonschema.FormatChecker()
        ).validate(json.loads(body))
        if status == 429:
            assert "retry-after" in headers, "429 without Retry-After"

    def _resolve(self, ref):
        node = self.doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    @staticmethod
    def _pointer(schema):
        return schema["$ref"][1:]


_CHECKER = AnswerChecker(_openapi())


@pytest.fixture(scope="session")
def checker():
    return _CHECKER


@pytest.fixture(autouse=True)
def validate_answers(monkeypatch, request):
    """Records every answer of spacekeeper during the test, validates them after."""
    got = []
    if request.node.get_closest_marker("no_openapi"):
        yield got
        return
    real = sk_http.Pool.request

    def request(self, method, path, headers, timeout):
        r = real(self, method, path, headers, timeout)
        got.append((method, path, r.status, r.headers, r.body))
        return r

    monkeypatch.setattr(sk_http.Pool, "request", request)
    yield got
    for method, path, status, headers, body in got:
        _CHECKER.check(method, path, status, headers, body)


_failed = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        _failed.append(item.nodeid)


@pytest.fixture(scope="session")
def world():
    w = World(resync="5s", max_waiting=1, keep_dir=KEEP)
    try:
        yield w
    finally:
        reports = w.close(failed=bool(_failed))
        if _failed or reports:
            print(f"\nclient suite: logs kept in {KEEP}", file=sys.stderr)
    assert not reports, "sanitizer reports in the programs' logs:\n" + "\n".join(reports[:20])


@pytest.fixture(scope="session")
def client(world):
    from spacekeeper import Client

    c = Client(world.url, token_file=world.token_file, timeout=30)
    yield c
    c.close()


_n = [0]


@pytest.fixture
def user(world, request):
    """A fresh UserSpace (name and userID) for the test, Ready."""
    _n[0] += 1
    name = re.sub(r"[^a-z0-9]", "", request.node.name.lower())[:40] + f"{_n[0]}"
    marker = request.node.get_closest_marker("space")
    spec = dict(marker.kwargs) if marker else {}
    world.apply(name, **spec)
    if spec.get("mode") != "Paused":
        world.wait_ready(name)
    else:  # no sandbox to wait for: until the controller's cache has it
        world.spacectl("wait", "us", name, "--for=jsonpath={.status.observedGeneration}", "--timeout", "30s")
    return name


def pytest_configure(config):
    config.addinivalue_line("markers", "space(**spec): the UserSpace spec of the user fixture")
    config.addinivalue_line("markers", "no_openapi: answers of a server other than spacekeeper")
