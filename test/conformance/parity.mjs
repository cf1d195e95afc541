// Parity with the Kubernetes API server: one table of inputs,
// each with what the API server does
// (accept or reject; the object it stores, defaults filled). Every row is
// checked twice:
//   - against the CRD, read the way the API server reads it: YAML 1.1 as
//     kubectl's reader (go-yaml v2) resolves it, metadata.namespace cleared
//     (cluster-scoped), status dropped (status subresource), nulls pruned,
//     the ObjectMeta rules the server applies itself (name, finalizers),
//     then the openAPIV3Schema with its defaults (ajv, useDefaults). CEL
//     rules are not evaluated here: a row that needs one names the rule's
//     message, which the CRD must carry.
//   - against spacectl: `spacectl validate -o json -f -` must accept or
//     reject the same way, name the field in its error, and print the same
//     object (durations compared by value: the server keeps "60s", spacectl
//     prints "1m").
//
// Usage: SK_BIN_DIR=build/san/bin node test/conformance/parity.mjs [--rows]
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(join(root, ".deps", "node", "package.json"));
const AjvModule = require("ajv");
const Ajv = AjvModule.default ?? AjvModule;
const YAML = require("yaml");
const spacectl = join(process.env.SK_BIN_DIR ?? join(root, "build", "san", "bin"), "spacectl");

const HEAD = "apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\n";
const DEFAULT_SPEC = {
  provider: "default", template: "base", mode: "Running",
  lifecycle: { idleTimeout: "15m", onTimeout: "pause", autoResume: true, maxBusy: "2h", busy: "Processes", archiveAfter: "0s", archive: { method: "ObjectStorage" } },
  deletionPolicy: "Delete",
  health: { unhealthyAfter: "60s", remediation: "Report", onLoss: "Report" },
  updateStrategy: "Report",
  workspace: { paths: ["/home/user"] },
  migration: { keepSourceFor: "24h", whenIdleFor: "1m", maxBytes: "5Gi", sourcePolicy: "Delete" },
};
// The longest list entries the CRD's maxLength (and spacectl) take.
const LONGEST_HOST = `*.${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`;
const LONGEST_CIDR = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128";
const spec = (over) => ({ userID: "a", ...DEFAULT_SPEC, ...over });
const meta = (extra = {}) => ({ name: "a", ...extra });

