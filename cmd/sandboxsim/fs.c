/*
 * sandboxsim file tree: one per sandbox (sim_sandbox.fs), in memory: regular
 * files with their bytes, directories, symlinks, fifos (a special file to
 * skip), each with a mode. It survives pause/resume and stop/start and is
 * freed with the sandbox. Entries are kept sorted by absolute path, so a
 * directory's subtree is one contiguous run and parents come before their
 * children. Every E2B/Cube envd endpoint (envd_files.c), the Daytona toolbox
 * and the command evaluators (ln -s[fn], chmod, mkdir, readlink, mkfifo, rm) use
 * it; callers hold s->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SYMLINK_HOPS 8

static sim_fnode *
node_new(const char *path, int type, uint32_t mode)
{
	sim_fnode *n = sk_calloc(1, sizeof(*n));

	n->path = sk_strdup(path);
	n->type = type;
	n->mode = mode & 07777;
	n->mtime_ms = sk_now_ms();
	return n;
}

static void
node_free(sim_fnode *n)
{
	free(n->path);
	free(n->data);
	free(n->target);
	free(n);
}

/* The index of path, or of where it would be inserted (*found false). */
static size_t
find(const sim_fs *fs, const char *path, bool *found)
{
	size_t lo = 0, hi = fs->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fs->items[mid]->path, path);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void
insert_at(sim_fs *fs, size_t i, sim_fnode *n)
{
	if (fs->len == fs->cap) {
		fs->cap = fs->cap ? fs->cap * 2 : 16;
		fs->items = sk_realloc(fs->items, fs->cap * sizeof(*fs->items));
	}
	memmove(fs->items + i + 1, fs->items + i, (fs->len - i) * sizeof(*fs->items));
	fs->items[i] = n;
	fs->len++;
	fs->gen++;
}

sim_fnode *
sim_fs_get(sim_fs *fs, const char *path)
{
	bool found;
	size_t i = find(fs, path, &found);

	return found ? fs->items[i] : NULL;
}

sim_fs *
sim_fs_new(const char *home)
{
	sim_fs *fs = sk_calloc(1, sizeof(*fs));

	fs->home = sk_strdup(home);
	sim_fs_mkdir(fs, home, 0755, true);
	return fs;
}

void
sim_fs_free(sim_fs *fs)
{
	if (fs == NULL)
		return;
	for (size_t i = 0; i < fs->len; i++)
		node_free(fs->items[i]);
	free(fs->items);
	free(fs->home);
	free(fs);
}

/* Appends one component to out (a normalized absolute path); ".." drops the last. */
static int
push_component(sk_buf *out, const char *c, size_t n)
{
	if (n == 0 || (n == 1 && c[0] == '.'))
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		while (out->len > 0 && out->data[--out->len] != '/')
			;
		if (out->data)
			out->data[out->len] = '\0';
		return 0;
	}
	sk_buf_append(out, "/", 1);
	sk_buf_append(out, c, n);
	return 0;
}

char *
sim_fs_path(const sim_fs *fs, const char *path)
{
	sk_buf out = SK_BUF_INIT(0);
	const char *p;

	if (path == NULL || *path == '\0')
		return sk_strdup(fs->home);
	if (path[0] != '/' && push_component(&out, fs->home + 1, strlen(fs->home + 1)) != 0)
		goto bad;
	for (p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (push_component(&out, p, n) != 0)
			goto bad;
		p += n;
		while (*p == '/')
			p++;
	}
	if (out.len == 0)
		return sk_strdup("/");
	return sk_buf_detach(&out);
bad:
	sk_buf_dispose(&out);
	return NULL;
}

/* The parent directory of an absolute normalized path ("/" for "/x"). */
static char *
parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash == path)
		return sk_strdup("/");
	return sk_strndup(path, (size_t)(slash - path));
}

/* Makes every directory of path's parents; -ENOTDIR when one is not a directory. */
static int
make_parents(sim_fs *fs, const char *path)
{
	char *parent = parent_of(path);
	int rc = 0;

	if (strcmp(parent, path) != 0)
		rc = sim_fs_mkdir(fs, parent, 0755, true);
	free(parent);
	return rc == -EEXIST ? 0 : rc;
}

