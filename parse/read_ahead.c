/*
 * ms_source_read_ahead(): ms_source_read() on a thread of its own, so that decoding a trace and
 * consuming it overlap. Events and annotations travel in batches through a small ring; begin,
 * segments and end are handed over one at a time, the reader waiting until the sink has taken
 * each (their pointers are borrowed for the call only). The sink's callbacks all run on the
 * caller's thread, in the order the reader made them.
 */
#include "parse/read_ahead.h"

#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "parse/trace.h"

#define BATCH 4096
#define SLOTS 4

enum { IT_EVENT, IT_ANN };

struct item {
	uint8_t kind;
	union {
		struct ms_event e;
		struct ms_annotation a;
	} u;
};

struct batch {
	struct item it[BATCH];
	size_t n;
};

/* What the reader hands over one at a time. */
enum { ONE_NONE, ONE_BEGIN, ONE_SEGMENT, ONE_END };

struct ra {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *slots;
	size_t head, tail;  /* batches published, batches taken */
	struct batch *fill; /* the reader's batch being filled: slots[head % SLOTS] */
	/* a call made one at a time: the reader waits until one_kind is back to ONE_NONE */
	int one_kind;
	const struct ms_meta *one_meta;
	const struct ms_symtab *one_syms;
	const struct ms_segment *one_seg;
	const struct ms_block *one_blocks;
	uint64_t one_n;
	ms_status one_status;
	int reader_done;
	ms_status reader_status;
	ms_status stop; /* the sink's failure: the reader stops at its next callback */
	/* the reader's arguments: path, or src with its pass */
	const char *path;
	const struct ms_source *src;
	unsigned pass;
	const struct ms_read_opts *opts;
	struct ms_symtab *syms;
	struct ms_source_info *info;
	struct ms_diag *diag;
	const struct ms_sink *sink;
};

/* ---- the reader's side -------------------------------------------------------------- */

/* Publish the batch being filled; wait for room for the next. */
static ms_status publish(struct ra *r)
{
	ms_status stop;

	pthread_mutex_lock(&r->mu);
	r->head++;
	pthread_cond_broadcast(&r->cv);
	while (r->head - r->tail == SLOTS && !r->stop)
		pthread_cond_wait(&r->cv, &r->mu);
	r->fill = &r->slots[r->head % SLOTS];
	r->fill->n = 0;
	stop = r->stop;
	pthread_mutex_unlock(&r->mu);
	return stop;
}

static ms_status put(struct ra *r, const struct item *x)
{
	r->fill->it[r->fill->n++] = *x;
	return r->fill->n == BATCH ? publish(r) : MS_OK;
}

/* Hand one call over and wait until the sink has made it. */
static ms_status hand_over(struct ra *r, int kind)
{
	ms_status s;

	if (r->fill->n && (s = publish(r)))
		return s;
	pthread_mutex_lock(&r->mu);
	r->one_kind = kind;
	pthread_cond_broadcast(&r->cv);
	while (r->one_kind != ONE_NONE && !r->stop)
		pthread_cond_wait(&r->cv, &r->mu);
	s = r->stop ? r->stop : r->one_status;
	pthread_mutex_unlock(&r->mu);
	return s;
}

static ms_status q_begin(void *ctx, const struct ms_meta *m, const struct ms_symtab *y)
{
	struct ra *r = ctx;
	r->one_meta = m;
	r->one_syms = y;
	return hand_over(r, ONE_BEGIN);
}

static ms_status q_event(void *ctx, const struct ms_event *e)
{
	struct ra *r = ctx;
	struct item x;
	x.kind = IT_EVENT;
	x.u.e = *e;
	return put(r, &x);
}

static ms_status q_events(void *ctx, const struct ms_event *e, size_t n)
{
	ms_status s = MS_OK;
	for (size_t i = 0; i < n && !s; i++)
		s = q_event(ctx, &e[i]);
	return s;
}

static ms_status q_ann(void *ctx, const struct ms_annotation *a)
{
	struct ra *r = ctx;
	struct item x;
	x.kind = IT_ANN;
	x.u.a = *a;
	return put(r, &x);
}

static ms_status q_seg(void *ctx, const struct ms_segment *g, const struct ms_block *b)
{
	struct ra *r = ctx;
	r->one_seg = g;
	r->one_blocks = b;
	return hand_over(r, ONE_SEGMENT);
}

static ms_status q_end(void *ctx, uint64_t n)
{
	struct ra *r = ctx;
	r->one_n = n;
	return hand_over(r, ONE_END);
}

