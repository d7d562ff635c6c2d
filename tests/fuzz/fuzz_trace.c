/*
 * libFuzzer target: the .zst trace reader on arbitrary bytes, whole and through a window; then
 * what it read, loaded, through the pool inference (parse/pool_infer.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/trace_read.h"
#include "parse/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ms_status seg(void *ctx, const struct ms_segment *s, const struct ms_block *b)
{
	uint64_t *sum = ctx;

	/* touch every block the reader claims to hand over */
	for (uint32_t i = 0; i < s->n_blocks; i++)
		*sum += b[i].size;
	return MS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ms_symtab syms;
	struct ms_sink sink = {0};
	uint64_t sum = 0;
	struct ms_read_opts win = {3, 50};

	sink.ctx = &sum;
	sink.segment = seg;
	for (int pass = 0; pass < 2; pass++) {
		struct ms_diag d = MS_DIAG_INIT;
		if (ms_symtab_init(&syms))
			return 0;
		(void)ms_trace_read_buffer(data, size, pass ? &win : NULL, &syms, &sink, NULL, &d);
		ms_symtab_release(&syms);
	}
	{
		struct ms_trace *t;
		struct ms_sink ts;
		struct ms_diag d = MS_DIAG_INIT;
		struct ms_pool_inference pi;
		if (ms_trace_new(&t))
			return 0;
		ms_trace_sink(t, &ts);
		if (ms_trace_read_buffer(data, size, NULL, &t->syms, &ts, NULL, &d) == MS_OK)
			(void)ms_trace_infer_pools(t, &pi);
		ms_trace_free(t);
	}
	return 0;
}
