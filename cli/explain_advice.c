/* explain's OOM and what to change, as text (explain_text.h). */
#include <stdio.h>
#include <string.h>

#include "cli/explain_text.h"
#include "cli/messages.h"
#include "cli/verdict_out.h"
#include "parse/trace.h"

/* The OOM: the state when the request failed, who held it, and why it failed. */
void ms_explain_print_oom(const struct ms_explain_report *r)
{
	const struct ms_trace *t = r->t;
	const struct ms_verdict *vd = &r->vd;
	const struct ms_limit_range *lim = &r->lim;
	uint64_t capacity = r->capacity;
	char b1[32], b2[32], b3[32];

	const struct ms_replay_oom *f = &r->first.first_oom;
	printf("\n  out of memory at event %llu%s: %s requested, %s allocated, %s "
	       "reserved\n",
	       (unsigned long long)f->index, f->recorded ? " (recorded too)" : "",
	       ms_format_size(b1, sizeof(b1), f->o.requested),
	       ms_format_size(b2, sizeof(b2), f->o.allocated),
	       ms_format_size(b3, sizeof(b3), f->o.reserved));
	ms_explain_print_cats(&r->at_oom, f->o.allocated, 0, f->o.reserved - f->o.allocated, 0,
	                      MS_OUTSIDE_NOT_MEASURED, 0);
	if (r->at_oom.n_top_live) {
		printf("    held by, the largest sites of what was allocated:\n");
		ms_explain_print_sites(&t->syms, r->at_oom.top_live, r->at_oom.n_top_live);
	}
	ms_verdict_print_oom_cause(&vd->oom, &vd->death, f->o.reserved, "    ");
	{
		int fit = r->oom_fits;
		uint64_t demand = f->o.allocated + f->o.requested;
		ms_format_size(b1, sizeof(b1), demand);
		if (f->o.retry_skipped)
			printf("    a use_mem_pool or a CUDA graph capture was "
			       "open: "
			       "PyTorch gives no cached segment back then, and %s "
			       "of "
			       "them were free; end it before this allocation, or "
			       "call torch.cuda.empty_cache() before it begins\n",
			       ms_format_size(b2, sizeof(b2), f->o.releasable));
		else if (fit < 0)
			; /* the cause line above says why it cannot be told */
		else if (fit && ms_oom_fit_cause(f, lim->inferred ? lim->lo : capacity) ==
		                        MS_CAUSE_SEGMENT_SIZE) {
			char b4[32], b5[32];
			uint64_t cap = lim->inferred ? lim->lo : capacity;
			printf("    segment size: allocated plus the request (%s) "
			       "fit "
			       "in %s%s, and so did the request beside PyTorch's "
			       "segments (%s free in them), but the new segment it "
			       "asked for (%s) did not fit in the %s left; "
			       "expandable segments grow by 2 MiB pages instead\n",
			       b1, ms_format_size(b2, sizeof(b2), cap),
			       lim->inferred ? ", the inferred limit's lowest" : "",
			       ms_format_size(b3, sizeof(b3), f->o.free_in_reserved),
			       ms_format_size(b4, sizeof(b4), f->o.alloc_size),
			       ms_format_size(b5, sizeof(b5),
			                      cap > f->o.reserved ? cap - f->o.reserved : 0));
		} else if (fit)
			printf("    fragmentation: allocated plus the request (%s) "
			       "fit in "
			       "%s%s; the largest free block was %s\n",
			       b1,
			       ms_format_size(b2, sizeof(b2), lim->inferred ? lim->lo : capacity),
			       lim->inferred ? ", the inferred limit's lowest" : "",
			       ms_format_size(b3, sizeof(b3), f->o.largest_free));
		else
			printf("    demand: allocated plus the request (%s) exceed "
			       "%s%s: "
			       "no setting can make it fit\n",
			       b1,
			       ms_format_size(b2, sizeof(b2), lim->inferred ? lim->hi : capacity),
			       lim->inferred ? ", the inferred limit's highest" : "");
	}
}

/* What to change: each setting that helps, replayed on the trace, and the least memory. */
/* Where no setting tried helps: why, as the replays tell it. */
static void print_no_change(const struct ms_explain_report *r)
{
	const struct ms_explain *x = &r->x;
	const struct ms_replay_result *first = &r->first;
	const struct ms_limit_range *lim = &r->lim;
	uint64_t capacity = r->capacity;
	char b1[32], b2[32];
	size_t k;

	if (r->rows[0].s)
		printf("    the recorded settings could not be replayed: %s\n", r->rows[0].err);
	else if (!r->n_recs && first->has_oom && first->first_oom.o.retry_skipped)
		printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
		       "lists them): the cache kept while the use_mem_pool or capture "
		       "was open is the cause (above)\n",
		       r->n_rows - 1);
	else if (!r->n_recs && first->has_oom && lim->inferred)
		printf("    no setting tried avoids the OOM under the inferred limit (%zu "
		       "tried: memsnap whatif lists them); the job's real limit, anywhere "
		       "from %s to %s, may differ (--limit sets it)\n",
		       r->n_rows - 1, ms_format_size(b1, sizeof(b1), lim->lo),
		       ms_format_size(b2, sizeof(b2), lim->hi));
	else if (!r->n_recs && first->has_oom) {
		printf("    no setting tried avoids the OOM (%zu tried: memsnap whatif "
		       "lists them): the job needs less memory, or more than it had\n",
		       r->n_rows - 1);
		/* an OOM of fragmentation, and yet no setting helps: the demand later on */
		size_t hk = SIZE_MAX;
		for (k = 0; k < x->n_steps; k++)
			if (hk == SIZE_MAX ||
			    x->steps[k].peak_requested > x->steps[hk].peak_requested)
				hk = k;
		if (hk != SIZE_MAX && capacity && x->steps[hk].peak_requested > capacity)
			printf("    the job holds %s of allocations at once later on "
			       "(step %zu, event %llu), more than %s: past this OOM it "
			       "runs out whatever the setting\n",
			       ms_format_size(b1, sizeof(b1), x->steps[hk].peak_requested),
			       hk + 1 + x->steps_before_trace,
			       (unsigned long long)x->steps[hk].peak_event,
			       ms_format_size(b2, sizeof(b2), capacity));
	} else if (!r->n_recs)
		printf("    no setting tried lowers the peak (%zu tried: memsnap whatif "
		       "lists "
		       "them)\n",
		       r->n_rows - 1);
}

