/*
 * The recorder library through its public API only (include/memsnap/recorder.h):
 * many threads, read-back, drops, bounded memory, SIGKILL and fatal signals.
 * Traces are read back with the project's reader, which the recorder does not link.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "memsnap/recorder.h"
#include "parse/trace.h"

static const char *tmp_path(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("TMPDIR");

	snprintf(buf, sizeof(buf), "%s/msr-%d-%s.zst", dir && *dir ? dir : "/tmp", (int)getpid(),
	         name);
	return buf;
}

static struct ms_trace *load(const char *path, struct ms_source_info *info, struct ms_diag *d)
{
	struct ms_trace *t = NULL;
	ms_status s = ms_trace_load(path, NULL, &t, info, d);

	cr_assert_eq(s, MS_OK, "%s: %s", path, d->msg);
	return t;
}

/* ---- many threads ---- */

#define N_THREADS  8
#define PER_THREAD 40000

struct worker {
	struct msr *r;
	unsigned id;
	int failures;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (unsigned i = 0; i < PER_THREAD; i++) {
		struct msr_event e = {0};
		e.action = i % 2 ? MSR_FREE_COMPLETED : MSR_ALLOC;
		e.device = (uint16_t)(w->id % 2);
		e.addr = (uint64_t)w->id << 40 | i;
		e.size = 512 * (i + 1);
		e.stream = w->id;
		if (msr_record(w->r, &e))
			w->failures++;
	}
	return NULL;
}

