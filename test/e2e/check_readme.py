#!/usr/bin/env python3
"""Runs the examples of README.md and docs/*.md and compares what they print
(the examples of docs/ are run too).

Every ```console block preceded by a `<!-- readme-test: SETUP -->` line is run
against a fresh world: its own FerretDB (hack/ferretdb.sh), and, as SETUP
says, the examples applied, a sandboxsim and a spacekeeper, or (`demo`) the
whole of `make demo` with its spacectl context. Each `$ command` runs in bash
(2>&1) in a scratch copy of manifests/, with PATH holding the binaries and
SPACEKEEPER_MONGODB_URI set (`demo`: unset; spacectl finds the demo through
its context, as docs/spacectl.md says). The loopback ports of the docs (3000:
sandboxsim, 9090: spacekeeper, 9091: connect) and /tmp/ are replaced by this
run's own, in the commands and in the copied configs. The output must match
the lines under the command after normalisation: sandbox IDs, UIDs, times,
ages and resource versions are placeholders, runs of blanks are one space,
`...` on a line of its own stands for any lines and inside a line for any
text. An expected `^C` line means the command runs until SIGINT (after
SK_README_WATCH_S seconds, default 12). Every plain ``` block that starts
with `usage: spacectl CMD` or `usage: spacekeeper` must also be the start of
that command's help, blanks aside. Every relative link of these files must
name a file that exists and, with #anchor into a Markdown file, one of its
headings; every path, source file name and snake_case identifier in inline
code must exist in the tree (so the architecture they describe is the code's).
What a block starts (its FerretDB, sandboxsim, spacekeeper, the demo and its
children) is stopped when the block ends, fails, or this script dies, by
SIGTERM or SIGKILL too (own process groups, a reaper process).

usage: test/e2e/check_readme.py [FILE.md ...]   (default README.md docs/*.md)
env: SK_BIN_DIR, SK_TOOLS_DIR; SK_README_SETUP=NAME runs only the blocks of that setup;
     SK_TEST_KEEP_TMP=1 keeps each block's world (logs, configs) and prints where
Exit 0 when every block matches; 1 otherwise, with a diff per block.
"""
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("SK_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BIN = os.environ.get("SK_BIN_DIR") or os.path.join(ROOT, "bin")
KEY = "e2b_0000000000000000000000000000000000000000"
MARK = re.compile(r"^<!-- readme-test: ([a-z-]+) -->$")
KEEP = bool(os.environ.get("SK_TEST_KEEP_TMP"))
WATCH_S = int(os.environ.get("SK_README_WATCH_S", "12"))


# ---- the README's marked blocks ----

def marked_blocks(path):
    """[(setup, line number, [(command, [expected lines])])]"""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or lines[i].strip() != "```console":
            sys.exit(f"{rel(path)}:{i}: readme-test marker not followed by a ```console block")
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        out.append((m.group(1), start, commands(body, start, path)))
    return out


def rel(path):
    return os.path.relpath(path, ROOT)


def doc_files(args):
    """The files whose examples, synopses and links are checked."""
    if args:
        return [os.path.abspath(a) for a in args]
    docs = os.path.join(ROOT, "docs")
    names = sorted(f for f in os.listdir(docs) if f.endswith(".md")) if os.path.isdir(
        docs) else []
    return [os.path.join(ROOT, "README.md")] + [os.path.join(docs, f) for f in names]


def commands(body, start, path):
    cmds, k = [], 0
    while k < len(body):
        if not body[k].startswith("$ "):
            sys.exit(f"{rel(path)}:{start + k}: output before any command in a tested block")
        cmd = body[k][2:]
        while cmd.endswith("\\") and k + 1 < len(body):
            k += 1
            cmd = cmd + "\n" + body[k]
        k += 1
        expected = []
        while k < len(body) and not body[k].startswith("$ "):
            expected.append(body[k])
            k += 1
        cmds.append((cmd, expected))
    return cmds


# ---- normalisation and matching ----

PLACEHOLDERS = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<UID>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<TIME>"),
    (re.compile(r"\bi[a-z0-9]{20}\b"), "<ID>"),
    (re.compile(r"\b(in )?(\d+(\.\d+)?(ms|s|m|h|d))+( ago)?\b"), "<AGE>"),
    (re.compile(r"\b\d{9,}\b"), "<N>"),
]


def normalise(text):
    out = []
    for line in text.split("\n"):
        for rx, rep in PLACEHOLDERS:
            line = rx.sub(rep, line)
        out.append(" ".join(line.split()))
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def pattern(expected):
    parts = []
    for line in expected:
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts), re.S)