// The table. accept: the object the API server stores (metadata name,
// labels, annotations; spec). reject: the field spacectl's error names and
// the CRD rule's message when the rule is CEL.
const rows = [
  { what: "defaults fill nested objects (lifecycle, health: default {})",
    yaml: "metadata: {name: a}\nspec: {userID: a}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "userID: no is the YAML 1.1 boolean false, not a string",
    yaml: "metadata: {name: a}\nspec: {userID: no}\n",
    reject: "spec.userID: must be a string" },
  { what: "userID: on is the YAML 1.1 boolean true",
    yaml: "metadata: {name: a}\nspec: {userID: on}\n",
    reject: "spec.userID: must be a string" },
  { what: "userID: \"no\" quoted is a string",
    yaml: "metadata: {name: a}\nspec: {userID: \"no\"}\n",
    accept: { metadata: meta(), spec: { ...spec(), userID: "no" } } },
  { what: "autoResume: yes is a boolean",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  lifecycle: {autoResume: yes}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "autoResume: off is a boolean",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  lifecycle: {autoResume: off}\n",
    accept: { metadata: meta(), spec: spec({ lifecycle: { ...DEFAULT_SPEC.lifecycle, autoResume: false } }) } },
  { what: "metadata.namespace is cleared (cluster-scoped; kustomize sets it)",
    yaml: "metadata: {name: a, namespace: prod}\nspec: {userID: a}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "status on input is dropped (status subresource)",
    yaml: "metadata: {name: a}\nspec: {userID: a}\nstatus: {phase: Running, sandboxID: i1}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "status with an unknown phase is dropped too (the status subresource drops it whole)",
    yaml: "metadata: {name: a}\nspec: {userID: a}\nstatus: {phase: Exploded, drift: 3}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "metadata.generateName without a name: the server generates one on create",
    yaml: "metadata: {generateName: web-}\nspec: {userID: a}\n",
    generated: "web-",
    accept: { metadata: {}, spec: spec() } },
  { what: "metadata.generateName is cut to 58 characters before the 5-character suffix",
    yaml: `metadata: {generateName: ${"g".repeat(70)}}\nspec: {userID: a}\n`,
    generated: "g".repeat(58),
    accept: { metadata: {}, spec: spec() } },
  { what: "a plain key on: / n: is the YAML 1.1 boolean key true / false",
    yaml: "metadata: {name: a, labels: {on: x, n: y2, \"y\": z}}\nspec: {userID: a}\n",
    accept: { metadata: meta({ labels: { true: "x", false: "y2", y: "z" } }), spec: spec() } },
  { what: "a spec key off: is the boolean key false, an unknown field",
    yaml: "metadata: {name: a}\nspec: {userID: a, off: 1}\n",
    reject: "spec.false: unknown field" },
  { what: "lifecycle: null is unset, then defaulted",
    yaml: "metadata: {name: a}\nspec: {userID: a, lifecycle: null}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "template: null is unset, then defaulted",
    yaml: "metadata: {name: a}\nspec: {userID: a, template: null}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "health given in part keeps the rest defaulted",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  health: {remediation: Replace}\n",
    accept: { metadata: meta(), spec: spec({ health: { unhealthyAfter: "60s", remediation: "Replace", onLoss: "Report" } }) } },
  { what: "finalizer names are qualified names",
    yaml: "metadata: {name: a, finalizers: [bad finalizer]}\nspec: {userID: a}\n",
    reject: "metadata.finalizers[0]: must be a qualified name", objectMeta: true },
  { what: "a domain-qualified finalizer is fine (and store-owned: not applied)",
    yaml: "metadata: {name: a, finalizers: [example.com/keep]}\nspec: {userID: a}\n",
    accept: { metadata: meta(), spec: spec() } },
  { what: "idleTimeout: 1ns would read as 0 (always on): 0 or at least 1s",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  lifecycle: {idleTimeout: 1ns}\n",
    reject: "spec.lifecycle.idleTimeout: must be 0 (always on) or at least 1s",
    cel: "must be 0 (always on) or at least 1s" },
  { what: "idleTimeout: 0s is always on",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  lifecycle: {idleTimeout: 0s}\n",
    accept: { metadata: meta(), spec: spec({ lifecycle: { ...DEFAULT_SPEC.lifecycle, idleTimeout: "0s" } }) } },
  { what: "metadata.labels with metadata open (kubeconform -strict accepts them)",
    yaml: "metadata: {name: a, labels: {team: research}}\nspec: {userID: a}\n",
    accept: { metadata: meta({ labels: { team: "research" } }), spec: spec() } },
  { what: "spec.network as written: no default added, lists kept in order",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {internet: Deny, allowOut: [10.0.0.0/8, '*.pypi.org'], denyOut: ['fd00::/8']}\n",
    accept: { metadata: meta(), spec: spec({ network: { internet: "Deny", allowOut: ["10.0.0.0/8", "*.pypi.org"], denyOut: ["fd00::/8"] } }) } },
  { what: "spec.network.publicTraffic alone",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {publicTraffic: Deny}\n",
    accept: { metadata: meta(), spec: spec({ network: { publicTraffic: "Deny" } }) } },
  { what: "spec.network.internet is Allow or Deny, case and all",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {internet: deny}\n",
    reject: "spec.network.internet: must be one of: Allow, Deny" },
  { what: "spec.network.internet: no is the YAML 1.1 boolean, not Deny",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {internet: no}\n",
    reject: "spec.network.internet: must be a string" },
  { what: "a host name in denyOut (letters beyond hex: the pattern)",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {denyOut: [10.0.0.0/8, evil.example.com]}\n",
    reject: "spec.network.denyOut[1]: a host name is allowed in allowOut only" },
  { what: "a host name of hex letters in denyOut (the CEL rule)",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {denyOut: [cafe.bad]}\n",
    reject: "spec.network.denyOut[0]: a host name is allowed in allowOut only",
    cel: "a host name is allowed in allowOut only; denyOut takes IP addresses and CIDRs" },
  { what: "a CIDR's prefix beyond 32 bits (the CEL rule)",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {allowOut: [10.0.0.0/33]}\n",
    reject: "spec.network.allowOut[0]: must be an IP address, a CIDR or a host name",
    cel: "must be an IP address, a CIDR or a host name (*. wildcard allowed)" },
  { what: "an empty allowOut is refused (minItems), not read as none",
    yaml: "metadata: {name: a}\nspec:\n  userID: a\n  network: {allowOut: []}\n",
    reject: "spec.network.allowOut: must have 1 to 64 entries" },
  { what: "the longest allowOut entry: *. and a host name of 253 bytes (maxLength 255)",
    yaml: `metadata: {name: a}\nspec:\n  userID: a\n  network: {allowOut: ['${LONGEST_HOST}']}\n`,
    accept: { metadata: meta(), spec: spec({ network: { allowOut: [LONGEST_HOST] } }) } },
  { what: "an allowOut entry of 256 bytes is refused by its length (maxLength)",
    yaml: `metadata: {name: a}\nspec:\n  userID: a\n  network: {allowOut: ['${LONGEST_HOST}a']}\n`,
    reject: "spec.network.allowOut[0]: must be at most 255 bytes" },
  { what: "the longest denyOut entry: an IPv6 CIDR with an IPv4 tail (maxLength 49)",
    yaml: `metadata: {name: a}\nspec:\n  userID: a\n  network: {denyOut: ['${LONGEST_CIDR}']}\n`,
    accept: { metadata: meta(), spec: spec({ network: { denyOut: [LONGEST_CIDR] } }) } },
  { what: "a duration of 33 characters is refused by its length (maxLength 32)",
    yaml: `metadata: {name: a}\nspec:\n  userID: a\n  lifecycle: {idleTimeout: ${"0".repeat(31)}1s}\n`,
    reject: "spec.lifecycle.idleTimeout: must be at most 32 characters" },
  { what: "metadata.name is checked by the root rule",
    yaml: "metadata: {name: Alice}\nspec: {userID: a}\n",
    reject: "metadata.name: must be a DNS-1123 label",
    cel: "metadata.name must be a DNS-1123 label" },
];

