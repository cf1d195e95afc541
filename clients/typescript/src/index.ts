/**
 * spacekeeper: a user's ready e2b Sandbox in one call (the TypeScript client).
 *
 * The same surface as the Python client (clients/python): Client.sandbox(userId)
 * makes one connect call and returns an e2b `Sandbox` built from the answer with
 * no control-plane call and no provider API key (the JS SDK's constructor takes
 * sandboxId, envdVersion, envdAccessToken and a sandboxUrl; it makes no request:
 * e2b 2.51.0 dist/index.mjs, `var Sandbox = class extends SandboxApi`, its
 * constructor). Without the SDK, the plain answer (envd URL and headers).
 *
 * Node's http with a keep-alive agent; errors as one class per reason; 429/503
 * retried after Retry-After within the timeout; heartbeats while work runs; an
 * envd call that failed before it took effect is reported (unhealthy) and made
 * once more on the sandbox the answer names.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { readFileSync } from 'node:fs';

/** The connect API's 200 answer. `envdAccessToken` is a secret: do not log it. */
export interface SandboxAnswer {
  name: string;
  userID: string;
  sandboxID: string;
  state: string;
  ready: boolean;
  /** fast | reconcile | wake | create | replace | restore */
  path: string;
  envdURL: string;
  envdHeaders?: Record<string, string>;
  envdVersion?: string;
  envdAccessToken?: string;
  provider?: string;
  deadline?: string;
  previousSandboxID?: string;
  replacedAt?: string;
  /** The space's files are known lost (a resume without them, or a sandbox gone). */
  workspaceLost?: boolean;
}

/** Every header an envd request needs: routing headers and X-Access-Token. */
export function envdHeaders(a: SandboxAnswer): Record<string, string> {
  const h: Record<string, string> = { ...(a.envdHeaders ?? {}) };
  if (a.envdAccessToken) h['X-Access-Token'] = a.envdAccessToken;
  return h;
}

// ---- errors ----

/** An error answer of the connect API (or no answer: status 0). */
export class SpacekeeperError extends Error {
  constructor(
    message: string,
    readonly status = 0,
    readonly reason?: string,
    readonly retryAfterMs?: number,
    readonly body: Record<string, unknown> = {},
  ) {
    super(reason ? `${status} ${reason}: ${message}` : message);
    this.name = new.target.name;
  }
}
export class ConnectionFailed extends SpacekeeperError {}
export class BadTimeout extends SpacekeeperError {}
export class BadFresh extends SpacekeeperError {}
/** 401: no bearer token (`no token: ...`) or one that matches none (`token not accepted: ...`). */
export class Unauthorized extends SpacekeeperError {}
/** 404: no UserSpace has this userID or name (or the tenant token does not reach it). */
export class NotFound extends SpacekeeperError {}
/** 404: no route has this path: the client's URL is not the connect listener. */
export class UnknownEndpoint extends SpacekeeperError {}
export class MethodNotAllowed extends SpacekeeperError {}
export class PayloadTooLarge extends SpacekeeperError {}
/** 429: too many connects in progress or waiting for a slot; retried within the timeout. */
export class TooManyConnects extends SpacekeeperError {}
/** 429: waking would exceed the space's SpaceQuota (the message names it); retried within the timeout. */
export class QuotaExceeded extends SpacekeeperError {}
export class ModePaused extends SpacekeeperError {}
export class Deleting extends SpacekeeperError {}
export class ReconcilePaused extends SpacekeeperError {}
export class DataPlaneUnreachable extends SpacekeeperError {}
export class Timeout extends SpacekeeperError {}
export class ShuttingDown extends SpacekeeperError {}
export class Overloaded extends SpacekeeperError {}
export class Starting extends SpacekeeperError {}
export class StoreUnavailable extends SpacekeeperError {}
export class NotShardHolder extends SpacekeeperError {}
export class ShardUnassigned extends SpacekeeperError {}
export class ForwardFailed extends SpacekeeperError {}
/** A provider control-plane call (kill, setTimeout, pause) on a kept sandbox. */
export class ControlPlaneNotAvailable extends SpacekeeperError {}

