// Conformance of `sandboxsim --flavor daytona` with Daytona's official TypeScript
// SDK (@daytonaio/sdk, pinned in hack/deps.sh, installed under .deps/node).
// Starts its own simulator on a free port with an API key, points the SDK at
// it (apiUrl <sim>/api), and checks: create with labels and the three
// intervals, get by ID and by name, list by labels across pages, stop, start,
// archive then start, set labels, set the auto-stop interval, process
// executeCommand, a file upload/list/download round trip through the toolbox,
// delete, get after delete (DaytonaNotFoundError) and a wrong key
// (DaytonaAuthenticationError). Prints "daytona-sdk: N passed, M failed".
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(path.join(root, '.deps', 'node', 'package.json'));
const { Daytona, DaytonaNotFoundError, DaytonaAuthenticationError } = require('@daytonaio/sdk');

const binDir = path.resolve(root, process.env.SK_BIN_DIR || 'bin');
const KEY = 'dtn_conformance_key';
let sim = null;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function startSim() {
  const port = await freePort();
  const args = ['--listen', `127.0.0.1:${port}`, '--flavor', 'daytona', '--api-key', KEY, '--seed', '7'];
  sim = spawn(path.join(binDir, 'sandboxsim'), args, { stdio: ['ignore', 'inherit', 'pipe'] });
  let log = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandboxsim did not start: ${log}`)), 10000);
    sim.stderr.on('data', (d) => {
      log += d;
      if (log.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    sim.on('exit', (code) => reject(new Error(`sandboxsim exited (${code}): ${log}`)));
  });
  sim.stderr.on('data', (d) => process.stderr.write(d));
  return `http://127.0.0.1:${port}`;
}

function stopSim() {
  if (sim && sim.exitCode === null) sim.kill('SIGTERM');
}

process.on('exit', stopSim);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    stopSim();
    process.exit(1);
  });
}

const results = { passed: 0, failed: 0 };
async function check(name, fn) {
  try {
    await fn();
    results.passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    results.failed++;
    console.log(`FAIL ${name}\n     ${err && err.stack ? err.stack : err}`);
  }
}

async function collect(iter) {
  const out = [];
  for await (const s of iter) out.push(s);
  return out;
}

