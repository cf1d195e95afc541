#!/usr/bin/env python3
"""Validates rendered Kubernetes manifests offline.

usage: validate.py [-k VERSION]... FILE...

Every object in every FILE (multi-document YAML, e.g. `kustomize build` output) must pass:
  - the strict JSON schema of its kind for each Kubernetes VERSION, as shipped by the
    kubernetes-validate package (unknown fields are errors); CRD-typed objects, for which
    that package has no schema, against a schema of our own (CRD_SCHEMAS below); any other
    kind without a schema is an error, never a silent skip;
  - the hardening rules of the brief for every pod template (non-root, read-only root
    filesystem, no capabilities, RuntimeDefault seccomp, no service-account token, resource
    limits) and, for the controller Deployment, one replica that never overlaps (no shard
    leases yet) with /healthz and /readyz probes.
Prints one line per object ("ok" or "FAIL" with the field path); exit 0 when all pass, 1 when
any fails, 2 on a usage or input error.
"""
import argparse
import json
import os
import sys

import jsonschema
import yaml
from kubernetes_validate import utils as kv

HERE = os.path.dirname(os.path.abspath(__file__))
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor-v1.schema.json",
}
POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}


def name_of(obj):
    meta = obj.get("metadata") or {}
    return "%s/%s" % (obj.get("kind", "?"), meta.get("name", "?"))


def dig(obj, *keys):
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def crd_errors(obj):
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in CRD_SCHEMAS:
        return ["no schema for apiVersion %s kind %s (add one to CRD_SCHEMAS)" % key]
    with open(os.path.join(HERE, CRD_SCHEMAS[key])) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    return ["%s: %s" % (".".join(str(p) for p in e.absolute_path) or "(root)", e.message)
            for e in validator.iter_errors(obj)]


def schema_errors(obj, versions):
    errs = []
    for version in versions:
        try:
            kv.validate(obj, version, strict=True)
        except kv.SchemaNotFoundError:
            return crd_errors(obj)
        except kv.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(root)"
            errs.append("%s: %s (Kubernetes %s, strict)" % (path, e.message, version))
    return errs


def container_errors(c, where):
    errs = []
    sc = c.get("securityContext") or {}
    if sc.get("allowPrivilegeEscalation") is not False:
        errs.append("%s.securityContext.allowPrivilegeEscalation: must be false" % where)
    if sc.get("readOnlyRootFilesystem") is not True:
        errs.append("%s.securityContext.readOnlyRootFilesystem: must be true" % where)
    if "ALL" not in (dig(sc, "capabilities", "drop") or []):
        errs.append("%s.securityContext.capabilities.drop: must contain ALL" % where)
    if dig(sc, "capabilities", "add"):
        errs.append("%s.securityContext.capabilities.add: must be empty" % where)
    res = c.get("resources") or {}
    for part in ("requests", "limits"):
        if not dig(res, part, "memory"):
            errs.append("%s.resources.%s.memory: required" % (where, part))
    return errs


def pod_errors(pod, where):
    errs = []
    psc = pod.get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True:
        errs.append("%s.securityContext.runAsNonRoot: must be true" % where)
    if dig(psc, "seccompProfile", "type") != "RuntimeDefault":
        errs.append("%s.securityContext.seccompProfile.type: must be RuntimeDefault" % where)
    if pod.get("automountServiceAccountToken") is not False:
        errs.append("%s.automountServiceAccountToken: must be false" % where)
    for field in ("initContainers", "containers"):
        for i, c in enumerate(pod.get(field) or []):
            errs += container_errors(c, "%s.%s[%d]" % (where, field, i))
    return errs


def probe_path(c, probe):
    return dig(c, probe, "httpGet", "path")


def identity_errors(c, where):
    """Replicas share shards by lease: each needs its own identity (the pod name) and an
    address the others forward connects to (the pod IP)."""
    args = c.get("args") or []
    env = {e.get("name"): dig(e, "valueFrom", "fieldRef", "fieldPath") for e in c.get("env") or []}
    errs = []
    if "--id=$(POD_NAME)" not in args or env.get("POD_NAME") != "metadata.name":
        errs.append("%s: replicas need --id=$(POD_NAME) with POD_NAME from metadata.name" % where)
    if not any(a.startswith("--advertise-address=$(POD_IP):") for a in args) or \
            env.get("POD_IP") != "status.podIP":
        errs.append("%s: replicas need --advertise-address=$(POD_IP):PORT with POD_IP from "
                    "status.podIP" % where)
    return errs


def controller_errors(obj):
    """The controller Deployment: replicas with their own identity, probes on its port."""
    spec = obj.get("spec") or {}
    errs = []
    for i, c in enumerate(dig(spec, "template", "spec", "containers") or []):
        errs += identity_errors(c, "spec.template.spec.containers[%d]" % i)
        if probe_path(c, "livenessProbe") != "/healthz":
            errs.append("spec.template.spec.containers[%d].livenessProbe: must GET /healthz" % i)
        if probe_path(c, "readinessProbe") != "/readyz":
            errs.append("spec.template.spec.containers[%d].readinessProbe: must GET /readyz" % i)
    return errs


def policy_errors(obj):
    errs = []
    kind = obj.get("kind")
    if kind in POD_TEMPLATE_PATHS:
        path = POD_TEMPLATE_PATHS[kind]
        pod = dig(obj, *path)
        if not isinstance(pod, dict):
            return ["%s: missing" % ".".join(path)]
        errs += pod_errors(pod, ".".join(path))
    if kind == "ServiceAccount" and obj.get("automountServiceAccountToken") is not False:
        errs.append("automountServiceAccountToken: must be false")
    if (kind == "Deployment" and
            dig(obj, "spec", "template", "metadata", "labels",
                "app.kubernetes.io/component") == "controller"):
        errs += controller_errors(obj)
    return errs


def load_objects(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", "--kubernetes-version", action="append", dest="versions")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    versions = args.versions or [kv.latest_version()]
    failed = 0
    total = 0
    for path in args.files:
        try:
            objs = load_objects(path)
        except (OSError, yaml.YAMLError) as e:
            print("FAIL %s: %s" % (path, e))
            return 2
        if not objs:
            print("FAIL %s: no objects" % path)
            return 2
        for obj in objs:
            total += 1
            if not isinstance(obj, dict) or "kind" not in obj or "apiVersion" not in obj:
                print("FAIL %s: a document without apiVersion and kind" % path)
                failed += 1
                continue
            errs = schema_errors(obj, versions) + policy_errors(obj)
            if errs:
                failed += 1
                for e in errs:
                    print("FAIL %s %s: %s" % (path, name_of(obj), e))
            else:
                print("ok   %s %s" % (path, name_of(obj)))
    print("%s: %d objects, %d invalid (Kubernetes %s)" %
          (os.path.basename(sys.argv[0]), total, failed, ", ".join(versions)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
