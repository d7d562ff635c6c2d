/*
 * The allocations of one device with their lifetimes, as explain's passes share them: made by
 * explain.c (ms_explain_lives_new), categorized by its rules and by inference.c's. Private to
 * explain/.
 */
#ifndef MEMSNAP_EXPLAIN_LIVES_H
#define MEMSNAP_EXPLAIN_LIVES_H

#include <stdint.h>

#define MS_LIFE_NONE UINT64_MAX

/* An allocation of the device: its events' indices in the whole trace, free MS_LIFE_NONE if
 * never. */
struct ms_life {
	uint64_t size, a, f;
	/* from event until on (until < f), the allocation counts in cat_after, not in cat: the
	 * source of a concatenation once its result is made (MS_LIFE_NONE: never) */
	uint64_t until;
	uint32_t stack;
	uint8_t cat, cat_after;
	uint8_t before;     /* freed in the trace, allocated before it */
	uint8_t param_cand; /* kept through the optimizer steps, allocated by torch.nn code */
	uint8_t grad;       /* matched as a gradient at some step */
	uint8_t in_window;  /* allocated inside an optimizer step */
	/* the optimizer steps whose start it is alive at: [k_lo, k_hi) (windows_alive) */
	uint32_t k_lo, k_hi;
};

/* Its category at event i (after the event: what the state after i holds it as). */
static inline unsigned ms_life_cat_at(const struct ms_life *b, uint64_t i)
{
	return b->until != MS_LIFE_NONE && i >= b->until ? b->cat_after : b->cat;
}

#endif
