/*
 * The recorder: per-thread single-producer rings, one writer thread that
 * merges them by sequence number and streams zstd frames (docs/DESIGN.md,
 * "The recorder").
 *
 * Ordering: every record takes a number from one atomic counter just before
 * it is published, so the trace keeps the order in which the events were
 * recorded across threads (for PyTorch's allocator: the order of its mutex).
 * The writer emits numbers in sequence; a number taken but not yet published
 * (its thread is between the two steps) holds the later ones back until it
 * arrives, or for GAP_WAIT_MS, after which it is counted as dropped.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/status.h"
#include "common/symtab.h"
#include "format/trace_write.h"
#include "memsnap/recorder.h"

#define REC_ANNOTATION 16 /* rec.kind of an annotation; 0-8 are event actions */
#define POLL_MS        10 /* the writer drains the rings this often */
#define GAP_WAIT_MS    1000
#define FATAL_WAIT_MS  3000 /* a fatal signal waits this long for the last frame */
#define MAX_ATEXIT     8

/* One recorded item, 56 bytes. */
struct rec {
	uint64_t seq;
	int64_t t_ns;
	uint64_t addr; /* annotation: name string id */
	uint64_t size;
	uint64_t stream;
	uint32_t stack;
	uint16_t device;
	uint16_t pool;  /* event: its pool's code (common/event.h), MS_POOL_UNKNOWN if not said */
	uint8_t kind;   /* action, or REC_ANNOTATION */
	uint8_t source; /* event: enum msr_source; annotation: stage | kind << 4 */
};
_Static_assert(sizeof(struct rec) == 56, "the size msr_options documents");

enum { RING_FREE = 0, RING_ACTIVE = 1, RING_ORPHAN = 2 };

struct ring {
	_Alignas(64) _Atomic uint64_t head; /* written by the producer */
	_Alignas(64) _Atomic uint64_t tail; /* written by the writer */
	_Alignas(64) _Atomic uint64_t dropped;
	_Atomic int state;
	volatile sig_atomic_t busy; /* the owner thread is inside msr_record */
	struct rec *buf;            /* mmap'd at first use, kept until msr_close */
	uint64_t pos;               /* writer: next record to emit */
};

struct msr {
	struct msr_options o;
	char *producer, *torch_version, *alloc_conf; /* copies of the option strings */
	struct msr_device *devices;
	struct msr_settings settings;
	uint64_t gen;       /* tells this recorder's thread-local entries from a freed one's */
	sig_atomic_t forks; /* g_forks at open: another value means a forked child */

	struct ring *rings;
	uint64_t *heads;          /* writer: each ring's head at the start of a drain */
	_Atomic unsigned n_rings; /* slots ever claimed (a high-water mark) */
	pthread_mutex_t claim_mu; /* claiming a slot (a thread's first event) */
	uint64_t mask;            /* ring_events - 1 */
	pthread_key_t key;        /* releases a thread's ring when it exits */
	int have_key;

	_Atomic uint64_t seq;           /* next sequence number */
	_Atomic uint64_t dropped_other; /* events of threads beyond max_threads */
	_Atomic int closing;
	_Atomic int fatal;      /* a fatal signal asks for the last frame */
	_Atomic int fatal_done; /* the writer has written it */

	pthread_mutex_t sym_mu; /* syms: msr_frame/msr_stack/msr_annotate vs the writer */
	struct ms_symtab syms;

	/* the writer thread's state */
	pthread_t thread;
	int have_thread;
	int wake[2]; /* a byte here wakes the writer (flush, close, fatal signal) */
	FILE *f;
	struct ms_writer *w;
	uint64_t next_seq;          /* records with smaller numbers are emitted */
	uint64_t dropped_written;   /* drops already in DROPPED records */
	_Atomic uint64_t lost_gaps; /* numbers never published (counted as dropped) */
	int64_t gap_since_ms;       /* 0, or when the writer first waited for next_seq */
	int64_t last_frame_ms;
	int dirty; /* records written since the last frame */
	int finished;

