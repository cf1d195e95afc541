// The TypeScript client (clients/typescript) against the real spacekeeper, FerretDB
// and sandboxsim, with the official e2b JS SDK (pinned in hack/deps.sh, .deps/node).
// Compiles the client with the pinned tsc first; every answer the client receives (200 and
// errors) is validated against docs/connect-api.openapi.yaml (ajv, draft 2020-12) at the end.
// Run: node --test test/client/typescript.test.mjs
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const deps = path.join(root, '.deps', 'node');
const require = createRequire(path.join(deps, 'package.json'));
const e2b = require('e2b');
const Ajv2020 = require('ajv/dist/2020').default;
const YAML = require('yaml');
const bin = path.resolve(root, process.env.SK_BIN_DIR || 'bin');
const CONTROL = ['create', 'get', 'list', 'list_v1', 'kill', 'pause', 'connect', 'resume', 'timeout', 'refreshes'];
const ENVD = ['health', 'envd', 'init', 'process', 'files', 'filesystem'];
for (const k of Object.keys(process.env)) if (k.startsWith('E2B_')) delete process.env[k];

const dir = mkdtempSync(path.join(tmpdir(), 'sk-ts-'));
const procs = [];
let sk; // the compiled client module
let sim; let url; let httpPort; let tokenFile; let client; let failed = false;
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, MONGOC_DISABLE_SHM: '1' };
const fdb = path.join(dir, 'ferretdb');

async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function startLogged(name, argv, extraEnv = {}) {
  const log = path.join(dir, `${name}.log`);
  const p = spawn('bash', ['-c', 'exec "$@" >"$LOG" 2>&1', 'x', ...argv],
    { env: { ...env, ...extraEnv, LOG: log }, stdio: 'ignore' });
  procs.push(p);
  return log;
}

function grep(file, rx) {
  if (!existsSync(file)) return null;
  return readFileSync(file, 'utf8').match(rx);
}

async function simCall(method, p, body, headers = {}) {
  const r = await fetch(sim + p, { method, body: body ? JSON.stringify(body) : undefined, headers });
  const t = await r.text();
  return t ? JSON.parse(t) : null;
}

const simStats = async () => (await simCall('GET', '/_sim/stats')).requests;
const count = (stats, eps) => Object.entries(stats).filter(([k]) => eps.includes(k))
  .reduce((a, [, v]) => a + Object.values(v).reduce((x, y) => x + y, 0), 0);

function apply(name, extra = '') {
  const doc = `apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: ${name}\nspec:\n  userID: ${name}\n${extra}`;
  execFileSync(path.join(bin, 'spacectl'), ['apply', '-f', '-'], { input: doc, env });
  execFileSync(path.join(bin, 'spacectl'), ['wait', 'us', name, '--for=condition=Ready', '--timeout', '60s'], { env });
  return name;
}

// ---- every answer against the OpenAPI document ----
const answers = []; // [method, path, status, body]
function record(Client) {
  const call = Client.prototype.call;
  Client.prototype.call = async function (method, p, ...rest) {
    try {
      const r = await call.call(this, method, p, ...rest);
      answers.push([method, p, r.status, r.body]);
      return r;
    } catch (e) {
      if (e.status) answers.push([method, p, e.status, JSON.stringify(e.body)]);
      throw e;
    }
  };
}

