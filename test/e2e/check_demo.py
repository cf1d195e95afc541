#!/usr/bin/env python3
"""The demo's spacectl context works, and the demo leaves nothing behind.

Starts hack/demo.sh (DEMO_SECONDS, so it runs without a terminal) with its
own spacectl context file (SPACECTL_CONFIG) that already holds a user's
context "mine", current. Once the demo has written its context, runs
`spacectl get us`, `spacectl sandboxes` and `spacectl plan` with nothing but
the context: no --mongodb-uri, no --config, no E2B_API_KEY, no
SPACEKEEPER_MONGODB_URI. Runs the README's client snippet (From a platform)
exactly as printed, after the `export SPACEKEEPER_URL=...` line the demo
printed, pasted as is (the Python client from clients/python/src, with the
e2b SDK of .deps/pyclient). Then stops the demo with SIGINT (as Ctrl-C does)
and checks that it exited 0, that the context is gone and "mine" is current
again, that its log (not a terminal) holds the table once, then only the rows
that changed, and one "converged" line, that its scratch directory is removed
and that nothing listens on the simulator's, the controller's and FerretDB's ports.

usage: test/e2e/check_demo.py
env: SK_BIN_DIR (default bin/), SK_ROOT; SK_TEST_KEEP_TMP=1 keeps the demo's log and
     context file (printed)
Exit 0 when every check passes; 1 otherwise, naming each failed check.
"""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("SK_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BIN = os.environ.get("SK_BIN_DIR") or os.path.join(ROOT, "bin")
MINE = """apiVersion: spacekeeper.dev/v1alpha1
kind: SpacectlConfig
current-context: mine
contexts:
- name: mine
  context:
    mongodbURI: mongodb://127.0.0.1:1
    database: mine
"""
failures = []


def check(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f"\n     {detail}" if detail and not ok
                                                   else ""), flush=True)
    if not ok:
        failures.append(what)
    return ok


def env_for(tmp):
    env = dict(os.environ, SPACECTL_CONFIG=os.path.join(tmp, "spacectl.yaml"),
               PATH=BIN + os.pathsep + os.environ["PATH"], MONGOC_DISABLE_SHM="1",
               TMPDIR=tmp, SK_BIN_DIR=BIN)
    for k in ("E2B_API_KEY", "SPACEKEEPER_MONGODB_URI", "DEMO_CONTEXT"):
        env.pop(k, None)
    return env