type ErrorClass = new (
  m: string,
  s?: number,
  r?: string,
  ra?: number,
  b?: Record<string, unknown>,
) => SpacekeeperError;

/** One class per reason of the error enum of docs/connect-api.openapi.yaml. */
export const errorsByReason: Record<string, ErrorClass> = {
  BadTimeout, BadFresh, Unauthorized, NotFound, UnknownEndpoint, MethodNotAllowed,
  PayloadTooLarge, TooManyConnects, QuotaExceeded, ModePaused, Deleting, ReconcilePaused,
  DataPlaneUnreachable, Timeout, ShuttingDown, Overloaded, Starting, StoreUnavailable,
  NotShardHolder, ShardUnassigned, ForwardFailed,
};

/**
 * The retry policy: these reasons are tried again after their Retry-After (500 ms without
 * one) while the call's timeout leaves room for the wait; every other reason is thrown at once.
 */
export const RETRIABLE_REASONS: ReadonlySet<string> = new Set([
  'TooManyConnects', 'QuotaExceeded', 'Starting', 'Overloaded', 'NotShardHolder',
  'ShardUnassigned', 'ForwardFailed',
]);

/**
 * The connect listener's URL without a trailing `/` or `/v1` (every route starts with
 * `/v1/` itself): `http://HOST:9091` and `http://HOST:9091/v1/` reach the same API.
 */
export function baseURL(url: string): URL {
  const u = new URL(url);
  u.pathname = u.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return u;
}

/** The exception of an error answer: its reason's class, else the base class. */
export function errorFor(status: number, body: unknown, retryAfterMs?: number): SpacekeeperError {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const reason = typeof b.reason === 'string' ? b.reason : status === 401 ? 'Unauthorized' : undefined;
  const msg = typeof b.message === 'string' ? b.message : `HTTP ${status}`;
  const cls = (reason && errorsByReason[reason]) || SpacekeeperError;
  return new cls(msg, status, reason, retryAfterMs, b);
}