def matches(expected, actual):
    exp = [l for l in normalise("\n".join(expected)) if l != "^C"]
    act = normalise(actual)
    return pattern(exp).fullmatch("".join(l + "\n" for l in act)) is not None, exp, act


# ---- the world of a block ----

LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def own_group():
    """In a child, before exec: a process group of its own (close() ends the
    group, a demo's children too) and SIGKILL when this script dies, however it
    dies (an exception, SIGTERM, SIGKILL): nothing outlives a crashed run."""
    LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def kill_group(p, sig):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Reaper:
    """A process that outlives this script by a moment: told the process groups
    and the FerretDB of each world, it kills what is left of them when this
    script is gone, however it went (SIGKILL too: its pipe closes). A SIGKILLed
    demo.sh cannot run its trap, and its children are not ours to reach."""

    def __init__(self):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(w)
            os.setsid()  # not in the caller's group: a Ctrl-C there does not end it first
            left = {}
            with os.fdopen(r, "r") as f:
                for line in f:
                    kind, n = line.split()
                    if kind.startswith("-"):
                        left.pop((kind[1:], int(n)), None)
                    else:
                        left[(kind, int(n))] = True
            for kind, n in left:
                try:
                    (os.killpg if kind == "g" else os.kill)(n, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        os.close(r)
        self.pipe = os.fdopen(w, "w", buffering=1)

    def tell(self, kind, n):
        """kind: g (a process group), p (a process); -g, -p: it is gone."""
        self.pipe.write(f"{kind} {n}\n")


REAPER = None

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class World:
    def __init__(self, setup):
        self.setup = setup
        self.dir = tempfile.mkdtemp(prefix="sk-readme-")
        self.sim_port, self.keeper_port = free_port(), free_port()
        self.connect_port = free_port()
        self.procs = []
        os.mkdir(os.path.join(self.dir, "tmp"))
        shutil.copytree(os.path.join(ROOT, "manifests"), os.path.join(self.dir, "manifests"),
                        symlinks=True)
        for sub, _, files in os.walk(os.path.join(self.dir, "manifests")):
            for f in files:
                if f.endswith((".yaml", ".yml")):
                    p = os.path.join(sub, f)
                    text = open(p, encoding="utf-8").read()
                    open(p, "w", encoding="utf-8").write(self.subst(text))
        self.env = dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"])
        self.env.pop("E2B_API_KEY", None)
        # libmongoc warns on stderr when it cannot map its shared-memory
        # counters (a busy /dev/shm): noise, not the programs' output
        self.env["MONGOC_DISABLE_SHM"] = "1"
        self.fdb = os.path.join(self.dir, "ferretdb")
        self.fdb_pid = None
        self.demo = None

    def start_database(self):
        """Its FerretDB and spacectl's context (none for the demo, which makes both)."""
        if self.setup == "demo":  # the demo starts its own database; spacectl uses its context
            self.env["SPACECTL_CONFIG"] = os.path.join(self.dir, "spacectl.yaml")
            self.env.pop("SPACEKEEPER_MONGODB_URI", None)
            return
        uri = subprocess.run([os.path.join(ROOT, "hack/ferretdb.sh"), "start", self.fdb],
                             env=self.env, check=True, capture_output=True, text=True)
        self.env["SPACEKEEPER_MONGODB_URI"] = uri.stdout.strip()
        self.fdb_pid = int(open(os.path.join(self.fdb, "pid")).read())
        REAPER.tell("p", self.fdb_pid)
        # as docs/spacectl.md sets it up: a context naming the demo's config (this
        # run's sandboxsim port), for sandboxes, plan and drift --orphans
        self.env["SPACECTL_CONFIG"] = os.path.join(self.dir, "spacectl.yaml")
        self.run("spacectl", "config", "set-context", "local", "--controller-config",
                 os.path.join(self.dir, "manifests/config/demo.yaml"), "--current")

    def subst(self, text):
        return (text.replace("127.0.0.1:3000", f"127.0.0.1:{self.sim_port}")
                .replace("localhost:3000", f"localhost:{self.sim_port}")
                .replace("127.0.0.1:9090", f"127.0.0.1:{self.keeper_port}")
                .replace("127.0.0.1:9091", f"127.0.0.1:{self.connect_port}")
                .replace("/tmp/", self.dir + "/tmp/"))

    def unsubst(self, text):
        return (text.replace(self.dir + "/tmp/", "/tmp/")
                .replace(f"127.0.0.1:{self.sim_port}", "127.0.0.1:3000")
                .replace(f"127.0.0.1:{self.keeper_port}", "127.0.0.1:9090")
                .replace(f"127.0.0.1:{self.connect_port}", "127.0.0.1:9091"))

    def run(self, *argv, check=True):
        return subprocess.run(list(argv), cwd=self.dir, env=self.env, check=check,
                              capture_output=True, text=True, timeout=120)

    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(argv, cwd=self.dir, env=env or self.env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True,
                             preexec_fn=own_group)
        REAPER.tell("g", p.pid)
        self.procs.append(p)
        return p

    def start_sim(self, latency="20ms"):
        self.spawn("sandboxsim", ["sandboxsim", "--listen", f"127.0.0.1:{self.sim_port}",
                                  "--latency", latency])
        wait_port(self.sim_port)

    def start_keeper(self, delay_s=0):
        env = dict(self.env, E2B_API_KEY=KEY)
        argv = ["spacekeeper", "--config", "manifests/config/demo.yaml", "--mongodb-uri",
                self.env["SPACEKEEPER_MONGODB_URI"], "--poll", "200ms", "--resync", "2s",
                "--connect-listen", f"127.0.0.1:{self.connect_port}"]
        if delay_s:
            argv = ["bash", "-c", f"sleep {delay_s}; exec " + shlex.join(argv)]
        self.spawn("spacekeeper", argv, env)
        if not delay_s:
            wait_port(self.keeper_port)

    def prepare(self):
        self.start_database()
        s = self.setup
        if s in ("examples", "pruned"):
            self.run("spacectl", "apply", "-f", "manifests/examples/")
        if s == "pruned":
            self.run("spacectl", "apply", "--prune", "-l", "team=research", "-f",
                     "manifests/examples/bob.yaml")
        if s in ("controller", "drift"):
            self.start_sim()
        if s == "watch":  # each create takes 1 s: longer than the watch's poll
            self.start_sim(latency="1s")
        if s == "watch":
            self.run("spacectl", "apply", "-f", "manifests/examples/alice.yaml")
            self.start_keeper(delay_s=2)
        if s in ("controller", "drift"):
            self.start_keeper()
        if s == "drift":
            self.make_alice_unreachable()
        if s == "idle":
            self.start_sim()
            self.start_keeper()
            self.make_alice_idle()
        if s == "sim":
            self.run("spacectl", "apply", "-f", "manifests/examples/")
            self.start_sim()
        if s == "converged":
            self.start_sim()
            self.run("spacectl", "apply", "-f", "manifests/examples/")
            self.start_keeper()
            self.run("spacectl", "wait", "us", "alice", "bob", "carol", "dave", "frank",
                     "--for=condition=Ready", "--timeout", "60s")
        if s == "demo":
            self.start_demo()
        if s not in ("fresh", "bare", "examples", "pruned", "controller", "watch", "drift",
                     "converged", "sim", "idle", "demo"):
            sys.exit(f"unknown readme-test setup {s!r}")

    def start_demo(self):
        """hack/demo.sh until its context is written and the examples converged."""
        env = dict(self.env, DEMO_SECONDS="900", TMPDIR=os.path.join(self.dir, "tmp"),
                   SK_BIN_DIR=BIN)
        self.demo = self.spawn("demo", ["bash", os.path.join(ROOT, "hack/demo.sh")], env)
        log = os.path.join(self.dir, "demo.log")
        end = time.time() + 120
        while "made current" not in open(log).read():
            if self.demo.poll() is not None or time.time() > end:
                sys.exit("readme-test: the demo wrote no context:\n" + open(log).read())
            time.sleep(0.2)
        self.run("spacectl", "wait", "us", "alice", "bob", "carol", "dave", "frank",
                 "--for=condition=Ready", "--timeout", "90s")
        # the drift the docs show: bob's SpecMismatch (after its first probe), erin's Missing
        for _ in range(120):
            out = self.run("spacectl", "drift", check=False).stdout
            if "SpecMismatch" in out and "Missing" in out:
                return
            time.sleep(0.5)
        sys.exit("readme-test: the demo never reported bob's and erin's drift")

    def make_alice_unreachable(self):
        self.run("spacectl", "apply", "-f", "manifests/examples/alice.yaml")
        self.run("spacectl", "wait", "us", "alice", "--for=condition=Ready", "--timeout", "60s")
        alice = json.loads(self.run("spacectl", "get", "us", "alice", "-o", "json").stdout)
        sid = alice["status"]["sandboxID"]
        self.run("curl", "-sf", "-X", "POST", f"http://127.0.0.1:{self.sim_port}/_sim/faults",
                 "-d", '{"unreachable": ["%s"]}' % sid)
        for _ in range(120):
            if self.run("spacectl", "drift", check=False).returncode == 1:
                return
            time.sleep(0.5)
        sys.exit("readme-test: alice never reported drift")

    def make_alice_idle(self):
        """alice with a 5 s idle timeout, created, then asleep (phase Idle)."""
        text = open(os.path.join(ROOT, "manifests/examples/alice.yaml"), encoding="utf-8").read()
        path = os.path.join(self.dir, "tmp", "alice-idle.yaml")
        open(path, "w", encoding="utf-8").write(text + "  lifecycle: {idleTimeout: 5s}\n")
        self.run("spacectl", "apply", "-f", path)
        self.run("spacectl", "wait", "us", "alice", "--for=jsonpath={.status.phase}=Idle",
                 "--timeout", "60s")

    def close(self):
        try:
            for p in self.procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT if p is self.demo else signal.SIGTERM)
            for p in self.procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    pass
                kill_group(p, signal.SIGKILL)  # and what its group still holds
                p.wait()
                REAPER.tell("-g", p.pid)
        finally:
            self.remove()

    def remove(self):
        subprocess.run([os.path.join(ROOT, "hack/ferretdb.sh"), "stop" if KEEP else "clean",
                        self.fdb], env=self.env, capture_output=True)
        if self.fdb_pid:
            REAPER.tell("-p", self.fdb_pid)
        if KEEP:
            print(f"  (kept {self.dir})")
            return
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_port(port, timeout_s=30):
    end = time.time() + timeout_s
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"readme-test: nothing listens on 127.0.0.1:{port}")