	pthread_mutex_t mu; /* flush requests and results */
	pthread_cond_t cv;
	uint64_t flush_want; /* records numbered below this must reach the file */
	uint64_t flushed;    /* records numbered below this are in the file */
	int err;             /* first write error, negative errno */
};

static _Atomic uint64_t g_gen = 1;
static _Atomic(struct msr *) g_global;
/* fork() count of this process line: a recorder opened before the last fork is the parent's */
static volatile sig_atomic_t g_forks;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Thread-local: the ring of each of the last few recorders this thread used. */
#define TL_SLOTS 4
static _Thread_local struct {
	uint64_t gen;
	struct ring *ring;
} tl[TL_SLOTS];
static _Thread_local int tl_is_writer;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_fork_child(void)
{
	g_forks++;
}

static void init_once(void)
{
	pthread_atfork(NULL, NULL, on_fork_child);
}

unsigned msr_version(void)
{
	return MSR_VERSION;
}

const char *msr_version_string(void)
{
	return MS_VERSION_STRING;
}

void msr_options_init(struct msr_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->flags = MSR_F_SIGNALS;
	o->flush_ms = 100;
	o->ring_events = 65536;
	o->max_threads = 256;
	o->level = 3;
	o->limit_bytes = -1;
}

struct msr *msr_global(void)
{
	return atomic_load(&g_global);
}

struct msr *msr_set_global(struct msr *r)
{
	return atomic_exchange(&g_global, r);
}

uint64_t msr_dropped(const struct msr *r)
{
	uint64_t n = atomic_load_explicit(&r->dropped_other, memory_order_relaxed) + r->lost_gaps;

	for (unsigned i = 0; i < r->n_rings; i++)
		n += atomic_load_explicit(&r->rings[i].dropped, memory_order_relaxed);
	return n;
}

/* ---- the recording path ---- */

static void ring_release(void *p)
{
	struct ring *g = p;

	atomic_store(&g->state, RING_ORPHAN);
}

/* Claim a free slot for this thread (its first event). */
static struct ring *claim_ring(struct msr *r)
{
	struct ring *g = NULL;
	size_t bytes = (size_t)(r->mask + 1) * sizeof(struct rec);

	pthread_mutex_lock(&r->claim_mu);
	for (unsigned i = 0; i < r->o.max_threads; i++) {
		int st = RING_FREE;
		if (atomic_compare_exchange_strong(&r->rings[i].state, &st, RING_ACTIVE)) {
			g = &r->rings[i];
			if (i >= r->n_rings)
				r->n_rings = i + 1;
			break;
		}
	}
	if (g && !g->buf) {
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		               0);
		if (p == MAP_FAILED) {
			atomic_store(&g->state, RING_FREE);
			g = NULL;
		} else {
			g->buf = p;
		}
	}
	pthread_mutex_unlock(&r->claim_mu);
	if (g && r->have_key)
		pthread_setspecific(r->key, g);
	return g;
}

static struct ring *thread_ring(struct msr *r)
{
	int k;

	for (k = 0; k < TL_SLOTS; k++)
		if (tl[k].gen == r->gen)
			return tl[k].ring;
	for (k = 0; k < TL_SLOTS - 1 && tl[k].gen; k++)
		;
	if (tl[k].gen) /* all used: shift out the oldest */
		memmove(&tl[0], &tl[1], sizeof(tl[0]) * (TL_SLOTS - 1));
	tl[k].ring = claim_ring(r); /* NULL (no slot) is kept: such a thread drops its events */
	tl[k].gen = r->gen;
	return tl[k].ring;
}

