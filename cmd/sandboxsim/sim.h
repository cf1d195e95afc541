/*
 * sandboxsim: shared declarations of the E2B-compatible simulator
 * (server glue, sandbox store, fault injection, flavour handlers).
 */
#ifndef SIM_H
#define SIM_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

enum sim_flavor { SIM_E2B, SIM_CUBE, SIM_DAYTONA };

/* Sandbox states; Daytona maps started/stopped/archived/destroyed onto them. */
enum sim_state { SIM_RUNNING, SIM_PAUSED, SIM_ARCHIVED, SIM_KILLED };

/* Endpoint names used by stats and faults. Keep sim_ep_names in sync. */
enum sim_ep {
	SIM_EP_CREATE,
	SIM_EP_GET,
	SIM_EP_LIST,
	SIM_EP_LIST_V1,
	SIM_EP_KILL,
	SIM_EP_PAUSE,
	SIM_EP_CONNECT,
	SIM_EP_RESUME,
	SIM_EP_TIMEOUT,
	SIM_EP_REFRESHES,
	SIM_EP_START,
	SIM_EP_STOP,
	SIM_EP_ARCHIVE,
	SIM_EP_LABELS,
	SIM_EP_AUTOSTOP,
	SIM_EP_VOLUMES, /* E2B /volumes... */
	SIM_EP_SNAPSHOTS, /* E2B snapshot create, list, delete */
	SIM_EP_FORK, /* E2B POST /sandboxes/{id}/fork */
	SIM_EP_METRICS, /* E2B /sandboxes/metrics, /sandboxes/{id}/metrics */
	SIM_EP_API_HEALTH,
	SIM_EP_HEALTH,
	SIM_EP_ENVD,
	SIM_EP_INIT,
	SIM_EP_PROCESS,
	SIM_EP_FILES, /* envd GET/POST /files, the Daytona toolbox's /files... */
	SIM_EP_FILESYSTEM, /* envd filesystem.Filesystem/... */
	SIM_EP_NETWORK, /* E2B PUT /sandboxes/{id}/network */
	SIM_EP_UNKNOWN,
	SIM_EP_SIM,
	SIM_EP_COUNT
};
extern const char *const sim_ep_names[SIM_EP_COUNT];
int sim_ep_lookup(const char *name);
/* Control-plane endpoints: --latency and the "*" fault entries apply. */
bool sim_ep_is_control(int ep);

/* One sandbox. Metadata and env vars are packed "k\0v\0k\0v\0" blocks.
 * env holds the create-time envVars, init_env what envd POST /init has set;
 * boot_env_lost says a resume dropped env from envd (see dataplane.c). */
typedef struct sim_kv {
	char *data;
	size_t len;
	int n;
} sim_kv;

/* fs.c: a sandbox's file tree (see there); callers hold s->lock. */
enum sim_ftype { SIM_F_FILE, SIM_F_DIR, SIM_F_LINK, SIM_F_FIFO };
typedef struct sim_fnode {
	char *path; /* absolute, normalized */
	int type;
	uint32_t mode; /* 07777 */
	char *data; /* regular files */
	size_t len;
	char *target; /* symlinks */
	int64_t mtime_ms;
} sim_fnode;
typedef struct sim_fs {
	sim_fnode **items; /* sorted by path */
	size_t len, cap;
	char *home; /* relative paths resolve here */
	uint64_t gen; /* bumped by every change (volumes.c syncs on it) */
} sim_fs;

/* volumes.c: an E2B team volume, its files in a tree of its own rooted at
 * "/", and a sandbox's mount of one (by volume ID: a volume deleted under a
 * sandbox is no longer synced). The gens are the volume's and the sandbox
 * tree's at the last sync. */
typedef struct sim_volume {
	struct sim_volume *next;
	char id[40];
	char name[64];
	char token[33];
	sim_fs *fs;
} sim_volume;
typedef struct sim_mount {
	char volume_id[40];
	char name[64];
	char *path;
	uint64_t volume_gen, tree_gen;
} sim_mount;

/* volumes.c: a persistent snapshot (E2B keeps it as a template): the
 * sandbox's tree without its volume mounts, kept after the sandbox is gone. */