/* The k-th setting recommended: its peak, least memory and whether it survives. */
static void print_recommendation(const struct ms_explain_report *r, size_t k)
{
	const struct ms_replay_result *first = &r->first;
	const struct ms_verdict *vd = &r->vd;
	uint64_t reserved = r->reserved;
	char b1[32], b2[32], b3[32];

	const struct ms_whatif_row *w = &r->rows[r->recs[k].row];
	uint64_t p = r->recs[k].peak;
	if (r->recs[k].sv.survives == MS_SURVIVES_NO &&
	    (!k || r->recs[k - 1].sv.survives != MS_SURVIVES_NO))
		printf("    %s would not have saved the job:\n",
		       k ? "these"
		         : "none does: these lower the peak or get past the "
		           "recorded OOM, but");
	printf("    %s\n      peak reserved %s (%s%s)%s", w->conf,
	       ms_format_size(b1, sizeof(b1), p), p > reserved ? "+" : "-",
	       ms_format_size(b2, sizeof(b2), p > reserved ? p - reserved : reserved - p),
	       !r->recs[k].avoids_oom      ? ""
	       : first->first_oom.recorded ? ", gets past the recorded OOM"
	                                   : ", gets past the OOM of the replay under this "
	                                     "limit");
	if (r->o.limit && p > r->o.limit)
		printf(" (%s over the limit: PyTorch checks the limit against the "
		       "request, and expandable segments map whole pages past it)",
		       ms_format_size(b2, sizeof(b2), p - r->o.limit));
	if (w->min_memory)
		printf("; least memory that completes %s%s%s",
		       first->rebuilt ? "at least " : "", /* a mid-run start */
		       ms_format_size(b3, sizeof(b3), w->min_memory),
		       w->min_memory > p ? " (more than its peak: under a lower limit "
		                           "the allocator takes other paths, and runs out)"
		       : r->rows[0].min_memory && w->min_memory > r->rows[0].min_memory
		               ? " (more than the settings it replaces need)"
		               : "");
	printf("\n      survives: %s: %s", ms_survives_name(r->recs[k].sv.survives),
	       r->recs[k].sv.why);
	if (r->recs[k].sv.survives != MS_SURVIVES_NO && r->recs[k].sv.margin_known)
		printf("; its allocated peak %s below %s (reserved bytes may "
		       "fill the rest)",
		       ms_format_size(b1, sizeof(b1), r->recs[k].sv.margin),
		       vd->cap.from == MS_CAP_HELD     ? "what the job held at once"
		       : vd->cap.from == MS_CAP_DEVICE ? "what PyTorch could use"
		                                       : "the limit");
	printf("\n");
}

void ms_explain_print_changes(const struct ms_explain_report *r)
{
	const struct ms_replay_result *first = &r->first;
	char b1[32];
	size_t k;

	printf("\n  what to change (each replayed on this trace%s%s%s%s%s):\n",
	       r->o.limit ? ", limit " : "",
	       r->o.limit ? ms_format_size(b1, sizeof(b1), r->o.limit) : "",
	       !r->n_recs             ? ""
	       : first->alloc_conf[0] ? "; each in place of \""
	                              : "; each in place of the default settings",
	       r->n_recs && first->alloc_conf[0] ? first->alloc_conf : "",
	       r->n_recs && first->alloc_conf[0] ? "\", whatif --configs tries combinations"
	       : r->n_recs                       ? ", whatif --configs tries combinations"
	                                         : "");
	print_no_change(r);
	for (k = 0; k < r->n_recs; k++)
		print_recommendation(r, k);
	if (!r->rows[0].s)
		printf("  least memory that completes with %s: %s%s\n",
		       r->o.alloc_conf            ? "the settings given"
		       : first->settings_recorded ? "the recorded settings"
		       : first->expandable_seen   ? "the settings the trace shows"
		                                  : "the default settings (not recorded)",
		       first->rebuilt && r->rows[0].min_memory ? "at least " : "",
		       r->rows[0].min_memory ? ms_format_size(b1, sizeof(b1), r->rows[0].min_memory)
		                             : "none found");
	/* listed above: the settings that avoid the OOM or lower the peak as run; under a
	   limit, others may need less memory still (the collector acts only under one) */
	if (!first->has_oom && !r->o.limit)
		printf("  (settings that only need less memory under a limit, such as "
		       "garbage_collection_threshold, are not listed: memsnap whatif "
		       "searches "
		       "the least memory of each)\n");
}