/* Push one record; kind and the payload are the caller's. */
static int push(struct msr *r, const struct rec *x)
{
	struct ring *g;
	uint64_t h, t;
	struct rec *y;

	if (r->forks != g_forks || atomic_load_explicit(&r->closing, memory_order_relaxed))
		return -ESHUTDOWN;
	g = thread_ring(r);
	if (!g) {
		atomic_fetch_add_explicit(&r->dropped_other, 1, memory_order_relaxed);
		return -EAGAIN;
	}
	if (g->busy) { /* a signal handler interrupted this thread's msr_record */
		atomic_fetch_add_explicit(&g->dropped, 1, memory_order_relaxed);
		return -EAGAIN;
	}
	g->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	h = atomic_load_explicit(&g->head, memory_order_relaxed);
	t = atomic_load_explicit(&g->tail, memory_order_acquire);
	if (h - t > r->mask) {
		atomic_fetch_add_explicit(&g->dropped, 1, memory_order_relaxed);
		g->busy = 0;
		return -EAGAIN;
	}
	y = &g->buf[h & r->mask];
	*y = *x;
	if (!y->t_ns)
		y->t_ns = now_ns();
	y->seq = atomic_fetch_add_explicit(&r->seq, 1, memory_order_relaxed);
	atomic_store_explicit(&g->head, h + 1, memory_order_release);
	atomic_signal_fence(memory_order_seq_cst);
	g->busy = 0;
	return 0;
}

int msr_record(struct msr *r, const struct msr_event *e)
{
	return msr_record_in_pool(r, e, UINT64_MAX, UINT64_MAX);
}

int msr_record_in_pool(struct msr *r, const struct msr_event *e, uint64_t pool_first,
                       uint64_t pool_second)
{
	struct rec x;

	if (!r || !e || e->action > MSR_OOM)
		return -EINVAL;
	if (pool_first == UINT64_MAX && pool_second == UINT64_MAX)
		x.pool = MS_POOL_UNKNOWN;
	else if (ms_pool_code(pool_first, pool_second, &x.pool))
		return -EINVAL;
	x.t_ns = e->t_ns;
	x.addr = e->addr;
	x.size = e->size;
	x.stream = e->stream;
	x.stack = e->stack;
	x.device = e->device;
	x.kind = e->action;
	x.source = e->source;
	return push(r, &x);
}

/* ---- interning ---- */

uint32_t msr_frame(struct msr *r, const char *function, const char *file, uint32_t line)
{
	struct ms_frame fr = {0, 0, line};
	uint32_t id = 0;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->sym_mu);
	if (ms_symtab_str(&r->syms, function ? function : "", function ? strlen(function) : 0,
	                  &fr.name) ||
	    ms_symtab_str(&r->syms, file ? file : "", file ? strlen(file) : 0, &fr.file) ||
	    ms_symtab_frame(&r->syms, &fr, &id))
		id = 0;
	pthread_mutex_unlock(&r->sym_mu);
	return id;
}

uint64_t msr_generation(const struct msr *r)
{
	return r ? r->gen : 0;
}

uint32_t msr_stack(struct msr *r, const uint32_t *frames, size_t n)
{
	uint32_t id = 0;

	if (!r || (n && !frames))
		return 0;
	pthread_mutex_lock(&r->sym_mu);
	/* ids must exist: a stack naming an undefined frame would make the trace unreadable */
	for (size_t i = 0; i < n; i++)
		if (frames[i] == 0 || frames[i] >= ms_symtab_nframes(&r->syms))
			goto out;
	if (ms_symtab_stack(&r->syms, frames, n, &id))
		id = 0;
out:
	pthread_mutex_unlock(&r->sym_mu);
	return id;
}

int msr_annotate(struct msr *r, enum msr_ann_kind kind, enum msr_ann_stage stage, const char *name,
                 uint16_t device)
{
	struct rec x = {0};
	uint32_t id;
	ms_status s;

	if (!r || !name || (unsigned)kind > MSR_ANN_STEP || (unsigned)stage > MSR_ANN_MARK)
		return -EINVAL;
	pthread_mutex_lock(&r->sym_mu);
	s = ms_symtab_str(&r->syms, name, strlen(name), &id);
	pthread_mutex_unlock(&r->sym_mu);
	if (s)
		return -ENOMEM;
	x.kind = REC_ANNOTATION;
	x.pool = MS_POOL_UNKNOWN;
	x.addr = id;
	x.device = device;
	x.source = (uint8_t)(stage | kind << 4);
	return push(r, &x);
}

/* ---- the writer thread ---- */

static int status_errno(ms_status s)
{
	switch (s) {
	case MS_OK:
		return 0;
	case MS_ERR_NOMEM:
		return -ENOMEM;
	case MS_ERR_INVALID_ARG:
		return -EINVAL;
	default:
		return -EIO;
	}
}

