/*
 * The HTML report's data, gathered before anything is written: one replay of a trace (or the
 * end state a snapshot recorded) into struct ms_report, from which render/html.c writes the
 * page (docs/RENDER.md lists what the page's data holds).
 */
#ifndef MEMSNAP_RENDER_REPORT_H
#define MEMSNAP_RENDER_REPORT_H

#include "common/symtab.h"
#include "explain/explain.h"
#include "render/alloc_bands.h"
#include "render/render.h"
#include "replay/replay.h"

struct ms_trace;
struct ms_source;

/* Streams drawn apart in the timeline; later ones are summed as "other streams". */
#define MS_REPORT_STREAMS 8
/*
 * The finer level the page switches to when zoomed in: MS_REPORT_FINE times the buckets, with
 * only the extremes of allocated and reserved bytes (they are what zooming in is for).
 */
#define MS_REPORT_FINE 8
/* The top allocation sites at the peak listed. */
#define MS_REPORT_TOP_SITES 25

/* Events [first, ...) of one bucket: when the first began, the extremes of allocated and
 * reserved bytes after each, and the allocated bytes after the last. */
struct ms_report_span {
	uint64_t first;
	int64_t t_ns;
	uint64_t amin, amax, rmin, rmax;
	uint64_t alast;
};

/* One bucket of the timeline. */
struct ms_report_bucket {
	struct ms_report_span s;
	int64_t stream_alloc[MS_REPORT_STREAMS + 1]; /* allocated bytes per stream, last event */
	int64_t ann;                  /* innermost open annotation (string id), or -1 */
	uint64_t big_size, big_index; /* the largest allocation requested in the bucket */
	uint32_t big_stack;           /* ... its stack */
	int64_t big_site;             /* ... and its site, or -1 */
	uint64_t last;                /* trace event */
	uint64_t active_max;
	uint64_t ext_max; /* bytes outside PyTorch's allocator, the most in the bucket */
	int ext_known;    /* ... measured by then, or raw calls seen: else not a figure */
	/* at the last event */
	uint64_t alloc, reserved, inactive_split, small_reserved, large_reserved;
	uint64_t private_allocated, private_reserved; /* in private pools (CUDA graphs, MemPools) */
	uint64_t free_in_reserved, largest_free;      /* at the first event */
};

/* Blocks of a segment drawn as one cell (ms_render_cells). */
struct ms_report_cell {
	uint64_t size;      /* bytes, of every state */
	uint64_t requested; /* allocated cells: the requested bytes; else 0 */
	int64_t site;       /* a cell of one block not free: the block's site, else -1 */
	uint64_t blocks;
	int state; /* 0 allocated, 2 pending free, 3 free (ms_render_cell_state) */
};

/* A segment at a moment; its n_cells cells follow the previous segment's in ms_report.cells. */
struct ms_report_segment {
	uint64_t addr, size, stream;
	int small, expandable;
	size_t n_cells;
	uint64_t pool_id[2]; /* (0, 0): the default pools */
};

/* A state the segment map can show; its n_segs segments follow the previous moment's. */
struct ms_report_moment {
	uint64_t index;    /* the last trace event replayed */
	const char *label; /* "peak", "oom", "snapshot" or "" (static) */
	int64_t allocated, reserved;
	size_t n_segs;
};

/*
 * A stack as the page shows it: its frames innermost first (indexes into ms_report.frames,
 * id - 1), the site frame's position among them, and the positions --frames shows (all of
 * them: shown_all).
 */
struct ms_report_stack {
	int known; /* 0: no stack recorded (an OOM holder without one) */
	uint32_t *frames;
	size_t n;
	size_t site;
	size_t *shown;
	size_t n_shown;
	int shown_all;
};

/* Bytes and allocations of one site among the allocated blocks at the peak. */
struct ms_report_site_bytes {
	int64_t site; /* -1: no stack */
	uint64_t bytes, count;
};

/*
 * The flame graph of the allocated blocks at the peak: a tree of frames from the outermost in,
 * each node with the bytes allocated below it. Node 0 is the root ("all").
 */
struct ms_report_flame_node {
	uint32_t frame; /* in ms_report.syms */
	uint64_t bytes;
	size_t child, next; /* first child and next sibling, 0 = none */
};

/*
 * What the peak is made of (explain/explain.h), for a trace in memory and the whole of it: the
 * categories at the state the first pass names (its fullest_at_peak_index), the model's sets,
 * the sites that grow. has is 0 where it was not made (a window, a trace streamed from its file).
 */
