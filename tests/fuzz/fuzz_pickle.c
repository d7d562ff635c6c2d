/* libFuzzer target: the restricted unpickler and the snapshot mapping on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
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

static ms_status ev(void *ctx, const struct ms_event *e)
{
	(void)ctx;
	(void)e;
	return MS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ms_pickle *vm = NULL;
	struct ms_snapmap *m = NULL;
	struct ms_symtab syms;
	struct ms_pk_val root;
	struct ms_diag d = MS_DIAG_INIT;
	struct ms_mem_limits;
	struct mem in = {data, size, 0};
	struct ms_sink sink = {0};
	struct ms_snapshot_info info;
	struct ms_pickle_limits lim = {1u << 20, 1u << 20, 1u << 16};

	memset(&info, 0, sizeof(info));
	sink.event = ev;
	if (ms_symtab_init(&syms))
		return 0;
	if (ms_pickle_new(&vm) == MS_OK && ms__snapmap_new(vm, &syms, &d, &m) == MS_OK) {
		ms_pickle_set_limits(vm, &lim);
		ms_pickle_stream_traces(vm, ms__snapmap_entry, m);
		if (ms_pickle_run(vm, rd, &in, &root, &d) == MS_OK)
			(void)ms__snapmap_finish(m, &root, MS_INPUT_PICKLE, &sink, &info);
	}
	ms__snapmap_free(m);
	ms_pickle_free(vm);
	ms_symtab_release(&syms);
	return 0;
}
