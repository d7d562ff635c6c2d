/*
 * Would the job have survived under another allocator setting? A decision per setting: yes, no,
 * or unknown, each with the reason and the evidence it rests on (docs/EXPLAIN.md, "Verdicts").
 *
 * A trace that ends at an OOM holds only the requests up to the failure: a replay that gets
 * past the failing request knows nothing of what the job would have asked for next. So:
 *
 *   no       the setting's replay runs out of memory before the job's end; or the dying step's
 *            remaining requests (below) run out; or demand is plain: the steps' peaks of
 *            requested bytes rose step over step, and at that rate the dying step or the one
 *            after it asks for more than the limit (no setting can give more than the limit)
 *   yes      the job finished in the trace and the setting's replay completes within a known
 *            limit; or the job died, an earlier step began with the same requests as the dying
 *            one (the same sizes in the same order up to the failure), and that step's remaining
 *            requests, then the highest step before the dying one once more, replayed after the
 *            failure under the setting, stay within the limit
 *   unknown  otherwise (no earlier step like the dying one; the job went on after a recorded
 *            OOM without the memory; the trace is cut short; no limit is known; a verdict that
 *            holds at one end of an inferred limit's range and not at the other), with the
 *            margin the setting's replay had left
 *
 * Under an inferred limit (a range) yes must hold at its lowest, no at its highest.
 */
#ifndef MEMSNAP_EXPLAIN_VERDICT_H
#define MEMSNAP_EXPLAIN_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "explain/explain.h"
#include "replay/replay.h"
#include "replay/run.h"

struct ms_trace;
struct ms_oom_verdict;

enum ms_survives { MS_SURVIVES_UNKNOWN = 0, MS_SURVIVES_YES = 1, MS_SURVIVES_NO = 2 };
/* "unknown", "yes", "no" */
const char *ms_survives_name(unsigned survives);

/* How the job ended, as the trace tells it, and what the verdicts can rest on. */
struct ms_death {
	int died;            /* the trace ends at a recorded OOM: the job died there */
	int went_on;         /* it recorded an OOM and allocated again after it (caught, went on) */
	int cut_short;       /* a memsnap trace whose recording was killed */
	uint64_t fail_index; /* the OOM that ended the job (died) */
	uint64_t request;    /* the bytes it asked for */
	/* steps numbered from 1 as ms_explain's (0: none) */
	size_t dying_step;      /* the step the failure fell in */
	size_t like_step;       /* an earlier step that began with the same requests (0: none) */
	size_t highest_step;    /* the complete step before the dying one with the most requested */
	uint64_t like_from;     /* like_step's event that matches the failed request */
	uint64_t prefix_allocs; /* the dying step's allocations before the failure */
	/* demand: the peaks of the last rising_steps complete steps rose each step; at the mean
	 * rise the dying step and the next ask for projected_dying and projected_next */
	size_t rising_steps;
	uint64_t rise_per_step, projected_dying, projected_next;
	/* projected_dying is what the dying step held when it failed, with the request: more than
	 * the rise gives */
	int projected_from_failure;
};

/* Find how the job ended (x: the steps, from ms_explain_run on the same trace and device).
 * @return MS_OK or MS_ERR_NOMEM */
ms_status ms_death_find(const struct ms_trace *t, uint32_t device, const struct ms_explain *x,
                        struct ms_death *d);

struct ms_survival {
	unsigned survives; /* enum ms_survives */
	char why[512];
	/* the limit left above the evidence's peak of reserved bytes (yes), or above the setting's
	 * replay's (unknown); margin_known 0 where there is no limit */
	uint64_t margin;
	int margin_known;
	/* the replay of the remaining requests was made (and its peak) */
	int continued;
	uint64_t continued_peak_reserved;
};

/* What the verdicts measure against: what PyTorch could use. */
enum ms_capacity_from {
	MS_CAP_NONE = 0, /* not known */
	MS_CAP_LIMIT,    /* a per-process limit, given or recorded (lo == hi) */
	MS_CAP_INFERRED, /* a per-process limit inferred from the recorded OOMs: [lo, hi] */
	MS_CAP_DEVICE,   /* the device: its size, or at a full device's OOM what PyTorch held
	                    plus what was free */
	MS_CAP_HELD,     /* no limit known: what the job held at once when it ran (it had that
	                    much), a floor of what it could use */
};

struct ms_capacity {
	unsigned from; /* enum ms_capacity_from */
	uint64_t lo, hi;
};