Test(recorder, threads_every_event_in_order)
{
	struct msr_options o;
	struct msr *r;
	pthread_t th[N_THREADS];
	struct worker w[N_THREADS];
	const char *path = tmp_path("threads");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;
	uint64_t next[N_THREADS] = {0};

	msr_options_init(&o);
	o.ring_events = 65536; /* larger than PER_THREAD: nothing may be dropped */
	cr_assert_eq(msr_open(path, &o, &r), 0);
	for (unsigned i = 0; i < N_THREADS; i++) {
		w[i] = (struct worker){r, i, 0};
		cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	cr_assert_eq(msr_dropped(r), 0);
	cr_assert_eq(msr_close(r), 0);

	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(d.warnings, 0, "%s", d.warning);
	cr_assert_eq(info.zst.has_end, 1);
	cr_assert_eq(info.zst.dropped_events, 0);
	cr_assert_eq(t->n_events, (size_t)N_THREADS * PER_THREAD);
	for (size_t k = 0; k < t->n_events; k++) {
		const struct ms_event *e = &t->events[k];
		unsigned id = (unsigned)(e->addr >> 40);
		uint64_t i = e->addr & ((1ULL << 40) - 1);
		cr_assert_lt(id, N_THREADS);
		cr_assert_eq(i, next[id], "thread %u: event %llu after %llu", id,
		             (unsigned long long)i, (unsigned long long)next[id]);
		next[id]++;
		cr_assert_eq(e->action, i % 2 ? MS_ACT_FREE_COMPLETED : MS_ACT_ALLOC);
		cr_assert_eq(e->size, 512 * (i + 1));
		cr_assert_eq(e->stream, id);
		cr_assert_eq(e->device, id % 2);
		cr_assert_eq(e->source, MS_SRC_TORCH);
	}
	ms_trace_free(t);
	unlink(path);
}

/* ---- read-back of every field ---- */

Test(recorder, read_back_identical)
{
	struct msr_options o;
	struct msr_device dev = {0, "NVIDIA H200", 150754820096ULL};
	struct msr_settings st = {0};
	struct msr *r;
	const char *path = tmp_path("readback");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;
	uint64_t seed = 42;
	struct msr_event ev[2000];
	uint32_t stacks[8];

	st.alloc_conf = "expandable_segments:True";
	st.max_split_size = -1;
	st.expandable_segments = 1;
	for (int i = 0; i < 16; i++)
		st.roundup_power2_divisions[i] = i == 3 ? 4 : 0;
	msr_options_init(&o);
	o.devices = &dev;
	o.n_devices = 1;
	o.settings = &st;
	o.torch_version = "2.11.0+cu130";
	o.limit_bytes = 8ULL << 30;
	cr_assert_eq(msr_open(path, &o, &r), 0);
	for (int i = 0; i < 8; i++) {
		char fn[32];
		uint32_t fr[3];
		snprintf(fn, sizeof(fn), "fn%d", i);
		fr[0] = msr_frame(r, fn, "train.py", 10 + (uint32_t)i);
		fr[1] = msr_frame(r, "step", "train.py", 99);
		fr[2] = msr_frame(r, "<module>", "train.py", 1);
		cr_assert(fr[0] && fr[1] && fr[2]);
		stacks[i] = msr_stack(r, fr, 3);
		cr_assert_neq(stacks[i], 0);
		cr_assert_eq(msr_stack(r, fr, 3), stacks[i], "a stack is interned once");
	}
	uint32_t bad = 12345;
	cr_assert_eq(msr_stack(r, &bad, 1), 0, "an undefined frame id is refused");
	cr_assert_eq(msr_annotate(r, MSR_ANN_PHASE, MSR_ANN_START, "forward", 0), 0);
	int64_t t0 = 1763787000000000000LL;
	for (int i = 0; i < 2000; i++) {
		struct msr_event *e = &ev[i];
		memset(e, 0, sizeof(*e));
		e->action = (uint8_t)(th_rand(&seed) % 9);
		e->source = (uint8_t)(th_rand(&seed) % 2);
		e->device = (uint16_t)(th_rand(&seed) % 3);
		e->stack = th_rand(&seed) % 3 ? 0 : stacks[th_rand(&seed) % 8];
		e->addr = 0x7f0000000000ULL + (th_rand(&seed) % 4096) * 512;
		e->size = th_rand(&seed) % 3 ? th_rand(&seed) % (1ULL << 34) : 512;
		e->stream = th_rand(&seed) % 4 ? 0 : 0x55550000ULL + th_rand(&seed) % 3;
		e->t_ns = t0 + (int64_t)i * 1000 * (int64_t)(th_rand(&seed) % 50);
		cr_assert_eq(msr_record(r, e), 0);
		if (i == 1000)
			cr_assert_eq(msr_annotate(r, MSR_ANN_STEP, MSR_ANN_MARK, "step 1", 1), 0);
	}
	cr_assert_eq(msr_annotate(r, MSR_ANN_PHASE, MSR_ANN_END, "forward", 0), 0);
	cr_assert_eq(msr_close(r), 0);

	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(d.warnings, 0, "%s", d.warning);
	cr_assert_str_eq(t->meta.producer, "memsnap-recorder");
	cr_assert_str_eq(t->meta.torch_version, "2.11.0+cu130");
	cr_assert_eq(t->meta.limit_bytes, (int64_t)(8ULL << 30));
	cr_assert_eq(t->meta.n_devices, 1);
	cr_assert_str_eq(t->meta.devices[0].name, "NVIDIA H200");
	cr_assert_eq(t->meta.devices[0].total_memory, 150754820096ULL);
	cr_assert(t->meta.settings.present);
	cr_assert_str_eq(t->meta.settings.alloc_conf, "expandable_segments:True");
	cr_assert_eq(t->meta.settings.expandable_segments, 1);
	cr_assert_eq(t->meta.settings.roundup_power2_divisions[3], 4);
	cr_assert_eq(t->n_events, 2000);
	for (size_t i = 0; i < 2000; i++) {
		const struct ms_event *a = &t->events[i];
		const struct msr_event *e = &ev[i];
		cr_assert_eq(a->action, e->action, "event %zu", i);
		cr_assert_eq(a->source, e->source, "event %zu", i);
		cr_assert_eq(a->device, e->device, "event %zu", i);
		cr_assert_eq(a->addr, e->addr, "event %zu", i);
		cr_assert_eq(a->size, e->size, "event %zu", i);
		cr_assert_eq(a->stream, e->stream, "event %zu", i);
		cr_assert_eq(a->t_ns, e->t_ns, "event %zu", i);
		if (!e->stack) {
			cr_assert_eq(a->stack, 0);
			continue;
		}
		/* the stack's frames read back by name */
		size_t n;
		const uint32_t *fr = ms_symtab_get_stack(&t->syms, a->stack, &n);
		cr_assert_eq(n, 3);
		int k = -1;
		for (int j = 0; j < 8; j++)
			if (stacks[j] == e->stack)
				k = j;
		char fn[32];
		snprintf(fn, sizeof(fn), "fn%d", k);
		const struct ms_frame *f0 = &t->syms.frames[fr[0]];
		cr_assert_str_eq(ms_symtab_get_str(&t->syms, f0->name)->s, fn);
		cr_assert_str_eq(ms_symtab_get_str(&t->syms, f0->file)->s, "train.py");
		cr_assert_eq(f0->line, 10 + (uint32_t)k);
		cr_assert_str_eq(ms_symtab_get_str(&t->syms, t->syms.frames[fr[2]].name)->s,
		                 "<module>");
	}
	cr_assert_eq(t->n_anns, 3);
	cr_assert_str_eq(ms_symtab_get_str(&t->syms, t->anns[0].name)->s, "forward");
	cr_assert_eq(t->anns[0].kind, MS_ANN_PHASE);
	cr_assert_eq(t->anns[0].stage, MS_ANN_START);
	cr_assert_eq(t->anns[0].event_index, 0);
	cr_assert_str_eq(ms_symtab_get_str(&t->syms, t->anns[1].name)->s, "step 1");
	cr_assert_eq(t->anns[1].kind, MS_ANN_STEP);
	cr_assert_eq(t->anns[1].event_index, 1001);
	cr_assert_eq(t->anns[1].device, 1);
	cr_assert_eq(t->anns[2].stage, MS_ANN_END);
	cr_assert_eq(t->anns[2].event_index, 2000);
	ms_trace_free(t);
	unlink(path);
}

Test(recorder, bad_arguments)
{
	struct msr_options o;
	struct msr *r = NULL;
	struct msr_event e = {0};

	msr_options_init(&o);
	o.ring_events = 1000; /* not a power of two */
	cr_assert_eq(msr_open(tmp_path("bad"), &o, &r), -EINVAL);
	msr_options_init(&o);
	o.flush_ms = 500; /* more than the promised 100 ms */
	cr_assert_eq(msr_open(tmp_path("bad"), &o, &r), -EINVAL);
	cr_assert_eq(msr_open("/nonexistent-dir/x.zst", NULL, &r), -ENOENT);
	cr_assert_eq(msr_open_fd(-1, NULL, &r), -EINVAL);
	cr_assert_eq(msr_open(tmp_path("bad"), NULL, &r), 0);
	e.action = 9;
	cr_assert_eq(msr_record(r, &e), -EINVAL);
	cr_assert_eq(msr_annotate(r, MSR_ANN_STEP, 7, "x", 0), -EINVAL);
	cr_assert_eq(msr_close(r), 0);
	unlink(tmp_path("bad"));
}

/* Each event's memory pool: recorded, written (format 1.3) and read back; bad ids refused. */
Test(recorder, pools_recorded)
{
	struct msr *r;
	struct msr_event e = {0};
	const char *path = tmp_path("pools");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;
	/* (first, second) of each event; UINT64_MAX twice: msr_record, unknown */
	static const uint64_t ids[][2] = {
	        {UINT64_MAX, UINT64_MAX}, {0, 0}, {1, 0}, {1, 0}, {0, 3}, {0, 0},
	        {UINT64_MAX, UINT64_MAX}};
	static const uint16_t codes[] = {MS_POOL_UNKNOWN, MS_POOL_DEFAULT, 2, 2, 7, 0,
	                                 MS_POOL_UNKNOWN};

	cr_assert_eq(msr_open(path, NULL, &r), 0);
	e.action = MSR_ALLOC;
	e.size = 512;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		e.addr = 0x7f0000000000ULL + i * 512;
		if (ids[i][0] == UINT64_MAX)
			cr_assert_eq(msr_record(r, &e), 0);
		else
			cr_assert_eq(msr_record_in_pool(r, &e, ids[i][0], ids[i][1]), 0);
	}
	cr_assert_eq(msr_record_in_pool(r, &e, 1, 1), -EINVAL);     /* both halves */
	cr_assert_eq(msr_record_in_pool(r, &e, 0, 40000), -EINVAL); /* too large */
	cr_assert_eq(msr_close(r), 0);
	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(t->n_events, sizeof(codes) / sizeof(codes[0]));
	for (size_t i = 0; i < t->n_events; i++)
		cr_assert_eq(t->events[i].pool, codes[i], "event %zu: pool %u, not %u", i,
		             t->events[i].pool, codes[i]);
	ms_trace_free(t);
	unlink(path);
}

