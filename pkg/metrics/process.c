/*
 * process: the process_* metrics of the Prometheus clients, from
 * /proc/self/stat (CPU ticks, start time, memory), /proc/stat (boot time),
 * /proc/self/fd and the RLIMIT_NOFILE soft limit.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics.h"

typedef struct proc_stat {
	unsigned long utime, stime; /* clock ticks */
	unsigned long long starttime; /* clock ticks after boot */
	unsigned long vsize; /* bytes */
	long rss; /* pages */
} proc_stat;

static void
declare_process(sk_metrics *m)
{
	sk_metrics_declare(m, "process_cpu_seconds_total", SK_METRIC_COUNTER,
	        "Total user and system CPU time spent in seconds.");
	sk_metrics_declare(m, "process_resident_memory_bytes", SK_METRIC_GAUGE,
	        "Resident memory size in bytes.");
	sk_metrics_declare(m, "process_virtual_memory_bytes", SK_METRIC_GAUGE,
	        "Virtual memory size in bytes.");
	sk_metrics_declare(m, "process_start_time_seconds", SK_METRIC_GAUGE,
	        "Start time of the process since unix epoch in seconds.");
	sk_metrics_declare(
	        m, "process_open_fds", SK_METRIC_GAUGE, "Number of open file descriptors.");
	sk_metrics_declare(
	        m, "process_max_fds", SK_METRIC_GAUGE, "Maximum number of open file descriptors.");
}

static int
read_self_stat(proc_stat *ps, sk_error *err)
{
	char buf[1024];
	const char *p;
	size_t n;
	FILE *f = fopen("/proc/self/stat", "r");

	if (!f)
		return sk_error_set(err, SK_EIO, "/proc/self/stat: cannot open");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) is in parentheses and may hold spaces. */
	p = strrchr(buf, ')');
	if (!p ||
	        sscanf(p + 1,
	                " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d "
	                "%*d %*d %llu %lu %ld",
	                &ps->utime, &ps->stime, &ps->starttime, &ps->vsize, &ps->rss) != 5)
		return sk_error_set(err, SK_EIO, "/proc/self/stat: unexpected format");
	return SK_OK;
}

static int
read_boot_time(long long *btime, sk_error *err)
{
	char line[256];
	int rc = SK_EIO;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return sk_error_set(err, SK_EIO, "/proc/stat: cannot open");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", btime) == 1) {
			rc = SK_OK;
			break;
		}
	fclose(f);
	return rc == SK_OK ? rc : sk_error_set(err, rc, "/proc/stat: no btime line");
}

static int
count_open_fds(size_t *n, sk_error *err)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return sk_error_set(err, SK_EIO, "/proc/self/fd: cannot open");
	*n = 0;
	while ((d = readdir(dir)) != NULL)
		if (d->d_name[0] != '.')
			(*n)++;
	closedir(dir);
	if (*n > 0)
		(*n)--; /* the descriptor of the listing itself */
	return SK_OK;
}

int
sk_metrics_collect_process(sk_metrics *m, sk_error *err)
{
	long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	proc_stat ps = { 0 };
	long long btime = 0;
	size_t fds = 0;
	int rc;

	declare_process(m);
	if (ticks <= 0 || page <= 0)
		return sk_error_set(err, SK_EIO, "sysconf: no clock tick or page size");
	if ((rc = read_self_stat(&ps, err)) != SK_OK ||
	        (rc = read_boot_time(&btime, err)) != SK_OK ||
	        (rc = count_open_fds(&fds, err)) != SK_OK)
		return rc;
	sk_metrics_set(m, "process_cpu_seconds_total", NULL,
	        (double)(ps.utime + ps.stime) / (double)ticks);
	sk_metrics_set(m, "process_resident_memory_bytes", NULL, (double)ps.rss * (double)page);
	sk_metrics_set(m, "process_virtual_memory_bytes", NULL, (double)ps.vsize);
	sk_metrics_set(m, "process_start_time_seconds", NULL,
	        (double)btime + (double)ps.starttime / (double)ticks);
	sk_metrics_set(m, "process_open_fds", NULL, (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		sk_metrics_set(m, "process_max_fds", NULL,
		        rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur);
	return SK_OK;
}