typedef struct sim_snapshot {
	struct sim_snapshot *next;
	uint64_t seq;
	char template_id[32]; /* the snapshot template's own ID */
	char *name; /* NULL: unnamed */
	char sandbox_id[40]; /* where it was taken */
	char base_template[64]; /* the sandbox's template */
	int cpu, memory_mb;
	sim_fs *fs;
} sim_snapshot;

typedef struct sim_sandbox {
	struct sim_sandbox *hnext; /* id hash chain */
	struct sim_sandbox *prev, *next; /* creation order */
	char id[40];
	char template_id[64];
	sim_kv meta;
	sim_kv env;
	sim_kv init_env;
	bool boot_env_lost;
	const char *user_id; /* points into meta, NULL when absent */
	int state;
	int64_t created_ms, started_ms, end_ms, resumed_ms, activity_ms, updated_ms;
	int64_t paused_ms; /* when it last paused (--paused-retention counts from it) */
	int32_t timeout_s; /* create-time timeout (auto-resume TTL, cube idle window) */
	bool auto_pause, auto_resume, auto_pause_memory, secure, never;
	bool cold; /* paused without memory: the next resume is a cold boot */
	int cpu, memory_mb, disk_mb;
	uint64_t seq;
	char token[33];
	/* daytona */
	char *name;
	char *os_user;
	bool public_;
	int auto_stop_min, auto_archive_min, auto_delete_min;
	bool kvm; /* daytona: echoed back as asked at create */
	sim_fs *fs; /* made on first use (sim_sandbox_fs) */
	/* the simulator's own accounting: ms running and paused up to acct_ms */
	int64_t acct_ms, run_ms, pause_ms;
	json_t *net; /* the network policy (netpolicy.c), NULL: open */
	sim_mount *mounts; /* E2B volumeMounts */
	int nmounts;
} sim_sandbox;

typedef struct sim_map_entry sim_map_entry;
typedef struct sim_map {
	sim_map_entry **buckets;
	size_t nbuckets;
	size_t count;
} sim_map;

typedef struct sim_store {
	sim_sandbox **buckets;
	size_t nbuckets;
	size_t count;
	sim_sandbox *head, *tail; /* creation order, oldest first */
	sim_map by_user; /* user_id -> sim_vec* */
	uint64_t seq;
	uint64_t rng;
} sim_store;

typedef struct sim_vec {
	sim_sandbox **items;
	size_t len, cap;
} sim_vec;

typedef struct sim_latency {
	bool set;
	int64_t fixed_ms, jitter_ms;
} sim_latency;

typedef struct sim_errfault {
	bool set;
	double rate;
	int status;
	int retry_after_s;
	int count; /* remaining injections, -1 unlimited */
} sim_errfault;

/* Response body mangling: "truncate" (first half), "garbage" (HTML, not
 * JSON), "oversize" (a valid JSON body padded to size_mb MiB). */
enum sim_body_mode { SIM_BODY_NONE, SIM_BODY_TRUNCATE, SIM_BODY_GARBAGE, SIM_BODY_OVERSIZE };
typedef struct sim_bodyfault {
	int mode;
	int size_mb;
	int count; /* remaining, -1 unlimited */
} sim_bodyfault;

/* caps.c: a plan's limits (0: none) and the start-rate token bucket. */
typedef struct sim_caps {
	int max_running;
	double creates_per_second;
	double tokens;
	int64_t refill_ms; /* last refill, 0: full */
} sim_caps;

typedef struct sim_faults {
	pthread_mutex_t lock;
	uint64_t rng;
	sim_latency latency[SIM_EP_COUNT + 1]; /* last slot: "*" */
	sim_errfault errors[SIM_EP_COUNT + 1];
	int resume_504_s;
	char **unreachable;
	int nunreachable;
	int list_empty_s; /* as configured: 0 off, -1 until cleared */
	int64_t list_empty_until; /* ms */
	int overload_max_inflight; /* 0 off */
	int overload_retry_after_s;
	int inflight;
	sim_bodyfault bodies[SIM_EP_COUNT + 1];
	sim_caps caps;
	/* resume_lose_files: the next resumes of a paused sandbox lose its
	 * file tree, whole ("empty") or every other regular file ("partial"). */
	int resume_lose_mode; /* SIM_LOSE_* */
	int resume_lose_count; /* remaining, -1 unlimited */
} sim_faults;
enum sim_lose_mode { SIM_LOSE_NONE, SIM_LOSE_EMPTY, SIM_LOSE_PARTIAL };