/* ---- flush: what was recorded is in the file while recording goes on ---- */

Test(recorder, flush_makes_events_readable)
{
	struct msr *r;
	const char *path = tmp_path("flush");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;

	cr_assert_eq(msr_open(path, NULL, &r), 0);
	for (int i = 0; i < 1234; i++) {
		struct msr_event e = {.action = MSR_ALLOC, .addr = 4096 * (uint64_t)i, .size = 8};
		cr_assert_eq(msr_record(r, &e), 0);
	}
	cr_assert_eq(msr_flush(r), 0);
	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(t->n_events, 1234);
	cr_assert_eq(info.zst.has_end, 0, "still open: no END yet");
	cr_assert(d.warnings > 0);
	ms_trace_free(t);
	cr_assert_eq(msr_close(r), 0);
	unlink(path);
}

/* ---- drops are counted and written, never silent; memory stays bounded ---- */

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

struct flood {
	struct msr *r;
	unsigned id;
	uint64_t ok, dropped;
};

static void *flood_work(void *arg)
{
	struct flood *f = arg;

	for (uint64_t i = 0; i < 1000000; i++) {
		struct msr_event e = {
		        .action = MSR_ALLOC, .addr = (uint64_t)f->id << 40 | i, .size = i};
		int rc = msr_record(f->r, &e);
		if (rc == 0)
			f->ok++;
		else if (rc == -EAGAIN)
			f->dropped++;
	}
	return NULL;
}

