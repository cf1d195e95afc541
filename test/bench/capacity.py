#!/usr/bin/env python3
"""make bench, "capacity" run: the connect load of test/bench/capacity.sh.

A burst of BURST users arriving within BURST_S seconds, each a session of
SESSION_S seconds (a connect at the start, then one every HEARTBEAT_S
seconds, as a platform's heartbeat), then a steady trickle of TRICKLE_RATE
new sessions a second for TRICKLE_S seconds, over users 0..N-1 (no user in
two sessions at once). Every connect has timeout=CONNECT_TIMEOUT_S (120). A thread samples
the simulator's running sandboxes every 100 ms.

Prints one JSON object: connects served and failed (by status), the highest
running count sampled, and the wake wait (the session's first connect)
p50/p99 split by whether the cap was full when it arrived (an eviction had
to come first) or not.
Usage: capacity.py CONNECT_URL SIM_URL CAP   (stdlib only)
"""
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request

connect_url, sim_url, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = int(os.environ.get("N_CAP", "1000"))
burst = int(os.environ.get("BURST", "300"))
burst_s = float(os.environ.get("BURST_S", "10"))
session_s = float(os.environ.get("SESSION_S", "15"))
heartbeat_s = float(os.environ.get("HEARTBEAT_S", "3"))
trickle_rate = float(os.environ.get("TRICKLE_RATE", "1"))
trickle_s = float(os.environ.get("TRICKLE_S", "60"))
timeout_s = int(os.environ.get("CONNECT_TIMEOUT_S", "120"))
rng = random.Random(int(os.environ.get("SEED", "1")))

lock = threading.Lock()
served = 0
failed = {}
waits = {"evict": [], "free": []}
running_now = 0
running_max = 0
sampling = True
busy = set()


def get(url, timeout):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # no answer
        return 0, str(e).encode()


def sample():
    global running_now, running_max
    while sampling:
        st, body = get(sim_url + "/_sim/stats", 5)
        if st == 200:
            r = json.loads(body).get("running", 0)
            with lock:
                running_now = r
                running_max = max(running_max, r)
        time.sleep(0.1)


def connect(user, first):
    global served
    with lock:
        full = running_now >= cap
    t0 = time.monotonic()
    st, body = get("%s/v1/users/b%05d/sandbox?timeout=%ds" % (connect_url, user, timeout_s),
                   timeout_s + 30)
    dt = time.monotonic() - t0
    with lock:
        if st == 200:
            served += 1
            if first:
                waits["evict" if full else "free"].append(dt)
        else:
            failed[str(st)] = failed.get(str(st), 0) + 1
            if len(failed) < 5 and sum(failed.values()) <= 3:
                sys.stderr.write("capacity: b%05d: %d %s\n" % (user, st, body[:200]))


def session(user):
    t0 = time.monotonic()
    connect(user, True)
    while time.monotonic() + heartbeat_s < t0 + session_s:
        time.sleep(heartbeat_s)
        connect(user, False)
    with lock:
        busy.discard(user)


def pick():
    with lock:
        while True:
            u = rng.randrange(n)
            if u not in busy:
                busy.add(u)
                return u


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))], 3)


sampler = threading.Thread(target=sample)
sampler.start()
threads = []
start = time.monotonic()
for i in range(burst):  # the burst: evenly within burst_s
    at = start + burst_s * i / burst
    time.sleep(max(0, at - time.monotonic()))
    t = threading.Thread(target=session, args=(pick(),))
    t.start()
    threads.append(t)
trickle_start = time.monotonic()
k = 0
while time.monotonic() < trickle_start + trickle_s:
    at = trickle_start + k / trickle_rate
    time.sleep(max(0, at - time.monotonic()))
    t = threading.Thread(target=session, args=(pick(),))
    t.start()
    threads.append(t)
    k += 1
for t in threads:
    t.join()
elapsed = time.monotonic() - start
sampling = False
sampler.join()
print(json.dumps({
    "sessions": len(threads), "served": served, "failed": failed,
    "running_max_sampled": running_max, "elapsed_s": round(elapsed, 1),
    "wake_evict_n": len(waits["evict"]), "wake_evict_p50": pct(waits["evict"], 50),
    "wake_evict_p99": pct(waits["evict"], 99),
    "wake_free_n": len(waits["free"]), "wake_free_p50": pct(waits["free"], 50),
    "wake_free_p99": pct(waits["free"], 99),
}))
