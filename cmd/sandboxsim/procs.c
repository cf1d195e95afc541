/*
 * sandboxsim envd processes that take time: `sleep N` (N seconds, a decimal
 * number) started through process.Process/Start answers its start event at
 * once and its end event N seconds later, on one streamed answer, as envd
 * does. While it runs, process.Process/List (Connect unary, JSON codec)
 * lists it as envd does: {"processes": [{"config": {cmd, args, envs, cwd},
 * "pid"}]}. A pause, kill or resume-from-pause of its sandbox ends
 * it (the stream ends with an "unavailable" error): envd's processes do not
 * survive a pause here. process.Process/SendSignal {process: {pid}} ends
 * one (exit "signal: killed").
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define FLAG_END 0x02
#define WAIT_STEP_MS 100 /* a streaming reader waits at most this long per call */
#define SLEEP_MAX_S 86400.0

/* `sleep N` with one numeric argument (the script of bash -l -c). */
bool
sim_proc_long(const char *script, double *seconds)
{
	char *end;

	while (*script == ' ')
		script++;
	if (strncmp(script, "sleep ", 6) != 0)
		return false;
	*seconds = strtod(script + 6, &end);
	while (*end == ' ')
		end++;
	return *end == '\0' && end != script + 6 && *seconds >= 0 && *seconds <= SLEEP_MAX_S;
}

/* Under s->lock: the process, alive unless its sandbox stopped under it. */
static sim_proc *
proc_find(sim *s, int pid)
{
	for (sim_proc *p = s->procs; p != NULL; p = p->next) {
		if (p->pid == pid)
			return p;
	}
	return NULL;
}

/* Under s->lock: true while p runs (marks it done when it ended). */
static bool
proc_alive(sim *s, sim_proc *p, int64_t now)
{
	sim_sandbox *sb;

	if (p->done)
		return false;
	sb = sim_store_get(s, p->sandbox_id, now);
	if (sb == NULL || sb->state != SIM_RUNNING || sb->resumed_ms != p->resumed_ms) {
		p->done = p->killed = true;
		return false;
	}
	if (now >= p->end_ms)
		p->done = true;
	return !p->done;
}

/* Under s->lock: drops the ended processes no stream reads any more. */
static void
proc_reap(sim *s, const sim_proc *keep)
{
	sim_proc **pp = &s->procs;

	while (*pp != NULL) {
		sim_proc *p = *pp;
		if (p->done && p != keep && !p->streaming) {
			*pp = p->next;
			json_decref(p->config);
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

typedef struct proc_stream {
	sim *s;
	int pid;
	sk_buf out; /* frames not yet sent */
	size_t off;
	bool ended; /* the end frames are in out */
} proc_stream;

static void
end_frames(proc_stream *st, bool killed)
{
	json_t *end = json_pack("{s:b,s:s}", "exited", !killed, "status",
	        killed ? "signal: killed" : "exit status 0");

	if (killed)
		json_object_set_new(end, "exitCode", json_integer(-1));
	sim_connect_frame(&st->out, 0, json_pack("{s:{s:o}}", "event", "end", end));
	sim_connect_frame(&st->out, FLAG_END,
	        killed ? json_pack("{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
	                         "the process was stopped with its sandbox")
	               : json_object());
	st->ended = true;
}

/* Waits up to WAIT_STEP_MS for the process to end; queues the end frames
 * when it did. */
static void
wait_step(proc_stream *st)
{
	sim *s = st->s;
	bool alive, killed = true;
	int64_t now = sk_now_ms();
	sim_proc *p;

	pthread_mutex_lock(&s->lock);
	p = proc_find(s, st->pid);
	alive = p != NULL && proc_alive(s, p, now);
	if (p != NULL)
		killed = p->killed;
	pthread_mutex_unlock(&s->lock);
	if (!alive || s->stopping) {
		end_frames(st, killed || s->stopping);
		return;
	}
	sk_sleep_ms(WAIT_STEP_MS);
}

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	proc_stream *st = cls;
	size_t n;

	if (st->off == st->out.len && !st->ended)
		wait_step(st);
	if (st->off == st->out.len)
		return st->ended ? MHD_CONTENT_READER_END_OF_STREAM : 0;
	n = st->out.len - st->off;
	if (n > max)
		n = max;
	memcpy(buf, st->out.data + st->off, n);
	st->off += n;
	return (ssize_t)n;
}

static void
stream_free(void *cls)
{
	proc_stream *st = cls;
	sim_proc *p;

	pthread_mutex_lock(&st->s->lock);
	/* A client that went away leaves the process running, as envd does. */
	if ((p = proc_find(st->s, st->pid)) != NULL)
		p->streaming = false;
	proc_reap(st->s, NULL);
	pthread_mutex_unlock(&st->s->lock);
	sk_buf_dispose(&st->out);
	free(st);
}

void
sim_proc_stream(sim *s, sim_req *r, const char *id, int pid, json_t *proc, double seconds)
{
	proc_stream *st = sk_calloc(1, sizeof(*st));
	sim_proc *p = sk_calloc(1, sizeof(*p));
	int64_t now = sk_now_ms();
	sim_sandbox *sb;

	p->pid = pid;
	snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", id);
	p->end_ms = now + (int64_t)(seconds * 1000.0);
	p->config = json_deep_copy(proc);
	p->streaming = true;
	pthread_mutex_lock(&s->lock);
	if ((sb = sim_store_get(s, id, now)) != NULL)
		p->resumed_ms = sb->resumed_ms;
	p->next = s->procs;
	s->procs = p;
	pthread_mutex_unlock(&s->lock);
	st->s = s;
	st->pid = pid;
	st->out = (sk_buf)SK_BUF_INIT(0);
	sim_connect_frame(&st->out, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", pid));
	r->status = 200;
	r->ctype = "application/connect+json";
	r->stream = stream_read;
	r->stream_cls = st;
	r->stream_free = stream_free;
}

void
sim_proc_list(sim *s, sim_req *r, const char *id)
{
	json_t *list = json_array();
	int64_t now = sk_now_ms();

	pthread_mutex_lock(&s->lock);
	for (sim_proc *p = s->procs; p != NULL; p = p->next) {
		if (strcmp(p->sandbox_id, id) != 0 || !proc_alive(s, p, now))
			continue;
		json_t *o = json_pack("{s:O,s:i}", "config", p->config, "pid", p->pid);
		json_array_append_new(list, o);
	}
	pthread_mutex_unlock(&s->lock);
	sim_reply_json(s, r, 200, json_pack("{s:o}", "processes", list));
}

void
sim_proc_signal(sim *s, sim_req *r, const char *id)
{
	json_t *doc = json_loadb(r->body ? r->body : "", r->body_len, 0, NULL);
	json_int_t pid =
	        json_integer_value(json_object_get(json_object_get(doc, "process"), "pid"));
	sim_proc *p;
	bool found = false;

	pthread_mutex_lock(&s->lock);
	p = proc_find(s, (int)pid);
	if (p != NULL && strcmp(p->sandbox_id, id) == 0 && !p->done) {
		p->done = p->killed = true;
		found = true;
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(doc);
	if (found)
		sim_reply_json(s, r, 200, json_object());
	else
		sim_reply_json(s, r, 404,
		        json_pack(
		                "{s:s,s:s}", "code", "not_found", "message", "process not found"));
}

void
sim_proc_free_all(sim *s)
{
	while (s->procs != NULL) {
		sim_proc *p = s->procs;
		s->procs = p->next;
		json_decref(p->config);
		free(p);
	}
}
