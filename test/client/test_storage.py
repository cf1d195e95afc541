"""spec.storage.volume with the official e2b SDK on the data plane: files
written through the SDK under the mount path survive what replaces the
sandbox (an out-of-band kill, a dead data plane under Replace, the provider's
retention deleting it asleep), status.storage says which volume, and
deletionPolicy decides whether the volume outlives the space. The real
spacekeeper, FerretDB and sandboxsim (conftest.World)."""

from __future__ import annotations

import time

import pytest


def wait_for(cond, timeout_s, what):
    end = time.monotonic() + timeout_s
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout_s}s")
        time.sleep(0.1)


def bound(world, user):
    return world.space(user).get("status", {}).get("sandboxID")


def volume_names(world):
    return [v["name"] for v in world.sim_volumes()]


@pytest.mark.space(volume="{deletionPolicy: Retain}")
def test_files_on_the_volume_survive_an_out_of_band_kill(world, client, user):
    sbx = client.sandbox(user)
    sbx.files.write("/home/user/project/main.py", "print('kept')\n")
    status = world.space(user)["status"]["storage"]["volume"]
    name = status["name"]  # sk- and the user ID (cut to 40 and hashed: it is longer)
    assert status["state"] == "Mounted" and name.startswith("sk-" + user[:40] + "-"), status
    assert status["mountPath"] == "/home/user" and status["volumeID"].startswith("vol")
    old = sbx.sandbox_id
    world.sim_call("POST", f"/_sim/sandboxes/{old}/kill")
    # the controller finds the bound sandbox gone (a GET answers 404) and creates another
    wait_for(lambda: bound(world, user) not in (None, old), 60, "a new sandbox bound")
    again = client.sandbox(user)
    assert again.sandbox_id != old
    assert again.files.read("/home/user/project/main.py") == "print('kept')\n"
    info = world.sim_call("GET", f"/sandboxes/{again.sandbox_id}",
                          headers={"X-API-Key": "e2b_" + "0" * 40})
    assert info["volumeMounts"] == [{"name": name, "path": "/home/user"}]
    # deletionPolicy Retain: the volume outlives the space
    world.spacectl("delete", "us", user, "--wait")
    assert name in volume_names(world)


@pytest.mark.space(volume="{mountPath: /workspace, deletionPolicy: Delete}",
                   remediation="Replace", unhealthy_after="1s")
def test_files_on_the_volume_survive_a_replace_after_a_dead_data_plane(world, client, user):
    sbx = client.sandbox(user)
    sbx.files.write("/workspace/data.csv", "a,b\n1,2\n")
    sbx.files.write("/home/user/scratch.txt", "not on the volume\n")
    old = sbx.sandbox_id
    world.sim_faults({"unreachable": [old]})
    try:
        wait_for(lambda: bound(world, user) not in (None, old), 60, "a replacement bound")
    finally:
        world.sim_clear_faults()
    again = client.sandbox(user)
    assert again.sandbox_id != old
    assert again.files.read("/workspace/data.csv") == "a,b\n1,2\n"
    assert not again.files.exists("/home/user/scratch.txt")  # off the volume: gone
    name = world.space(user)["status"]["storage"]["volume"]["name"]
    assert name in volume_names(world)
    # deletionPolicy Delete: the volume goes with the space, after its sandboxes
    world.spacectl("delete", "us", user, "--wait")
    assert name not in volume_names(world)


@pytest.mark.space(volume="{deletionPolicy: Delete}", idle="3s")
def test_files_on_the_volume_survive_the_providers_retention(world, client, user):
    sbx = client.sandbox(user)
    sbx.files.write("/home/user/kept.txt", "through the retention\n")
    old = sbx.sandbox_id
    wait_for(lambda: (world.sim_sandbox(old) or {}).get("state") == "paused", 60,
             "the sandbox asleep")
    # the provider's retention deletes a paused sandbox (sandboxsim --paused-retention
    # does it after a while; here it happens at once)
    world.sim_call("POST", f"/_sim/sandboxes/{old}/kill")
    again = client.sandbox(user)
    assert again.sandbox_id != old
    assert again.files.read("/home/user/kept.txt") == "through the retention\n"
    world.spacectl("delete", "us", user, "--wait")