static void set_err(struct msr *r, ms_status s)
{
	pthread_mutex_lock(&r->mu);
	if (!r->err)
		r->err = status_errno(s);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static ms_status write_rec(struct msr *r, const struct rec *x)
{
	if (x->kind == REC_ANNOTATION) {
		struct ms_annotation a = {0};
		a.t_ns = x->t_ns;
		a.name = (uint32_t)x->addr;
		a.device = x->device;
		a.stage = x->source & 15;
		a.kind = x->source >> 4;
		return ms_writer_annotation(r->w, &a);
	}
	struct ms_event e = {0};
	e.addr = x->addr;
	e.size = x->size;
	e.stream = x->stream;
	e.t_ns = x->t_ns;
	e.stack = x->stack;
	e.device = x->device;
	e.action = x->kind;
	e.source = x->source;
	e.pool = x->pool;
	return ms_writer_event(r->w, &e);
}

/* The ring whose next record carries number seq, or the one with the smallest number. */
static struct ring *find_next(struct msr *r, const uint64_t *heads, uint64_t seq,
                              struct ring **min_ring)
{
	uint64_t min_seq = UINT64_MAX;

	*min_ring = NULL;
	for (unsigned i = 0; i < r->n_rings; i++) {
		struct ring *g = &r->rings[i];
		uint64_t s;
		if (g->pos == heads[i])
			continue;
		s = g->buf[g->pos & r->mask].seq;
		if (s <= seq) /* seq itself, or a late one whose gap was given up on */
			return g;
		if (s < min_seq) {
			min_seq = s;
			*min_ring = g;
		}
	}
	return NULL;
}

/*
 * Emit what the rings hold, in sequence. final: the program is ending; skip
 * the gaps instead of waiting for them.
 */
static ms_status drain(struct msr *r, int final)
{
	unsigned n = r->n_rings;
	struct ring *g = NULL, *min_ring;
	ms_status s = MS_OK;
	uint64_t dropped;

	/* a head above 0 was published after its ring's buf was set: acquire makes buf visible */
	for (unsigned i = 0; i < n; i++)
		r->heads[i] = atomic_load_explicit(&r->rings[i].head, memory_order_acquire);
	/* every id a published record uses was interned before it was published */
	pthread_mutex_lock(&r->sym_mu);
	s = ms_writer_sync_defs(r->w);
	pthread_mutex_unlock(&r->sym_mu);
	while (s == MS_OK) {
		/* runs from one ring are the common case: try the last ring first */
		if (!g || g->pos == r->heads[g - r->rings] ||
		    g->buf[g->pos & r->mask].seq > r->next_seq)
			g = find_next(r, r->heads, r->next_seq, &min_ring);
		if (!g) {
			if (!min_ring) {
				r->gap_since_ms = 0;
				break;
			}
			/* a number taken and not yet published: wait for it, up to a point */
			if (!final) {
				int64_t now = mono_ms();
				if (!r->gap_since_ms)
					r->gap_since_ms = now;
				if (now - r->gap_since_ms < GAP_WAIT_MS)
					break;
			}
			r->lost_gaps += min_ring->buf[min_ring->pos & r->mask].seq - r->next_seq;
			r->next_seq = min_ring->buf[min_ring->pos & r->mask].seq;
			r->gap_since_ms = 0;
			g = min_ring;
		}
		const struct rec *x = &g->buf[g->pos & r->mask];
		s = write_rec(r, x);
		if (x->seq >= r->next_seq)
			r->next_seq = x->seq + 1;
		g->pos++;
		r->dirty = 1;
	}
	for (unsigned i = 0; i < n; i++) {
		struct ring *q = &r->rings[i];
		atomic_store_explicit(&q->tail, q->pos, memory_order_release);
		/* a finished thread's ring is free again once it is empty */
		if (atomic_load(&q->state) == RING_ORPHAN && q->pos == r->heads[i]) {
			int st = RING_ORPHAN;
			atomic_compare_exchange_strong(&q->state, &st, RING_FREE);
		}
	}
	dropped = msr_dropped(r);
	if (s == MS_OK && dropped > r->dropped_written) {
		s = ms_writer_dropped(r->w, now_ns(), dropped - r->dropped_written);
		r->dropped_written = dropped;
		r->dirty = 1;
	}
	return s;
}

/* Write a frame if one is due (or forced) and tell flush waiters. */
static ms_status frame_if_due(struct msr *r, int force)
{
	int64_t now = mono_ms();
	uint64_t want;
	ms_status s = MS_OK;

	pthread_mutex_lock(&r->mu);
	want = r->flush_want;
	pthread_mutex_unlock(&r->mu);
	if (want > r->flushed)
		force = 1;
	if (r->dirty && (force || now - r->last_frame_ms >= (int64_t)r->o.flush_ms)) {
		s = ms_writer_flush(r->w);
		r->dirty = 0;
		r->last_frame_ms = now;
	}
	pthread_mutex_lock(&r->mu);
	if (s == MS_OK && r->next_seq > r->flushed && !r->dirty)
		r->flushed = r->next_seq;
	if (s && !r->err)
		r->err = status_errno(s);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return s;
}

/* The last frame, the trailer and the footer. */
static void finish_file(struct msr *r)
{
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s = MS_OK;

	if (r->finished)
		return;
	r->finished = 1;
	if (!r->err)
		s = drain(r, 1);
	if (s == MS_OK && !r->err)
		s = ms_writer_close(r->w, &d);
	if (s)
		set_err(r, s);
	pthread_mutex_lock(&r->mu);
	r->flushed = UINT64_MAX;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void *writer_main(void *arg)
{
	struct msr *r = arg;
	struct pollfd pfd = {r->wake[0], POLLIN, 0};
	int timeout = POLL_MS < (int)r->o.flush_ms ? POLL_MS : (int)r->o.flush_ms;

	tl_is_writer = 1;
	r->last_frame_ms = mono_ms();
	for (;;) {
		char buf[64];
		if (poll(&pfd, 1, timeout) > 0)
			while (read(r->wake[0], buf, sizeof(buf)) > 0)
				;
		if (atomic_load(&r->closing) || atomic_load(&r->fatal)) {
			finish_file(r);
			atomic_store(&r->fatal_done, 1);
			return NULL;
		}
		if (!r->err) {
			ms_status s = drain(r, 0);
			if (s)
				set_err(r, s);
			else
				frame_if_due(r, 0);
		} else {
			/* keep the rings empty so producers never block on a dead file */
			for (unsigned i = 0; i < r->n_rings; i++) {
				struct ring *q = &r->rings[i];
				q->pos = atomic_load_explicit(&q->head, memory_order_acquire);
				atomic_store_explicit(&q->tail, q->pos, memory_order_release);
			}
			pthread_mutex_lock(&r->mu);
			pthread_cond_broadcast(&r->cv);
			pthread_mutex_unlock(&r->mu);
		}
	}
}

static void wake(struct msr *r)
{
	char c = 1;
	ssize_t n = write(r->wake[1], &c, 1); /* a full pipe already wakes it */

	(void)n;
}

int msr_flush(struct msr *r)
{
	uint64_t want;
	int err;

	if (!r)
		return -EINVAL;
	want = atomic_load(&r->seq);
	pthread_mutex_lock(&r->mu);
	if (want > r->flush_want)
		r->flush_want = want;
	pthread_mutex_unlock(&r->mu);
	wake(r);
	pthread_mutex_lock(&r->mu);
	while (r->flushed < want && !r->err)
		pthread_cond_wait(&r->cv, &r->mu);
	err = r->err;
	pthread_mutex_unlock(&r->mu);
	return err;
}

/* ---- fatal signals and exit ---- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};
#define N_FATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction g_old_act[N_FATAL];
static int g_installed[N_FATAL];
static _Atomic(struct msr *) g_sig_recorder;

static void on_fatal(int sig)
{
	struct msr *r = atomic_load(&g_sig_recorder);
	int saved = errno;

	if (r && r->forks == g_forks && !tl_is_writer && !atomic_exchange(&r->fatal, 1)) {
		struct timespec ms = {0, 1000000};
		wake(r);
		for (int i = 0; i < FATAL_WAIT_MS && !atomic_load(&r->fatal_done); i++)
			nanosleep(&ms, NULL);
	}
	for (size_t i = 0; i < N_FATAL; i++)
		if (fatal_signals[i] == sig && g_installed[i])
			sigaction(sig, &g_old_act[i], NULL);
	errno = saved;
	raise(sig); /* delivered with the previous disposition once this handler returns */
}

static void install_signals(struct msr *r)
{
	struct msr *none = NULL;
	struct sigaction sa;

	if (!atomic_compare_exchange_strong(&g_sig_recorder, &none, r))
		return; /* another recorder handles them */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < N_FATAL; i++) {
		struct sigaction cur;
		int sig = fatal_signals[i];
		if (sigaction(sig, NULL, &cur))
			continue;
		/* SIGTERM and SIGINT only where they would kill the process anyway */
		if ((sig == SIGTERM || sig == SIGINT) && cur.sa_handler != SIG_DFL)
			continue;
		if ((cur.sa_flags & SA_SIGINFO) == 0 && cur.sa_handler == SIG_IGN)
			continue;
		g_old_act[i] = cur;
		g_installed[i] = sigaction(sig, &sa, NULL) == 0;
	}
}

