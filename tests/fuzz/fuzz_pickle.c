/*
 * libFuzzer target: the restricted unpickler and the snapshot mapping on arbitrary bytes, decoded
 * twice, with and without the trace-entry fast path, which must agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/torch_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	size_t n, pos;
};

static ms_status rd(void *ctx, void *buf, size_t cap, size_t *got, struct ms_diag *d)
{
	struct mem *m = ctx;
	size_t k = m->n - m->pos;

	(void)d;
	if (k > cap)
		k = cap;
	if (k > 7)
		k = 7; /* small reads: refills land inside opcodes */
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	*got = k;
	return MS_OK;
}

static ms_status count_ev(void *ctx, const struct ms_event *e)
{
	uint64_t *c = ctx;

	c[0]++;
	c[1] = c[1] * 31 + e->addr + e->size * 7 + e->action;
	return MS_OK;
}

/* Decode with the fast path on (slow = 0) or off; returns the status, counts events into c. */
static ms_status decode(const uint8_t *data, size_t size, int slow, uint64_t c[2])
{
	struct ms_pickle *vm = NULL;
	struct ms_snapmap *m = NULL;
	struct ms_symtab syms;
	struct ms_pk_val root;
	struct ms_diag d = MS_DIAG_INIT;
	struct mem in = {data, size, 0};
	struct ms_sink sink = {0};
	struct ms_snapshot_info info;
	struct ms_pickle_limits lim = {1u << 20, 1u << 20, 1u << 16};
	ms_status s = MS_ERR_NOMEM;

	memset(&info, 0, sizeof(info));
	sink.ctx = c;
	sink.event = count_ev;
	if (ms_symtab_init(&syms))
		return s;
	if (ms_pickle_new(&vm) == MS_OK && ms__snapmap_new(vm, &syms, &d, &m) == MS_OK) {
		ms_pickle_set_limits(vm, &lim);
		ms__pickle_slow_only(vm, slow);
		ms_pickle_stream_traces(vm, ms__snapmap_entry, m);
		s = ms_pickle_run(vm, rd, &in, &root, &d);
		if (s == MS_OK)
			s = ms__snapmap_finish(m, &root, MS_INPUT_PICKLE, &sink, &info);
	}
	ms__snapmap_free(m);
	ms_pickle_free(vm);
	ms_symtab_release(&syms);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t a[2] = {0, 0}, b[2] = {0, 0};
	ms_status sa = decode(data, size, 0, a), sb = decode(data, size, 1, b);

	/* the fast path must agree with the opcode machine on every successful decode */
	if ((sa == MS_OK) != (sb == MS_OK) || (sa == MS_OK && (a[0] != b[0] || a[1] != b[1])))
		abort();
	return 0;
}
