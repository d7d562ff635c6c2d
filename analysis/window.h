/*
 * Windows of a run: stretches of a trace's events, bounded by event numbers or by the marks the
 * recording carries (its annotations: a phase's start and end, a mark, a step), and what was held
 * in each: the reserved, allocated and requested bytes at the window's start, their peaks inside
 * it (a peak reached within one event included where it is the run's highest so far: the model
 * keeps no peak of its own per event), and the recorded OOMs inside it. The replay
 * feeds them its model's figures (replay.c), stats the trace's own (analysis/trace_stats.c).
 *
 * A window is [from, to): from the state before event `from` to the state before event `to`. A
 * mark with event_index k sits before event k, so a window from one mark to another holds the
 * events between them. Windows are fed as the events stream by: they need no trace in memory,
 * so a streamed .zst trace has them too.
 */
#ifndef MEMSNAP_ANALYSIS_WINDOW_H
#define MEMSNAP_ANALYSIS_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

/* What is held after an event (or before the first), with the peaks so far: a peak that rose
 * within one event counts for the windows open at it. */
struct ms_window_now {
	uint64_t reserved, allocated, requested;
	uint64_t reserved_peak, allocated_peak, requested_peak;
};

enum ms_window_end_kind {
	MS_WINDOW_EDGE = 0, /* the trace's first event (from) or past its last (to) */
	MS_WINDOW_EVENT,    /* an event's number */
	MS_WINDOW_MARK,     /* the nth annotation of a name */
	MS_WINDOW_TIME,     /* a time from the trace's first event: its first event at or past */
	MS_WINDOW_ALLOC,    /* the nth allocation at an address, of the device */
	MS_WINDOW_FREE,     /* the nth free (completed) at an address, of the device */
};

/* One end of a window, as the user gives it (ms_window_end_parse). */
struct ms_window_end {
	enum ms_window_end_kind kind;
	uint64_t event;
	uint64_t t_ns;    /* MS_WINDOW_TIME: nanoseconds after the trace's first event */
	const char *mark; /* not owned: points into the text parsed */
	size_t mark_len;
	uint32_t nth;  /* from 1 */
	uint64_t addr; /* MS_WINDOW_ALLOC, MS_WINDOW_FREE */
	/* the text ended in "#N": the whole of it (mark_whole_len bytes) may be a mark's name too
	 * (torch.profiler's "ProfilerStep#3"); where the trace has a mark so named, that is it */
	size_t mark_whole_len;
};

/*
 * s as a window's end: an event's number ("1200"), a time after the trace's first event with
 * its unit ("1.5s", "200ms", "1500000us", "20ns": the window starts or ends before the first
 * event at or past it), or "mark:NAME" (the first annotation named
 * NAME), "mark:NAME#N" (the Nth, N from 1; where the trace has a mark named "NAME#N" itself,
 * its first; "NAME#0" is a name,
 * as torch.profiler names its steps "ProfilerStep#N"), or "alloc:ADDRESS" (the first allocation
 * at ADDRESS, 0x-prefixed hexadecimal or decimal; "alloc:ADDRESS#N" the Nth, N from 1: the window
 * starts or ends before it), "free:ADDRESS[#N]" (the same of the frees completed at ADDRESS). From
 * a mark, a window starts at a phase's start or a mark of that name; to a mark, it ends at a
 * phase's end or a mark of that name (counted apart: the Nth phase NAME is "--from mark:NAME#N --to
 * mark:NAME#N"). Returns NULL, or why s is not one.
 */
const char *ms_window_end_parse(const char *s, struct ms_window_end *out);
/* Why ends from and to cannot make a window (a `to` before `from`, both events or both
 * times), or NULL. */
const char *ms_window_ends_cross(const struct ms_window_end *from, const struct ms_window_end *to);

/* What the model held in one window. */
struct ms_window_figures {
	char *name;        /* the phase's name (windows by phase), else NULL; owned */
	uint64_t from, to; /* events [from, to); to: the events replayed where it never closed */
	int opened;        /* its start was reached */
	int at;            /* the moment after one event (--at): its figures are the end's */
	int closed;        /* its end was reached (0: the trace or the replay ended inside it) */
	int replay_stopped_inside; /* the replay ran out of memory inside it */
	uint64_t reserved_at_start, allocated_at_start;
	/* the event after which it was reached: inside the window, or where no event inside held
	 * as much, the one before it (the start's) */
	uint64_t peak_reserved, peak_reserved_event;
	/* the most allocated while the reserved peak stood, and the event after which it was */
	uint64_t allocated_at_peak_reserved, fullest_event;
	uint64_t peak_allocated, peak_allocated_event;
	/* the bytes the program asked for (PyTorch's requested_bytes; allocated is rounded) */
	uint64_t requested_at_start, peak_requested;
	/* what was held after its last event (its start's, with none inside) */
	uint64_t reserved_at_end, allocated_at_end, requested_at_end;
	uint64_t recorded_ooms; /* the device's recorded OOMs inside it */
	uint64_t events;        /* the device's events of PyTorch's allocator inside it */
	int reserved_peak_inside, allocated_peak_inside; /* the peak's event is inside */
	int timed; /* the one window: the trace's events have times */
	/* the first and last of its events' times after the trace's first event (ns); timed_events:
	 * whether any event inside had a time (else these are not set) */
	int timed_events;
	uint64_t first_t_ns, last_t_ns;
	/* the one window (from..to): how many marks of its ends' names the trace has */
	uint32_t from_marks, to_marks;
};

