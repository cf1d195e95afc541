"""make bench, "application" run: what one application request costs.

Each request is what a platform does per user request with the Python client:
``client.sandbox(user)`` (one connect, an e2b.Sandbox built from the answer)
then ``sandbox.commands.run("true")`` (one envd call). Against the real
spacekeeper, FerretDB and sandboxsim (test/client/world.py), with LATENCY_MS
on every control-plane call and ENVD_MS on every envd process call (a
sandbox's data plane is a network hop away; 0 measures loopback alone).

1. fast: FAST_USERS awake spaces, FAST_N requests from one caller, every
   answer from the controller's memory: control-plane and envd calls per
   request (from /_sim/stats), attach and request p50/p99, beside a bare envd
   call (commands.run("true") on an SDK sandbox already in hand). Its own
   controller resyncs every FAST_RESYNC (120s), so that no resync of its own
   falls into the window: every call counted is one the requests caused.
2. day: N users with idleTimeout IDLE_S asleep after apply; for RUN_S seconds
   CALLERS callers each keep one user in a session (SESSION requests, one every
   INTERVAL seconds), then move to another: sleeps and wakes as in the day of
   use. Calls per request, and latency by the answer's path.

Env: N (200), FAST_USERS (20), FAST_N (2000), RUN_S (40), IDLE_S (10),
     CALLERS (8), SESSION (5-15), INTERVAL (0.2-1), LATENCY_MS (20), ENVD_MS (20),
     RESYNC (10s, the day's), FAST_RESYNC (120s), SEED (1), SK_BIN_DIR (bin/).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "client"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
for _k in [k for k in os.environ if k.startswith("E2B_")]:
    del os.environ[_k]  # the application holds no provider key

from world import CONTROL_PLANE, ENVD, World, calls  # noqa: E402

from spacekeeper import Client, SpacekeeperError  # noqa: E402


def env_int(name, default):
    return int(os.environ.get(name, default))


def env_range(name, default):
    lo, _, hi = os.environ.get(name, default).partition("-")
    return float(lo), float(hi or lo)


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def ms(x):
    return f"{x * 1000:.2f}"


def apply_many(world, names, idle):
    docs = []
    for n in names:
        docs.append(
            "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n"
            f"metadata:\n  name: {n}\n  labels: {{bench: app}}\nspec:\n  userID: {n}\n"
            f"  lifecycle: {{idleTimeout: {idle}}}\n"
        )
    world.spacectl("apply", "-f", "-", stdin="---\n".join(docs))
    world.spacectl("wait", "us", *names, "--for=condition=Ready", "--timeout", "600s")


def request(client, user):
    """One application request: (attach s, whole s, path)."""
    t0 = time.perf_counter()
    sbx = client.sandbox(user)
    t1 = time.perf_counter()
    sbx.commands.run("true")
    t2 = time.perf_counter()
    return t1 - t0, t2 - t0, sbx.answer.path


def fast_phase(world, client, users, n):
    for u in users:  # awake, and looked at by the controller: fast from here on
        client.sandbox(u).commands.run("true")
    deadline = time.monotonic() + 60
    while any(client.connect(u).path != "fast" for u in users):
        if time.monotonic() > deadline:
            raise SystemExit("bench: the awake spaces never answered from memory")
        time.sleep(0.2)
    bare_sbx = client.sandbox(users[0])
    for _ in range(50):  # warm both code paths
        bare_sbx.commands.run("true")
        request(client, users[0])
    world.sim_reset_stats()
    attach, whole, paths = [], [], {}
    for i in range(n):
        a, w, p = request(client, users[i % len(users)])
        attach.append(a)
        whole.append(w)
        paths[p] = paths.get(p, 0) + 1
    stats = world.sim_stats()
    bare = []
    for _ in range(n // 2):
        t0 = time.perf_counter()
        bare_sbx.commands.run("true")
        bare.append(time.perf_counter() - t0)
    return attach, whole, paths, stats, bare


def day_phase(world, client, users, run_s, callers, session, interval, seed):
    rng = random.Random(seed)
    lock = threading.Lock()
    free = list(users)
    rng.shuffle(free)
    out = []  # (attach, whole, path)
    errors = []
    stop = time.monotonic() + run_s

    def caller(k):
        r = random.Random(seed * 1000 + k)
        while time.monotonic() < stop:
            with lock:
                user = free.pop(0)
            for _ in range(int(r.uniform(*session))):
                if time.monotonic() >= stop:
                    break
                try:
                    res = request(client, user)
                    with lock:
                        out.append(res)
                except (SpacekeeperError, Exception) as e:  # counted, the run goes on
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}"[:160])
                time.sleep(r.uniform(*interval))
            with lock:
                free.append(user)

    world.sim_reset_stats()
    threads = [threading.Thread(target=caller, args=(k,)) for k in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, errors, world.sim_stats()


def main():
    n = env_int("N", 200)
    nfast = env_int("FAST_USERS", 20)
    fast_n = env_int("FAST_N", 2000)
    run_s = env_int("RUN_S", 40)
    idle = env_int("IDLE_S", 10)
    callers = env_int("CALLERS", 8)
    session = env_range("SESSION", "5-15")
    interval = env_range("INTERVAL", "0.2-1")
    lat = env_int("LATENCY_MS", 20)
    envd_ms = env_int("ENVD_MS", 20)
    seed = env_int("SEED", 1)
    print(f"application: FerretDB, sandboxsim ({lat} ms per control-plane call, "
          f"{envd_ms} ms per envd process call) and spacekeeper")
    world = World(resync=os.environ.get("FAST_RESYNC", "120s"), sim_latency=f"{lat}ms")
    failed = True
    try:
        if envd_ms:
            world.sim_faults({"latency": {"process": {"fixed_ms": envd_ms}}})
        client = Client(world.url, token_file=world.token_file, timeout=60)
        fast_users = [f"f{i:04d}" for i in range(nfast)]
        apply_many(world, fast_users, "15m")
        attach, whole, paths, stats, bare = fast_phase(world, client, fast_users, fast_n)
        failed = False
    finally:
        world.close(failed=failed)
    cp = calls(stats, CONTROL_PLANE) / fast_n
    ev = calls(stats, ENVD) / fast_n
    ratio = statistics.median(whole) / statistics.median(bare)
    print(f"\nfast path: {fast_n} requests over {nfast} awake spaces, one caller "
          f"(paths: {paths})")
    print(f"  control-plane calls per request   {cp:.3f}   target 0: "
          f"{'met' if cp == 0 else 'not met'}")
    print(f"  envd calls per request            {ev:.3f}")
    print(f"  attach p50 / p99 (ms)             {ms(pct(attach, 50))} / {ms(pct(attach, 99))}"
          f"   target p50 <= 1 ms: {'met' if pct(attach, 50) <= 0.001 else 'not met'}")
    print(f"  request p50 / p99 (ms)            {ms(pct(whole, 50))} / {ms(pct(whole, 99))}")
    print(f"  bare envd call p50 / p99 (ms)     {ms(pct(bare, 50))} / {ms(pct(bare, 99))}")
    print(f"  request / bare envd call (p50)    {ratio:.3f}   target <= 1.10: "
          f"{'met' if ratio <= 1.10 else 'not met'}")

    world = World(resync=os.environ.get("RESYNC", "10s"), sim_latency=f"{lat}ms", workers=16)
    failed = True
    try:
        if envd_ms:
            world.sim_faults({"latency": {"process": {"fixed_ms": envd_ms}}})
        client = Client(world.url, token_file=world.token_file, timeout=60)
        day_users = [f"a{i:05d}" for i in range(n)]
        apply_many(world, day_users, f"{idle}s")
        time.sleep(idle + 2)  # the day's spaces are asleep by now (created at apply)
        out, errors, stats = day_phase(world, client, day_users, run_s, callers, session,
                                       interval, seed)
        total = len(out)
        print(f"\nday of use: {n} spaces (idleTimeout {idle}s), {callers} callers, {run_s} s, "
              f"sessions of {session[0]:g}-{session[1]:g} requests every "
              f"{interval[0]:g}-{interval[1]:g} s")
        print(f"  requests                          {total} ok, {len(errors)} failed")
        for e in sorted(set(errors))[:5]:
            print(f"    {e}")
        if total:
            print(f"  control-plane calls per request   {calls(stats, CONTROL_PLANE) / total:.3f}"
                  f"   (" + ", ".join(f"{k} {calls(stats, (k,)) / total:.3f}"
                                      for k in CONTROL_PLANE if calls(stats, (k,))) + ")")
            print(f"  envd calls per request            {calls(stats, ENVD) / total:.3f}")
        for p in ("fast", "wake", "reconcile", "create", "replace"):
            a = [x[0] for x in out if x[2] == p]
            w = [x[1] for x in out if x[2] == p]
            if a:
                print(f"  {p:<10} {len(a):>5} requests   attach p50/p99 {ms(pct(a, 50))} / "
                      f"{ms(pct(a, 99))} ms   request p50/p99 {ms(pct(w, 50))} / {ms(pct(w, 99))} ms")
        failed = False
    finally:
        world.close(failed=failed)


if __name__ == "__main__":
    main()
