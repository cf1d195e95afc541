"""Conformance of sandboxsim's team volumes, persistent snapshots and fork
with the official e2b Python SDK (pinned in test/client/requirements.txt,
installed in .deps/pyclient): starts its own simulator on a free port, points
the SDK at it with E2B_API_URL / E2B_SANDBOX_URL / a dummy E2B_API_KEY, and
drives Volume.create/list/get_info/destroy, volume_mounts at create with files
kept across sandboxes, create_snapshot (named, unnamed, files only),
list_snapshots pages and filters, a create from a snapshot, delete_snapshot,
fork and get_metrics. Prints "e2b-sdk-py: N passed, M failed"; exits 1 on a
failure.

Run: .deps/pyclient/bin/python test/conformance/e2b_sdk.py (SK_BIN_DIR names
the directory of the sandboxsim binary, default bin/).
"""

import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = {"passed": 0, "failed": 0}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sim():
    port = free_port()
    binary = Path(os.environ.get("SK_BIN_DIR", ROOT / "bin")) / "sandboxsim"
    proc = subprocess.Popen(
        [str(binary), "--listen", f"127.0.0.1:{port}", "--seed", "11"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 10
    line = ""
    while time.monotonic() < deadline and "listening on" not in line:
        line = proc.stderr.readline()
        if line == "" and proc.poll() is not None:
            raise RuntimeError(f"sandboxsim exited ({proc.returncode})")
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError("sandboxsim did not start")
    return proc, f"http://127.0.0.1:{port}"


def check(name):
    def run(fn):
        try:
            fn()
            RESULTS["passed"] += 1
            print(f"ok   {name}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported, the run goes on
            RESULTS["failed"] += 1
            print(f"FAIL {name}\n     {traceback.format_exc()}", flush=True)
        return fn

    return run


def all_pages(pager):
    pages = []
    while pager.has_next:
        pages.append(pager.next_items())
    return pages


def checks():
    from e2b import Sandbox, Volume
    from e2b.exceptions import NotFoundException

    tag = f"py{os.getpid()}"
    state = {}

    @check("Volume.create, list, get_info")
    def _():
        vol = Volume.create(f"{tag}-home")
        assert vol.volume_id.startswith("vol"), vol.volume_id
        assert vol.name == f"{tag}-home"
        assert len(vol.token) == 32
        names = [v.name for v in Volume.list()]
        assert names.count(vol.name) == 1, names
        assert Volume.get_info(vol.volume_id).name == vol.name
        state["volume"] = vol

    @check("volume_mounts: files under the mount outlive the sandbox that wrote them")
    def _():
        vol = state["volume"]
        first = Sandbox.create("base", volume_mounts={"/home/user/data": vol})
        info = Sandbox.get_info(first.sandbox_id)
        assert info.volume_mounts == [{"name": vol.name, "path": "/home/user/data"}], info
        first.files.write("/home/user/data/py.txt", "kept\n")
        first.files.write("/home/user/elsewhere.txt", "not kept\n")
        first.kill()
        second = Sandbox.create("base", volume_mounts={"/srv/data": vol.name})
        assert second.files.read("/srv/data/py.txt") == "kept\n"
        assert not second.files.exists("/home/user/elsewhere.txt")
        second.kill()

    @check("create_snapshot, list_snapshots pages, a create from one, delete_snapshot")
    def _():
        src = Sandbox.create("base")
        src.files.write("/home/user/state.txt", "snapshotted\n")
        unnamed = src.create_snapshot()
        assert unnamed.snapshot_id.endswith(":default"), unnamed
        assert unnamed.names == []
        named = Sandbox.create_snapshot(src.sandbox_id, name=f"{tag}-snap")
        assert named.snapshot_id == f"sim-team/{tag}-snap:default", named
        assert named.names == [named.snapshot_id]
        files_only = src.create_snapshot(mode="filesystem")  # memory: false
        pages = all_pages(Sandbox.list_snapshots(sandbox_id=src.sandbox_id, limit=2))
        assert [len(p) for p in pages] == [2, 1], pages
        ids = sorted(s.snapshot_id for p in pages for s in p)
        assert ids == sorted([unnamed.snapshot_id, named.snapshot_id, files_only.snapshot_id])
        by_name = all_pages(Sandbox.list_snapshots(name=f"{tag}-snap"))
        assert [s.snapshot_id for p in by_name for s in p] == [named.snapshot_id]
        src.kill()
        restored = Sandbox.create(named.snapshot_id)
        assert restored.files.read("/home/user/state.txt") == "snapshotted\n"
        restored.kill()
        for snap in (unnamed, named, files_only):
            assert Sandbox.delete_snapshot(snap.snapshot_id) is True
        assert Sandbox.delete_snapshot(named.snapshot_id) is False

    @check("fork: count sandboxes with the files, the source untouched")
    def _():
        src = Sandbox.create("base", timeout=120)
        src.files.write("/home/user/try.txt", "before\n")
        end = Sandbox.get_info(src.sandbox_id).end_at
        forks = src.fork(timeout=30, count=2)
        assert len(forks) == 2 and all(isinstance(f, Sandbox) for f in forks), forks
        for f in forks:
            assert f.files.read("/home/user/try.txt") == "before\n"
        forks[0].files.write("/home/user/try.txt", "changed in a fork\n")
        assert src.files.read("/home/user/try.txt") == "before\n"
        assert Sandbox.get_info(src.sandbox_id).end_at == end
        info = Sandbox.get_info(forks[1].sandbox_id)
        assert (info.end_at - info.started_at).total_seconds() == 30
        try:
            Sandbox.fork("inotthere000000000000")
            raise AssertionError("fork of an unknown sandbox succeeded")
        except NotFoundException:
            pass
        for f in [src, *forks]:
            f.kill()

    @check("get_metrics of a running sandbox")
    def _():
        sb = Sandbox.create("base")
        metrics = sb.get_metrics()
        assert len(metrics) == 1 and metrics[0].cpu_count == 2, metrics
        assert metrics[0].mem_total == 512 << 20
        sb.kill()

    @check("Volume.destroy")
    def _():
        vol = state["volume"]
        assert Volume.destroy(vol.volume_id) is True
        assert Volume.destroy(vol.volume_id) is False


def main():
    proc, base = start_sim()
    os.environ.update(
        E2B_API_URL=base, E2B_SANDBOX_URL=base, E2B_API_KEY="e2b_" + "0" * 40
    )
    os.environ.pop("E2B_DEBUG", None)
    try:
        checks()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"e2b-sdk-py: {RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