int
sim_fs_mkdir(sim_fs *fs, const char *path, uint32_t mode, bool parents)
{
	bool found;
	size_t i = find(fs, path, &found);
	int rc;

	if (found)
		return fs->items[i]->type == SIM_F_DIR ? -EEXIST : -ENOTDIR;
	if (strcmp(path, "/") != 0) {
		char *parent = parent_of(path);
		sim_fnode *pn = sim_fs_get(fs, parent);
		rc = pn ? (pn->type == SIM_F_DIR ? 0 : -ENOTDIR)
		        : (parents ? make_parents(fs, path) : -ENOENT);
		free(parent);
		if (rc != 0)
			return rc;
		i = find(fs, path, &found);
	}
	insert_at(fs, i, node_new(path, SIM_F_DIR, mode));
	return 0;
}

/* A new node at path (parents made); an existing non-directory is replaced. */
static sim_fnode *
create(sim_fs *fs, const char *path, int type, uint32_t mode, int *rc)
{
	bool found;
	size_t i;

	if ((*rc = make_parents(fs, path)) != 0)
		return NULL;
	i = find(fs, path, &found);
	if (found && fs->items[i]->type == SIM_F_DIR) {
		*rc = -EISDIR;
		return NULL;
	}
	if (found) {
		node_free(fs->items[i]);
		fs->items[i] = node_new(path, type, mode);
		fs->gen++;
	} else {
		insert_at(fs, i, node_new(path, type, mode));
	}
	return fs->items[i];
}

int
sim_fs_put(sim_fs *fs, const char *path, char *data, size_t len)
{
	sim_fnode *old = sim_fs_get(fs, path), *n;
	uint32_t mode = old && old->type == SIM_F_FILE ? old->mode : 0644;
	int rc;

	n = create(fs, path, SIM_F_FILE, mode, &rc);
	if (n == NULL) {
		free(data);
		return rc;
	}
	n->data = data;
	n->len = len;
	fs->gen++;
	return 0;
}

int
sim_fs_symlink(sim_fs *fs, const char *target, const char *path)
{
	sim_fnode *n;
	int rc;

	if (sim_fs_get(fs, path))
		return -EEXIST;
	if ((n = create(fs, path, SIM_F_LINK, 0777, &rc)) == NULL)
		return rc;
	n->target = sk_strdup(target);
	return 0;
}

int
sim_fs_mkfifo(sim_fs *fs, const char *path)
{
	int rc;

	if (sim_fs_get(fs, path))
		return -EEXIST;
	return create(fs, path, SIM_F_FIFO, 0644, &rc) ? 0 : rc;
}

sim_fnode *
sim_fs_resolve(sim_fs *fs, const char *path)
{
	sim_fnode *n = sim_fs_get(fs, path);

	for (int hop = 0; n && n->type == SIM_F_LINK && hop < SYMLINK_HOPS; hop++) {
		char *dir = parent_of(n->path);
		char *rel = n->target[0] == '/' ? sk_strdup(n->target)
		                                : sk_asprintf("%s/%s", dir, n->target);
		char *next = sim_fs_path(fs, rel);
		n = next ? sim_fs_get(fs, next) : NULL;
		free(next);
		free(rel);
		free(dir);
	}
	return n && n->type == SIM_F_LINK ? NULL : n;
}

int
sim_fs_chmod(sim_fs *fs, const char *path, uint32_t mode)
{
	sim_fnode *n = sim_fs_resolve(fs, path);

	if (n == NULL)
		return -ENOENT;
	n->mode = mode & 07777;
	fs->gen++;
	return 0;
}

int
sim_fs_remove(sim_fs *fs, const char *path)
{
	bool found;
	size_t i = find(fs, path, &found), end = i + 1, plen = strlen(path);

	if (!found)
		return -ENOENT;
	while (end < fs->len && strncmp(fs->items[end]->path, path, plen) == 0 &&
	        (fs->items[end]->path[plen] == '/' || plen == 1))
		end++;
	for (size_t k = i; k < end; k++)
		node_free(fs->items[k]);
	memmove(fs->items + i, fs->items + end, (fs->len - end) * sizeof(*fs->items));
	fs->len -= end - i;
	fs->gen++;
	return 0;
}

void
sim_fs_lose(sim_fs *fs, int mode)
{
	size_t first, n = sim_fs_subtree(fs, fs->home, &first);
	bool drop = true;

	fs->gen++;
	if (mode == SIM_LOSE_EMPTY) {
		for (size_t k = first; k < first + n; k++)
			node_free(fs->items[k]);
		memmove(fs->items + first, fs->items + first + n,
		        (fs->len - first - n) * sizeof(*fs->items));
		fs->len -= n;
		return;
	}
	if (mode != SIM_LOSE_PARTIAL)
		return;
	for (size_t k = first; k < first + n;) {
		if (fs->items[k]->type == SIM_F_FILE && (drop = !drop)) {
			node_free(fs->items[k]);
			memmove(fs->items + k, fs->items + k + 1,
			        (fs->len - k - 1) * sizeof(*fs->items));
			fs->len--;
			n--;
			continue;
		}
		k++;
	}
}