async function main() {
  const base = await startSim();
  for (const v of ['DAYTONA_API_KEY', 'DAYTONA_API_URL', 'DAYTONA_JWT_TOKEN', 'DAYTONA_TARGET']) delete process.env[v];
  const daytona = new Daytona({ apiKey: KEY, apiUrl: `${base}/api`, target: 'us' });
  const tag = `conf${process.pid}`;
  const labels = { user_id: tag, userspace: 'alice', managed_by: 'spacekeeper' };
  const name = `sk-${tag}`;
  let sbx;

  await check('create with labels and the three intervals', async () => {
    sbx = await daytona.create({
      name,
      snapshot: 'base',
      labels,
      envVars: { GREETING: 'hello' },
      autoStopInterval: 30,
      autoArchiveInterval: 60,
      autoDeleteInterval: 120,
    });
    assert.match(sbx.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(sbx.state, 'started');
    assert.equal(sbx.name, name);
    assert.equal(sbx.autoStopInterval, 30);
    assert.equal(sbx.autoArchiveInterval, 60);
    assert.equal(sbx.autoDeleteInterval, 120);
    assert.equal(sbx.kvm, false);
    assert.match(sbx.toolboxProxyUrl, /^http:\/\/127\.0\.0\.1:\d+\/toolbox$/);
    // the SDK adds its language label to the ones asked for
    for (const [k, v] of Object.entries(labels)) assert.equal(sbx.labels[k], v);
  });

  await check('get by ID and by name', async () => {
    const byId = await daytona.get(sbx.id);
    assert.equal(byId.id, sbx.id);
    assert.equal(byId.snapshot, 'base');
    assert.equal(byId.env.GREETING, 'hello');
    const byName = await daytona.get(name);
    assert.equal(byName.id, sbx.id);
  });

  await check('list by labels across pages (limit 2, cursor)', async () => {
    const group = `grp${process.pid}`;
    const want = [];
    for (let i = 0; i < 5; i++) want.push((await daytona.create({ labels: { group, n: String(i) } })).id);
    await daytona.create({ labels: { group: 'other' } });
    const got = (await collect(daytona.list({ labels: { group }, limit: 2 }))).map((s) => s.id);
    assert.equal(new Set(got).size, 5, 'no duplicates across pages');
    assert.deepEqual([...got].sort(), [...want].sort());
    assert.deepEqual(got, [...want].reverse(), 'newest first');
    const mine = await collect(daytona.list({ labels: { user_id: tag } }));
    assert.deepEqual(mine.map((s) => s.id), [sbx.id]);
  });

  await check('stop, then list by state', async () => {
    await sbx.stop();
    assert.equal(sbx.state, 'stopped');
    assert.equal((await daytona.get(sbx.id)).state, 'stopped');
    const stopped = await collect(daytona.list({ labels: { user_id: tag }, states: ['stopped'] }));
    assert.deepEqual(stopped.map((s) => s.id), [sbx.id]);
    const started = await collect(daytona.list({ labels: { user_id: tag }, states: ['started'] }));
    assert.equal(started.length, 0);
  });

  await check('start', async () => {
    await sbx.start();
    assert.equal(sbx.state, 'started');
    assert.equal((await daytona.get(sbx.id)).state, 'started');
  });

  await check('process.executeCommand("echo hi")', async () => {
    const res = await sbx.process.executeCommand('echo hi');
    assert.equal(res.exitCode, 0);
    assert.equal(res.result.trim(), 'hi');
    const env = await sbx.process.executeCommand('printenv GREETING');
    assert.equal(env.result.trim(), 'hello');
    const missing = await sbx.process.executeCommand('no-such-tool');
    assert.notEqual(missing.exitCode, 0);
  });

  await check('file upload, list, download round trip through the toolbox', async () => {
    const body = Buffer.from(`line one\nline two ${tag}\n`);
    await sbx.fs.uploadFile(body, '/home/daytona/work/notes.txt');
    const files = await sbx.fs.listFiles('/home/daytona/work');
    assert.deepEqual(files.map((f) => [f.name, f.isDir, f.size]), [['notes.txt', false, body.length]]);
    const back = await sbx.fs.downloadFile('/home/daytona/work/notes.txt');
    assert.ok(Buffer.isBuffer(back));
    assert.equal(back.toString(), body.toString());
    const cat = await sbx.process.executeCommand('cat work/notes.txt');
    assert.equal(cat.result, body.toString());
    await assert.rejects(sbx.fs.downloadFile('/home/daytona/work/absent.txt'));
    const bin = Buffer.from([0, 255, 13, 10, 45, 45, 0, 1]); // NULs, CRLF, "--"
    await sbx.fs.uploadFile(bin, 'work/blob.bin');
    assert.deepEqual(await sbx.fs.downloadFile('/home/daytona/work/blob.bin'), bin);
  });

  await check('createFolder, setFilePermissions, getFileDetails, a symlink by command', async () => {
    await sbx.fs.createFolder('/home/daytona/work/private', '700');
    await sbx.fs.setFilePermissions('/home/daytona/work/notes.txt', { mode: '600' });
    const link = await sbx.process.executeCommand("ln -s notes.txt '/home/daytona/work/latest'");
    assert.equal(link.exitCode, 0);
    const dir = await sbx.fs.getFileDetails('/home/daytona/work/private');
    assert.equal(dir.isDir, true);
    assert.equal(dir.permissions, '0700');
    const files = await sbx.fs.listFiles('/home/daytona/work');
    const byName = Object.fromEntries(files.map((f) => [f.name, f]));
    assert.equal(byName['notes.txt'].mode, '-rw-------');
    assert.equal(byName.latest.mode[0], 'L', 'Go FileMode string of a symlink');
    assert.equal((await sbx.process.executeCommand('readlink work/latest')).result, 'notes.txt\n');
    assert.equal((await sbx.fs.downloadFile('/home/daytona/work/latest')).toString(),
      (await sbx.fs.downloadFile('/home/daytona/work/notes.txt')).toString());
  });

  await check('archive (from stopped), then start keeps the files', async () => {
    await sbx.stop();
    await sbx.archive();
    assert.equal(sbx.state, 'archived');
    const archived = await collect(daytona.list({ labels: { user_id: tag }, states: ['archived'] }));
    assert.deepEqual(archived.map((s) => s.id), [sbx.id]);
    await assert.rejects(sbx.process.executeCommand('echo hi'), (err) => err.statusCode === 400);
    await sbx.start();
    assert.equal((await daytona.get(sbx.id)).state, 'started');
    const back = await sbx.fs.downloadFile('/home/daytona/work/notes.txt');
    assert.match(back.toString(), new RegExp(tag));
  });

  await check('set labels', async () => {
    const next = { ...labels, userspace: 'bob' };
    const got = await sbx.setLabels(next);
    assert.deepEqual(got, next);
    assert.deepEqual((await daytona.get(sbx.id)).labels, next);
    const bob = await collect(daytona.list({ labels: { userspace: 'bob', user_id: tag } }));
    assert.deepEqual(bob.map((s) => s.id), [sbx.id]);
  });

  await check('set the auto-stop interval', async () => {
    await sbx.setAutostopInterval(5);
    assert.equal((await daytona.get(sbx.id)).autoStopInterval, 5);
    await sbx.setAutostopInterval(0);
    assert.equal((await daytona.get(sbx.id)).autoStopInterval, 0);
  });

  await check('delete, then get is DaytonaNotFoundError', async () => {
    await sbx.delete();
    await assert.rejects(daytona.get(sbx.id), (err) => err instanceof DaytonaNotFoundError && err.statusCode === 404);
    await assert.rejects(daytona.get(name), DaytonaNotFoundError);
    assert.equal((await collect(daytona.list({ labels: { user_id: tag } }))).length, 0);
  });

  await check('a wrong key is DaytonaAuthenticationError', async () => {
    const wrong = new Daytona({ apiKey: 'dtn_wrong', apiUrl: `${base}/api`, target: 'us' });
    await assert.rejects(wrong.get('anything'), (err) => err instanceof DaytonaAuthenticationError && err.statusCode === 401);
    await assert.rejects(collect(wrong.list()), DaytonaAuthenticationError);
  });
}

let code = 0;
try {
  await main();
} catch (err) {
  results.failed++;
  console.log(`FAIL setup\n     ${err && err.stack ? err.stack : err}`);
} finally {
  stopSim();
}
console.log(`daytona-sdk: ${results.passed} passed, ${results.failed} failed`);
if (results.failed > 0) code = 1;
process.exit(code);