static void uninstall_signals(struct msr *r)
{
	struct msr *me = r;

	if (!atomic_compare_exchange_strong(&g_sig_recorder, &me, NULL))
		return;
	for (size_t i = 0; i < N_FATAL; i++) {
		struct sigaction cur;
		if (!g_installed[i])
			continue;
		g_installed[i] = 0;
		/* put the old handler back only if ours is still the one in place */
		if (sigaction(fatal_signals[i], NULL, &cur) == 0 && cur.sa_handler == on_fatal)
			sigaction(fatal_signals[i], &g_old_act[i], NULL);
	}
}

static pthread_mutex_t g_atexit_mu = PTHREAD_MUTEX_INITIALIZER;
static struct msr *g_atexit[MAX_ATEXIT];
static int g_atexit_registered;

/* Stop recording and finish the file; r stays allocated (others may still hold it). */
static int stop(struct msr *r)
{
	int err;

	if (r->forks != g_forks) { /* a forked child: the thread and the file are the parent's */
		atomic_store(&r->closing, 1);
		r->have_thread = 0;
	}
	if (atomic_exchange(&r->closing, 1) == 0 && r->have_thread) {
		wake(r);
		pthread_join(r->thread, NULL);
		r->have_thread = 0;
	}
	if (r->f) { /* unbuffered: a forked child's fclose has nothing to write */
		if (fclose(r->f) != 0 && !r->err)
			r->err = -EIO;
		r->f = NULL;
	}
	uninstall_signals(r);
	pthread_mutex_lock(&r->mu);
	err = r->err;
	pthread_mutex_unlock(&r->mu);
	return err;
}

