/*
 * loadgen: a small HTTP load generator on libcurl multi for the simulator
 * benchmark. N concurrent keep-alive transfers for a fixed duration or
 * count; paths come from a template ("{n}" = request number modulo --mod)
 * or are cycled from a file; prints requests/s and counts by status.
 *
 *   loadgen --url http://127.0.0.1:3000 --path '/sandboxes/{n}' [--paths FILE]
 *           [--method GET] [--body TEMPLATE] [--header 'K: V']...
 *           [-c 32] [--duration 5 | --count N] [--mod M]
 */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/util.h"

#define MAX_CONC 512

struct opts {
	const char *url, *path, *paths_file, *method, *body;
	struct curl_slist *headers;
	int conc;
	double duration;
	long count, mod;
	char **paths;
	long npaths;
};

struct slot {
	CURL *easy;
	char url[2048];
	char *body;
};

static long status_counts[600];
static long errors;

static size_t
discard(char *data, size_t size, size_t n, void *userp)
{
	return size * n;
}

/* Replaces each "{n}" in tmpl with n. Caller frees. */
static char *
expand(const char *tmpl, long n)
{
	sk_buf b = SK_BUF_INIT(1 << 20);
	const char *p = tmpl, *hit;

	while ((hit = strstr(p, "{n}")) != NULL) {
		sk_buf_append(&b, p, (size_t)(hit - p));
		sk_buf_printf(&b, "%ld", n);
		p = hit + 3;
	}
	sk_buf_append(&b, p, strlen(p));
	return sk_buf_detach(&b);
}

static void
prepare(struct opts *o, struct slot *s, long n)
{
	long k = o->mod > 0 ? n % o->mod : n;
	char *path = o->npaths ? sk_strdup(o->paths[n % o->npaths]) : expand(o->path, k);

	snprintf(s->url, sizeof(s->url), "%s%s", o->url, path);
	free(path);
	free(s->body);
	s->body = o->body ? expand(o->body, k) : NULL;
	curl_easy_setopt(s->easy, CURLOPT_URL, s->url);
	curl_easy_setopt(s->easy, CURLOPT_CUSTOMREQUEST, o->method);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);
	if (!s->body && strcmp(o->method, "GET") == 0)
		curl_easy_setopt(s->easy, CURLOPT_HTTPGET, 1L);
}

static int
load_paths(struct opts *o)
{
	char *data = NULL, *save = NULL, *line;
	size_t len, cap = 0;
	sk_error err;

	if (sk_file_read(o->paths_file, (size_t)1 << 30, &data, &len, &err) != 0) {
		fprintf(stderr, "loadgen: %s\n", err.message);
		return -1;
	}
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if ((size_t)o->npaths == cap) {
			cap = cap ? cap * 2 : 1024;
			o->paths = sk_realloc(o->paths, cap * sizeof(char *));
		}
		o->paths[o->npaths++] = sk_strdup(line);
	}
	free(data);
	return o->npaths > 0 ? 0 : -1;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = { { "url", 1, NULL, 'u' }, { "path", 1, NULL, 'p' },
		{ "paths", 1, NULL, 'P' }, { "method", 1, NULL, 'm' }, { "body", 1, NULL, 'b' },
		{ "header", 1, NULL, 'H' }, { "duration", 1, NULL, 'd' }, { "count", 1, NULL, 'n' },
		{ "mod", 1, NULL, 'M' }, { NULL, 0, NULL, 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "c:H:", lo, NULL)) != -1) {
		switch (c) {
		case 'u': o->url = optarg; break;
		case 'p': o->path = optarg; break;
		case 'P': o->paths_file = optarg; break;
		case 'm': o->method = optarg; break;
		case 'b': o->body = optarg; break;
		case 'H': o->headers = curl_slist_append(o->headers, optarg); break;
		case 'd': o->duration = atof(optarg); break;
		case 'n': o->count = atol(optarg); break;
		case 'M': o->mod = atol(optarg); break;
		case 'c': o->conc = atoi(optarg); break;
		default: return -1;
		}
	}
	if (o->url == NULL || (o->path == NULL && o->paths_file == NULL) || o->conc < 1 ||
	        o->conc > MAX_CONC)
		return -1;
	if (o->body)
		o->headers = curl_slist_append(o->headers, "Content-Type: application/json");
	return o->paths_file ? load_paths(o) : 0;
}

static void
run(struct opts *o, CURLM *m, struct slot *slots, long *done_out, double *secs)
{
	int64_t start = sk_monotonic_ms(), deadline = start + (int64_t)(o->duration * 1000);
	long issued = 0, done = 0;
	int running = 0;

	for (int i = 0; i < o->conc && (o->count == 0 || issued < o->count); i++) {
		prepare(o, &slots[i], issued++);
		curl_multi_add_handle(m, slots[i].easy);
	}
	do {
		CURLMsg *msg;
		int left;
		bool more = o->count ? issued < o->count : sk_monotonic_ms() < deadline;
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			struct slot *s;
			long st = 0;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &st);
			if (msg->data.result != CURLE_OK || st <= 0 || st >= 600)
				errors++;
			else
				status_counts[st]++;
			done++;
			curl_multi_remove_handle(m, s->easy);
			more = o->count ? issued < o->count : sk_monotonic_ms() < deadline;
			if (more) {
				prepare(o, s, issued++);
				curl_multi_add_handle(m, s->easy);
				running++;
			}
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 50, NULL);
	} while (running > 0);
	*done_out = done;
	*secs = (double)(sk_monotonic_ms() - start) / 1000.0;
}

int
main(int argc, char **argv)
{
	struct opts o = { .method = "GET", .conc = 16, .duration = 5 };
	struct slot *slots;
	CURLM *m;
	long done = 0;
	double secs = 0;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr,
		        "usage: loadgen --url BASE --path TEMPLATE|--paths FILE [--method M] "
		        "[--body TEMPLATE] [--header H]... [-c N] [--duration S|--count N] "
		        "[--mod M]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o.conc);
	slots = sk_calloc((size_t)o.conc, sizeof(*slots));
	for (int i = 0; i < o.conc; i++) {
		slots[i].easy = curl_easy_init();
		curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, &slots[i]);
		curl_easy_setopt(slots[i].easy, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(slots[i].easy, CURLOPT_HTTPHEADER, o.headers);
		curl_easy_setopt(slots[i].easy, CURLOPT_TIMEOUT, 30L);
		curl_easy_setopt(slots[i].easy, CURLOPT_TCP_NODELAY, 1L);
	}
	run(&o, m, slots, &done, &secs);
	printf("requests=%ld seconds=%.2f rps=%.0f errors=%ld status:", done, secs,
	        secs > 0 ? (double)done / secs : 0.0, errors);
	for (int st = 0; st < 600; st++)
		if (status_counts[st])
			printf(" %d=%ld", st, status_counts[st]);
	printf("\n");
	for (int i = 0; i < o.conc; i++) {
		curl_easy_cleanup(slots[i].easy);
		free(slots[i].body);
	}
	free(slots);
	for (long i = 0; i < o.npaths; i++)
		free(o.paths[i]);
	free(o.paths);
	curl_slist_free_all(o.headers);
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return errors > 0 ? 1 : 0;
}
