// Conformance of sandboxsim with the official e2b JS SDK (pinned in hack/deps.sh,
// installed under .deps/node). Starts its own simulator on a free port, points
// the SDK at it with E2B_API_URL / E2B_SANDBOX_URL / a dummy E2B_API_KEY, and
// checks create, paginated metadata list, getInfo, pause twice, connect,
// setTimeout, isRunning and kill twice, and commands.run against the envd
// process API: create envs, per-command envs, exit codes, and the env lost on
// resume until envd POST /init re-asserts it; and sandbox.files: write (one
// and several, multipart), read (text, bytes), list (depth, types, symlink
// target, mode), makeDir, exists, getInfo, kept across pause/resume; team
// volumes (Volume.create/list/getInfo/destroy, volumeMounts at create, files
// kept across sandboxes), persistent snapshots (createSnapshot, listSnapshots
// pages, a create from one, deleteSnapshot), fork and getMetrics. Prints
// "e2b-sdk: N passed, M failed".
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(path.join(root, '.deps', 'node', 'package.json'));
const { Sandbox, SandboxNotFoundError, NotFoundError, CommandExitError, Volume } = require('e2b');

const binDir = path.resolve(root, process.env.SK_BIN_DIR || 'bin');
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
  sim = spawn(path.join(binDir, 'sandboxsim'), ['--listen', `127.0.0.1:${port}`, '--seed', '7'], {
    stdio: ['ignore', 'inherit', 'pipe'],
  });
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

async function listAll(query, limit) {
  const pager = Sandbox.list({ query, limit });
  const pages = [];
  while (pager.hasNext) pages.push(await pager.nextItems());
  return pages;
}

async function main() {
  const base = await startSim();
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = 'e2b_' + '0'.repeat(40);
  delete process.env.E2B_DEBUG;
  const tag = `conf${process.pid}`;
  const meta = { user_id: tag, userspace: 'alice', odd: 'x y&z=1' };
  let sbx;

  await check('create with metadata', async () => {
    sbx = await Sandbox.create('base', { metadata: meta, timeoutMs: 60_000 });
    assert.match(sbx.sandboxId, /^i[a-z0-9]{20}$/);
  });

  await check('getInfo fields', async () => {
    const info = await Sandbox.getInfo(sbx.sandboxId);
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.equal(info.templateId, 'base');
    assert.deepEqual(info.metadata, meta);
    assert.equal(info.state, 'running');
    assert.ok(info.startedAt instanceof Date && !isNaN(info.startedAt));
    const ttl = info.endAt - info.startedAt;
    assert.ok(ttl > 55_000 && ttl <= 61_000, `ttl ${ttl}`);
    assert.ok(info.cpuCount >= 1 && info.memoryMB >= 128);
    assert.equal(info.lifecycle?.onTimeout, 'kill');
  });

  await check('list: metadata with escaped characters matches exactly one', async () => {
    const pages = await listAll({ metadata: { odd: 'x y&z=1', user_id: tag } }, 10);
    assert.equal(pages.length, 1);
    assert.deepEqual(pages[0].map((s) => s.sandboxId), [sbx.sandboxId]);
    assert.deepEqual(pages[0][0].metadata, meta);
  });

  await check('list: metadata filter across three pages', async () => {
    const group = `grp${process.pid}`;
    const want = [];
    for (let i = 0; i < 7; i++) {
      const s = await Sandbox.create('base', { metadata: { group, n: String(i) } });
      want.push(s.sandboxId);
    }
    const pages = await listAll({ metadata: { group } }, 3);
    assert.deepEqual(pages.map((p) => p.length), [3, 3, 1]);
    const got = pages.flat().map((s) => s.sandboxId);
    assert.equal(new Set(got).size, 7, 'no duplicates across pages');
    assert.deepEqual([...got].sort(), [...want].sort());
    const started = pages.flat().map((s) => s.startedAt.getTime());
    for (let i = 1; i < started.length; i++) assert.ok(started[i - 1] >= started[i], 'newest first');
  });

  await check('isRunning probes envd /health', async () => {
    assert.equal(await sbx.isRunning(), true);
  });

  await check('pause, then pause again reports already paused', async () => {
    assert.equal(await sbx.pause(), true);
    assert.equal(await Sandbox.pause(sbx.sandboxId), false);
    const info = await Sandbox.getInfo(sbx.sandboxId);
    assert.equal(info.state, 'paused');
    assert.equal(await sbx.isRunning(), false);
    const pages = await listAll({ metadata: { user_id: tag }, state: ['paused'] }, 5);
    assert.deepEqual(pages.flat().map((s) => s.sandboxId), [sbx.sandboxId]);
    const running = await listAll({ metadata: { user_id: tag }, state: ['running'] }, 5);
    assert.equal(running.flat().length, 0);
  });

  await check('connect resumes a paused sandbox', async () => {
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
    assert.equal(again.sandboxId, sbx.sandboxId);
    const info = await Sandbox.getInfo(sbx.sandboxId);
    assert.equal(info.state, 'running');
    assert.deepEqual(info.metadata, meta);
    assert.equal(await again.isRunning(), true);
  });

  await check('setTimeout moves endAt', async () => {
    await sbx.setTimeout(120_000);
    const info = await Sandbox.getInfo(sbx.sandboxId);
    const left = info.endAt.getTime() - Date.now();
    assert.ok(left > 110_000 && left <= 121_000, `left ${left}`);
    await sbx.setTimeout(30_000);
    const shorter = await Sandbox.getInfo(sbx.sandboxId);
    assert.ok(shorter.endAt < info.endAt, 'setTimeout can shorten');
  });

  await check('kill, then kill again returns false', async () => {
    assert.equal(await sbx.kill(), true);
    assert.equal(await Sandbox.kill(sbx.sandboxId), false);
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId), (err) => err instanceof NotFoundError);
    await assert.rejects(Sandbox.pause(sbx.sandboxId), (err) => err instanceof SandboxNotFoundError);
    assert.equal(await sbx.isRunning(), false);
  });

  await commands(base);
  await files();
}