# ---- one block: one bash script, one marker line per command ----

SEP = "@@readme-test@@"


def script(world, cmds):
    out = ["set +e", "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT"]
    for n, (cmd, expected) in enumerate(cmds):
        cmd = world.subst(cmd)
        # the marker keeps $? for a command that reads it (echo $?)
        out.append(f"__rc=$?; printf '\\n{SEP} {n}\\n'; (exit $__rc)")
        if any(l.strip() == "^C" for l in expected):
            out.append(f"timeout -s INT {WATCH_S} bash -c {shlex.quote(cmd)} 2>&1")
        elif cmd.rstrip().endswith("&"):
            out.append(cmd)
        else:
            out.append("{ " + cmd + "\n} 2>&1")
    return "\n".join(out) + "\n"


def run_script(world, text):
    """bash -c text in the world (600 s at most): (stdout, stderr). Its own
    process group, ended with it: a command left in the background dies too."""
    p = subprocess.Popen(["bash", "-c", text], cwd=world.dir, env=world.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, preexec_fn=own_group)
    try:
        return p.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        return "", "the block ran past 600 s"
    finally:
        kill_group(p, signal.SIGKILL)
        p.communicate()


def run_block(setup, line, cmds):
    world = World(setup)
    failures = []
    try:
        world.prepare()
        out, err = run_script(world, script(world, cmds))
        outputs = re.split(r"\n?" + SEP + r" \d+\n", world.unsubst(out))[1:]
        for (cmd, expected), actual in zip(cmds, outputs):
            ok, exp, act = matches(expected, actual)
            if not ok:
                failures.append((cmd, exp, act))
        if len(outputs) != len(cmds):
            failures.append(("(the block)", [f"{len(cmds)} commands"], [err]))
    finally:
        world.close()
    return failures


