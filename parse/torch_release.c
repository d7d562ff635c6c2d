/* Which PyTorch release wrote a snapshot: each field of its layout narrows [lo, hi]. */
#include "parse/torch_release.h"

#include <stdio.h>

/* Releases by minor version: 2.0 is 0, 2.15 is 15; LATEST + 1 stands for "later". */
enum { LATEST = 15 };

static void at_least(int *lo, int v)
{
	if (v > *lo)
		*lo = v;
}

static void at_most(int *hi, int v)
{
	if (v < *hi)
		*hi = v;
}

const char *ms_snapshot_torch_range(const struct ms_snapshot_layout *l, char *buf, size_t cap)
{
	int lo = 0, hi = LATEST + 1;

	if (l->npu) {
		snprintf(buf, cap, "torch_npu (Ascend)");
		return buf;
	}
	if (l->has_blocks) {
		if (l->block_history)
			at_most(&hi, 0);
		else
			at_least(&lo, 1);
	}
	if (l->has_entries) {
		if (l->time_us)
			at_least(&lo, 2);
		else
			at_most(&hi, 1);
		if (l->compile_context)
			at_least(&lo, 8);
		else
			at_most(&hi, 7);
		if (l->user_metadata)
			at_least(&lo, 10);
		else
			at_most(&hi, 9);
		if (l->pool_id)
			at_least(&lo, 12);
		else
			at_most(&hi, 11);
	}
	if (!l->bare_list) {
		if (l->settings)
			at_least(&lo, 3);
		else
			at_most(&hi, 2);
		if (l->settings) {
			if (l->graph_reuse)
				at_least(&lo, 9);
			else
				at_most(&hi, 8);
		}
		if (l->annotations)
			at_least(&lo, 5);
		else
			at_most(&hi, 4);
	} else {
		at_least(&lo, 1); /* torch.cuda.memory_snapshot()'s list: blocks as 2.1 has them */
	}
	if (l->user_defined) { /* nightly builds between 2.4 and 2.5 */
		at_least(&lo, 4);
		at_most(&hi, 4);
	}
	if (l->host || l->annotate)
		at_least(&lo, 14);
	if (l->internal_metadata)
		at_least(&lo, 15);
	if (lo > hi)
		snprintf(buf, cap,
		         "no PyTorch release (its fields contradict each other: made by "
		         "another tool?)");
	else if (l->user_defined)
		snprintf(buf, cap, "a nightly build between 2.4 and 2.5");
	else if (lo == hi)
		snprintf(buf, cap, "2.%d", lo);
	else if (hi > LATEST)
		snprintf(buf, cap, "2.%d or later", lo);
	else if (hi == lo + 1)
		snprintf(buf, cap, "2.%d or 2.%d", lo, hi);
	else
		snprintf(buf, cap, "2.%d to 2.%d", lo, hi);
	return buf;
}