// sandbox.files against the simulator's file tree (envd /files and filesystem.Filesystem).
async function files() {
  let sbx;

  await check('files.write (multipart) then files.read, text and bytes', async () => {
    sbx = await Sandbox.create('base', { timeoutMs: 60_000 });
    const info = await sbx.files.write('/home/user/ws/notes/a.txt', 'hello files');
    assert.equal(info.path, '/home/user/ws/notes/a.txt');
    assert.equal(info.name, 'a.txt');
    assert.equal(await sbx.files.read('/home/user/ws/notes/a.txt'), 'hello files');
    const bin = new Uint8Array(70_000).map((_, i) => (i * 31) & 0xff);
    await sbx.files.write('ws/bin.dat', bin.buffer); // relative: under /home/user
    const back = await sbx.files.read('/home/user/ws/bin.dat', { format: 'bytes' });
    assert.deepEqual(Buffer.from(back), Buffer.from(bin));
  });

  await check('files.write of several files, files.list with depth and types', async () => {
    await sbx.files.write([
      { path: '/home/user/ws/m/one.txt', data: '1' },
      { path: '/home/user/ws/m/two.txt', data: '22' },
    ]);
    await sbx.commands.run("ln -s notes/a.txt '/home/user/ws/link'");
    await sbx.commands.run('chmod 0600 /home/user/ws/m/two.txt');
    const top = await sbx.files.list('/home/user/ws');
    assert.deepEqual(top.map((e) => e.name).sort(), ['bin.dat', 'link', 'm', 'notes']);
    const link = top.find((e) => e.name === 'link');
    assert.equal(link.type, 'symlink');
    assert.equal(link.symlinkTarget, 'notes/a.txt');
    assert.equal(top.find((e) => e.name === 'm').type, 'dir');
    const deep = await sbx.files.list('/home/user/ws', { depth: 3 });
    const two = deep.find((e) => e.path === '/home/user/ws/m/two.txt');
    assert.equal(two.type, 'file');
    assert.equal(two.size, 2);
    assert.equal(two.mode, 0o600);
    assert.equal(two.permissions, '-rw-------');
    assert.ok(two.modifiedTime instanceof Date && !isNaN(two.modifiedTime));
    assert.equal(deep.length, 7);
  });

  await check('files.makeDir, files.exists, files.getInfo', async () => {
    assert.equal(await sbx.files.makeDir('/home/user/ws/new/deeper'), true);
    assert.equal(await sbx.files.makeDir('/home/user/ws/new/deeper'), false, 'already exists');
    assert.equal(await sbx.files.exists('/home/user/ws/new/deeper'), true);
    assert.equal(await sbx.files.exists('/home/user/ws/nope'), false);
    const info = await sbx.files.getInfo('/home/user/ws/notes/a.txt');
    assert.equal(info.type, 'file');
    assert.equal(info.size, 11);
    await assert.rejects(sbx.files.read('/home/user/ws/nope'), (err) => err instanceof NotFoundError);
  });

  await check('files survive pause/resume and die with kill', async () => {
    assert.equal(await sbx.pause(), true);
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
    assert.equal(await again.files.read('/home/user/ws/notes/a.txt'), 'hello files');
    assert.equal(await again.kill(), true);
    const other = await Sandbox.create('base', { timeoutMs: 60_000 });
    assert.equal(await other.files.exists('/home/user/ws'), false);
    await other.kill();
  });
}