# ---- usage blocks: a doc's synopsis of a command is what --help prints ----

USAGE_PROGS = ("spacectl", "spacekeeper")


def usage_blocks(path):
    """[(line number, program, command or None, [normalised synopsis lines])]"""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.strip() != "```" or i + 1 >= len(lines):
            continue
        first = lines[i + 1].split()
        if len(first) < 2 or first[0] != "usage:" or first[1] not in USAGE_PROGS:
            continue
        k = i + 1
        while k < len(lines) and lines[k].strip() != "```":
            words = " ".join(lines[k].replace("usage:", "", 1).split()).split(" ")
            prog = words[0]
            cmd = words[1] if prog == "spacectl" and len(words) > 1 else None
            if prog in USAGE_PROGS and (not out or out[-1][0] != i + 2 or
                                        out[-1][1:3] != (prog, cmd)):
                out.append((i + 2, prog, cmd, []))
            out[-1][3].append(" ".join(words))
            k += 1
    return out


def synopsis(prog, cmd):
    argv = [os.path.join(BIN, prog)] + (["help", cmd] if cmd else ["--help"])
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    text = res.stdout + res.stderr
    return [" ".join(l.replace("usage:", "", 1).split()) for l in text.split("\n") if l.strip()]


def check_usages(path):
    bad = 0
    for line, prog, cmd, want in usage_blocks(path):
        got = synopsis(prog, cmd)[:len(want)]
        if got != want:
            bad += 1
            print(f"{rel(path)}:{line}: usage of {prog} {cmd or ''} differs from its help:")
            print("\n".join("  doc:  " + l for l in want))
            print("\n".join("  help: " + l for l in got))
    return bad