/*
 * What the verdicts of trace t's device measure against: lim (an inferred limit), else limit (a
 * given or recorded one), else capacity (the device's size, or at a full device's OOM what
 * PyTorch held plus what was free; UINT64_MAX: not known), else what the trace proves the job
 * held at once.
 */
struct ms_capacity ms_verdict_capacity(const struct ms_trace *t, uint32_t device,
                                       const struct ms_limit_range *lim, uint64_t limit,
                                       uint64_t capacity, const struct ms_oom_verdict *ov);

/*
 * Judge one setting: o holds the replay options of the setting (its alloc_conf, the device, the
 * limit the setting's replay ran under); whole is that replay of the trace.
 * @return MS_OK or MS_ERR_NOMEM (a failed replay is an unknown, with its error as the reason)
 */
ms_status ms_survival_judge(const struct ms_trace *t, const struct ms_replay_opts *o,
                            const struct ms_death *d, const struct ms_explain *x,
                            const struct ms_capacity *cap, const struct ms_replay_result *whole,
                            struct ms_survival *out);

/* ---- why the job ran out of memory ---- */

enum ms_oom_cause {
	MS_CAUSE_UNDECIDED = 0,
	MS_CAUSE_DEMAND,        /* the request plus what was live exceed what PyTorch could use */
	MS_CAUSE_FRAGMENTATION, /* it would have fit; no free block was large enough */
	MS_CAUSE_SEGMENT_SIZE,  /* it fitted, the segment it asked for (rounded up) did not */
	MS_CAUSE_OUTSIDE,       /* the device was full, most of it held outside PyTorch */
	MS_CAUSE_CACHE_KEPT,    /* an open private pool or capture kept the cache */
	MS_CAUSE_COUNT
};
/* "demand", ..., as the JSON names them; NULL for undecided */
const char *ms_oom_cause_name(unsigned cause);

struct ms_oom_verdict {
	unsigned
	        cause; /* the one that decides it; MS_CAUSE_UNDECIDED: undecided_because says why */
	char undecided_because[320];
	/* every cause that contributes, with its bytes (the decider first) */
	struct {
		unsigned cause;
		uint64_t bytes;
	} causes[MS_CAUSE_COUNT];
	size_t n_causes;
	/* the device itself was full: its free bytes at the recorded OOM (after PyTorch gave back
	 * its cache) below the segment the request needed; no per-process limit is needed then */
	int device_full;
	uint64_t device_free, segment_needed;
	/* memory held outside PyTorch at the OOM (device size - reserved - free): one figure, taken
	 * at the OOM and assumed constant; known only where the device's size is (recorded or
	 * --device-memory) */
	int outside_known;
	uint64_t outside_bytes;
	/* what PyTorch could use: a limit (given, recorded, or inferred: a range), or its reserved
	 * plus the device's free bytes at a full device's OOM; 0 where not known */
	uint64_t capacity_lo, capacity_hi;
	/* the request would have fit but for fragmentation, yet the dying step asks for more than
	 * the capacity at the rate the steps' peaks rose (ms_death): demand decides */
	int demand_projected;
};

/*
 * Why a request that fit without fragmentation under capacity cap failed: MS_CAUSE_SEGMENT_SIZE
 * where the request itself fit in what cap left beside PyTorch's segments but the segment it
 * asked for did not (20 MiB for a request of 1 to 10 MiB), else MS_CAUSE_FRAGMENTATION.
 */
unsigned ms_oom_fit_cause(const struct ms_replay_oom *f, uint64_t cap);

/*
 * The cause of r's first OOM (r->has_oom): r is the replay with the recorded or given settings,
 * lim its inferred limit (or none). limit: the limit the replay ran under (given or recorded;
 * 0 none). d (or NULL): how the job ended; where its steps' peaks rose to the dying step and
 * that step asks for more than the capacity, demand decides even where the request itself
 * would have fit.
 */
void ms_oom_cause_find(const struct ms_replay_result *r, const struct ms_limit_range *lim,
                       uint64_t limit, const struct ms_death *d, struct ms_oom_verdict *v);

/* ---- a snapshot without a trace, taken at an OOM ---- */

struct ms_replay_snap;

/*
 * What the end state a snapshot recorded tells, without its events: what was allocated against
 * reserved against free, the largest free block, and (request given: such a file records none)
 * whether a request of that size fitted there and why not.
 */