function validateAnswers() {
  const doc = YAML.parse(readFileSync(path.join(root, 'docs', 'connect-api.openapi.yaml'), 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: 'https://spacekeeper.dev/connect-api.json' });
  const resolve = (ref) => ref.slice(2).split('/').reduce((n, k) => n[k.replaceAll('~1', '/')], doc);
  const routes = Object.entries(doc.paths).map(([tpl, item]) => [
    new RegExp(`^${tpl.replace(/\{[^}]+\}/g, '[^/]+')}$`), tpl, item]);
  const seen = new Set();
  for (const [method, full, status, body] of answers) {
    const p = full.split('?')[0];
    const route = routes.find(([rx]) => rx.test(p));
    let resp;
    if (!route) {
      assert.equal(status, 404, `${method} ${p}: ${status} from an undocumented route`);
      resp = resolve('#/components/responses/NotFound');
    } else {
      const op = route[2][method.toLowerCase()];
      resp = op ? op.responses[String(status)] : resolve('#/components/responses/MethodNotAllowed');
      assert.ok(resp, `${method} ${route[1]}: status ${status} is not documented`);
      if (resp.$ref) resp = resolve(resp.$ref);
    }
    seen.add(status);
    if (!resp.content) continue;
    const ref = resp.content['application/json'].schema.$ref;
    const validate = ajv.getSchema(`https://spacekeeper.dev/connect-api.json${ref}`);
    assert.ok(validate(JSON.parse(body)), `${method} ${p} ${status}: ${ajv.errorsText(validate.errors)}: ${body}`);
  }
  return seen;
}

before(async () => {
  const out = path.join(dir, 'dist');
  execFileSync(path.join(deps, 'node_modules', '.bin', 'tsc'), ['-p', path.join(root, 'clients', 'typescript'),
    '--typeRoots', path.join(deps, 'node_modules', '@types'), '--types', 'node', '--outDir', out]);
  sk = await import(pathToFileURL(path.join(out, 'index.js')).href);
  record(sk.Client);
  env.SPACEKEEPER_MONGODB_URI = execFileSync(path.join(root, 'hack', 'ferretdb.sh'), ['start', fdb], { env })
    .toString().trim();
  const simLog = startLogged('sandboxsim', [path.join(bin, 'sandboxsim'), '--listen', '127.0.0.1:0']);
  sim = (await waitFor(() => grep(simLog, /listening on (http:\/\/\S+)/), 30000, 'sandboxsim'))[1].replace(/\/$/, '');
  tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  const cfg = path.join(dir, 'config.yaml');
  writeFileSync(cfg, `apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\nproviders:\n  - name: default\n    type: e2b\n    apiURL: ${sim}\n    sandboxURL: ${sim}\n    apiKeyEnv: E2B_API_KEY\n    sandboxTimeout: 1h\ncontroller:\n  workers: 8\n  resyncPeriod: 5s\n  listen: 127.0.0.1:0\n`);
  const log = startLogged('spacekeeper', [path.join(bin, 'spacekeeper'), '--config', cfg, '--mongodb-uri',
    env.SPACEKEEPER_MONGODB_URI, '--poll', '200ms', '--connect-listen', '127.0.0.1:0',
    '--connect-token-file', tokenFile], { E2B_API_KEY: `e2b_${'0'.repeat(40)}` });
  const m = await waitFor(() => grep(log, /msg="controller started".* http_port=(\d+) connect_port=(\d+)/), 60000, 'spacekeeper');
  await waitFor(async () => (await fetch(`http://127.0.0.1:${m[1]}/readyz`).catch(() => ({}))).status === 200, 60000, '/readyz');
  url = `http://127.0.0.1:${m[2]}`;
  httpPort = m[1];
  client = new sk.Client(url, { tokenFile, sdk: e2b });
});

after(() => {
  client?.close();
  for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
  try {
    execFileSync(path.join(root, 'hack', 'ferretdb.sh'), ['clean', fdb], { env, stdio: 'ignore' });
  } catch { /* already gone */ }
  if (failed) {
    const keep = path.join(root, 'build', 'test-out', 'client-ts');
    execFileSync('mkdir', ['-p', keep]);
    for (const f of ['sandboxsim.log', 'spacekeeper.log', 'config.yaml']) {
      if (existsSync(path.join(dir, f))) writeFileSync(path.join(keep, f), readFileSync(path.join(dir, f)));
    }
    console.error(`typescript client: logs kept in ${keep}`);
  }
  rmSync(dir, { recursive: true, force: true });
});

function t(name, fn) {
  test(name, async (ctx) => {
    try {
      await fn(ctx);
    } catch (e) {
      failed = true;
      throw e;
    }
  });
}