static void at_exit(void)
{
	pthread_mutex_lock(&g_atexit_mu);
	for (int i = 0; i < MAX_ATEXIT; i++)
		if (g_atexit[i] && g_atexit[i]->forks == g_forks)
			stop(g_atexit[i]);
	pthread_mutex_unlock(&g_atexit_mu);
}

static void atexit_add(struct msr *r, int add)
{
	pthread_mutex_lock(&g_atexit_mu);
	for (int i = 0; i < MAX_ATEXIT; i++) {
		if (add && !g_atexit[i]) {
			g_atexit[i] = r;
			break;
		}
		if (!add && g_atexit[i] == r)
			g_atexit[i] = NULL;
	}
	if (add && !g_atexit_registered)
		g_atexit_registered = atexit(at_exit) == 0;
	pthread_mutex_unlock(&g_atexit_mu);
}

/* ---- open and close ---- */

static char *dup_str(const char *s)
{
	return ms_strndup(s ? s : "", s ? strlen(s) : 0);
}

static void free_recorder(struct msr *r)
{
	size_t bytes = (size_t)(r->mask + 1) * sizeof(struct rec);

	if (r->rings)
		for (unsigned i = 0; i < r->o.max_threads; i++)
			if (r->rings[i].buf)
				munmap(r->rings[i].buf, bytes);
	if (r->have_key)
		pthread_key_delete(r->key);
	if (r->wake[0] >= 0)
		close(r->wake[0]);
	if (r->wake[1] >= 0)
		close(r->wake[1]);
	ms_writer_free(r->w);
	if (r->f)
		fclose(r->f);
	ms_symtab_release(&r->syms);
	pthread_mutex_destroy(&r->sym_mu);
	pthread_mutex_destroy(&r->claim_mu);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	if (r->devices)
		for (unsigned i = 0; i < r->o.n_devices; i++)
			ms_free((char *)r->devices[i].name);
	ms_free(r->devices);
	ms_free(r->producer);
	ms_free(r->torch_version);
	ms_free(r->alloc_conf);
	ms_free(r->rings);
	ms_free(r->heads);
	ms_free(r);
}

