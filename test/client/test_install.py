"""The clients install the way docs/platform.md says, and leave nothing git would track.

Each client is copied to a scratch directory and installed there with the documented
commands: `pip install ./clients/python` into a fresh venv (pip fetches setuptools for the
build, as it does for a user), and `npm install && npm pack` in clients/typescript, then
`npm install` of the tarball in an application (npm's cache holds what hack/deps.sh
fetched). What the steps wrote beside the sources must be ignored by git in the real tree,
and the installed package must import from where it was installed, not from the sources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from world import ROOT

PLATFORM_MD = os.path.join(ROOT, "docs", "platform.md")
PIP_STEP = "pip install './clients/python[e2b]'"
NPM_STEPS = "(cd clients/typescript && npm install && npm pack)"
NPM_APP_STEP = "npm install /path/to/spacekeeper/clients/typescript/spacekeeper-client-0.1.0.tgz e2b"


def _run(argv, cwd, env=None, timeout=300):
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(argv)} in {cwd}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _files(top):
    out = set()
    for d, dirs, files in os.walk(top):
        if os.path.islink(d):
            continue
        for name in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            out.add(os.path.relpath(os.path.join(d, name), top))
    return out


def _copy(client, tmp_path):
    """A copy of clients/CLIENT as git tracks it (nothing a previous install left)."""
    src = os.path.join(ROOT, "clients", client)
    dst = tmp_path / client
    tracked = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=src, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        os.makedirs((dst / rel).parent, exist_ok=True)
        shutil.copy2(os.path.join(src, rel), dst / rel)
    return dst


def _assert_ignored(client, written):
    """Every path the steps wrote into the copy is ignored by git at that place in the tree."""
    paths = [f"clients/{client}/{p}" for p in sorted(written)]
    if not paths:
        return
    r = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=ROOT,
                       input="\0".join(paths), capture_output=True, text=True)
    ignored = set(filter(None, r.stdout.split("\0")))
    assert not [p for p in paths if p not in ignored], \
        f"installing writes files git would track: {[p for p in paths if p not in ignored][:10]}"


def test_the_documented_steps_are_the_ones_tested():
    text = open(PLATFORM_MD, encoding="utf-8").read()
    for step in (PIP_STEP, NPM_STEPS, NPM_APP_STEP):
        assert step in text, f"docs/platform.md no longer says {step!r}: update this test"


@pytest.mark.no_openapi
def test_pip_install_python_client(tmp_path):
    src = _copy("python", tmp_path)
    before = _files(src)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # the documented step, on the copy (the core: the e2b extra is test/client's own venv)
    _run([str(venv / "bin" / "pip"), "install", "--quiet", "./python"], cwd=tmp_path, env=env)
    written = _files(src) - before
    assert any(p.startswith("build/") for p in written), \
        f"setuptools wrote no build/ (the case .gitignore covers): {sorted(written)[:10]}"
    _assert_ignored("python", written)
    code = ("import os, spacekeeper\n"
            "d = os.path.dirname(spacekeeper.__file__)\n"
            "print(d)\n"
            "assert os.path.exists(os.path.join(d, 'py.typed'))\n"
            "assert issubclass(spacekeeper.QuotaExceeded, spacekeeper.SpacekeeperError)\n")
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=str(venv), env=env).stdout.strip()
    assert out.startswith(str(venv)), f"imported from {out}, not the venv"


@pytest.mark.no_openapi
def test_npm_pack_typescript_client(tmp_path):
    src = _copy("typescript", tmp_path)
    before = _files(src)
    env = dict(os.environ, npm_config_audit="false", npm_config_fund="false",
               npm_config_prefer_offline="true", npm_config_update_notifier="false")
    # the documented steps, on the copy
    _run(["bash", "-c", NPM_STEPS.replace("clients/typescript", str(src))], cwd=tmp_path, env=env)
    written = _files(src) - before
    tgz = src / "spacekeeper-client-0.1.0.tgz"
    assert tgz.exists(), sorted(written)[:10]
    listing = _run(["tar", "tzf", str(tgz)], cwd=tmp_path).stdout.split()
    for want in ("package/dist/index.js", "package/dist/index.d.ts", "package/package.json"):
        assert want in listing, f"{want} not packed: {listing}"
    _assert_ignored("typescript", written)
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}\n')
    # the application's step, without e2b (the client's SDK is an optional peer; the
    # TypeScript suite runs it with the SDK)
    _run(["npm", "install", str(tgz)], cwd=app, env=env)
    code = ("import * as sk from '@spacekeeper/client';\n"
            "if (!(sk.QuotaExceeded.prototype instanceof sk.SpacekeeperError)) process.exit(3);\n"
            "console.log(new sk.Client('http://127.0.0.1:9/v1/').url.href);\n")
    out = _run(["node", "--input-type=module", "-e", code], cwd=app, env=env).stdout.strip()
    assert out == "http://127.0.0.1:9/"
    assert (app / "node_modules" / "@spacekeeper" / "client" / "dist" / "index.d.ts").exists()