/*
 * The windows a replay keeps: one from `from` to `to` (both may be edges), or one for each phase
 * whose name starts with prefix (its start to its end; phases of the same name pair in order).
 */
struct ms_windows_asked {
	int one; /* the window from..to */
	/* the one window is the moment after from's event (--at): from..the event after it; to is
	 * an edge */
	int at;
	struct ms_window_end from, to;
	const char *prefix; /* non-NULL: a window for each phase so named */
};

/* The windows as a replay fills them. */
struct ms_windows {
	const struct ms_windows_asked *asked;
	struct ms_window_figures *w;
	size_t n, cap;
	size_t *open; /* indices into w of the windows open now */
	size_t n_open, cap_open;
	/*
	 * The one window: w[0], and where an end names "NAME#N" w[1..3] too, the candidates of the
	 * whole text as the from end's name (bit 1) and the to end's (bit 2), each winning where
	 * the trace has such a mark; the marks of each candidate's names seen so far.
	 */
	int alt;
	uint32_t from_seen[4], to_seen[4];
	/* the allocations at the ends' addresses seen so far (MS_WINDOW_ALLOC) */
	uint32_t from_allocs, to_allocs;
	int64_t t0; /* the trace's first event's time (0: none seen yet) */
	int timed;  /* an event with a time was seen */
	/* the first names of marks seen (for a window's mark that is not there), "; "-joined */
	char seen[256];
	size_t n_seen;
	int more_seen; /* names past those */
	/* the model's peaks at the last look */
	uint64_t last_reserved_peak, last_allocated_peak, last_requested_peak;
};

void ms_windows_init(struct ms_windows *ws, const struct ms_windows_asked *asked);
/*
 * Before event index: windows that start or end there. t_ns: its time, where it may bound a
 * time window (0: not this event: another device's, or a mark's place); e: the event, where it
 * is one of the device's allocator events (an allocation may bound a window), else NULL; st:
 * what is held now (NULL: nothing known yet). ms_windows_time gives every event's time first.
 */
struct ms_event;
ms_status ms_windows_before_event(struct ms_windows *ws, uint64_t index, int64_t t_ns,
                                  const struct ms_event *e, const struct ms_window_now *st);
/* Every event's time, as it comes (0: none): the trace's first sets where times count from. */
static inline void ms_windows_time(struct ms_windows *ws, int64_t t_ns)
{
	if (t_ns && !ws->timed) {
		ws->t0 = t_ns;
		ws->timed = 1;
	}
}
/* After event index (of the device counted), of time t_ns (0: none): the open windows' peaks
 * and their events' times. */
void ms_windows_after_event(struct ms_windows *ws, uint64_t index, int64_t t_ns, int recorded_oom,
                            const struct ms_window_now *st);
/* An annotation before event index, named name, of stage (enum ms_ann_stage). */
ms_status ms_windows_annotation(struct ms_windows *ws, uint64_t index, const char *name,
                                unsigned stage, const struct ms_window_now *st);
/* The replay ended after n events (stopped: by an OOM of its own); the windows open close. */
void ms_windows_end(struct ms_windows *ws, uint64_t n, int stopped);
/* The figures move to *out (ms_window_figures_free), the rest is freed; the first names of
 * marks seen into seen (cap bytes: "a; b; c" and "; ..." where there were more). */
void ms_windows_take(struct ms_windows *ws, struct ms_window_figures **out, size_t *n, char *seen,
                     size_t cap);
void ms_window_figures_free(struct ms_window_figures *w, size_t n);

/*
 * Where the one window asked (from_text, to_text: as given, NULL where not) is not in the trace
 * the replay went through (events events, windows w[0..n), seen: the names of marks it has, as
 * ms_windows_take gives them): 1 with why in msg (one line, no file name), else 0. stopped_at: the
 * event the replay ran out of memory at, UINT64_MAX none.
 */
int ms_window_missing(const struct ms_windows_asked *a, const char *from_text, const char *to_text,
                      uint64_t events, uint64_t stopped_at, const struct ms_window_figures *w,
                      size_t n, const char *seen, char *msg, size_t cap);

#endif