# ---- relative links: the file exists, an #anchor names a heading of it ----

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")


def prose_lines(path, keep_code=False):
    """(line number, text) of the lines outside code blocks, inline code removed
    unless keep_code."""
    inside = False
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield n, line if keep_code else re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, blanks as -."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip().lstrip("#").strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(path):
        if re.match(r"^#{1,6} ", line):
            base = slug(line)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def check_links(path):
    bad = 0
    for n, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            why = None
            if not os.path.exists(dest):
                why = "no such file"
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                why = f"no heading #{anchor} in {rel(dest)}"
            if why:
                bad += 1
                print(f"{rel(path)}:{n}: broken link ({target}): {why}")
    return bad


# ---- names: the files and identifiers the docs name exist ----

SOURCE_DIRS = ("pkg", "cmd", "test", "hack", "manifests", "crds")
SOURCE_EXT = (".c", ".h", ".sh", ".py", ".mjs", ".yaml", ".yml", ".json")


def source_index():
    """(the text of the sources, the base names of the repository's files)"""
    text, names = [], set()
    for top in SOURCE_DIRS:
        for sub, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                names.add(f)
                if f.endswith(SOURCE_EXT):
                    text.append(open(os.path.join(sub, f), encoding="utf-8",
                                     errors="replace").read())
    for f in os.listdir(ROOT):
        names.add(f)
    text.append(open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read())
    return "\n".join(text), names


def check_names(path, index):
    """Inline code that names a repository path (pkg/..., test/...), a source file
    (worker.c) or a snake_case identifier (sk_observe, may_act) must name one that
    exists: the architecture the docs describe is the code's."""
    text, names = index
    bad = 0
    for n, line in prose_lines(path, keep_code=True):
        for tok in re.findall(r"`([^`]+)`", line):
            why = None
            if re.fullmatch(r"(pkg|cmd|test|hack|manifests|crds|docs)/[\w./-]+", tok):
                if "*" not in tok and not os.path.exists(os.path.join(ROOT, tok)):
                    why = "no such file"
            elif re.fullmatch(r"[\w-]+\.(c|h|sh|py|mjs)", tok):
                if tok not in names and not os.path.exists(os.path.join("/usr/include", tok)):
                    why = "no file of this name"
            elif re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", tok) and tok not in text:
                why = "not in the sources"
            if why:
                bad += 1
                print(f"{rel(path)}:{n}: `{tok}`: {why}")
    return bad


def main():
    # SIGTERM (a timeout, make interrupted) unwinds as an exception does: every
    # world's finally stops its processes and database
    signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))
    global REAPER
    REAPER = Reaper()
    files = doc_files(sys.argv[1:])
    blocks = [(f, *b) for f in files for b in marked_blocks(f)]
    usages = sum(len(usage_blocks(f)) for f in files)
    usage_bad = sum(check_usages(f) for f in files)
    link_bad = sum(check_links(f) for f in files)
    index = source_index()
    name_bad = sum(check_names(f, index) for f in files)
    only = os.environ.get("SK_README_SETUP")  # run only the blocks of one setup
    if only:
        blocks = [b for b in blocks if b[1] == only]
    bad = 0
    for path, setup, line, cmds in blocks:
        t0 = time.time()
        failures = run_block(setup, line, cmds)
        state = "ok" if not failures else "FAIL"
        print(f"{rel(path)}:{line}: {len(cmds)} command(s), setup {setup}: {state} "
              f"({time.time() - t0:.1f}s)", flush=True)
        for cmd, exp, act in failures:
            bad += 1
            print(f"  $ {cmd}\n  expected (normalised):")
            print("\n".join("    " + l for l in exp) or "    (nothing)")
            print("  got (normalised):")
            print("\n".join("    " + l for l in act) or "    (nothing)")
    print(f"readme: {len(files)} file(s), {len(blocks)} block(s), {bad} command(s) differ; "
          f"{usages} usage synopses, {usage_bad} differ; {link_bad} broken link(s); "
          f"{name_bad} name(s) not in the tree")
    return 1 if bad or usage_bad or link_bad or name_bad or not blocks else 0


if __name__ == "__main__":
    sys.exit(main())