// --rows: print the table as JSON (what, the whole document, accept or
// reject) for test/crdcheck, which runs each row through the API server's
// own create path, and exit.
if (process.argv.includes("--rows")) {
  console.log(JSON.stringify(rows.map((r) => ({
    what: r.what, text: HEAD + r.yaml, expect: r.accept ? "accept" : "reject",
  })), null, 1));
  process.exit(0);
}

let passed = 0;
let failed = 0;
function check(ok, what, detail = "") {
  if (ok) passed++;
  else {
    failed++;
    console.log(`FAIL ${what}${detail ? "\n  " + detail : ""}`);
  }
}

// ---- the API server's side ----

function translate(s) {
  if (Array.isArray(s)) return s.map(translate);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-") || k === "format") continue;
    out[k] = k === "properties"
      ? Object.fromEntries(Object.entries(v).map(([n, sub]) => [n, translate(sub)]))
      : translate(v);
  }
  if (out.type === "object" && out.properties && out.additionalProperties === undefined) {
    out.additionalProperties = false; // strict field validation
  }
  return out;
}

function pruneNulls(v) {
  if (Array.isArray(v)) return v.map(pruneNulls);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null)
    .map(([k, x]) => [k, pruneNulls(x)]));
}

const QUALIFIED = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const crdText = readFileSync(join(root, "crds", "spacekeeper.dev_userspaces.yaml"), "utf8");
const crd = YAML.parse(crdText);
const version = crd.spec.versions.find((v) => v.name === "v1alpha1");
const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true });
const validate = ajv.compile(translate(version.schema.openAPIV3Schema));