#define MS_REPORT_GROWTH 5
struct ms_report_diagnosis {
	int has;
	uint64_t event, reserved, allocated;
	uint64_t cat_bytes[MS_CAT_COUNT], cat_blocks[MS_CAT_COUNT]; /* by enum ms_explain_cat */
	/* the user's categories (report's user_cats), which win over the rules */
	size_t n_user;
	uint64_t user_bytes[MS_USER_CATS_MAX], user_blocks[MS_USER_CATS_MAX];
	int64_t rounding;
	uint64_t oom_request; /* a recorded OOM's request the replay served at the peak */
	uint64_t parameter_bytes, gradient_bytes, optimizer_state_bytes;
	int model_found; /* parameters were found (else the three above are not known) */
	size_t n_optimizer_steps;
	size_t growth_steps;      /* step starts growth was looked for at (0: not looked for) */
	int growth_by_repetition; /* over steps from repetition (maybe a model's layers) */
	/* copies alive at the peak (explain.h): told where stacks have C++ frames */
	int copies_told;
	uint64_t copy_bytes, copy_blocks;
	char copy_site[512]; /* the largest site of them, or "" */
	char optimizer[64];
	char note[512];
	struct {
		char site[512];
		uint64_t bytes_per_step;
		uint32_t steps;
		uint32_t blocks_first, blocks_last; /* as many: larger shapes, not more kept */
	} growth[MS_REPORT_GROWTH];
	size_t n_growth;
	/* a generation job's requests (explain.h), owned */
	struct ms_explain_request *requests;
	size_t n_requests;
	/* a training job's evaluation loops (explain.h): their span, forwards, peak, requests and
	 * the KV cache's largest request, owned */
	struct ms_report_eval_loop {
		uint64_t first_event, end_event, forwards, peak_requested, kv_peak;
		size_t n_requests;
	} * eval_loops;
	size_t n_eval_loops;
	/* the steps (explain.h), owned; numbered after steps_before_trace */
	const char *steps_from;  /* static: "step annotations", ..., or "" */
	char steps_scope[128];   /* "record_function scopes": the scope's name */
	int has_stacks;          /* the trace's allocations have stacks (torch.nn's told) */
	int eager_forwards_only; /* a generation job that captured CUDA graphs (explain.h) */
	const char *job;         /* explain's: "training", "inference" or "" */
	struct ms_explain_step *steps;
	size_t n_steps, steps_before_trace;
};

struct ms_verdict;

struct ms_report {
	const char *source; /* borrowed from the input */
	/* the device's verdict (explain/verdict.h), set by the caller where it has one: the page
	 * opens with its headline, the OOM panel names its cause, and each what-if row carries its
	 * survival (verdict->sv, as many as the rows); NULL: none. Borrowed. */
	const struct ms_verdict *verdict;
	int no_trace; /* the end state of a snapshot without a trace: no timeline */
	/* how the buckets' ext_max is known (CSV's outside_pytorch: empty where not measured) */
	enum {
		MS_OUTSIDE_NOT_MEASURED = 0,
		MS_OUTSIDE_RAW_ONLY = 1, /* the raw CUDA calls the interposer saw: a lower bound */
		MS_OUTSIDE_MEASURED = 2, /* the recorder's cudaMemGetInfo marks, with raw calls */
	} outside_is;
	uint32_t site_depth;                  /* its sites' depth, as ms_report_input's */
	const struct ms_user_cats *user_cats; /* as ms_report_input's */
	/* the replay */
	uint32_t device;
	char alloc_conf[512];
	int settings_recorded;  /* alloc_conf is the recorded (or given) one, not a default */
	int expandable_seen;    /* not recorded; the trace shows expandable segments */
	uint64_t device_memory; /* UINT64_MAX: unbounded */
	uint64_t limit;
	unsigned device_memory_source; /* enum ms_devmem_source */
	int rebuilt; /* a mid-run trace: the state rebuilt before its first event */
	uint64_t initial_reserved, initial_segments, initial_live_blocks;
	int placed;         /* the blocks live before the trace placed by the model, not rebuilt */
	int cut_short;      /* a memsnap trace without its END record: the start of the run only */
	int limit_inferred; /* the limit was inferred from the recorded OOMs, in [lo, hi] */
	uint64_t limit_lo, limit_hi;
	uint64_t events, replayed;
	int ended_by_oom;
	uint64_t from, to; /* the window drawn, [from, to) */
	/* the window's peak: the first event with the most allocated bytes, and the extremes */
	uint64_t peak_index, peak_allocated, peak_reserved;

	/* the timeline: buckets of bucket_events events, and the finer level */
	uint64_t bucket_events, fine_events;
	struct ms_report_bucket *buckets;
	size_t n_buckets;
	struct ms_report_span *fine;
	size_t n_fine;
	uint64_t streams[MS_REPORT_STREAMS]; /* in order of first allocation */
	size_t n_streams;
	uint32_t *ann_names; /* the annotations the buckets name (string ids of syms), each once */
	size_t n_ann_names;

	/* the states the segment map shows, in event order */
	struct ms_report_moment *moments;
	size_t n_moments;
	struct ms_report_segment *segs;
	size_t n_segs;
	struct ms_report_cell *cells;
	size_t n_cells;