int
sim_fs_fill(sim_fs *fs, const char *path, size_t len, uint64_t seed)
{
	char *data = sk_malloc(len ? len : 1);
	uint64_t st = seed ? seed : 1;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = sim_rand(&st);
		memcpy(data + i, &x, len - i < 8 ? len - i : 8);
	}
	return sim_fs_put(fs, path, data, len);
}

static sim_fnode *
node_copy(const sim_fnode *from, const char *path)
{
	sim_fnode *n = node_new(path, from->type, from->mode);

	n->mtime_ms = from->mtime_ms;
	n->len = from->len;
	if (from->data) {
		n->data = sk_malloc(from->len ? from->len : 1);
		memcpy(n->data, from->data, from->len);
	}
	n->target = from->target ? sk_strdup(from->target) : NULL;
	return n;
}

/* "/" below a directory is the directory itself. */
static const char *
below(const char *path, const char *dir)
{
	return strcmp(dir, "/") == 0 ? path : path + strlen(dir);
}

int
sim_fs_graft(sim_fs *dst, const char *dst_dir, sim_fs *src, const char *src_dir)
{
	size_t first, n = sim_fs_subtree(src, src_dir, &first);
	const char *base = strcmp(dst_dir, "/") == 0 ? "" : dst_dir;
	int rc;

	sim_fs_remove(dst, dst_dir);
	if ((rc = sim_fs_mkdir(dst, dst_dir, 0755, true)) != 0)
		return rc;
	for (size_t k = first; k < first + n; k++) {
		char *path = sk_asprintf("%s%s", base, below(src->items[k]->path, src_dir));
		bool found;
		size_t i = find(dst, path, &found);
		if (!found)
			insert_at(dst, i, node_copy(src->items[k], path));
		free(path);
	}
	dst->gen++;
	return 0;
}

sim_fs *
sim_fs_clone(sim_fs *fs)
{
	sim_fs *copy = sim_fs_new(fs->home);

	sim_fs_graft(copy, "/", fs, "/");
	return copy;
}

size_t
sim_fs_du(const sim_fs *fs)
{
	size_t bytes = 0;

	for (size_t i = 0; i < fs->len; i++)
		bytes += fs->items[i]->len;
	return bytes;
}

size_t
sim_fs_subtree(sim_fs *fs, const char *dir, size_t *first)
{
	bool found;
	size_t i = find(fs, dir, &found), end, dlen = strlen(dir);

	if (!found) {
		*first = i;
		return 0;
	}
	*first = end = i + 1;
	while (end < fs->len && strncmp(fs->items[end]->path, dir, dlen) == 0 &&
	        (fs->items[end]->path[dlen] == '/' || dlen == 1))
		end++;
	return end - *first;
}

int
sim_fs_depth_below(const char *dir, const char *path)
{
	const char *rest = path + (strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1);
	int depth = 1;

	for (; *rest; rest++)
		depth += *rest == '/';
	return depth;
}

void
sim_fs_perm_string(const sim_fnode *n, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	static const char kind[] = { '-', 'd', 'L', 'p' };

	out[0] = kind[n->type];
	for (int i = 0; i < 9; i++)
		out[1 + i] = n->mode & (0400u >> i) ? rwx[i] : '-';
	out[10] = '\0';
}

/* ---- the file commands of the command evaluators ---- */

static const char *
errno_text(int rc)
{
	switch (-rc) {
	case ENOENT: return "No such file or directory";
	case EEXIST: return "File exists";
	case ENOTDIR: return "Not a directory";
	case EISDIR: return "Is a directory";
	default: return "Invalid argument";
	}
}

/* Runs op on each path argument from argv[first]; prints GNU-style errors. */
static int
each_path(sim_fs *fs, const char *cmd, int argc, char **argv, int first, sk_buf *err,
        int (*op)(sim_fs *fs, const char *path, void *arg), void *arg)
{
	int status = first < argc ? 0 : 1;

	if (first >= argc)
		sk_buf_printf(err, "%s: missing operand\n", cmd);
	for (int i = first; i < argc; i++) {
		char *path = sim_fs_path(fs, argv[i]);
		int rc = path ? op(fs, path, arg) : -EINVAL;
		if (rc != 0) {
			sk_buf_printf(err, "%s: '%s': %s\n", cmd, argv[i], errno_text(rc));
			status = 1;
		}
		free(path);
	}
	return status;
}

