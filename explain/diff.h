/*
 * What changed from run A to run B on one pair of devices: what each ran with, the peaks of its
 * allocator replay, what each peak is made of (explain.h's categories), each step's peak, the
 * bytes live at each peak by allocation site, and the peak requested bytes inside each
 * annotation. Sites and annotations are matched by name (sites by every frame shown, where the
 * frames asked for are more than the site).
 *
 * Ownership: a diff owns its two replays (moved in), its explains, its stats and its rows until
 * ms_diff_release(); its rows point into the traces it was given, which the caller keeps alive
 * until then.
 */
#ifndef MEMSNAP_EXPLAIN_DIFF_H
#define MEMSNAP_EXPLAIN_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/trace_stats.h"
#include "explain/explain.h"
#include "replay/replay.h"
#include "replay/run.h"

struct ms_trace;

/* One run's device, as the caller replayed it. */
struct ms_diff_input {
	const char *path;
	const struct ms_trace *t; /* the trace whole (kept alive by the caller) */
	uint32_t device;
	struct ms_replay_result *r;           /* its replay, moved into the diff (left zeroed) */
	struct ms_limit_range lim;            /* the limit inferred, where one was */
	const struct ms_user_cats *user_cats; /* the user's categories, or NULL */
};

struct ms_diff_side {
	const char *path;
	uint32_t device;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	const struct ms_symtab *syms; /* the trace's */
	struct ms_stats_builder *b;
	const struct ms_trace_stats *st;
	struct ms_explain x; /* what its peak is made of */
	int has_x;
	int cut_short; /* a memsnap trace without its END: what the file holds, not the run */
	char torch[64], gpu[128];
	uint64_t gpu_total;
};

/* A row of a table: a site or an annotation, its bytes in a and in b. */
struct ms_diff_row {
	char name[512];
	uint64_t a, b;
	uint8_t in[2]; /* the run has it (an annotation one run lacks is not 0 bytes there) */
	/* a site's stack, in the table of the first run that has it; NULL for annotations */
	const struct ms_symtab *y;
	uint32_t stack;
};
/* How much a row changed, 0 where one run lacks it. */
uint64_t ms_diff_row_change(const struct ms_diff_row *r);

/* What the runs ran with, where one of them tells it. */
enum ms_diff_ran_with {
	MS_DIFF_ALLOC_CONF,
	MS_DIFF_LIMIT,
	MS_DIFF_DEVICE,
	MS_DIFF_TORCH,
	MS_DIFF_ENDED,
	MS_DIFF_RAN_WITH_COUNT
};
struct ms_diff_setting {
	const char *key;  /* "alloc_conf", as the JSON names it */
	const char *what; /* "allocator settings", as the text does */
	char a[600], b[600];
	int differs; /* 1, 0, or -1 where one run does not tell */
};

/* A step number either run has, and its peak requested bytes in each. */
struct ms_diff_step {
	uint64_t step; /* counted from 1, from the run's start */
	uint8_t in[2];
	uint64_t bytes[2];
};

struct ms_diff {
	struct ms_diff_side s[2];
	struct ms_diff_setting ran_with[MS_DIFF_RAN_WITH_COUNT];
	/* the categories at each peak: cat[k][w]; told[k][w] where run w could tell category k */
	uint64_t cat[MS_CAT_COUNT][2];
	uint8_t told[MS_CAT_COUNT][2];
	/* the moment compared instead of the peaks (--at: each run's replay window asked for one):
	 * 1 and each run's event; the categories are those right after it */
	int at;
	uint64_t at_event[2];
	/* the user's categories at each peak (both runs' the same: in[0].user_cats) */
	const struct ms_user_cats *user_cats;
	uint64_t user[MS_USER_CATS_MAX][2];
	/* the rest of each peak's reserved bytes: allocated beyond the categories' requested bytes
	 * (below 0 while frees wait for their streams), and cached free */
	int64_t rounding[2], cached_free[2];
	struct ms_diff_step *steps; /* by step number */
	size_t n_steps;
	size_t *steps_by_change;          /* indices into steps, the largest changes first */
	struct ms_diff_row *sites, *anns; /* the largest changes first */
	size_t n_sites, n_anns;
	/* each peak by compile context, where either run records any (in[w]: the run records
	 * compile contexts); the largest changes first */
	struct ms_diff_row *contexts;
	size_t n_contexts;
};

/*
 * Compare in[0] (run a) with in[1] (run b); sites grouped by frames (replay/site.h's
 * MS_FRAMES_USER, MS_FRAMES_ALL or N) at site depth depth. The replays are moved into *d,
 * also on error. Returns MS_OK or MS_ERR_NOMEM; release *d in both cases.
 */
ms_status ms_diff_run(struct ms_diff_input in[2], uint32_t frames, uint32_t depth,
                      struct ms_diff *d);
void ms_diff_release(struct ms_diff *d);

/*
 * The devices compared: of one device each (two ranks, say), those two; else each device with
 * events in both, with itself. da[0..na) and db[0..nb) are the devices with events of each run;
 * pa, pb (room for na) get the pairs. Returns how many.
 */
size_t ms_diff_pairs(const uint32_t *da, size_t na, const uint32_t *db, size_t nb, uint32_t *pa,
                     uint32_t *pb);

#endif