function retryAfterMs(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const n = Number(v.trim());
  if (Number.isFinite(n)) return Math.max(0, n * 1000);
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

// ---- the client ----

export interface ClientOptions {
  token?: string;
  /** a file holding the token (one line), read once */
  tokenFile?: string;
  /** how long a call may take, retries included (default 30 s) */
  timeoutMs?: number;
  /** the e2b module (`await import('e2b')`); default: imported on first use */
  sdk?: unknown;
  /** for an https:// connect listener (e.g. { ca }) */
  tls?: https.AgentOptions;
}

export interface CallOptions {
  timeoutMs?: number;
  fresh?: boolean;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const GRACE_MS = 2000;

export class Client {
  readonly url: URL;
  readonly timeoutMs: number;
  private readonly headers: Record<string, string>;
  private readonly agent: http.Agent;
  private sdk: unknown;
  private readonly counts: Record<string, number> = {};
  private readonly last = new Map<string, SandboxAnswer>();

  constructor(url: string, opts: ClientOptions = {}) {
    this.url = baseURL(url);
    if (!['http:', 'https:'].includes(this.url.protocol)) {
      throw new TypeError(`spacekeeper URL must be http(s)://HOST[:PORT], got ${url}`);
    }
    if (opts.token && opts.tokenFile) throw new TypeError('give token or tokenFile, not both');
    const token = opts.tokenFile
      ? readFileSync(opts.tokenFile, 'utf8').split('\n')[0].replace(/\r$/, '')
      : opts.token;
    this.timeoutMs = opts.timeoutMs ?? 30000;
    this.headers = { Accept: 'application/json', 'User-Agent': 'spacekeeper-js/0.1.0' };
    if (token) this.headers.Authorization = `Bearer ${token}`;
    this.agent = this.url.protocol === 'https:'
      ? new https.Agent({ keepAlive: true, ...opts.tls })
      : new http.Agent({ keepAlive: true });
    this.sdk = opts.sdk;
  }

  /** requests, retries, unhealthy, heartbeats */
  stats(): Record<string, number> {
    return { ...this.counts };
  }

  close(): void {
    this.agent.destroy();
  }

  private count(k: string): void {
    this.counts[k] = (this.counts[k] ?? 0) + 1;
  }

  private send(method: string, path: string, timeoutMs: number): Promise<Answer> {
    const mod = this.url.protocol === 'https:' ? https : http;
    const base = this.url.pathname.replace(/\/$/, '');
    return new Promise((resolve, reject) => {
      const req = mod.request(
        {
          protocol: this.url.protocol, hostname: this.url.hostname, port: this.url.port,
          path: base + path, method, headers: this.headers, agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({
            status: res.statusCode ?? 0, headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }));
          res.on('error', reject);
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Timeout('no answer in time', 0, 'Timeout')));
      req.on('error', reject);
      req.end();
    });
  }

  /** One route, retried on RETRIABLE_REASONS after Retry-After within the timeout. */
  async call(
    method: string, path: string, timeoutMs?: number, query: Record<string, string> = {},
    wait = true,
  ): Promise<Answer> {
    const budget = timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + budget;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Timeout(`no answer within ${budget} ms`, 0, 'Timeout');
      const q = new URLSearchParams(query);
      if (wait) q.set('timeout', `${Math.max(1, Math.floor(left))}ms`);
      const qs = q.toString();
      this.count('requests');
      let r: Answer;
      try {
        r = await this.send(method, path + (qs ? `?${qs}` : ''), left + (wait ? GRACE_MS : 0));
      } catch (e) {
        if (e instanceof SpacekeeperError) throw e;
        throw new ConnectionFailed(`spacekeeper at ${this.url.origin}: ${(e as Error).message}`);
      }
      if (r.status >= 200 && r.status < 300) return r;
      let body: unknown;
      try {
        body = JSON.parse(r.body);
      } catch {
        body = undefined;
      }
      const ra = r.headers['retry-after'];
      const err = errorFor(r.status, body, retryAfterMs(Array.isArray(ra) ? ra[0] : ra));
      if (err instanceof UnknownEndpoint) {
        throw new UnknownEndpoint(`${String(err.body.message ?? '')} (the client's URL is ${this.url.href}: `
          + 'give the connect listener, controller.connectListen, as http(s)://HOST:PORT)',
        err.status, err.reason, undefined, err.body);
      }
      if (!err.reason || !RETRIABLE_REASONS.has(err.reason)) throw err;
      const pause = err.retryAfterMs ?? 500;
      if (Date.now() + pause >= deadline) throw err;
      this.count('retries');
      await new Promise((res) => setTimeout(res, pause));
    }
  }

  private answer(r: Answer): SandboxAnswer {
    const a = JSON.parse(r.body) as SandboxAnswer;
    if (!a || !a.sandboxID) throw new SpacekeeperError(`answer ${r.status} without a sandbox`, r.status);
    this.last.set(a.userID, a);
    return a;
  }

  private static userPath(userId: string, what: string): string {
    if (!userId) throw new TypeError('userId must not be empty');
    return `/v1/users/${encodeURIComponent(userId)}/${what}`;
  }

  /** GET /v1/users/{userId}/sandbox: the user's sandbox, ready. */
  async connect(userId: string, opts: CallOptions = {}): Promise<SandboxAnswer> {
    const q: Record<string, string> = opts.fresh ? { fresh: '1' } : {};
    return this.answer(await this.call('GET', Client.userPath(userId, 'sandbox'), opts.timeoutMs, q));
  }

  /** POST /v1/userspaces/{name}/connect: as connect, by UserSpace name. */
  async connectName(name: string, opts: CallOptions = {}): Promise<SandboxAnswer> {
    const q: Record<string, string> = opts.fresh ? { fresh: '1' } : {};
    const path = `/v1/userspaces/${encodeURIComponent(name)}/connect`;
    return this.answer(await this.call('POST', path, opts.timeoutMs, q));
  }

  /** POST /v1/users/{userId}/unhealthy: the data plane failed; probe now, answer. */
  async unhealthy(userId: string, opts: CallOptions = {}): Promise<SandboxAnswer> {
    this.count('unhealthy');
    return this.answer(await this.call('POST', Client.userPath(userId, 'unhealthy'), opts.timeoutMs));
  }

  /** POST /v1/users/{userId}/activity: one heartbeat. */
  async activity(userId: string, opts: CallOptions = {}): Promise<void> {
    this.count('heartbeats');
    await this.call('POST', Client.userPath(userId, 'activity'), opts.timeoutMs ?? 10000, {}, false);
  }

  /**
   * Heartbeats for userId every intervalMs (default: a quarter of the time the last
   * answer's deadline had left, between 0.5 and 60 s) until stop() (or the end
   * of `fn` with busy(userId, fn)).
   */
  startBusy(userId: string, opts: { intervalMs?: number } = {}): Busy {
    return new Busy(this, userId, opts.intervalMs ?? this.heartbeatMs(userId));
  }

  /** Runs fn while heartbeats keep the user's space awake. */
  async busy<T>(userId: string, fn: () => Promise<T>, opts: { intervalMs?: number } = {}): Promise<T> {
    const b = this.startBusy(userId, opts);
    try {
      return await fn();
    } finally {
      await b.stop();
    }
  }

  private heartbeatMs(userId: string): number {
    const a = this.last.get(userId);
    const left = a?.deadline ? Date.parse(a.deadline) - Date.now() : NaN;
    if (!Number.isFinite(left) || left <= 0) return 15000;
    return Math.min(60000, Math.max(500, left / 4));
  }

  /**
   * The user's sandbox from one connect: an e2b Sandbox (no control-plane call,
   * no API key) when the SDK is there, else (or with sdk: false) the answer.
   */
  async sandbox(userId: string, opts: CallOptions & { sdk?: boolean } = {}): Promise<any> {
    const a = await this.connect(userId, opts);
    return this.attach(a, opts);
  }

  /** The SDK sandbox for an answer in hand (no call). */
  async attach(a: SandboxAnswer, opts: { sdk?: boolean } = {}): Promise<any> {
    if (opts.sdk === false) return a;
    if (this.sdk === undefined) {
      try {
        const name = 'e2b';
        this.sdk = await import(name);
      } catch (e) {
        if (opts.sdk) throw e;
        this.sdk = null;
      }
    }
    if (!this.sdk) return a;
    return keptSandbox(this, this.sdk as E2bModule, a);
  }
}