static int
op_mkdir(sim_fs *fs, const char *path, void *arg)
{
	bool parents = *(bool *)arg;
	int rc = sim_fs_mkdir(fs, path, 0755, parents);

	return rc == -EEXIST && parents ? 0 : rc;
}

static int
op_chmod(sim_fs *fs, const char *path, void *arg)
{
	return sim_fs_chmod(fs, path, *(uint32_t *)arg);
}

static int
op_rm(sim_fs *fs, const char *path, void *arg)
{
	int rc = sim_fs_remove(fs, path);

	return rc == -ENOENT && *(bool *)arg ? 0 : rc;
}

static int
op_mkfifo(sim_fs *fs, const char *path, void *arg)
{
	return sim_fs_mkfifo(fs, path);
}

static int
op_readlink(sim_fs *fs, const char *path, void *arg)
{
	sim_fnode *n = sim_fs_get(fs, path);

	if (n == NULL || n->type != SIM_F_LINK)
		return -EINVAL;
	sk_buf_printf(arg, "%s\n", n->target);
	return 0;
}

/* ln -s TARGET PATH; -sf and -sfn replace what is at PATH. */
static int
cmd_ln(sim_fs *fs, int argc, char **argv, sk_buf *err)
{
	bool force = argc == 4 && (strcmp(argv[1], "-sf") == 0 || strcmp(argv[1], "-sfn") == 0);
	char *path;
	int rc;

	if (argc != 4 || (strcmp(argv[1], "-s") != 0 && !force)) {
		sk_buf_printf(err, "ln: sandboxsim evaluates only ln -s|-sf|-sfn TARGET PATH\n");
		return 1;
	}
	if ((path = sim_fs_path(fs, argv[3])) == NULL) {
		rc = -EINVAL;
	} else {
		sim_fnode *old = sim_fs_get(fs, path);
		if (force && old && old->type != SIM_F_DIR)
			sim_fs_remove(fs, path);
		rc = sim_fs_symlink(fs, argv[2], path);
	}
	if (rc != 0)
		sk_buf_printf(err, "ln: failed to create symbolic link '%s': %s\n", argv[3],
		        errno_text(rc));
	free(path);
	return rc != 0;
}

static int
cmd_chmod(sim_fs *fs, int argc, char **argv, sk_buf *err)
{
	char *end;
	unsigned long mode = argc > 1 ? strtoul(argv[1], &end, 8) : 0;

	if (argc < 3 || *end != '\0' || mode > 07777) {
		sk_buf_printf(err, "chmod: sandboxsim evaluates only chmod OCTAL PATH...\n");
		return 1;
	}
	return each_path(fs, "chmod", argc, argv, 2, err, op_chmod, &(uint32_t){ (uint32_t)mode });
}

/* A flag word at argv[1] ("-p", "-rf"), when it is one. */
static int
flags(int argc, char **argv, const char *allowed, bool *set)
{
	*set = false;
	if (argc < 2 || argv[1][0] != '-')
		return 1;
	*set = strspn(argv[1] + 1, allowed) == strlen(argv[1] + 1);
	return *set ? 2 : 1;
}

int
sim_fs_command(sim_fs *fs, int argc, char **argv, sk_buf *out, sk_buf *err)
{
	const char *c = argv[0];
	bool flag;
	int first;

	if (strcmp(c, "mkdir") == 0) {
		first = flags(argc, argv, "p", &flag);
		return each_path(fs, c, argc, argv, first, err, op_mkdir, &flag);
	}
	if (strcmp(c, "rm") == 0) {
		first = flags(argc, argv, "rf", &flag);
		return each_path(fs, c, argc, argv, first, err, op_rm, &flag);
	}
	if (strcmp(c, "ln") == 0)
		return cmd_ln(fs, argc, argv, err);
	if (strcmp(c, "chmod") == 0)
		return cmd_chmod(fs, argc, argv, err);
	if (strcmp(c, "readlink") == 0)
		return each_path(fs, c, argc, argv, 1, err, op_readlink, out);
	if (strcmp(c, "mkfifo") == 0)
		return each_path(fs, c, argc, argv, 1, err, op_mkfifo, NULL);
	return -1;
}