t('sandbox(user) is an e2b Sandbox: commands and files work', async () => {
  const user = apply('tsalice');
  const sbx = await client.sandbox(user);
  assert.ok(sbx instanceof e2b.Sandbox);
  assert.equal(sbx.answer.userID, user);
  assert.equal(sbx.sandboxId, sbx.answer.sandboxID);
  const r = await sbx.commands.run('echo hello');
  assert.equal(r.stdout, 'hello\n');
  await sbx.files.write('/home/user/ts.txt', 'from ts');
  assert.equal(await sbx.files.read('/home/user/ts.txt'), 'from ts');
  await assert.rejects(() => sbx.commands.run('false'), e2b.CommandExitError);
  await assert.rejects(() => sbx.setTimeout(1000), sk.ControlPlaneNotAvailable);
});

t('attach on the fast path: no control-plane call, no envd call', async () => {
  const user = apply('tsfast');
  await waitFor(async () => (await client.connect(user)).path === 'fast', 20000, 'fast path');
  const windows = [];
  for (let i = 0; i < 5; i++) {
    await simCall('POST', '/_sim/stats/reset');
    const sbx = await client.sandbox(user);
    assert.equal(sbx.answer.path, 'fast');
    const s = await simStats();
    windows.push([count(s, CONTROL), count(s, ENVD)]);
    if (windows.at(-1)[0] === 0 && windows.at(-1)[1] === 0) break;
  }
  assert.equal(Math.min(...windows.map((w) => w[0])), 0, JSON.stringify(windows));
  assert.equal(Math.min(...windows.map((w) => w[1])), 0, JSON.stringify(windows));
});

t('typed errors: NotFound, Unauthorized, ModePaused; the plain answer without the SDK', async () => {
  await assert.rejects(() => client.sandbox('nobody-has-this-user'), sk.NotFound);
  const user = apply('tsplain');
  await assert.rejects(() => new sk.Client(url, { sdk: e2b }).sandbox(user), sk.Unauthorized);
  const a = await client.sandbox(user, { sdk: false });
  assert.equal(a.sandboxID.length > 0, true);
  const r = await fetch(`${a.envdURL}/files?path=/home/user/p.txt`, {
    method: 'POST', body: 'plain', headers: { ...sk.envdHeaders(a), 'Content-Type': 'application/octet-stream' },
  });
  assert.ok(r.ok, `upload ${r.status}`);
  const back = await fetch(`${a.envdURL}/files?path=/home/user/p.txt`, { headers: sk.envdHeaders(a) });
  assert.equal(await back.text(), 'plain');
  const doc = 'apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: tspaused\nspec:\n  userID: tspaused\n  mode: Paused\n';
  execFileSync(path.join(bin, 'spacectl'), ['apply', '-f', '-'], { input: doc, env });
  await waitFor(async () => {
    try {
      await client.sandbox('tspaused');
    } catch (e) {
      if (e instanceof sk.ModePaused) return true;
      if (!(e instanceof sk.NotFound)) throw e;
    }
    return false;
  }, 20000, 'ModePaused');
});

t('every reason of the OpenAPI error enum has its class; 429s are retried', () => {
  const doc = YAML.parse(readFileSync(path.join(root, 'docs', 'connect-api.openapi.yaml'), 'utf8'));
  const reasons = doc.components.schemas.Error.properties.reason.enum;
  for (const reason of reasons) {
    const cls = sk[reason];
    assert.ok(cls, `${reason}: no exported class`);
    assert.ok(cls.prototype instanceof sk.SpacekeeperError, reason);
    assert.equal(sk.errorFor(400, { reason, message: 'm' }).constructor, cls, reason);
  }
  assert.deepEqual(Object.keys(sk.errorsByReason).sort(), [...reasons].sort());
  for (const r of ['TooManyConnects', 'QuotaExceeded']) assert.ok(sk.RETRIABLE_REASONS.has(r), r);
  for (const r of ['NotFound', 'UnknownEndpoint', 'Unauthorized', 'DataPlaneUnreachable']) {
    assert.ok(!sk.RETRIABLE_REASONS.has(r), r);
  }
  assert.ok(!(sk.errorFor(404, { reason: 'UnknownEndpoint' }) instanceof sk.NotFound));
});