// names.SimpleNameGenerator: the prefix cut to 58 characters, then 5 of
// utilrand's alphanumerics (no vowels, no 0, 1, 3).
const SUFFIX = "bcdfghjklmnpqrstvwxz2456789";
function generateName(prefix) {
  let s = prefix.slice(0, 58);
  for (let i = 0; i < 5; i++) s += SUFFIX[Math.floor(Math.random() * SUFFIX.length)];
  return s;
}
const generatedFrom = (prefix) => new RegExp(`^${prefix}[${SUFFIX}]{5}$`);

// What the server stores, or null when it rejects (ObjectMeta and schema).
function apiserver(text) {
  const obj = pruneNulls(YAML.parse(text, { version: "1.1" }));
  if (crd.spec.scope === "Cluster" && obj.metadata) delete obj.metadata.namespace;
  delete obj.status;
  if (obj.metadata && obj.metadata.name === undefined && typeof obj.metadata.generateName === "string") {
    obj.metadata.name = generateName(obj.metadata.generateName);
  }
  const fins = obj.metadata?.finalizers ?? [];
  if (!fins.every((f) => typeof f === "string" && QUALIFIED.test(f))) return null;
  delete obj.metadata.finalizers; // ObjectMeta: not part of what apply compares here
  if (!validate(obj)) return null;
  return obj;
}

// ---- spacectl's side ----

function spacectlValidate(text) {
  const r = spawnSync(spacectl, ["validate", "-o", "json", "-f", "-"], { input: text, encoding: "utf8" });
  return { rc: r.status, out: r.stdout, err: r.stderr };
}

// ---- comparing ----

const UNIT = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 };
function durationMs(s) {
  let ms = 0;
  for (const m of s.matchAll(/([0-9.]+)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * UNIT[m[2]];
  return ms;
}
const DURATIONS = new Set(["idleTimeout", "unhealthyAfter", "keepSourceFor", "whenIdleFor"]);
function normal(v, key = "") {
  if (DURATIONS.has(key) && typeof v === "string") return durationMs(v);
  if (Array.isArray(v)) return v.map((x) => normal(x));
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, normal(v[k], k)]));
}
const same = (a, b) => JSON.stringify(normal(a)) === JSON.stringify(normal(b));
const userPart = (o) => ({ metadata: o.metadata, spec: o.spec });
// A generated name is random: checked against its pattern, then left out.
function named(row, o, who) {
  if (!row.generated) return o;
  const { name, generateName: _, ...rest } = o.metadata ?? {};
  check(generatedFrom(row.generated).test(name ?? ""),
    `${row.what}: ${who} names it ${row.generated} and 5 generated characters`, `got ${name}`);
  return { ...o, metadata: rest };
}

for (const row of rows) {
  const text = HEAD + row.yaml;
  const server = apiserver(text);
  const mine = spacectlValidate(text);
  if (row.accept) {
    check(server !== null, `${row.what}: the API server (CRD) accepts`,
      ajv.errorsText(validate.errors));
    check(server === null || same(userPart(named(row, server, "the API server")), row.accept),
      `${row.what}: the API server stores the table's object`,
      `got ${JSON.stringify(server && userPart(server))}`);
    check(mine.rc === 0, `${row.what}: spacectl accepts`, mine.err.trim());
    if (mine.rc === 0) {
      const obj = JSON.parse(mine.out);
      check(same(userPart(named(row, obj, "spacectl")), row.accept),
        `${row.what}: spacectl prints the table's object`, `got ${JSON.stringify(userPart(obj))}`);
    }
  } else {
    if (row.cel) {
      check(crdText.includes(row.cel), `${row.what}: the CRD has the rule "${row.cel}"`);
    } else {
      check(server === null, `${row.what}: the API server (CRD) rejects`);
    }
    check(mine.rc === 1, `${row.what}: spacectl rejects (exit 1)`, `exit ${mine.rc}`);
    check(mine.err.includes(row.reject), `${row.what}: spacectl names the field`,
      `want "${row.reject}" in: ${mine.err.trim()}`);
  }
}
console.log(`parity: ${rows.length} rows, ${passed} checks passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
