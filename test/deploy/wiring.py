#!/usr/bin/env python3
"""Checks that the rendered controller Deployment is wired to its ConfigMap and Secrets, and
writes what a local run of the same command line needs.

usage: wiring.py RENDERED.yaml OUTDIR SIM_URL LISTEN MONGODB_URI

Checks (one "FAIL ..." line each, exit 1):
  - --config=PATH names a key of the spacekeeper-config ConfigMap under the mountPath of a
    volume made from that ConfigMap;
  - every provider's apiKeyFile is a key (item path) of a Secret volume under its mountPath;
  - $(SPACEKEEPER_MONGODB_URI) in the args comes from a secretKeyRef env of that name (and,
    when that Secret is rendered too, holds a mongodb:// URI without a trailing newline);
  - controller.connectTokenFile, when set, is a key of a mounted Secret too;
  - the config's controller.listen port is the containerPort the probes and Service use,
    and a Service port named "connect" targets the controller.connectListen port.
Then writes OUTDIR/spacekeeper.yaml (the ConfigMap's config, provider URLs pointed at SIM_URL,
apiKeyFile at OUTDIR/<the same file name>, listen at LISTEN, connectListen on a free loopback
port, connectTokenFile at OUTDIR/connect-token, written) and OUTDIR/args (the container
args, one per line, with the config path and the MongoDB URI of this run, the pod name
smoke-0 and the pod IP 127.0.0.1).
"""
import base64
import os
import sys

import yaml


def by_kind(objs, kind):
    return [o for o in objs if o.get("kind") == kind]


def controller(objs):
    for d in by_kind(objs, "Deployment"):
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        if labels.get("app.kubernetes.io/component") == "controller":
            return d
    raise SystemExit("FAIL no controller Deployment")