	/* the first OOM in the window */
	int has_oom;
	struct ms_replay_oom oom;
	char oom_message[1024];                               /* PyTorch's, the model's numbers */
	struct ms_report_stack holder_stacks[MS_OOM_HOLDERS]; /* oom.holders' */

	/* at the peak (when it is one of the moments) */
	int has_peak;
	struct ms_report_site_bytes *top_sites; /* by bytes, the most first */
	size_t n_top_sites;
	struct ms_report_flame_node *flame; /* n_flame 0 or no bytes at the root: none */
	size_t n_flame;

	/* sites: site i is string i + 1 of site_labels; its first stack seen */
	struct ms_symtab site_labels;
	struct ms_report_stack *site_stacks;
	size_t n_sites;
	/* the frames the stacks use: [name, file, line], frame id i + 1 */
	struct ms_symtab frames;

	struct ms_report_diagnosis diag;

	/*
	 * The per-allocation timeline: the allocations drawn one by one (bands.bands, by alloc
	 * event; bands.part_idx and part_start: each part's of each level), and per band its site
	 * (or -1), its stack in band_stacks (or -1) and its category (enum ms_explain_cat, or -1:
	 * not told; set by ms_report_diagnose)
	 */
	struct ms_bands bands;
	int64_t *band_site;
	int32_t *band_stack;
	/* each band's forward frames (made in backward: where forward made its tensor; a trace
	 * read whole only), its index in band_stacks or -1 */
	int32_t *band_fwd;
	/* each band's compile context (torch.compile's region: a trace read whole only), its index
	 * in band_ctx_names (string ids; 0: "N/A"); n_band_ctx_names 0 where no band has one */
	int32_t *band_ctx;
	uint32_t *band_ctx_names;
	size_t n_band_ctx_names;
	const struct ms_trace *trace; /* the trace read whole, or NULL (streamed) */
	int8_t *band_cat;
	struct ms_report_stack *band_stacks;
	size_t n_band_stacks;

	/* the trace's strings and stacks (annotation names, flame frames) */
	const struct ms_symtab *syms;
	struct ms_symtab own_syms; /* those of a trace streamed from its file */
};

/*
 * What the report needs: the trace (in memory, or streamed from path), the replay's options and
 * its first pass.
 */
struct ms_report_input {
	const char *source;
	const char *path;
	const struct ms_source *src;          /* path opened once (parse/source.h), or NULL */
	const struct ms_trace *trace;         /* or NULL */
	const struct ms_replay_opts *opts;    /* as the first pass ran (limit, mid-run state) */
	const struct ms_replay_result *first; /* the first pass: events, peak, OOM */
	size_t buckets;                       /* timeline detail; 0: 2000 */
	size_t moments;                       /* segment maps besides peak and OOM; 0: 48 */
	uint32_t frames;     /* frames the segment map's tooltips show with a site; 0: the site */
	uint32_t site_depth; /* sites at this depth (replay/site.h); 0 or 1: the site frame alone */
	const struct ms_user_cats *user_cats; /* the user's categories, or NULL */
	uint64_t from, to;                    /* the window of events drawn; to = 0: to the end */
	/* the limit was inferred from the recorded OOMs, between limit_lo and limit_hi: the page
	 * says so wherever a verdict rests on it */
	int limit_inferred;
	uint64_t limit_lo, limit_hi;
	/*
	 * first is not the whole first pass but its events_total alone (a command running its
	 * first pass at the same time): the report finds the peak in its own replay and takes the
	 * state there with a replay up to it; first->has_oom must be 0 (no window)
	 */
	int find_peak;
};

/*
 * Fill rep from one more replay of the trace. rep is the caller's; release it with
 * ms_report_release() whatever the return (which is MS_OK, MS_ERR_NOMEM, the replay's error, or
 * MS_ERR_INVALID_ARG for a window without events of the device).
 */
ms_status ms_report_collect(const struct ms_report_input *in, struct ms_report *rep,
                            struct ms_diag *d);
/*
 * The report of a snapshot without a trace (in->moment "snapshot", replay/end_state.h): the end
 * state as recorded, its top sites and stacks; no timeline. in->syms must outlive rep.
 * Release with ms_report_release() whatever the return (MS_OK or MS_ERR_NOMEM).
 */
ms_status ms_report_end_state(const struct ms_render_input *in, struct ms_report *rep);
void ms_report_release(struct ms_report *rep);

/*
 * rep->diag from t (whole, in memory) and first, the first pass's result of rep's device.
 * @return MS_OK or MS_ERR_NOMEM.
 */
ms_status ms_report_diagnose(struct ms_report *rep, const struct ms_trace *t,
                             const struct ms_replay_result *first);

/*
 * The event in [from, to) after which allocated bytes were highest (the first such), from a
 * replay with opts of t, or (t NULL) of the input src, that stops at to.
 */
ms_status ms_report_window_peak(const struct ms_trace *t, const struct ms_source *src,
                                const struct ms_replay_opts *opts, uint64_t from, uint64_t to,
                                uint64_t *index, struct ms_diag *d);

#endif