// envd POST /init the way the controller re-asserts spec.env after a resume.
async function initEnv(base, sbx, envVars) {
  const headers = {
    'Content-Type': 'application/json',
    'E2b-Sandbox-Id': sbx.sandboxId,
    'E2b-Sandbox-Port': '49983',
  };
  if (sbx.envdAccessToken) headers['X-Access-Token'] = sbx.envdAccessToken;
  const res = await fetch(`${base}/init`, { method: 'POST', headers, body: JSON.stringify({ envVars }) });
  return res.status;
}

async function simStats(base) {
  return (await fetch(`${base}/_sim/stats`)).json();
}

async function commands(base) {
  let sbx;

  await check('commands.run sees the create envs', async () => {
    sbx = await Sandbox.create('base', { envs: { FOO: 'bar' }, timeoutMs: 60_000 });
    const r = await sbx.commands.run('echo $FOO');
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'bar\n');
    assert.equal(r.stderr, '');
  });

  await check('commands.run: per-command envs override, defaults underneath', async () => {
    assert.equal((await sbx.commands.run('echo $FOO', { envs: { FOO: 'cmd' } })).stdout, 'cmd\n');
    assert.equal((await sbx.commands.run('printenv HOME FOO')).stdout, '/home/user\nbar\n');
    const env = (await sbx.commands.run('env', { envs: { ZED: '1' } })).stdout.split('\n');
    assert.ok(env.includes('FOO=bar') && env.includes('ZED=1') && env.includes('USER=user'), env);
  });

  await check('commands.run: printenv NOPE exits 1', async () => {
    await assert.rejects(sbx.commands.run('printenv NOPE'), (err) => {
      assert.ok(err instanceof CommandExitError, String(err));
      assert.equal(err.exitCode, 1);
      assert.equal(err.stdout, '');
      return true;
    });
  });

  await check('commands.run: an unknown command exits 127', async () => {
    await assert.rejects(sbx.commands.run('frobnicate --now'), (err) => {
      assert.ok(err instanceof CommandExitError, String(err));
      assert.equal(err.exitCode, 127);
      assert.match(err.stderr, /frobnicate: command not found/);
      return true;
    });
  });

  await check('after pause/resume the create env is gone until POST /init', async () => {
    assert.equal(await sbx.pause(), true);
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
    assert.equal((await again.commands.run('echo $FOO')).stdout, '\n', 'bash -l -c lost it');
    const before = (await simStats(base)).requests.init?.['204'] ?? 0;
    assert.equal(await initEnv(base, again, { FOO: 'bar' }), 204);
    assert.equal((await simStats(base)).requests.init['204'], before + 1);
    assert.equal((await again.commands.run('echo $FOO')).stdout, 'bar\n');
  });

  await check('/init survives the next pause/resume', async () => {
    assert.equal(await sbx.pause(), true);
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
    assert.equal((await again.commands.run('echo $FOO')).stdout, 'bar\n');
    assert.equal(await again.kill(), true);
  });
}

async function allPages(pager) {
  const pages = [];
  while (pager.hasNext) pages.push(await pager.nextItems());
  return pages;
}