typedef struct sim_stats {
	pthread_mutex_t lock;
	uint64_t counts[SIM_EP_COUNT][600];
	uint64_t total;
	int max_running; /* most sandboxes running at once since the last reset */
	uint64_t refused_concurrency, refused_rate; /* caps.c's 429s */
} sim_stats;

/* procs.c: a process started through envd that runs for a while (`sleep N`):
 * listed by process.Process/List until it ends, or until its sandbox is
 * paused, killed or resumed from a pause (envd's processes do not survive). */
typedef struct sim_proc {
	struct sim_proc *next;
	int pid;
	char sandbox_id[40];
	int64_t resumed_ms; /* the sandbox's resumed_ms at the start */
	int64_t end_ms; /* when it exits by itself */
	json_t *config; /* {cmd, args, envs, cwd} as Start got it */
	bool streaming; /* its Start answer is still being sent */
	bool done;
	bool killed; /* SendSignal, or its sandbox stopped under it */
} sim_proc;

typedef struct sim {
	int flavor;
	char *api_key; /* NULL: any well-formed key */
	int64_t latency_ms;
	uint64_t seed;
	char *domain;
	int64_t minute_ms; /* length of a Daytona interval minute (tests shorten it) */
	int64_t paused_retention_ms; /* a paused sandbox is deleted after it; 0 never */
	pthread_mutex_t lock; /* guards store, next_pid and procs */
	int next_pid;
	sim_proc *procs;
	sim_store store;
	sim_volume *volumes; /* under lock, newest first */
	sim_snapshot *snapshots; /* under lock, oldest first */
	uint64_t snapshot_seq;
	sim_faults faults;
	sim_stats stats;
	pthread_t sweeper;
	volatile int stopping;
} sim;

/* A request being served. */
#define SIM_MAX_HDRS 6
#define SIM_MAX_SEGS 8
typedef struct sim_req {
	struct MHD_Connection *conn;
	const char *method;
	const char *url;
	char *body;
	size_t body_len, body_cap;
	bool body_too_big;
	char *path; /* copy of url split in segs */
	char *segs[SIM_MAX_SEGS];
	int nseg;
	int ep;
	/* response */
	int status;
	char *resp;
	size_t resp_len;
	const char *ctype;
	int nhdr;
	char hdr_name[SIM_MAX_HDRS][40];
	char hdr_val[SIM_MAX_HDRS][200];
	int dp_port; /* data plane target port */
	/* a streamed answer instead of resp (procs.c): MHD's reader callback */
	MHD_ContentReaderCallback stream;
	void *stream_cls;
	MHD_ContentReaderFreeCallback stream_free;
} sim_req;