def spacectl(env, *args, timeout=60):
    return subprocess.run(["spacectl", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def wait_for(what, fn, timeout_s=120):
    end = time.time() + timeout_s
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.3)
    check(False, what, f"not within {timeout_s} s")
    return None


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def leftovers(tmp):
    """The processes the demo started that still run: every one of them has
    TMPDIR=tmp in its environment (this script's own has not)."""
    mark, found = f"TMPDIR={tmp}".encode(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
        except OSError:
            continue
        if mark in env:
            found.append(f"{pid}: {cmd.decode(errors='replace')}")
    return found


def ports_of(log):
    """The loopback ports the demo printed: FerretDB's URI, sandboxsim, the listeners."""
    return sorted({int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", log)})


def use_demo(env, log):
    r = spacectl(env, "config", "current-context")
    check(r.stdout.strip() == "demo", "the demo's context is current", r.stdout + r.stderr)
    view = spacectl(env, "config", "view").stdout
    check("controllerConfig:" in view, "the context names a ControllerConfig", view)
    r = spacectl(env, "wait", "us", "alice", "bob", "dave", "frank",
                 "--for=condition=Ready", "--timeout", "90s", timeout=120)
    check(r.returncode == 0, "spacectl wait: the examples are Ready", r.stdout + r.stderr)
    r = spacectl(env, "get", "us")
    check(r.returncode == 0 and re.search(r"^alice\s+alice\s+Running\s+Running", r.stdout,
                                          re.M) is not None,
          "spacectl get us: alice Running through the context", r.stdout + r.stderr)
    r = spacectl(env, "sandboxes")
    check(r.returncode == 0 and re.search(r"^i\w+\s+alice\s+alice\s+running", r.stdout, re.M)
          is not None, "spacectl sandboxes: alice's sandbox at the demo's simulator",
          r.stdout + r.stderr)
    r = spacectl(env, "plan", "alice", "carol")
    check(r.returncode == 0 and "userspace/alice (userID alice, provider default)" in r.stdout
          and "Plan: " in r.stderr + r.stdout,
          "spacectl plan: the demo's provider, with the key from its file",
          r.stdout + r.stderr)
    r = spacectl(env, "drift", "--orphans")
    check(r.returncode in (0, 1) and "Orphan" not in r.stdout,
          "spacectl drift --orphans: the demo's provider, no orphan", r.stdout + r.stderr)


def readme_client_snippet():
    """The ```python block under README.md's "## From a platform", as printed."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("\n## From a platform\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    return m.group(1) if m else None


def use_client(env, log):
    """The line the demo prints for a client, pasted into bash as is, then the
    README's snippet: it must print alice's two lines through the connect API."""
    paste = re.search(r"^\s*(export SPACEKEEPER_URL=.*)$", log, re.M)
    snippet = readme_client_snippet()
    py = os.path.join(ROOT, ".deps", "pyclient", "bin", "python")
    if not (check(paste is not None, "the demo prints an export SPACEKEEPER_URL=... line",
                  log[-2000:])
            and check(snippet is not None, "README.md has a python block under From a platform")
            and check(os.path.exists(py), f"{py} exists (hack/deps.sh)")):
        return
    check("SPACEKEEPER_TOKEN_FILE=" in paste.group(1), "the pasted line names the token file",
          paste.group(1))
    cenv = {k: v for k, v in env.items()
            if not k.startswith(("E2B_", "SPACEKEEPER_", "APP_USER"))}
    cenv["PYTHONPATH"] = os.path.join(ROOT, "clients", "python", "src")
    script = f"{paste.group(1)}\nexec {shlex.quote(py)} - <<'SNIPPET'\n{snippet}SNIPPET\n"
    r = subprocess.run(["bash", "-c", script], env=cenv, capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0 and r.stdout == "hello, alice\nwritten by the platform\n",
          "README.md's client snippet, as printed, against the demo with its pasted line",
          f"rc {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr[-2000:]}")


def main():
    tmp = tempfile.mkdtemp(prefix="sk-demo-test-")
    env = env_for(tmp)
    with open(env["SPACECTL_CONFIG"], "w") as f:
        f.write(MINE)
    os.chmod(env["SPACECTL_CONFIG"], 0o600)
    logpath = os.path.join(tmp, "demo.log")
    logf = open(logpath, "w")
    demo = subprocess.Popen(["bash", os.path.join(ROOT, "hack/demo.sh")],
                            env=dict(env, DEMO_SECONDS="600"), stdout=logf,
                            stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    log = ""
    try:
        def context_written():
            return "made current" in open(logpath).read() or demo.poll() is not None
        wait_for("the demo writes its context", context_written)
        log = open(logpath).read()
        if check(demo.poll() is None, "the demo is running", log[-2000:]):
            use_demo(env, log)
            use_client(env, log)
            wait_for("the demo logs that the examples converged",
                     lambda: "==> converged after " in open(logpath).read(), 60)
        log = open(logpath).read()
        headers = re.findall(r"^NAME\s+USERID\s", log, re.M)
        check(len(headers) == 1, "the log holds the table once, then the changed rows",
              f"{len(headers)} tables\n{log[-2000:]}")
        check(log.count("==> converged after ") == 1, "one converged line", log[-2000:])
        scratch = re.search(r"starting FerretDB \(SQLite backend\) in (\S+)", log)
        ports = ports_of(log)
        check(scratch is not None and len(ports) >= 3, "the demo printed its ports and scratch",
              log[-2000:])
        demo.send_signal(signal.SIGINT)
        try:
            rc = demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        log = open(logpath).read()
        check(rc == 0, "the demo exits 0 on SIGINT", f"rc {rc}\n{log[-2000:]}")
        r = spacectl(env, "config", "current-context")
        check(r.stdout.strip() == "mine", "the user's context is current again",
              r.stdout + r.stderr)
        r = spacectl(env, "config", "get-contexts")
        check("demo" not in r.stdout and "mine" in r.stdout, "the demo's context is removed",
              r.stdout + r.stderr)
        if scratch:
            check(not os.path.exists(scratch.group(1)), "the scratch directory is removed",
                  scratch.group(1))
        left = leftovers(tmp)
        end = time.time() + 10
        while left and time.time() < end:  # a process exiting just now
            time.sleep(0.2)
            left = leftovers(tmp)
        check(not left, "no process of the demo is left (its get -w too)", "\n".join(left))
        still = [p for p in ports if listening(p)]
        check(not still, "nothing listens on the demo's ports " + ",".join(map(str, ports)),
              f"still listening: {still}")
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        logf.close()
        if failures:
            print("demo log:\n" + open(logpath).read()[-4000:])
        if os.environ.get("SK_TEST_KEEP_TMP"):
            print(f"(kept {tmp})")
        else:
            subprocess.run(["rm", "-rf", tmp])
    print(f"demo: {len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
