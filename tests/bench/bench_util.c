/* SPDX-License-Identifier: MIT */
/* bench_util.c - clocks, percentiles, thread CPU and revision logs for the
 * benchmark (see bench.h). */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void hrb_note(hrb_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->n_notes >= HRB_NOTES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(r->notes[r->n_notes++], HRB_NOTE_LEN, fmt, ap);
	va_end(ap);
}

int64_t hrb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void hrb_sleep_ns(int64_t ns)
{
	struct timespec ts;

	if (ns <= 0)
		return;
	ts.tv_sec = ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int64_t hrb_process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double hrb_percentile(double *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp_double);
	/* Nearest rank: the smallest value with at least p*n values <= it. */
	rank = (size_t)(p * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

pid_t hrb_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

int hrb_list_threads(pid_t *tids, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end == '\0' && tid > 0)
			tids[n++] = (pid_t)tid;
	}
	closedir(d);
	return n;
}

/* First line of /proc/self/task/<tid>/<name> into buf. */
static int read_task_file(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[96];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n ? 0 : -1;
}

int hrb_thread_usage(pid_t tid, int64_t *cpu_ns, int64_t *switches)
{
	char buf[4096];
	const char *p;
	long long run = 0, vol = 0, invol = 0;

	/* schedstat's first field is nanoseconds on the CPU: far finer than
	 * the clock ticks of stat, which is what a near-zero figure needs. */
	if (read_task_file(tid, "schedstat", buf, sizeof buf) ||
	    sscanf(buf, "%lld", &run) != 1)
		return -1;
	if (read_task_file(tid, "status", buf, sizeof buf))
		return -1;
	p = strstr(buf, "voluntary_ctxt_switches:");
	if (p)
		sscanf(p, "voluntary_ctxt_switches: %lld", &vol);
	p = strstr(buf, "nonvoluntary_ctxt_switches:");
	if (p)
		sscanf(p, "nonvoluntary_ctxt_switches: %lld", &invol);
	*cpu_ns = run;
	*switches = vol + invol;
	return 0;
}

int hrb_revlog_init(hrb_revlog *l, int64_t base, size_t n)
{
	l->base = base;
	l->n = n;
	l->t_ns = calloc(n ? n : 1, sizeof *l->t_ns);
	return l->t_ns ? 0 : -1;
}

void hrb_revlog_free(hrb_revlog *l)
{
	free(l->t_ns);
	memset(l, 0, sizeof *l);
}

void hrb_revlog_mark(hrb_revlog *l, int64_t rev, int64_t t_ns)
{
	size_t i;

	if (rev < l->base || (uint64_t)(rev - l->base) >= l->n)
		return;
	i = (size_t)(rev - l->base);
	/* One writer per log: a plain check-then-store is enough. */
	if (!__atomic_load_n(&l->t_ns[i], __ATOMIC_RELAXED))
		__atomic_store_n(&l->t_ns[i], t_ns, __ATOMIC_RELEASE);
}

int64_t hrb_revlog_get(const hrb_revlog *l, int64_t rev)
{
	if (rev < l->base || (uint64_t)(rev - l->base) >= l->n)
		return 0;
	return __atomic_load_n(&l->t_ns[rev - l->base], __ATOMIC_ACQUIRE);
}

int hrb_buf_append(hrb_buf *b, const char *p, size_t n, size_t max)
{
	if (b->len + n > max)
		return -1;
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *t = realloc(b->p, cap);
		if (!t)
			return -1;
		b->p = t;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int hrb_buf_lines(hrb_buf *b, const char *p, size_t n, size_t max,
		  void (*fn)(void *ud, const char *line, size_t len), void *ud)
{
	size_t start = 0;

	if (hrb_buf_append(b, p, n, max))
		return -1;
	for (size_t i = 0; i < b->len; i++) {
		if (b->p[i] != '\n')
			continue;
		if (i > start)
			fn(ud, b->p + start, i - start);
		start = i + 1;
	}
	memmove(b->p, b->p + start, b->len - start + 1);
	b->len -= start;
	return 0;
}

int64_t hrb_proc_cpu_ns(pid_t pid)
{
	char path[64], buf[2048], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields count
	 * from the last ')'.  utime and stime are fields 14 and 15. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (int64_t)(ut + st) * (1000000000LL / sysconf(_SC_CLK_TCK));
}
