/* Memory outside PyTorch's allocator, from the raw CUDA events of a trace (outside.h). */
#include "analysis/outside.h"

#include <string.h>

#include "common/status.h"

static int is_grow(unsigned a)
{
	return a == MS_ACT_SEGMENT_ALLOC || a == MS_ACT_SEGMENT_MAP;
}

/* Apply the oldest waiting raw event. */
static ms_status commit(struct ms_outside *x)
{
	unsigned i = x->head;
	uint64_t size, *v, addr, end;

	x->head = (x->head + 1) % MS_EXT_WINDOW;
	x->n--;
	if (x->win[i].claimed) {
		x->claimed++;
		return MS_OK;
	}
	addr = x->win[i].addr;
	if (is_grow(x->win[i].action)) {
		if (ms_u64map_put(&x->live, addr, x->win[i].size))
			return MS_ERR_NOMEM;
		x->cur += x->win[i].size;
		if (x->cur > x->peak) {
			x->peak = x->cur;
			x->peak_index = x->win[i].index;
		}
		return MS_OK;
	}
	/* a free, or an unmap of whole mappings: only what was counted comes off */
	end = addr + (x->win[i].action == MS_ACT_SEGMENT_UNMAP ? x->win[i].size : 1);
	while (addr < end && (v = ms_u64map_get(&x->live, addr))) {
		size = *v;
		ms_u64map_del(&x->live, addr, &size);
		x->cur -= size;
		addr += size;
	}
	return MS_OK;
}

ms_status ms_outside_event(struct ms_outside *x, uint64_t index, const struct ms_event *e)
{
	/* what waited longer than the window is not PyTorch's */
	while (x->n && x->win[x->head].index + MS_EXT_WINDOW < index)
		MS_TRY(commit(x));
	if (e->action < MS_ACT_SEGMENT_ALLOC || e->action > MS_ACT_SEGMENT_UNMAP)
		return MS_OK;
	if (e->source == MS_SRC_TORCH) {
		/* PyTorch's segment event claims the raw calls inside it that just happened */
		if (!is_grow(e->action))
			return MS_OK;
		for (unsigned k = 0; k < x->n; k++) {
			unsigned i = (x->head + k) % MS_EXT_WINDOW;
			if (!x->win[i].claimed && is_grow(x->win[i].action) &&
			    x->win[i].addr >= e->addr &&
			    x->win[i].addr + x->win[i].size <= e->addr + e->size)
				x->win[i].claimed = 1;
		}
		return MS_OK;
	}
	x->events++;
	x->frees += !is_grow(e->action);
	if (x->n == MS_EXT_WINDOW)
		MS_TRY(commit(x));
	{
		unsigned i = (x->head + x->n) % MS_EXT_WINDOW;
		x->win[i].index = index;
		x->win[i].addr = e->addr;
		x->win[i].size = e->size;
		x->win[i].action = e->action;
		x->win[i].claimed = 0;
		x->n++;
	}
	return MS_OK;
}

ms_status ms_outside_finish(struct ms_outside *x)
{
	while (x->n)
		MS_TRY(commit(x));
	return MS_OK;
}

void ms_outside_release(struct ms_outside *x)
{
	ms_u64map_release(&x->live);
	memset(x, 0, sizeof(*x));
}