// Volumes, snapshots and fork as the pinned SDK calls them.
async function storage() {
  const tag = `st${process.pid}`;
  let volume, first;

  await check('Volume.create, list, getInfo', async () => {
    volume = await Volume.create(`${tag}-home`);
    assert.match(volume.volumeId, /^vol[a-z0-9]+$/);
    assert.equal(volume.name, `${tag}-home`);
    assert.equal(volume.token.length, 32);
    const listed = await Volume.list();
    assert.deepEqual(listed.filter((v) => v.name === volume.name), [{ volumeId: volume.volumeId, name: volume.name }]);
    const info = await Volume.getInfo(volume.volumeId);
    assert.equal(info.name, volume.name);
    await assert.rejects(Volume.getInfo('volnotthere'), (e) => e.name === 'VolumeNotFoundError');
  });

  await check('volumeMounts: files under the mount outlive the sandbox that wrote them', async () => {
    first = await Sandbox.create('base', { volumeMounts: { '/home/user/data': volume } });
    const info = await Sandbox.getInfo(first.sandboxId);
    assert.deepEqual(info.volumeMounts, [{ name: volume.name, path: '/home/user/data' }]);
    await first.files.write('/home/user/data/notes.md', 'kept on the volume\n');
    await first.files.write('/home/user/outside.txt', 'not on it\n');
    assert.equal(await first.kill(), true);
    const second = await Sandbox.create('base', { volumeMounts: { '/mnt/v': volume.name } });
    assert.equal(await second.files.read('/mnt/v/notes.md'), 'kept on the volume\n');
    assert.equal(await second.files.exists('/home/user/outside.txt'), false);
    await second.kill();
  });

  await check('createSnapshot, listSnapshots pages, a create from one, deleteSnapshot', async () => {
    const src = await Sandbox.create('base');
    await src.files.write('/home/user/state.txt', 'snapshotted\n');
    const unnamed = await src.createSnapshot();
    assert.match(unnamed.snapshotId, /:default$/);
    assert.deepEqual(unnamed.names, []);
    const named = await Sandbox.createSnapshot(src.sandboxId, { name: `${tag}-snap` });
    assert.equal(named.snapshotId, `sim-team/${tag}-snap:default`);
    assert.deepEqual(named.names, [named.snapshotId]);
    const pages = await allPages(src.listSnapshots({ limit: 1 }));
    assert.deepEqual(pages.map((p) => p.length), [1, 1]);
    assert.deepEqual(pages.flat().map((x) => x.snapshotId).sort(), [unnamed.snapshotId, named.snapshotId].sort());
    const byName = await allPages(Sandbox.listSnapshots({ name: `${tag}-snap` }));
    assert.deepEqual(byName.flat().map((x) => x.snapshotId), [named.snapshotId]);
    assert.equal(await src.kill(), true);
    const restored = await Sandbox.create(named.snapshotId);
    assert.equal(await restored.files.read('/home/user/state.txt'), 'snapshotted\n');
    await restored.kill();
    assert.equal(await Sandbox.deleteSnapshot(unnamed.snapshotId), true);
    assert.equal(await Sandbox.deleteSnapshot(unnamed.snapshotId), false);
    assert.equal(await Sandbox.deleteSnapshot(named.snapshotId), true);
  });

  await check('fork: count sandboxes with the files, the source untouched', async () => {
    const src = await Sandbox.create('base', { timeoutMs: 120_000 });
    await src.files.write('/home/user/try.txt', 'before\n');
    const before = (await Sandbox.getInfo(src.sandboxId)).endAt.getTime();
    const forks = await src.fork({ count: 2, timeoutMs: 30_000 });
    assert.equal(forks.length, 2);
    for (const f of forks) {
      assert.ok(f instanceof Sandbox, String(f));
      assert.equal(await f.files.read('/home/user/try.txt'), 'before\n');
    }
    await forks[0].files.write('/home/user/try.txt', 'changed in a fork\n');
    assert.equal(await src.files.read('/home/user/try.txt'), 'before\n');
    assert.equal((await Sandbox.getInfo(src.sandboxId)).endAt.getTime(), before);
    const ttl = await Sandbox.getInfo(forks[1].sandboxId);
    assert.equal(ttl.endAt - ttl.startedAt, 30_000);
    await assert.rejects(Sandbox.fork('inotthere000000000000'), SandboxNotFoundError);
    for (const f of [src, ...forks]) await f.kill();
  });

  await check('getMetrics of a running sandbox', async () => {
    const sb = await Sandbox.create('base');
    const metrics = await sb.getMetrics();
    assert.equal(metrics.length, 1);
    assert.equal(metrics[0].cpuCount, 2);
    assert.equal(metrics[0].memTotal, 512 * 1024 * 1024);
    await sb.kill();
  });

  await check('onTimeout pause without memory (autoPauseMemory false)', async () => {
    const sb = await Sandbox.create('base', { lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } });
    assert.equal((await Sandbox.getInfo(sb.sandboxId)).lifecycle?.onTimeout, 'pause');
    await sb.kill();
  });

  await check('Volume.destroy', async () => {
    assert.equal(await Volume.destroy(volume.volumeId), true);
    assert.equal(await Volume.destroy(volume.volumeId), false);
  });
}

let code = 0;
try {
  await main();
  await storage();
} catch (err) {
  results.failed++;
  console.log(`FAIL setup\n     ${err && err.stack ? err.stack : err}`);
} finally {
  stopSim();
}
console.log(`e2b-sdk: ${results.passed} passed, ${results.failed} failed`);
if (results.failed > 0) code = 1;
process.exit(code);
