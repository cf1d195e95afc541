// CRD conformance: the openAPIV3Schema in crds/spacekeeper.dev_userspaces.yaml
// must accept every example in manifests/examples/ and reject every document
// in test/data/bad/ (the C validator's table, see test/unit/check_api.c),
// except the ones marked "# crd: cel": rules OpenAPI cannot express, which the
// CRD states as x-kubernetes-validations (CEL) rules instead.
//
// The schema is translated for ajv the way the apiserver reads it:
// x-kubernetes-* and nullable are dropped, objects with properties and no
// additionalProperties are closed (strict field validation), and status and
// ObjectMeta beyond metadata.name are left out, as the C validator ignores
// them (labels and annotations are ObjectMeta, checked by the apiserver itself).
//
// Usage: node test/conformance/crd_schema.mjs   (any cwd)
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(join(root, ".deps", "node", "package.json"));
const AjvModule = require("ajv");
const Ajv = AjvModule.default ?? AjvModule;
const YAML = require("yaml");

let passed = 0;
let failed = 0;
function check(ok, what, detail = "") {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL ${what}${detail ? "\n  " + detail : ""}`);
  }
}

function loadDocs(path) {
  const docs = YAML.parseAllDocuments(readFileSync(path, "utf8"));
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${path}: ${d.errors[0].message}`);
  }
  return docs.map((d) => d.toJS()).filter((v) => v !== null && v !== undefined);
}

// OpenAPI v3 (Kubernetes structural schema) -> JSON Schema draft-07 for ajv.
function translate(s) {
  if (Array.isArray(s)) return s.map(translate);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-") || k === "nullable" || k === "format") continue;
    if (k === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(v).map(([name, sub]) => [name, translate(sub)]));
    } else {
      out[k] = translate(v);
    }
  }
  if (s.nullable === true && typeof out.type === "string") out.type = [out.type, "null"];
  if (out.type === "object" && out.properties && out.additionalProperties === undefined &&
      !s["x-kubernetes-preserve-unknown-fields"]) {
    out.additionalProperties = false;
  }
  return out;
}

// What the C validator ignores: status and store-owned ObjectMeta.
function userFields(doc) {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return doc;
  const copy = { ...doc };
  delete copy.status;
  if (copy.metadata && typeof copy.metadata === "object" && !Array.isArray(copy.metadata)) {
    copy.metadata = "name" in copy.metadata ? { name: copy.metadata.name } : {};
  }
  return copy;
}

const crdPath = join(root, "crds", "spacekeeper.dev_userspaces.yaml");
const [crd] = loadDocs(crdPath);

// The CRD itself.
check(crd.apiVersion === "apiextensions.k8s.io/v1", "crd apiVersion");
check(crd.kind === "CustomResourceDefinition", "crd kind");
check(crd.metadata?.name === "userspaces.spacekeeper.dev", "crd metadata.name");
check(crd.spec?.group === "spacekeeper.dev", "crd group");
check(crd.spec?.names?.kind === "UserSpace" && crd.spec?.names?.plural === "userspaces" &&
  crd.spec?.names?.shortNames?.includes("us"), "crd names");
const versions = crd.spec?.versions ?? [];
const v1alpha1 = versions.find((v) => v.name === "v1alpha1");
check(v1alpha1 && v1alpha1.served && v1alpha1.storage, "crd v1alpha1 served and storage");
check(v1alpha1?.subresources?.status !== undefined, "crd status subresource");
const columns = (v1alpha1?.additionalPrinterColumns ?? []).map((c) => c.name);
for (const name of ["UserID", "Mode", "Phase", "Sandbox", "Ready", "Age"]) {
  check(columns.includes(name), `crd printer column ${name}`);
}

const schema = translate(v1alpha1.schema.openAPIV3Schema);
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
const errorText = () => ajv.errorsText(validate.errors, { separator: "; " });

// Every example passes.
const exampleDir = join(root, "manifests", "examples");
let examples = 0;
for (const name of readdirSync(exampleDir).sort()) {
  if (!/\.(ya?ml|json)$/.test(name)) continue;
  for (const doc of loadDocs(join(exampleDir, name))) {
    examples++;
    check(validate(userFields(doc)), `example ${name} (${doc?.metadata?.name}) must pass`,
      validate.errors ? errorText() : "");
  }
}
check(examples >= 4, "at least 4 example documents", `found ${examples}`);

// Every bad document fails, unless its rule is CEL-only.
const badDir = join(root, "test", "data", "bad");
let bad = 0;
let skipped = 0;
for (const name of readdirSync(badDir).sort()) {
  if (!/\.ya?ml$/.test(name)) continue;
  const text = readFileSync(join(badDir, name), "utf8");
  const header = text.split("\n").filter((l) => l.startsWith("#"));
  check(header[0]?.startsWith("# expect: "), `bad ${name} has an # expect: line`);
  if (header.some((l) => l.trim() === "# crd: cel")) {
    skipped++;
    continue;
  }
  const docs = loadDocs(join(badDir, name));
  check(docs.length === 1, `bad ${name} holds one document`);
  bad++;
  check(!validate(userFields(docs[0])), `bad ${name} must fail the CRD schema`,
    `expected: ${header[0]}`);
}
check(bad >= 10, "at least 10 bad documents checked", `found ${bad}`);
console.log(`crd: ${examples} examples, ${bad} bad documents, ${skipped} CEL-only skipped`);
console.log(`crd: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