/* server.c */
int sim_serve(sim *s, const char *host, int port);
/* Auth (when asked) and faults for a classified request; false when already replied. */
bool sim_precheck(sim *s, sim_req *r, bool auth);
void sim_reply_json(sim *s, sim_req *r, int status, json_t *body); /* steals body */
void sim_reply_error(sim *s, sim_req *r, int status, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void sim_reply_empty(sim_req *r, int status);
/* Takes ownership of data (malloc'd). */
void sim_reply_owned(sim_req *r, int status, const char *ctype, char *data, size_t len);
void sim_reply_text(sim_req *r, int status, const char *ctype, const char *text);
void sim_reply_header(sim_req *r, const char *name, const char *value);
const char *sim_req_header(sim_req *r, const char *name);
const char *sim_req_arg(sim_req *r, const char *name);
/* Every value of a repeated query argument, joined by ','; caller frees, NULL if none. */
char *sim_req_arg_all(sim_req *r, const char *name);
/* Parses the body as a JSON object; empty body gives {} when optional.
 * On failure replies 400 and returns NULL. */
json_t *sim_req_json(sim *s, sim_req *r, bool optional);
/* Percent-decoding like Go's QueryUnescape ('+' is a space); in place. -1 on bad escape. */
int sim_unescape(char *str, bool plus);

/* state.c */
void sim_store_init(sim_store *st, uint64_t seed);
void sim_store_clear(sim_store *st);
sim_sandbox *sim_store_new(sim *s, int64_t now);
/* Lookup that applies expiry first; killed sandboxes are removed and NULL returned. */
sim_sandbox *sim_store_get(sim *s, const char *id, int64_t now);
void sim_store_remove(sim_store *st, sim_sandbox *sb);
void sim_store_set_meta(sim_store *st, sim_sandbox *sb, sim_kv *kv);
const sim_vec *sim_store_by_user(sim_store *st, const char *user);
/* Applies timeout expiry / idle stop; returns true when the sandbox is gone. */
bool sim_sandbox_tick(sim *s, sim_sandbox *sb, int64_t now);
void sim_sandbox_touch(sim *s, sim_sandbox *sb, int64_t now);
void sim_sandbox_resume(sim *s, sim_sandbox *sb, int64_t now, int32_t timeout_s);
void sim_sandbox_pause(sim_sandbox *sb, int64_t now);
/* Counts the time since the last count into run_ms or pause_ms (by state). */
void sim_sandbox_account(sim_sandbox *sb, int64_t now);
void sim_store_sweep(sim *s, int64_t now);
int sim_kv_from_json(json_t *obj, sim_kv *out, char *why, size_t whylen);
const char *sim_kv_get(const sim_kv *kv, const char *key);
json_t *sim_kv_to_json(const sim_kv *kv);
void sim_kv_free(sim_kv *kv);
const char *sim_state_name(sim *s, int state);
void sim_time(int64_t ms, char *buf, size_t len);
uint64_t sim_rand(uint64_t *state);
int sim_preload(sim *s, int n);

/* e2b.c (also the cube flavour) */
void sim_e2b_route(sim *s, sim_req *r);
bool sim_valid_id(const char *id);
json_t *sim_json_listed(sim *s, const sim_sandbox *sb);
json_t *sim_json_sandbox(sim *s, const sim_sandbox *sb); /* Sandbox: create, connect, fork */
/* Looks up with the lock held; replies 404 itself when missing. */
sim_sandbox *sim_e2b_find(sim *s, sim_req *r, const char *id, int64_t now);

/* metrics.c: E2B's sandbox metrics (not served by the cube flavour) */
void sim_metrics_one(sim *s, sim_req *r, const char *id);
void sim_metrics_many(sim *s, sim_req *r, const char *unused);

/* list.c */
void sim_e2b_list(sim *s, sim_req *r);
void sim_e2b_list_v1(sim *s, sim_req *r);
/* Parses an E2B metadata filter into a kv block; -1 on bad syntax. */
int sim_parse_meta_filter(sim *s, const char *arg, sim_kv *out);
bool sim_meta_match(const sim_sandbox *sb, const sim_kv *filter);

/* dataplane.c */
bool sim_dataplane_target(sim *s, sim_req *r, char *id, size_t idlen);
/* The stats/faults endpoint of a data-plane request (health, init, process, envd). */
int sim_dataplane_ep(const sim_req *r);
void sim_dataplane(sim *s, sim_req *r, const char *id);

/* process.c: envd's process.Process/Start (Connect protocol, JSON codec).
 * `env` is the sandbox-wide env (borrowed); the command runs outside s->lock
 * (file commands take it to reach sandbox id's tree). */
void sim_process_start(sim *s, sim_req *r, const json_t *env, int pid, const char *id);

/* procs.c: `sleep N` runs for N seconds, streamed (start at once, end when
 * it exits); process.Process/List and /SendSignal. frame() is process.c's
 * Connect envelope. The caller holds no lock. */
bool sim_proc_long(const char *script, double *seconds);
void sim_proc_stream(sim *s, sim_req *r, const char *id, int pid, json_t *proc, double seconds);
void sim_proc_list(sim *s, sim_req *r, const char *id);
void sim_proc_signal(sim *s, sim_req *r, const char *id);
void sim_proc_free_all(sim *s);
void sim_connect_frame(sk_buf *b, unsigned char flag, json_t *msg); /* takes msg */

/* envd_files.c: GET/POST /files and filesystem.Filesystem/{ListDir,Stat,MakeDir}. */
void sim_envd_files(sim *s, sim_req *r, sim_sandbox *sb);
/* The parts named `field` of r's multipart/form-data body (libmicrohttpd's
 * post processor): -1 when the body is not one. */
typedef struct sim_upload_part {
	char *filename;
	sk_buf data;
} sim_upload_part;
typedef struct sim_upload {
	const char *field;
	sim_upload_part *parts;
	size_t n;
} sim_upload;
int sim_upload_parse(sim_req *r, const char *field, sim_upload *u);
void sim_upload_dispose(sim_upload *u);

/* volumes.c: team volumes and mounts, snapshots, fork. Routes answer
 * false when r is not theirs. */
bool sim_volumes_route(sim *s, sim_req *r, char **seg, int n);
/* POST /sandboxes/{id}/snapshots and /fork, id checked. */
void sim_snapshot_create(sim *s, sim_req *r, const char *id);
void sim_fork(sim *s, sim_req *r, const char *id);
/* NewSandbox.volumeMounts into sb->mounts (s->lock held): 400 replied and
 * -1 on a bad entry or an unknown volume. */
int sim_mounts_parse(sim *s, sim_req *r, sim_sandbox *sb, json_t *mounts);
json_t *sim_mounts_json(const sim_sandbox *sb);
/* The snapshot a create's templateID names, or NULL (s->lock held). */
sim_snapshot *sim_snapshot_find(sim *s, const char *template_id);
/* template_id has a snapshot's form ("ID:default", "sim-team/NAME"): a create
 * from it when no such snapshot exists answers 404, as a deleted one does. */
bool sim_snapshot_ref(const char *template_id);
/* Brings sb's mounts up to date with their volumes (in sim_sandbox_fs), and
 * the volumes up to date with sb's tree after a change (s->lock held). */
void sim_mounts_pull(sim *s, sim_sandbox *sb);
void sim_mounts_push(sim *s, sim_sandbox *sb);
/* A resume that lost files re-reads the volumes (they lost nothing). */
void sim_mounts_invalidate(sim_sandbox *sb);
void sim_mounts_free(sim_sandbox *sb);
void sim_volumes_clear(sim *s);

/* fs.c */
sim_fs *sim_fs_new(const char *home);
/* Replaces dst_dir's subtree in dst by a copy of src_dir's in src (dst_dir
 * made a directory); -ENOTDIR when a parent of dst_dir is not one. */
int sim_fs_graft(sim_fs *dst, const char *dst_dir, sim_fs *src, const char *src_dir);
sim_fs *sim_fs_clone(sim_fs *fs);
size_t sim_fs_du(const sim_fs *fs); /* bytes of every regular file */
void sim_fs_free(sim_fs *fs);
/* The sandbox's tree, made on first use; s->lock held. */
sim_fs *sim_sandbox_fs(sim *s, sim_sandbox *sb);
/* Normalized absolute path (relative ones under home, "." and ".." resolved
 * lexically, never above "/"). Caller frees. */
char *sim_fs_path(const sim_fs *fs, const char *path);
sim_fnode *sim_fs_get(sim_fs *fs, const char *path); /* no symlink followed */
sim_fnode *sim_fs_resolve(sim_fs *fs, const char *path); /* symlinks followed */
/* These return 0 or a negative errno (-ENOENT, -EEXIST, -ENOTDIR, -EISDIR). */
int sim_fs_mkdir(sim_fs *fs, const char *path, uint32_t mode, bool parents);
int sim_fs_put(sim_fs *fs, const char *path, char *data, size_t len); /* takes data */
int sim_fs_symlink(sim_fs *fs, const char *target, const char *path);
int sim_fs_mkfifo(sim_fs *fs, const char *path);
int sim_fs_chmod(sim_fs *fs, const char *path, uint32_t mode);
int sim_fs_remove(sim_fs *fs, const char *path); /* recursive */
/* A resume's loss (SIM_LOSE_*): every entry below home, or every other regular file. */
void sim_fs_lose(sim_fs *fs, int mode);
/* A regular file of len pseudo-random bytes from seed (the bench's trees). */
int sim_fs_fill(sim_fs *fs, const char *path, size_t len, uint64_t seed);
/* The run of entries below dir: count returned, index in *first. */
size_t sim_fs_subtree(sim_fs *fs, const char *dir, size_t *first);
/* 1 for dir's own entries, 2 for theirs, ... */
int sim_fs_depth_below(const char *dir, const char *path);
/* Go's FileMode.String(): "-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx", "prw-r--r--". */
void sim_fs_perm_string(const sim_fnode *n, char out[11]);
/* mkdir [-p], rm [-rf], ln -s, chmod OCTAL, readlink, mkfifo: the exit code,
 * or -1 when argv[0] is none of them. */
int sim_fs_command(sim_fs *fs, int argc, char **argv, sk_buf *out, sk_buf *err);

/* daytona.c */
void sim_daytona_route(sim *s, sim_req *r);
/* The toolboxProxyUrl handed out: http://<Host>/toolbox (caller frees). */
char *sim_daytona_toolbox_url(sim_req *r);
/* daytona_toolbox.c: /toolbox/{id}/process/execute, /toolbox/{id}/files... */
void sim_daytona_toolbox(sim *s, sim_req *r);

/* faults.c */
void sim_faults_init(sim_faults *f, uint64_t seed);
void sim_faults_clear(sim_faults *f);
void sim_faults_destroy(sim_faults *f);
int sim_faults_apply_json(sim_faults *f, json_t *doc, char *why, size_t whylen);
json_t *sim_faults_to_json(sim_faults *f);
/* Latency to add to this endpoint (base latency included for control plane). */
int64_t sim_faults_delay_ms(sim *s, int ep);
/* Returns an injected status (0 none) and fills retry_after_s. */
int sim_faults_error(sim *s, int ep, int *retry_after_s);
bool sim_faults_list_empty(sim *s, int64_t now);
bool sim_faults_unreachable(sim *s, const sim_sandbox *sb, int64_t now);
bool sim_faults_overload_enter(sim *s, int *retry_after_s);
void sim_faults_overload_leave(sim *s);
/* The resume_lose_files fault, taken once (SIM_LOSE_NONE when not set). */
int sim_faults_resume_loss(sim *s);
/* Rewrites r's response body when a body fault matches its endpoint. */
void sim_faults_mangle(sim *s, sim_req *r);
void sim_stats_count(sim *s, int ep, int status);
json_t *sim_stats_json(sim *s);
void sim_stats_reset(sim *s);
void sim_admin_route(sim *s, sim_req *r);

/* caps.c: the "caps" fault entry (null removes it); -1 with why on bad input. */
int sim_caps_parse(sim_caps *c, json_t *v, char *why, size_t len);
json_t *sim_caps_json(const sim_caps *c);
/* Before a create or a resume of a paused sandbox, s->lock held: false when
 * a cap refuses it (r answered 429 the way E2B answers). */
bool sim_caps_admit(sim *s, sim_req *r, int64_t now);
/* After a sandbox started (s->lock held): the running high-water mark. */
void sim_caps_note_running(sim *s);
/* netpolicy.c: each sandbox's network policy (see there). The create and
 * update functions set sb->net, or return -1 with *why (a 400). */
int sim_net_e2b_create(sim_sandbox *sb, const json_t *body, bool secure, const char **why);
int sim_net_e2b_update(sim_sandbox *sb, const json_t *body, const char **why);
void sim_net_e2b_detail(const sim_sandbox *sb, json_t *o);
int sim_net_daytona_create(sim_sandbox *sb, const json_t *body, const char **why);
void sim_net_daytona_detail(const sim_sandbox *sb, json_t *o);
bool sim_net_allows(const sim_sandbox *sb, const char *dest);
/* curl, wget or nc against the policy: the exit code, -1 when argv is none. */
int sim_net_command(const sim_sandbox *sb, int argc, char **argv, sk_buf *out, sk_buf *err);

#endif