static void *reader(void *arg)
{
	struct ra *r = arg;
	struct ms_sink q = {.ctx = r,
	                    .begin = q_begin,
	                    .event = q_event,
	                    .events = q_events,
	                    .annotation = q_ann,
	                    .segment = q_seg,
	                    .end = q_end};
	ms_status s =
	        r->src ? ms_source_stream(r->src, r->pass, r->opts, r->syms, &q, r->info, r->diag)
	               : ms_source_read(r->path, r->opts, r->syms, &q, r->info, r->diag);

	/* what was read before a failure reaches the sink, as reading on one thread would */
	if (r->fill->n) {
		ms_status p = publish(r);
		if (!s)
			s = p;
	}
	pthread_mutex_lock(&r->mu);
	r->reader_done = 1;
	r->reader_status = s;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* ---- the caller's side -------------------------------------------------------------- */

static ms_status take_batch(struct ra *r, const struct batch *b)
{
	const struct ms_sink *k = r->sink;
	size_t i = 0;

	while (i < b->n) {
		size_t j = i;
		ms_status s;
		if (b->it[i].kind == IT_ANN) {
			if (k->annotation && (s = k->annotation(k->ctx, &b->it[i].u.a)))
				return s;
			i++;
			continue;
		}
		while (j < b->n && b->it[j].kind == IT_EVENT)
			j++;
		for (; i < j; i++)
			if (k->event && (s = k->event(k->ctx, &b->it[i].u.e)))
				return s;
	}
	return MS_OK;
}

static ms_status take_one(struct ra *r)
{
	const struct ms_sink *k = r->sink;

	switch (r->one_kind) {
	case ONE_BEGIN:
		return k->begin ? k->begin(k->ctx, r->one_meta, r->one_syms) : MS_OK;
	case ONE_SEGMENT:
		return k->segment ? k->segment(k->ctx, r->one_seg, r->one_blocks) : MS_OK;
	case ONE_END:
		return k->end ? k->end(k->ctx, r->one_n) : MS_OK;
	default:
		return MS_OK;
	}
}

/* path's, or src's where path is NULL */
static ms_status read_ahead(const char *path, const struct ms_source *src, unsigned pass,
                            const struct ms_read_opts *opts, struct ms_symtab *syms,
                            const struct ms_sink *sink, struct ms_source_info *info,
                            struct ms_diag *diag)
{
	struct ra r;
	pthread_t th;
	ms_status s = MS_OK;

	memset(&r, 0, sizeof(r));
	r.path = path;
	r.src = src;
	r.pass = pass;
	r.opts = opts;
	r.syms = syms;
	r.info = info;
	r.diag = diag;
	r.sink = sink;
	if (!(r.slots = ms_malloc(SLOTS * sizeof(*r.slots))))
		return MS_ERR_NOMEM;
	r.fill = &r.slots[0];
	r.fill->n = 0;
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	if (pthread_create(&th, NULL, reader, &r)) {
		pthread_mutex_destroy(&r.mu);
		pthread_cond_destroy(&r.cv);
		ms_free(r.slots);
		return src ? ms_source_stream(src, pass, opts, syms, sink, info, diag)
		           : ms_source_read(path, opts, syms, sink, info, diag);
	}
	pthread_mutex_lock(&r.mu);
	for (;;) {
		if (r.tail < r.head) {
			/* events before any call handed over: the batch is the reader's no more */
			const struct batch *b = &r.slots[r.tail % SLOTS];
			pthread_mutex_unlock(&r.mu);
			if (!s)
				s = take_batch(&r, b);
			pthread_mutex_lock(&r.mu);
			r.tail++;
			if (s)
				r.stop = s;
			pthread_cond_broadcast(&r.cv);
		} else if (r.one_kind != ONE_NONE) {
			pthread_mutex_unlock(&r.mu);
			r.one_status = s ? s : take_one(&r);
			pthread_mutex_lock(&r.mu);
			if (r.one_status && !s)
				s = r.stop = r.one_status;
			r.one_kind = ONE_NONE;
			pthread_cond_broadcast(&r.cv);
		} else if (r.reader_done) {
			break;
		} else {
			pthread_cond_wait(&r.cv, &r.mu);
		}
	}
	pthread_mutex_unlock(&r.mu);
	pthread_join(th, NULL);
	pthread_mutex_destroy(&r.mu);
	pthread_cond_destroy(&r.cv);
	ms_free(r.slots);
	/* the sink's own failure first: the reader only stopped for it */
	return s ? s : r.reader_status;
}

ms_status ms_source_read_ahead(const char *path, const struct ms_read_opts *opts,
                               struct ms_symtab *syms, const struct ms_sink *sink,
                               struct ms_source_info *info, struct ms_diag *diag)
{
	return read_ahead(path, NULL, 0, opts, syms, sink, info, diag);
}

ms_status ms_source_stream_ahead(const struct ms_source *src, unsigned pass,
                                 const struct ms_read_opts *opts, struct ms_symtab *syms,
                                 const struct ms_sink *sink, struct ms_source_info *info,
                                 struct ms_diag *diag)
{
	return read_ahead(NULL, src, pass, opts, syms, sink, info, diag);
}