def mounted_file(pod, container, path, source):
    """The (volume, key) that provides PATH in the container, if a `source` volume does."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for m in container.get("volumeMounts", []):
        prefix = m["mountPath"].rstrip("/") + "/"
        vol = vols.get(m["name"], {})
        if not path.startswith(prefix) or source not in vol:
            continue
        key = path[len(prefix):]
        items = vol[source].get("items")
        if items:
            key = next((i["key"] for i in items if i["path"] == key), None)
        if key:
            return vol[source], key
    return None, None


def secret_file_errors(pod, container, secrets, what, path):
    """A file the config names (a token) must come from a mounted Secret key."""
    if not path:
        return []
    vol, skey = mounted_file(pod, container, path, "secret")
    if not vol:
        return ["%s %s is not a file of a mounted Secret" % (what, path)]
    if secrets and skey not in secrets.get(vol["secretName"], {}).get("data", {}):
        return ["%s: Secret %s has no key %s" % (what, vol["secretName"], skey)]
    return []


def uri_errors(secret, key):
    """The URI goes verbatim into --mongodb-uri: no trailing newline from a file."""
    name = secret["metadata"]["name"]
    if key not in secret.get("data", {}):
        return ["Secret %s has no key %s" % (name, key)]
    value = base64.b64decode(secret["data"][key]).decode()
    if value != value.strip() or not value.startswith(("mongodb://", "mongodb+srv://")):
        return ["Secret %s key %s: want a mongodb:// URI without surrounding whitespace, "
                "got %r" % (name, key, value[:12] + "..." + value[-3:])]
    return []


def check(objs):
    errs = []
    dep = controller(objs)
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    args = c.get("args", [])
    cfg_path = next((a.split("=", 1)[1] for a in args if a.startswith("--config=")), None)
    cms = {cm["metadata"]["name"]: cm for cm in by_kind(objs, "ConfigMap")}
    src, key = mounted_file(pod, c, cfg_path or "", "configMap")
    if not src or key not in cms.get(src["name"], {}).get("data", {}):
        errs.append("--config=%s is not a key of a mounted ConfigMap" % cfg_path)
        return errs, None, args
    config = yaml.safe_load(cms[src["name"]]["data"][key])
    secrets = {s["metadata"]["name"]: s for s in by_kind(objs, "Secret")}
    for i, p in enumerate(config.get("providers", [])):
        f = p.get("apiKeyFile")
        vol, skey = mounted_file(pod, c, f or "", "secret")
        if not vol:
            errs.append("providers[%d].apiKeyFile %s is not a file of a mounted Secret" % (i, f))
        elif secrets and skey not in secrets.get(vol["secretName"], {}).get("data", {}):
            errs.append("providers[%d].apiKeyFile: Secret %s has no key %s" %
                        (i, vol["secretName"], skey))
    errs += secret_file_errors(pod, c, secrets, "controller.connectTokenFile",
                               config.get("controller", {}).get("connectTokenFile"))
    env = {e["name"]: e for e in c.get("env", [])}
    if any("$(SPACEKEEPER_MONGODB_URI)" in a for a in args):
        ref = env.get("SPACEKEEPER_MONGODB_URI", {}).get("valueFrom", {}).get("secretKeyRef")
        if not ref:
            errs.append("$(SPACEKEEPER_MONGODB_URI) in args but no secretKeyRef env of that name")
        elif ref["name"] in secrets:
            errs += uri_errors(secrets[ref["name"]], ref["key"])
    else:
        errs.append("args do not pass --mongodb-uri=$(SPACEKEEPER_MONGODB_URI)")
    port = int(config["controller"]["listen"].rsplit(":", 1)[1])
    cport = config["controller"].get("connectListen")
    cport = int(cport.rsplit(":", 1)[1]) if cport else None
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    for probe in ("livenessProbe", "readinessProbe"):
        named = c[probe]["httpGet"]["port"]
        if ports.get(named, named) != port:
            errs.append("%s port %s is not controller.listen port %d" % (probe, named, port))
    for svc in by_kind(objs, "Service"):
        for sp in svc["spec"]["ports"]:
            want, what = (cport, "connectListen") if sp.get("name") == "connect" else \
                (port, "listen")
            if ports.get(sp["targetPort"], sp["targetPort"]) != want:
                errs.append("Service %s targetPort %s is not controller.%s port %s" %
                            (svc["metadata"]["name"], sp["targetPort"], what, want))
    return errs, config, args


def write_local(config, args, outdir, sim_url, listen, uri):
    for p in config["providers"]:
        p["apiURL"] = sim_url
        p["sandboxURL"] = sim_url
        p["apiKeyFile"] = os.path.join(outdir, os.path.basename(p["apiKeyFile"]))
    config["controller"]["listen"] = listen
    if config["controller"].get("connectListen"):
        config["controller"]["connectListen"] = "127.0.0.1:0"
    if config["controller"].get("connectTokenFile"):
        token = os.path.join(outdir, "connect-token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"local-connect-token\n")
        os.close(fd)
        config["controller"]["connectTokenFile"] = token
    cfg = os.path.join(outdir, "spacekeeper.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump(config, f)
    with open(os.path.join(outdir, "args"), "w") as f:
        for a in args:
            if a.startswith("--config="):
                a = "--config=" + cfg
            a = a.replace("$(POD_NAME)", "smoke-0").replace("$(POD_IP)", "127.0.0.1")
            f.write(a.replace("$(SPACEKEEPER_MONGODB_URI)", uri) + "\n")


def main():
    if len(sys.argv) != 6:
        raise SystemExit(next(l for l in __doc__.splitlines() if l.startswith("usage")))
    rendered, outdir, sim_url, listen, uri = sys.argv[1:]
    with open(rendered) as f:
        objs = [d for d in yaml.safe_load_all(f) if d]
    errs, config, args = check(objs)
    for e in errs:
        print("FAIL %s: %s" % (rendered, e))
    if errs:
        return 1
    write_local(config, args, outdir, sim_url, listen, uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