Test(recorder, drops_counted_and_memory_bounded)
{
	struct msr_options o;
	struct msr *r;
	const char *path = tmp_path("flood");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;
	struct flood f[4];
	pthread_t th[4];
	uint64_t ok = 0, dropped = 0;
	long rss0, rss1;

	msr_options_init(&o);
	o.ring_events = 256; /* 4 threads x 1 M events: far more than the rings hold */
	cr_assert_eq(msr_open(path, &o, &r), 0);
	rss0 = rss_kib();
	for (unsigned i = 0; i < 4; i++) {
		f[i] = (struct flood){r, i, 0, 0};
		pthread_create(&th[i], NULL, flood_work, &f[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ok += f[i].ok;
		dropped += f[i].dropped;
	}
	rss1 = rss_kib();
	cr_assert_eq(ok + dropped, 4000000);
	cr_assert_eq(msr_dropped(r), dropped);
	cr_assert_gt(dropped, 0, "the rings are too small for the flood");
	cr_assert_eq(msr_close(r), 0);
	/* rings 4 x 256 x 48 B, a 1 MiB frame buffer and its compressed copy: far under 32 MiB */
	cr_assert_lt(rss1 - rss0, 32 * 1024, "grew %ld KiB", rss1 - rss0);

	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(t->n_events, ok, "every accepted event is in the file");
	cr_assert_eq(info.zst.dropped_events, dropped, "and every dropped one is counted there");
	cr_assert(d.warnings > 0 && strstr(d.warning, "dropped"), "%s", d.warning);
	ms_trace_free(t);
	unlink(path);
}

/* ---- killed processes leave readable prefixes ---- */

/* Child: record events numbered 0, 1, 2... until killed, or raise sig after n events. */
/* Records to path until killed (or raises sig at event n); once the trace is open it writes a
 * byte to ready (if >= 0), so that a parent times its kill from there, not from the fork. */
static void child_record_ready(const char *path, int sig, uint64_t n, int ready)
{
	struct msr_options o;
	struct msr *r;
	struct timespec pause = {0, 20000};

	msr_options_init(&o);
	o.flush_ms = 20;
	if (msr_open(path, &o, &r))
		_exit(3);
	if (ready >= 0 && write(ready, "r", 1) != 1)
		_exit(4);
	for (uint64_t i = 0;; i++) {
		struct msr_event e = {.action = MSR_ALLOC, .addr = i, .size = i * 8};
		if (sig && i == n)
			raise(sig);
		msr_record(r, &e);
		/*
		 * slowly enough that the ring (65536) does not fill while the writer thread is
		 * starved on a loaded machine: a drop would leave a gap check_prefix refuses
		 */
		if (i % 16 == 15)
			nanosleep(&pause, NULL);
	}
}

static void child_record(const char *path, int sig, uint64_t n)
{
	child_record_ready(path, sig, n, -1);
}

static void check_prefix(const char *path, uint64_t min_events, int want_end)
{
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;
	struct ms_trace *t = load(path, &info, &d);

	cr_assert_geq(t->n_events, min_events, "%zu events", t->n_events);
	cr_assert_eq(info.zst.has_end, want_end);
	for (size_t i = 0; i < t->n_events; i++) {
		cr_assert_eq(t->events[i].addr, i, "event %zu", i);
		cr_assert_eq(t->events[i].size, i * 8);
	}
	ms_trace_free(t);
}

Test(recorder, sigkill_leaves_readable_prefix)
{
	uint64_t seed = 7;
	const char *path = tmp_path("kill");

	for (int round = 0; round < 12; round++) {
		/* at once (maybe before the header), then at random moments after the trace is
		   open, timed from there: a loaded machine may start the child late */
		long ms = round == 0 ? 0 : 1 + (long)(th_rand(&seed) % 300);
		int ready[2];
		char c;
		cr_assert_eq(pipe(ready), 0);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			close(ready[0]);
			child_record_ready(path, 0, 0, ready[1]);
		}
		close(ready[1]);
		if (round > 0)
			cr_assert_eq(read(ready[0], &c, 1), 1, "the child did not open its trace");
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		close(ready[0]); /* only now: a write to a closed pipe would kill it first */
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		/* killed before the header was written: no file or an empty one, only at once */
		struct stat sb;
		if (stat(path, &sb) != 0 || sb.st_size == 0) {
			cr_assert_eq(round, 0, "no trace %ld ms after it was opened", ms);
			unlink(path);
			continue;
		}
		{
			/* 150 ms after the open (flush_ms 20 plus slack) some events must be on
			   disk */
			check_prefix(path, ms > 150 ? 1 : 0, 0);
			unlink(path);
		}
	}
}

Test(recorder, fatal_signal_flushes_and_finishes)
{
	static const int sigs[] = {SIGABRT, SIGSEGV, SIGTERM};
	const char *path = tmp_path("fatal");

	for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			/* the default disposition, not a sanitizer's: the re-raise must kill */
			signal(sigs[k], SIG_DFL);
			child_record(path, sigs[k], 5000);
		}
		int st;
		waitpid(pid, &st, 0);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == sigs[k], "signal %d re-raised",
		          sigs[k]);
		check_prefix(path, 5000, 1);
		unlink(path);
	}
}

/* After fork(), the child records nothing into the parent's file. */
Test(recorder, fork_child_leaves_parent_file_alone)
{
	struct msr *r;
	const char *path = tmp_path("fork");
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_source_info info;

	cr_assert_eq(msr_open(path, NULL, &r), 0);
	for (uint64_t i = 0; i < 100; i++) {
		struct msr_event e = {.action = MSR_ALLOC, .addr = i, .size = i * 8};
		msr_record(r, &e);
	}
	pid_t pid = fork();
	if (pid == 0) {
		struct msr_event e = {.action = MSR_ALLOC, .addr = 999999, .size = 1};
		int rc = msr_record(r, &e);
		msr_close(r);
		_exit(rc == -ESHUTDOWN ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (uint64_t i = 100; i < 200; i++) {
		struct msr_event e = {.action = MSR_ALLOC, .addr = i, .size = i * 8};
		msr_record(r, &e);
	}
	cr_assert_eq(msr_close(r), 0);
	check_prefix(path, 200, 1);
	struct ms_trace *t = load(path, &info, &d);
	cr_assert_eq(t->n_events, 200);
	ms_trace_free(t);
	unlink(path);
}