static int copy_options(struct msr *r, const struct msr_options *in)
{
	struct msr_options o;

	msr_options_init(&o);
	if (in) {
		if (in->size < offsetof(struct msr_options, settings) + sizeof(in->settings))
			return -EINVAL;
		o = *in;
		o.size = sizeof(o);
	}
	if (o.flush_ms == 0)
		o.flush_ms = 100;
	if (o.ring_events == 0)
		o.ring_events = 65536;
	if (o.max_threads == 0)
		o.max_threads = 256;
	if (o.level == 0)
		o.level = 3;
	if (o.flush_ms > 100 || o.ring_events < 2 || (o.ring_events & (o.ring_events - 1)) ||
	    o.max_threads > 65536 || (o.n_devices && !o.devices) || o.n_devices > 1024)
		return -EINVAL;
	r->o = o;
	r->producer = dup_str(o.producer ? o.producer : "memsnap-recorder");
	r->torch_version = dup_str(o.torch_version);
	r->devices = ms_calloc(o.n_devices ? o.n_devices : 1, sizeof(*r->devices));
	if (!r->producer || !r->torch_version || !r->devices)
		return -ENOMEM;
	for (unsigned i = 0; i < o.n_devices; i++) {
		r->devices[i] = o.devices[i];
		r->devices[i].name = dup_str(o.devices[i].name);
		if (!r->devices[i].name)
			return -ENOMEM;
	}
	if (o.settings) {
		r->settings = *o.settings;
		r->alloc_conf = dup_str(o.settings->alloc_conf);
		if (!r->alloc_conf)
			return -ENOMEM;
		r->settings.alloc_conf = r->alloc_conf;
	}
	r->o.producer = r->producer;
	r->o.torch_version = r->torch_version;
	r->o.devices = r->devices;
	r->o.settings = o.settings ? &r->settings : NULL;
	return 0;
}

static ms_status write_meta(struct msr *r)
{
	struct ms_meta m;
	struct ms_device *devs = ms_calloc(r->o.n_devices ? r->o.n_devices : 1, sizeof(*devs));
	char host[256] = "";
	ms_status s;

	if (!devs)
		return MS_ERR_NOMEM;
	memset(&m, 0, sizeof(m));
	gethostname(host, sizeof(host) - 1);
	m.producer = r->producer;
	m.producer_version = MS_VERSION_STRING;
	m.torch_version = r->torch_version;
	m.hostname = host;
	m.start_t_ns = now_ns();
	m.time_unit_ns = 1000;
	m.limit_bytes = r->o.limit_bytes;
	for (unsigned i = 0; i < r->o.n_devices; i++) {
		devs[i].index = r->devices[i].index;
		devs[i].name = r->devices[i].name;
		devs[i].total_memory = r->devices[i].total_memory;
	}
	m.n_devices = r->o.n_devices;
	m.devices = devs;
	if (r->o.settings) {
		const struct msr_settings *st = &r->settings;
		m.settings.present = 1;
		m.settings.alloc_conf = st->alloc_conf;
		m.settings.max_split_size = st->max_split_size;
		m.settings.garbage_collection_threshold = st->garbage_collection_threshold;
		m.settings.expandable_segments = st->expandable_segments != 0;
		m.settings.release_lock_on_cudamalloc = st->release_lock_on_cudamalloc != 0;
		m.settings.pinned_use_cuda_host_register = st->pinned_use_cuda_host_register != 0;
		m.settings.graph_capture_record_stream_reuse =
		        st->graph_capture_record_stream_reuse != 0;
		m.settings.pinned_num_register_threads = st->pinned_num_register_threads;
		memcpy(m.settings.roundup_power2_divisions, st->roundup_power2_divisions,
		       sizeof(st->roundup_power2_divisions));
	}
	s = ms_writer_meta(r->w, &m);
	ms_free(devs);
	return s;
}

