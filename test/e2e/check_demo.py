#!/usr/bin/env python3
"""The demo's spacectl context works, and the demo leaves nothing behind.

Starts hack/demo.sh (DEMO_SECONDS, so it runs without a terminal) with its
own spacectl context file (SPACECTL_CONFIG) that already holds a user's
context "mine", current. Once the demo has written its context, runs
`spacectl get us`, `spacectl sandboxes` and `spacectl plan` with nothing but
the context: no --mongodb-uri, no --config, no E2B_API_KEY, no
SPACEKEEPER_MONGODB_URI. Then stops the demo with SIGINT (as Ctrl-C does)
and checks that it exited 0, that the context is gone and "mine" is current
again, that its scratch directory is removed and that nothing listens on the
simulator's, the controller's and FerretDB's ports.

usage: test/e2e/check_demo.py
env: SK_BIN_DIR (default bin/), SK_ROOT; SK_TEST_KEEP_TMP=1 keeps the demo's log and
     context file (printed)
Exit 0 when every check passes; 1 otherwise, naming each failed check.
"""
import os
import re
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
        log = open(logpath).read()
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
