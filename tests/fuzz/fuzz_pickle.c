/*
 * libFuzzer target: the restricted unpickler and the snapshot mapping on arbitrary bytes.
 * Differential: the input is read twice, once with the fast path for trace entries over the
 * whole input in place (as a mapped file is read), once by the general path alone in reads of 7
 * bytes (refills land inside opcodes). Both must give the same status, message and events; a
 * difference aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/torch_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	size_t n, pos, chunk;
};

static ms_status rd(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *d)
{
	struct mem *m = ctx;
	size_t k = m->n - m->pos;

	(void)d;
	if (k > cap)
		k = cap;
	if (k > m->chunk)
		k = m->chunk;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	*got = k;
	return MS_OK;
}

/* FNV-1a over every field of every event, string and stack ids included */
struct digest {
	uint64_t h, n;
};

static void mix(struct digest *g, uint64_t x)
{
	for (int i = 0; i < 8; i++, x >>= 8)
		g->h = (g->h ^ (x & 0xff)) * 0x100000001b3ULL;
}

static ms_status ev(void *ctx, const struct ms_event *e)
{
	struct digest *g = ctx;

	mix(g, e->addr);
	mix(g, e->size);
	mix(g, e->stream);
	mix(g, (uint64_t)e->t_ns);
	mix(g, e->stack);
	mix(g, e->compile_context);
	mix(g, e->user_metadata);
	mix(g, (uint64_t)e->action << 32 | (uint64_t)e->source << 16 | e->device);
	g->n++;
	return MS_OK;
}

struct result {
	ms_status s;
	struct digest g;
	char msg[sizeof(((struct ms_diag *)0)->msg)];
};

static void read_once(const uint8_t *data, size_t size, int fast, size_t chunk, struct result *r)
{
	/* SIZE_MAX: the whole input, read in place */
	struct ms_mapped whole = {.data = data, .len = size};
	struct ms_symtab syms;
	struct ms_diag d = MS_DIAG_INIT;
	struct mem in = {data, size, 0, chunk};
	struct ms_sink sink = {0};
	struct ms_snapshot_info info;
	struct ms_pickle_limits lim = {1u << 20, 1u << 20, 1u << 16};

	memset(r, 0, sizeof(*r));
	memset(&info, 0, sizeof(info));
	r->g.h = 0xcbf29ce484222325ULL;
	sink.ctx = &r->g;
	sink.event = ev;
	if (ms_symtab_init(&syms)) {
		r->s = MS_ERR_NOMEM;
		return;
	}
	r->s = ms__torch_pickle_read(rd, &in, chunk == SIZE_MAX ? &whole : NULL, &lim, fast, &syms,
	                             &sink, &info, &d);
	memcpy(r->msg, d.msg, sizeof(r->msg));
	ms_symtab_release(&syms);
}

/* Two reads must agree in status, message and events; abort with both if not. */
static void expect_same(const char *what, const char *na, const struct result *a, const char *nb,
                        const struct result *b)
{
	if (a->s == b->s && strcmp(a->msg, b->msg) == 0 && a->g.n == b->g.n && a->g.h == b->g.h)
		return;
	fprintf(stderr,
	        "fuzz_pickle: %s disagree:\n"
	        "  %-8s %s, %llu events, %016llx: %s\n"
	        "  %-8s %s, %llu events, %016llx: %s\n",
	        what, na, ms_status_name(a->s), (unsigned long long)a->g.n,
	        (unsigned long long)a->g.h, a->msg, nb, ms_status_name(b->s),
	        (unsigned long long)b->g.n, (unsigned long long)b->g.h, b->msg);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct result a, b;

	read_once(data, size, 1, SIZE_MAX, &a);
	read_once(data, size, 0, 7, &b);
	/* the object limit counts the general path's entry dicts, which the fast path has not */
	if (a.s == MS_ERR_LIMIT || b.s == MS_ERR_LIMIT || a.s == MS_ERR_NOMEM ||
	    b.s == MS_ERR_NOMEM)
		return 0;
	expect_same("the fast and the general path", "fast:", &a, "general:", &b);
	return 0;
}