int msr_open_fd(int fd, const struct msr_options *o, struct msr **out)
{
	struct ms_writer_opts wo = MS_WRITER_OPTS_INIT;
	struct msr *r;
	sigset_t all, old;
	int rc, dupfd = -1;

	if (fd < 0 || !out)
		return -EINVAL;
	pthread_once(&g_once, init_once);
	r = ms_calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->wake[0] = r->wake[1] = -1;
	pthread_mutex_init(&r->sym_mu, NULL);
	pthread_mutex_init(&r->claim_mu, NULL);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (ms_symtab_init(&r->syms)) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = copy_options(r, o)))
		goto fail;
	r->gen = atomic_fetch_add(&g_gen, 1);
	r->forks = g_forks;
	r->mask = r->o.ring_events - 1;
	r->rings = ms_calloc(r->o.max_threads, sizeof(*r->rings));
	r->heads = ms_calloc(r->o.max_threads, sizeof(*r->heads));
	if (!r->rings || !r->heads) {
		rc = -ENOMEM;
		goto fail;
	}
	r->have_key = pthread_key_create(&r->key, ring_release) == 0;
	if (pipe(r->wake) || fcntl(r->wake[0], F_SETFL, O_NONBLOCK) ||
	    fcntl(r->wake[1], F_SETFL, O_NONBLOCK) || fcntl(r->wake[0], F_SETFD, FD_CLOEXEC) ||
	    fcntl(r->wake[1], F_SETFD, FD_CLOEXEC)) {
		rc = -errno;
		goto fail;
	}
	dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dupfd < 0 || !(r->f = fdopen(dupfd, "wb"))) {
		rc = -errno;
		if (dupfd >= 0)
			close(dupfd);
		goto fail;
	}
	/* frames are written whole with one fwrite: no stdio buffer a fork could duplicate */
	setvbuf(r->f, NULL, _IONBF, 0);
	wo.level = r->o.level;
	wo.time_unit_ns = 1000;
	wo.producer = r->producer;
	wo.source = "recorder";
	wo.manual_defs = 1;
	if (ms_writer_open(r->f, &wo, &r->syms, &r->w, NULL) || write_meta(r) ||
	    ms_writer_flush(r->w)) {
		rc = -EIO;
		goto fail;
	}
	/* the writer thread takes no signals: the program's handlers run in its own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&r->thread, NULL, writer_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto fail;
	r->have_thread = 1;
	if (r->o.flags & MSR_F_SIGNALS)
		install_signals(r);
	if (r->o.flags & MSR_F_ATEXIT)
		atexit_add(r, 1);
	*out = r;
	return 0;
fail:
	free_recorder(r);
	return rc;
}

int msr_open(const char *path, const struct msr_options *o, struct msr **out)
{
	int fd, rc;

	if (!path || !out)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = msr_open_fd(fd, o, out);
	close(fd);
	return rc;
}

int msr_finish(struct msr *r)
{
	if (!r)
		return -EINVAL;
	return stop(r);
}

int msr_close(struct msr *r)
{
	int err;

	if (!r)
		return -EINVAL;
	{
		struct msr *me = r;
		atomic_compare_exchange_strong(&g_global, &me, NULL);
	}
	if (r->o.flags & MSR_F_ATEXIT)
		atexit_add(r, 0);
	err = stop(r);
	free_recorder(r);
	return err;
}