t('the URL with or without /v1; an unknown endpoint is not an unknown user; no token vs a wrong one', async () => {
  const user = apply('tsurl');
  const c = new sk.Client(`${url}/v1/`, { tokenFile, sdk: e2b });
  assert.equal((await c.sandbox(user, { sdk: false })).userID, user);
  c.close();
  const m = new sk.Client(`http://127.0.0.1:${httpPort}`, { tokenFile });
  const e = await m.sandbox(user, { sdk: false }).then(() => null, (err) => err);
  m.close();
  assert.ok(e instanceof sk.UnknownEndpoint && !(e instanceof sk.NotFound), String(e));
  assert.match(e.message, /connect listener/);
  const none = await new sk.Client(url).sandbox(user, { sdk: false }).then(() => null, (err) => err);
  const wrong = await new sk.Client(url, { token: 'not-the-token' }).sandbox(user, { sdk: false })
    .then(() => null, (err) => err);
  assert.ok(none instanceof sk.Unauthorized && /: no token/.test(none.message), String(none));
  assert.ok(wrong instanceof sk.Unauthorized && /: token not accepted/.test(wrong.message), String(wrong));
});

t('busy: heartbeats while the work runs, none after', async () => {
  const user = apply('tsbusy');
  let beatsInside;
  await client.busy(user, async () => {
    await waitFor(() => client.stats().heartbeats >= 3, 5000, 'three heartbeats');
    beatsInside = client.stats().heartbeats;
  }, { intervalMs: 200 });
  const after = client.stats().heartbeats;
  assert.ok(after >= beatsInside);
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(client.stats().heartbeats, after, 'heartbeats after the block');
});

t('a gateway error instead of the command stream is a connection-level failure; an exit code is not', async () => {
  const user = apply('tsclass');
  const sbx = e2b.Sandbox;
  const a = await client.connect(user);
  const bare = new sbx({ sandboxId: a.sandboxID, envdVersion: a.envdVersion ?? '0.2.0', sandboxUrl: a.envdURL });
  for (const status of [502, 503, 504]) {
    await simCall('POST', '/_sim/faults', { errors: { process: { status, count: 1 } } });
    const e = await bare.commands.run('echo x').then(() => null, (err) => err);
    assert.ok(e, `no error for ${status}`);
    assert.ok(sk.connectionLevel(e), `${status}: ${e}`);
  }
  const e = await bare.commands.run('false').then(() => null, (err) => err);
  assert.ok(e instanceof e2b.CommandExitError);
  assert.equal(sk.connectionLevel(e), false);
  await simCall('DELETE', '/_sim/faults');
});

t('a failed envd call is reported and retried once on the replacement', async (ctx) => {
  const name = 'tsreplace';
  execFileSync(path.join(bin, 'spacectl'), ['apply', '-f', '-'], {
    input: `apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: ${name}\nspec:\n  userID: ${name}\n  health: {remediation: Replace}\n`, env,
  });
  execFileSync(path.join(bin, 'spacectl'), ['wait', 'us', name, '--for=condition=Ready', '--timeout', '60s'], { env });
  const sbx = await client.sandbox(name);
  const old = sbx.sandboxId;
  await simCall('POST', '/_sim/faults', { unreachable: [old] });
  try {
    const r = await sbx.commands.run('echo after');
    assert.equal(r.stdout, 'after\n');
    assert.notEqual(sbx.sandboxId, old);
    assert.equal(sbx.answer.path, 'replace');
  } finally {
    await simCall('DELETE', '/_sim/faults');
  }
});

t('every answer received validates against the OpenAPI document', () => {
  assert.ok(answers.length >= 10, `only ${answers.length} answers`);
  const seen = validateAnswers();
  for (const status of [200, 204, 401, 404]) assert.ok(seen.has(status), `no ${status} seen: ${[...seen]}`);
});