struct ms_end_state_verdict {
	uint64_t segments, reserved, allocated, requested, free_in_reserved, largest_free;
	uint64_t blocks_allocated;
	int has_request;
	uint64_t request, rounded, segment_needed;
	int fits_free_block; /* the largest free block holds the rounded request */
	/* the cause (demand, fragmentation, segment size) against limit or device_memory (0:
	 * neither known: undecided) */
	struct ms_oom_verdict oom;
};

/* snap: the end state of one device (replay/end_state.h); request 0: none given. */
void ms_end_state_judge(const struct ms_replay_snap *snap, uint64_t request, uint64_t limit,
                        uint64_t device_memory, struct ms_end_state_verdict *v);

/* A site of an end state's allocated blocks: its label, bytes and blocks. */
struct ms_end_site {
	char label[256];
	uint64_t bytes, blocks;
};
/* The largest sites of snap's allocated blocks (t's stacks), by bytes, into sites[0..cap): how
 * many. Sites past cap are counted in nothing. */
size_t ms_end_state_sites(const struct ms_trace *t, const struct ms_replay_snap *snap,
                          struct ms_end_site *sites, size_t cap);

/* Its one-line conclusion, as explain opens with it (buf of 1024 bytes holds it whole). */
void ms_end_state_headline(const struct ms_end_state_verdict *v, char *buf, size_t cap);

/* ---- one verdict per device, which every command reads ---- */

/* in for ms_explain_run on t's device at the state replay r broke down: the most allocated while
 * reserved stood at its peak; sites at depth 1. */
void ms_explain_in_at_peak(struct ms_explain_in *in, const struct ms_trace *t, uint32_t device,
                           const struct ms_replay_result *r);

struct ms_whatif_row;
struct ms_verdict;

/*
 * The verdict of o's device of t (held whole) from r, its replay under o, and lim, its inferred
 * limit; rows the what-if rows judged (or none). Release *v with ms_verdict_release() whatever
 * the return. MS_ERR_NOMEM only.
 */
ms_status ms_verdict_of_replay(const struct ms_trace *t, const struct ms_replay_opts *o,
                               const struct ms_replay_result *r, const struct ms_limit_range *lim,
                               const struct ms_whatif_row *rows, size_t n_rows,
                               struct ms_verdict *v);
/*
 * The cause of r's first OOM as replay gives it: from the verdict (t held whole), else from the
 * replay alone; *death and *has_death where the verdict tells how the job died.
 */
void ms_verdict_oom_of_replay(const struct ms_trace *t, const struct ms_replay_opts *o,
                              const struct ms_replay_result *r, const struct ms_limit_range *lim,
                              struct ms_oom_verdict *ov, struct ms_death *death, int *has_death);

/* What the commands show of one device of a trace: computed once, here. */
struct ms_verdict {
	struct ms_death death;
	int has_oom;
	struct ms_oom_verdict oom; /* has_oom */
	/* the replay's first OOM (has_oom): its event, whether the trace recorded it there, and the
	 * step it fell in (0: no steps, or steps found only by repetition) */
	uint64_t oom_index;
	int oom_recorded;
	size_t oom_step;
	int limit_given;  /* the replay ran under a limit the user gave */
	int conf_given;   /* ... with settings the user gave (--alloc-conf) */
	int device_given; /* ... on a device of the size the user gave (--device-memory) */
	struct ms_capacity cap;
	/* the settings of rows (ms_verdict_judge_rows), one each; n_sv of them */
	struct ms_survival *sv;
	size_t n_sv;
	/* one line: what died where, why, the change that helps and how sure memsnap is */
	char headline[768];
	/* the trace comes from another allocator (torch_npu): the headline says it is judged by
	 * the CUDA allocator's model */
	char other_allocator[32];
};

/*
 * The death, the OOM's cause and the capacity of trace t's device: first is the replay with the
 * recorded or given settings (o its options, o->limit the limit it ran under), lim its inferred
 * limit; x the device's explain (its steps). @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_verdict_begin(const struct ms_trace *t, const struct ms_explain *x,
                           const struct ms_replay_opts *o, const struct ms_replay_result *first,
                           const struct ms_limit_range *lim, struct ms_verdict *v);
/*
 * Judge each row's setting (rows from ms_whatif_run with the same options; a row with an error
 * is unknown), then write the headline. @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_verdict_judge_rows(const struct ms_trace *t, const struct ms_explain *x,
                                const struct ms_replay_opts *o, const struct ms_whatif_row *rows,
                                size_t n, struct ms_verdict *v);
void ms_verdict_release(struct ms_verdict *v);

#endif
