"""The real world of the client tests and the application benchmark.

FerretDB (hack/ferretdb.sh), sandboxsim and spacekeeper with a connect token,
each on a free loopback port in one scratch directory, started by World() and
stopped by World.close(). The provider's API key is given to spacekeeper's
environment only: the application (this process) never holds it.

env: SK_BIN_DIR (default bin/), SK_TOOLS_DIR (mongoping for hack/ferretdb.sh).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

ROOT = os.environ.get("SK_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
BIN = os.environ.get("SK_BIN_DIR") or os.path.join(ROOT, "bin")
PROVIDER_KEY = "e2b_" + "0" * 40
CONTROL_PLANE = (
    "create", "get", "list", "list_v1", "kill", "pause", "connect", "resume", "timeout",
    "refreshes",
)
ENVD = ("health", "envd", "init", "process", "files", "filesystem")


def _wait(cond, timeout_s: float, what: str, step: float = 0.05):
    end = time.monotonic() + timeout_s
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout_s:g}s")
        time.sleep(step)


class World:
    """FerretDB + sandboxsim + spacekeeper, on loopback, in a scratch directory."""

    def __init__(
        self,
        *,
        resync: str = "5s",
        max_waiting: Optional[int] = None,
        sim_latency: str = "0ms",
        workers: int = 8,
        token: bool = True,
        keep_dir: Optional[str] = None,
    ) -> None:
        self.dir = tempfile.mkdtemp(prefix="sk-client-")
        self.keep_dir = keep_dir
        self.procs: List[subprocess.Popen] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("E2B_")}
        self.env["PATH"] = BIN + os.pathsep + self.env.get("PATH", "")
        self.env["MONGOC_DISABLE_SHM"] = "1"
        try:
            self._start(resync, max_waiting, sim_latency, workers, token)
        except BaseException:
            self.close(failed=True)
            raise

    # ---- start / stop ----

    def _start(self, resync, max_waiting, sim_latency, workers, token) -> None:
        self.fdb = os.path.join(self.dir, "ferretdb")
        uri = subprocess.run(
            [os.path.join(ROOT, "hack/ferretdb.sh"), "start", self.fdb],
            env=self.env, check=True, capture_output=True, text=True, timeout=120,
        ).stdout.strip()
        self.env["SPACEKEEPER_MONGODB_URI"] = uri
        sim_log = self._spawn(
            "sandboxsim",
            [os.path.join(BIN, "sandboxsim"), "--listen", "127.0.0.1:0", "--latency", sim_latency],
        )
        self.sim = _wait(
            lambda: _grep(sim_log, r"listening on (http://\S+)"), 30, "sandboxsim start"
        ).rstrip("/")
        self.token = secrets.token_hex(32) if token else None
        self.token_file = os.path.join(self.dir, "connect-token")
        with open(self.token_file, "w", encoding="utf-8") as f:
            f.write((self.token or "") + "\n")
        os.chmod(self.token_file, 0o600)
        cfg = os.path.join(self.dir, "config.yaml")
        with open(cfg, "w", encoding="utf-8") as f:
            f.write(self._config(resync, max_waiting, workers))
        argv = [os.path.join(BIN, "spacekeeper"), "--config", cfg, "--mongodb-uri", uri,
                "--poll", "200ms", "--connect-listen", "127.0.0.1:0"]
        if token:
            argv += ["--connect-token-file", self.token_file]
        keeper_env = dict(self.env, E2B_API_KEY=PROVIDER_KEY)
        log = self._spawn("spacekeeper", argv, keeper_env)
        started = _wait(
            lambda: _grep(log, r'msg="controller started".* http_port=(\d+) connect_port=(\d+)',
                          whole=True),
            60, "spacekeeper start",
        )
        self.http_port, self.connect_port = int(started[0]), int(started[1])
        self.url = f"http://127.0.0.1:{self.connect_port}"
        _wait(lambda: self._readyz(), 60, "spacekeeper /readyz", step=0.1)

    def _config(self, resync: str, max_waiting: Optional[int], workers: int) -> str:
        extra = f"  connectMaxWaiting: {max_waiting}\n" if max_waiting else ""
        return (
            "apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\n"
            "providers:\n  - name: default\n    type: e2b\n"
            f"    apiURL: {self.sim}\n    sandboxURL: {self.sim}\n"
            "    apiKeyEnv: E2B_API_KEY\n    requestTimeout: 10s\n    sandboxTimeout: 1h\n"
            f"controller:\n  workers: {workers}\n  resyncPeriod: {resync}\n"
            f"  listen: 127.0.0.1:0\n{extra}"
        )

    def _spawn(self, name: str, argv: List[str], env: Optional[Dict[str, str]] = None) -> str:
        path = os.path.join(self.dir, name + ".log")
        log = open(path, "w")
        self.procs.append(
            subprocess.Popen(argv, cwd=self.dir, env=env or self.env, stdout=log,
                             stderr=subprocess.STDOUT)
        )
        log.close()
        return path

    def _readyz(self) -> bool:
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} exited ({p.returncode}); logs in {self.dir}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def close(self, failed: bool = False) -> List[str]:
        """Stops everything; with failed=True the logs are kept (copied to keep_dir).
        Returns the sanitizer reports found in the programs' logs (an ASan build)."""
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if getattr(self, "fdb", None):
            subprocess.run([os.path.join(ROOT, "hack/ferretdb.sh"), "clean", self.fdb],
                           env=self.env, capture_output=True)
        reports = []
        for name in ("spacekeeper.log", "sandboxsim.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    reports += [f"{name}: {line.strip()}" for line in f
                                if "ERROR: AddressSanitizer" in line
                                or "ERROR: LeakSanitizer" in line or "runtime error:" in line]
        failed = failed or bool(reports)
        if failed and self.keep_dir:
            os.makedirs(self.keep_dir, exist_ok=True)
            for f in os.listdir(self.dir):
                if f.endswith(".log") or f == "config.yaml":
                    shutil.copy(os.path.join(self.dir, f), self.keep_dir)
        shutil.rmtree(self.dir, ignore_errors=True)
        return reports

    # ---- spaces ----

    def spacectl(self, *args: str, stdin: Optional[str] = None, check: bool = True):
        return subprocess.run([os.path.join(BIN, "spacectl"), *args], env=self.env,
                              input=stdin, capture_output=True, text=True, check=check,
                              timeout=120)

    def apply(self, name: str, user: Optional[str] = None, **spec: Any) -> str:
        """A UserSpace; spec keys: idle ("15m"), remediation, mode, unhealthy_after,
        volume (spec.storage.volume as YAML flow, "{deletionPolicy: Delete}")."""
        lines = [
            "apiVersion: spacekeeper.dev/v1alpha1", "kind: UserSpace",
            f"metadata:\n  name: {name}", "spec:", f"  userID: {user or name}",
        ]
        if "mode" in spec:
            lines.append(f"  mode: {spec['mode']}")
        if "idle" in spec:
            lines.append(f"  lifecycle: {{idleTimeout: {spec['idle']}}}")
        health = []
        if "remediation" in spec:
            health.append(f"remediation: {spec['remediation']}")
        if "unhealthy_after" in spec:
            health.append(f"unhealthyAfter: {spec['unhealthy_after']}")
        if health:
            lines.append("  health: {" + ", ".join(health) + "}")
        if "volume" in spec:
            lines.append(f"  storage: {{volume: {spec['volume']}}}")
        self.spacectl("apply", "-f", "-", stdin="\n".join(lines) + "\n")
        return user or name

    def wait_ready(self, name: str, timeout: str = "60s") -> None:
        self.spacectl("wait", "us", name, "--for=condition=Ready", "--timeout", timeout)

    def space(self, name: str) -> Dict[str, Any]:
        return json.loads(self.spacectl("get", "us", name, "-o", "json").stdout)

    # ---- the simulator's admin API ----

    def sim_call(self, method: str, path: str, body: Any = None,
                 headers: Optional[Dict[str, str]] = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.sim + path, data=data, method=method,
                                     headers=dict(headers or {}, **{"Content-Type": "application/json"}))
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read()
        return json.loads(text) if text else None

    def sim_stats(self) -> Dict[str, Dict[str, int]]:
        return self.sim_call("GET", "/_sim/stats")["requests"]

    def sim_reset_stats(self) -> None:
        self.sim_call("POST", "/_sim/stats/reset")

    def sim_faults(self, doc: Dict[str, Any]) -> None:
        self.sim_call("POST", "/_sim/faults", doc)

    def sim_clear_faults(self) -> None:
        self.sim_call("DELETE", "/_sim/faults")

    def sim_volumes(self) -> List[Dict[str, Any]]:
        """The simulator's team volumes (GET /volumes, as the provider answers it)."""
        return self.sim_call("GET", "/volumes", headers={"X-API-Key": PROVIDER_KEY})

    def sim_sandbox(self, sandbox_id: str) -> Optional[Dict[str, Any]]:
        for s in self.sim_call("GET", "/_sim/sandboxes"):
            if s["sandboxID"] == sandbox_id:
                return s
        return None


def calls(stats: Dict[str, Dict[str, int]], endpoints) -> int:
    """Requests to these endpoints in a /_sim/stats "requests" object."""
    return sum(sum(v.values()) for k, v in stats.items() if k in endpoints)


def _grep(path: str, rx: str, whole: bool = False):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            m = re.search(rx, f.read())
    except FileNotFoundError:
        return None
    if not m:
        return None
    return m.groups() if whole else m.group(1)