export class Busy {
  beats = 0;
  lastError?: unknown;
  private timer?: NodeJS.Timeout;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly client: Client, readonly userId: string, readonly intervalMs: number) {
    this.beat();
    this.timer = setInterval(() => this.beat(), intervalMs);
  }

  private beat(): void {
    if (this.stopped) return;
    this.inFlight = this.client.activity(this.userId, { timeoutMs: Math.min(10000, this.intervalMs * 2) })
      .then(() => { this.beats++; })
      .catch((e) => { this.lastError = e; });
  }

  /** Stops the heartbeats (waits for one in flight). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.inFlight;
  }
}

// ---- the e2b SDK's sandbox, kept by spacekeeper ----

interface E2bModule {
  Sandbox: new (opts: Record<string, unknown>) => any;
}

const GUARDED_FILES = new Set(['read', 'write', 'list', 'exists', 'getInfo', 'makeDir', 'remove', 'rename']);
// What the e2b JS SDK (2.51.0) raises when the sandbox's address answered a
// gateway error instead of the command's stream (SandboxNotFoundError after its
// health check), or a file request's 502/503/504, or a refused connection.
const GATEWAY = /\b(502|503|504)\b|bad gateway|gateway time-?out|service unavailable|SandboxNotFoundError|not running anymore|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|fetch failed/i;
const SENT = /ECONNRESET|EPIPE|socket hang up|other side closed|UND_ERR_SOCKET|terminated|aborted/i;

/**
 * True when the failed envd call cannot have taken effect: a gateway's
 * 502/503/504 instead of envd's stream, a refused or unreachable connection.
 * A connection dropped after the request was sent may have run it: false.
 */
export function connectionLevel(e: unknown): boolean {
  const texts: string[] = [];
  let cur: any = e;
  for (let i = 0; cur && i < 8; i++, cur = cur.cause) {
    texts.push(`${cur.name ?? ''} ${cur.code ?? ''} ${cur.message ?? ''}`);
  }
  if (texts.some((t) => SENT.test(t))) return false;
  if (texts.some((t) => /CommandExitError|TimeoutError|deadline/i.test(t) && !GATEWAY.test(t))) return false;
  return texts.some((t) => GATEWAY.test(t));
}

function build(sdk: E2bModule, a: SandboxAnswer): any {
  return new sdk.Sandbox({
    sandboxId: a.sandboxID,
    // unknown (an older controller that does not send it): what the SDK itself assumes then
    envdVersion: a.envdVersion ?? '99.99.99',
    envdAccessToken: a.envdAccessToken,
    sandboxUrl: a.envdURL,
    apiKey: undefined,
  });
}

function keptSandbox(client: Client, sdk: E2bModule, first: SandboxAnswer): any {
  const sbx = build(sdk, first);
  let inner = sbx;
  let generation = 0;
  const inners = { commands: sbx.commands, files: sbx.files };
  let recovering: Promise<void> | undefined;

  const recover = async (gen: number, cause: unknown): Promise<void> => {
    if (gen !== generation) return;
    if (!recovering) {
      recovering = (async () => {
        try {
          const a = await client.unhealthy(sbx.answer.userID);
          inner = build(sdk, a);
          inners.commands = inner.commands;
          inners.files = inner.files;
          for (const k of ['sandboxId', 'envdAccessToken', 'envdApiUrl', 'envdDirectUrl', 'envdApi', 'pty', 'git']) {
            (sbx as any)[k] = inner[k];
          }
          sbx.answer = a;
          generation++;
        } catch (e) {
          if (e instanceof Error && e.cause === undefined) (e as any).cause = cause;
          throw e;
        } finally {
          recovering = undefined;
        }
      })();
    }
    await recovering;
  };

  const guarded = async <T>(fn: () => Promise<T>): Promise<T> => {
    const gen = generation;
    try {
      return await fn();
    } catch (e) {
      if (!connectionLevel(e)) throw e;
      await recover(gen, e);
    }
    return fn();
  };

  sbx.answer = first;
  sbx.commands = new Proxy({}, {
    get(_t, name) {
      const target = inners.commands;
      if (name === 'run') {
        return async (cmd: string, opts: Record<string, unknown> = {}) => {
          const handle: any = await guarded(() => inners.commands.start(cmd, opts));
          return opts.background ? handle : handle.wait();
        };
      }
      if (name === 'start') {
        return (cmd: string, opts?: Record<string, unknown>) => guarded(() => inners.commands.start(cmd, opts));
      }
      const v = target[name];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  sbx.files = new Proxy({}, {
    get(_t, name) {
      const target = inners.files;
      const v = target[name];
      if (typeof v !== 'function') return v;
      if (typeof name === 'string' && GUARDED_FILES.has(name)) {
        return (...args: unknown[]) => guarded(() => inners.files[name](...args));
      }
      return v.bind(target);
    },
  });
  for (const m of ['kill', 'setTimeout', 'pause', 'betaPause', 'connect']) {
    sbx[m] = async () => {
      throw new ControlPlaneNotAvailable(
        `${m}: this sandbox is kept by spacekeeper; its lifecycle is the UserSpace's (use client.busy)`,
      );
    };
  }
  return sbx;
}
