/* A replay's result as `memsnap replay` prints it (replay_text.h). */
#include "cli/replay_text.h"

#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/sites.h"
#include "cli/verdict_out.h"
#include "replay/device_cuda.h"

/* "(0, 0)", "(1, 0)": a pool's id as PyTorch prints it. */
static const char *pool_name(uint16_t code, char *buf, size_t cap)
{
	uint64_t id[2];

	ms_pool_id(code, id);
	return ms_pool_id_text(id, buf, cap);
}

/* Each private pool's share, where the trace has any (the default pool is the rest). */
static void print_pools(const struct ms_replay_result *r)
{
	char b1[32], b2[32], b3[32], id[48];

	if (r->n_pools < 2)
		return;
	printf("  private pools:  %zu (CUDA graphs, MemPools); %llu allocation%s the trace puts in "
	       "them\n",
	       r->n_pools - 1, (unsigned long long)r->allocs_private,
	       r->allocs_private == 1 ? "" : "s");
	for (size_t i = 0; i < r->n_pools; i++) {
		const struct ms_model_pool *p = &r->pools[i];
		printf("    %-14s reserved peak %s, allocated peak %s, %s reserved at the end%s\n",
		       pool_name(p->code, id, sizeof(id)),
		       ms_format_size(b1, sizeof(b1), (uint64_t)p->reserved_bytes.peak),
		       ms_format_size(b2, sizeof(b2), (uint64_t)p->allocated_bytes.peak),
		       ms_format_size(b3, sizeof(b3), (uint64_t)p->reserved_bytes.current),
		       i ? "" : " (default)");
	}
	if (r->use_on_oom_decided)
		printf("    %llu allocation%s of use_on_oom MemPools outside use_mem_pool: the "
		       "allocator's fallback chose the pool; the replay chose again and served "
		       "%llu request%s of the default pool from such a pool\n",
		       (unsigned long long)r->use_on_oom_decided,
		       r->use_on_oom_decided == 1 ? "" : "s",
		       (unsigned long long)r->stats.use_on_oom_fallbacks,
		       r->stats.use_on_oom_fallbacks == 1 ? "" : "s");
	if (r->use_on_oom_kept)
		printf("    %llu allocation%s the trace puts in a pool given as use_on_oom "
		       "replayed "
		       "there: the trace cannot say which the allocator's fallback placed (memsnap "
		       "record marks them), so another limit does not move them\n",
		       (unsigned long long)r->use_on_oom_kept, r->use_on_oom_kept == 1 ? "" : "s");
}

static void text_neighbour(const struct ms_model_neighbour *n, char *buf, size_t cap)
{
	char b[32];

	if (!n->present) {
		snprintf(buf, cap, "the segment's edge");
		return;
	}
	if (n->state == MS_BLOCK_INACTIVE || !n->mapped)
		snprintf(buf, cap, "%s %s", ms_model_neighbour_state(n),
		         ms_format_size(b, sizeof(b), n->size));
	else if (n->index == MS_REPLAY_BEFORE_TRACE)
		snprintf(buf, cap, "%s %s (from before the trace)", ms_model_neighbour_state(n),
		         ms_format_size(b, sizeof(b), n->size));
	else
		snprintf(buf, cap, "%s %s (event %llu)", ms_model_neighbour_state(n),
		         ms_format_size(b, sizeof(b), n->size), (unsigned long long)n->index);
}

/* "outside_pytorch_measured": null where the recorder measured nothing (cudaMemGetInfo marks) */
static void text_outside_measured(const struct ms_replay_result *r)
{
	const struct ms_outside_point *hi = ms_replay_outside_highest(r), *a, *z;
	char b1[32], b2[32], b3[32];

	if (!hi)
		return;
	a = &r->outside_points[0];
	z = &r->outside_points[r->n_outside_points - 1];
	printf("  outside PyTorch, measured: %s at event %llu, the most %s (event %llu), %s at "
	       "the last of %zu cudaMemGetInfo marks (event %llu): the device's total less its "
	       "free bytes and PyTorch's reserved (the CUDA context, NCCL's buffers, other "
	       "libraries and processes)\n",
	       ms_format_size(b1, sizeof(b1), a->bytes), (unsigned long long)a->index,
	       ms_format_size(b2, sizeof(b2), hi->bytes), (unsigned long long)hi->index,
	       ms_format_size(b3, sizeof(b3), z->bytes), r->n_outside_points,
	       (unsigned long long)z->index);
}

/* The device's memory, and where that figure comes from: a guess is never shown as fact. */
static void text_device(const struct ms_replay_result *r, const struct ms_limit_range *lim)
{
	char b1[32], b2[32], b3[32];

	if (r->device_memory == UINT64_MAX)
		printf("  device memory:  unbounded (the trace does not record the device's size; "
		       "--device-memory sets it)");
	else if (r->device_memory_source == MS_DEVMEM_FROM_OOM)
		printf("  device memory:  %s, what PyTorch could use at the recorded OOM (%s "
		       "reserved "
		       "+ %s free on the device); the device's size is not recorded: at least "
		       "that, "
		       "the rest held outside PyTorch (other libraries, processes, the CUDA "
		       "context)",
		       ms_format_size(b1, sizeof(b1), r->device_memory),
		       ms_format_size(b2, sizeof(b2), r->oom_reserved),
		       ms_format_size(b3, sizeof(b3), r->oom_device_free));
	else
		printf("  device memory:  %s (%s)",
		       ms_format_size(b1, sizeof(b1), r->device_memory),
		       r->device_memory_source == MS_DEVMEM_GIVEN  ? "--device-memory"
		       : r->device_memory_source == MS_DEVMEM_REAL ? "this GPU"
		                                                   : "recorded");
	if (r->device_memory_source == MS_DEVMEM_GIVEN && r->device_memory_recorded &&
	    r->device_memory_recorded != r->device_memory)
		printf("; the trace recorded a device of %s: the memory it held outside PyTorch "
		       "is kept as it was",
		       ms_format_size(b2, sizeof(b2), r->device_memory_recorded));
	putchar('\n');
	if (r->limit && lim && lim->inferred)
		printf("  limit:          %s, inferred: the recorded OOM had room on the device, "
		       "so the "
		       "job ran under a per-process limit, of %s to %s\n",
		       ms_format_size(b1, sizeof(b1), r->limit),
		       ms_format_size(b2, sizeof(b2), lim->lo),
		       ms_format_size(b3, sizeof(b3), lim->hi));
	else if (r->limit && r->limit_marks)
		printf("  limit:          %s, set by the job (torch.cuda.set_per_process_memory_"
		       "fraction%s)\n",
		       ms_format_size(b1, sizeof(b1), r->limit),
		       r->limit_marks > 1 ? ", the last of several calls" : "");
	else if (r->limit)
		printf("  limit:          %s\n", ms_format_size(b1, sizeof(b1), r->limit));
	if (r->outside_at_oom)
		printf("  outside PyTorch: %s of the device at the recorded OOM (its size less "
		       "PyTorch's reserved and the free bytes)%s\n",
		       ms_format_size(b1, sizeof(b1), r->outside_at_oom),
		       r->outside_unseen ? "; replayed as held from the start" : "");
}

/* What was replayed, what was not, the memory outside PyTorch and the device. */
static void print_head(const char *path, const struct ms_replay_result *r,
                       const struct ms_limit_range *lim, int narrowed)
{
	char b3[32];

	printf("%s: replayed %llu of %llu events (backend %s, alloc conf %s%s%s)\n", path,
	       (unsigned long long)r->events_replayed,
	       (unsigned long long)(r->events_total - r->events_other_devices -
	                            r->events_other_marks),
	       r->backend, r->settings_recorded ? "\"" : "",
	       r->settings_recorded ? r->alloc_conf
	       : r->expandable_seen ? "not recorded: expandable_segments:True, as the trace's "
	                              "segments show, the rest the defaults"
	                            : "not recorded: the defaults",
	       r->settings_recorded ? "\"" : "");
	if (ms_replay_reuse_as_recorded(r))
		printf("  as recorded:    graph_capture_record_stream_reuse (a capture's frees "
		       "that "
		       "wait on other streams complete where the trace has them: the trace cannot "
		       "say when the other setting would)\n");
	if (r->events_other_devices) /* their snapshot marks with them, as info counts them */
		printf("  other devices:  %llu events, %s\n",
		       (unsigned long long)(r->events_other_devices + r->events_other_marks),
		       narrowed ? "not replayed (--device)" : "replayed on their own");
	if (r->events_external && !r->external_peak)
		printf("  not replayed:   %llu event%s of raw CUDA calls, each PyTorch's own "
		       "segment "
		       "calls\n",
		       (unsigned long long)r->events_external, r->events_external == 1 ? "" : "s");
	else if (r->events_external)
		printf("  not replayed:   %llu event%s of raw CUDA calls; outside PyTorch's "
		       "allocator at the most %s (event %llu)\n",
		       (unsigned long long)r->events_external, r->events_external == 1 ? "" : "s",
		       ms_format_size(b3, sizeof(b3), r->external_peak),
		       (unsigned long long)r->external_peak_index);
	text_outside_measured(r);
	text_device(r, lim);
}

/* A mid-run start or a cut, the peaks, the segments, and the recorded OOMs. */
static void print_figures(const struct ms_replay_result *r, int as_recorded)
{
	size_t diverges = ms_replay_first_divergence(r);
	char b1[32], b2[32], b3[32];

	if (r->placed)
		printf("  mid-run:        %llu block%s live before the trace's first event; "
		       "the end state cannot place them, so the replay allocated them first (%s "
		       "reserved then); the peaks below are from its first event on, the job's "
		       "may have been higher before\n",
		       (unsigned long long)r->initial_live_blocks,
		       r->initial_live_blocks == 1 ? " was" : "s were",
		       ms_format_size(b1, sizeof(b1), r->initial_reserved));
	else if (r->rebuilt)
		printf("  mid-run:        the trace starts with %llu segments (%s) and %llu blocks "
		       "live, "
		       "rebuilt from its end state; the peaks below are from its first event on, "
		       "the job's may have been higher before\n",
		       (unsigned long long)r->initial_segments,
		       ms_format_size(b1, sizeof(b1), r->initial_reserved),
		       (unsigned long long)r->initial_live_blocks);
	if (r->cut_short)
		printf("  cut short:      the trace ends early (its file is cut, or its recording "
		       "was killed): the peaks below are of the part it holds, the job's may have "
		       "been higher after\n");
	printf("  peaks:          %sreserved %s, allocated %s, requested %s\n",
	       r->rebuilt || r->cut_short ? "at least: " : "",
	       ms_format_size(b1, sizeof(b1), (uint64_t)r->stats.reserved_bytes[0].peak),
	       ms_format_size(b2, sizeof(b2), (uint64_t)r->stats.allocated_bytes[0].peak),
	       ms_format_size(b3, sizeof(b3), (uint64_t)r->stats.requested_bytes[0].peak));
	/* PyTorch counts an expandable segment's mappings as device allocations, not segments */
	if (r->stats.num_device_alloc && !r->stats.segment[0].peak)
		printf("  segments:       %llu device allocations (expandable segments' mappings: "
		       "PyTorch counts no segment for them), %llu frees; %llu retr%s, %llu "
		       "empty_cache call%s",
		       (unsigned long long)r->stats.num_device_alloc,
		       (unsigned long long)r->stats.num_device_free,
		       (unsigned long long)r->stats.num_alloc_retries,
		       r->stats.num_alloc_retries == 1 ? "y" : "ies",
		       (unsigned long long)r->empty_cache_calls,
		       r->empty_cache_calls == 1 ? "" : "s");
	else
		printf("  segments:       %llu cudaMalloc, %llu cudaFree, peak %lld at once; %llu "
		       "retr%s, %llu empty_cache call%s",
		       (unsigned long long)r->stats.num_device_alloc,
		       (unsigned long long)r->stats.num_device_free,
		       (long long)r->stats.segment[0].peak,
		       (unsigned long long)r->stats.num_alloc_retries,
		       r->stats.num_alloc_retries == 1 ? "y" : "ies",
		       (unsigned long long)r->empty_cache_calls,
		       r->empty_cache_calls == 1 ? "" : "s");
	if (r->empty_cache_marked)
		printf(" (%llu marked in the trace)", (unsigned long long)r->empty_cache_marked);
	if (r->empty_cache_before_alloc)
		printf("; %llu of the calls told from segments given back just before an "
		       "allocation that fits without them: an empty_cache() of the program, or the "
		       "allocator's retry under a limit the trace does not record (a snapshot "
		       "cannot "
		       "tell; memsnap record marks each call)",
		       (unsigned long long)r->empty_cache_before_alloc);
	if (r->empty_cache_refused)
		printf("; %llu of the calls freed no segment: the trace records a segment freed "
		       "that stayed (freed again before it was allocated again, or no cudaFree "
		       "seen "
		       "during a CUDA graph capture), as when the driver refuses cudaFree during a "
		       "capture and the call raises",
		       (unsigned long long)r->empty_cache_refused);
	printf("\n");
	/* under the recorded settings the replay should be what PyTorch did: say where it is not */
	if (as_recorded && diverges != SIZE_MAX && !strcmp(r->backend, "sim") &&
	    !r->other_allocator[0]) /* another allocator's: said already, nothing to verify */
		printf("  differs:        from the trace's segment event #%zu on (of %zu), the "
		       "replay is not what PyTorch did: memsnap verify shows where, and what the "
		       "trace cannot tell\n",
		       diverges, r->n_recorded);
	print_pools(r);
	if (r->recorded_ooms)
		printf("  recorded OOMs:  %llu, reproduced %llu\n",
		       (unsigned long long)r->recorded_ooms,
		       (unsigned long long)r->reproduced_ooms);
	if (r->missed_ooms_went_on)
		printf("  served:         %llu recorded OOM%s the replay served, after which the "
		       "job "
		       "went on (it caught the error): from there the replay follows what the job "
		       "did without that memory, not what it would have done with it\n",
		       (unsigned long long)r->missed_ooms_went_on,
		       r->missed_ooms_went_on == 1 ? "" : "s");
	if (r->ended_by_oom && r->has_oom && r->first_oom.index != r->end_oom_index)
		printf("  ended:          at event %llu, an OOM the recording did not have (%s "
		       "requested); the OOM below is the first, at event %llu\n",
		       (unsigned long long)r->end_oom_index,
		       ms_format_size(b1, sizeof(b1), r->end_oom_requested),
		       (unsigned long long)r->first_oom.index);
}

/* The first OOM: PyTorch's message, what it does not say, where it did not fit, who held it. */
static void print_oom(const struct ms_replay_result *r, uint32_t frames,
                      const struct ms_oom_verdict *ov, const struct ms_death *death)
{
	char b1[32], b2[32], b3[32];

	const struct ms_model_oom *o = &r->first_oom.o;
	char msg[1024];
	if (r->backend_message[0]) {
		printf("\nOOM at event %llu%s: %s requested\n",
		       (unsigned long long)r->first_oom.index,
		       r->first_oom.recorded ? " (recorded there too)"
		                             : " (the recorded run succeeded here)",
		       ms_format_size(b1, sizeof(b1), o->requested));
		printf("  PyTorch said: %s\n", r->backend_message);
		return;
	}
	ms_replay_oom_message(r, msg, sizeof(msg));
	printf("\nOOM at event %llu%s: %s requested (%s rounded, a %s segment needed)\n",
	       (unsigned long long)r->first_oom.index,
	       r->first_oom.recorded ? " (recorded there too)"
	                             : " (the recorded run succeeded here)",
	       ms_format_size(b1, sizeof(b1), o->requested),
	       ms_format_size(b2, sizeof(b2), o->rounded),
	       ms_format_size(b3, sizeof(b3), o->alloc_size));
	printf("  PyTorch would say: %s\n", msg);
	printf("  what it does not say: %s free inside reserved segments, largest free "
	       "block %s, %s in inactive split blocks\n",
	       ms_format_size(b1, sizeof(b1), o->free_in_reserved),
	       ms_format_size(b2, sizeof(b2), o->largest_free),
	       ms_format_size(b3, sizeof(b3), o->inactive_split));
	if (ov)
		ms_verdict_print_oom_cause(ov, death, o->reserved, "  ");
	if (o->retry_skipped)
		printf("  why the cache stayed: a use_mem_pool or a CUDA graph capture was "
		       "open, and PyTorch gives no cached segment back then (%s of them "
		       "were "
		       "free)\n",
		       ms_format_size(b1, sizeof(b1), o->releasable));
	printf("  where it did not fit: the largest free blocks of the %s pool on stream "
	       "0x%llx:\n",
	       o->rounded <= (1u << 20) ? "small" : "large", (unsigned long long)o->stream);
	if (!r->first_oom.n_holes)
		printf("      (none)\n");
	for (size_t i = 0; i < r->first_oom.n_holes; i++) {
		const struct ms_model_hole *f = &r->first_oom.holes[i];
		char nb[96], na[96];
		text_neighbour(&f->before, nb, sizeof(nb));
		text_neighbour(&f->after, na, sizeof(na));
		if (!f->before.present && !f->after.present)
			printf("    %12s at 0x%llx, a whole segment\n",
			       ms_format_size(b1, sizeof(b1), f->size),
			       (unsigned long long)f->addr);
		else
			printf("    %12s at 0x%llx, between %s and %s\n",
			       ms_format_size(b1, sizeof(b1), f->size), (unsigned long long)f->addr,
			       nb, na);
	}
	printf("  who holds the memory (the largest live allocations)%s\n",
	       r->first_oom.n_holders ? ":" : ": none");
	for (size_t i = 0; i < r->first_oom.n_holders; i++) {
		const struct ms_replay_holder *w = &r->first_oom.holders[i];
		char when[32];
		if (w->index == MS_REPLAY_BEFORE_TRACE)
			snprintf(when, sizeof(when), "before the trace");
		else
			snprintf(when, sizeof(when), "event %-8llu", (unsigned long long)w->index);
		printf("    %12s  %s %s\n", ms_format_size(b1, sizeof(b1), w->size), when, w->site);
		if (r->holder_syms)
			ms_site_print_frames(r->holder_syms, w->stack, frames, 35);
	}
}

void ms_replay_print(const char *label, const struct ms_replay_result *r,
                     const struct ms_limit_range *lim, uint32_t frames, int narrowed,
                     int as_recorded, const struct ms_oom_verdict *ov, const struct ms_death *death)
{
	print_head(label, r, lim, narrowed);
	print_figures(r, as_recorded);
	if (r->has_oom)
		print_oom(r, frames, ov, death);
}

void ms_replay_print_cuda(struct ms_cuda_dev *dev)
{
	struct ms_cuda_timing t[MS_CUDA_N_CALLS];
	size_t n = ms_cuda_timings(dev, t, MS_CUDA_N_CALLS);
	uint64_t fr, total;
	char b1[32], b2[32], b3[32];
	double sum = 0;

	ms_cuda_mem_info(dev, &fr, &total);
	printf("\ndevice: %s, %s total, %s free at the end, CUDA context %s\n", ms_cuda_name(dev),
	       ms_format_size(b1, sizeof(b1), total), ms_format_size(b2, sizeof(b2), fr),
	       ms_format_size(b3, sizeof(b3), ms_cuda_context_bytes(dev)));
	if (ms_cuda_oom_info(dev, &fr, &total))
		printf("  the device refused memory first with %s free of %s (cudaMemGetInfo "
		       "then)\n",
		       ms_format_size(b1, sizeof(b1), fr), ms_format_size(b2, sizeof(b2), total));
	printf("  driver calls          count      p50 us      p99 us      max us    total ms\n");
	for (size_t i = 0; i < n; i++) {
		printf("  %-20s %6llu %11.1f %11.1f %11.1f %11.2f\n", t[i].call,
		       (unsigned long long)t[i].n, t[i].p50_us, t[i].p99_us, t[i].max_us,
		       t[i].total_ms);
		sum += t[i].total_ms;
	}
	printf("  %-20s %6s %11s %11s %11s %11.2f\n", "all", "", "", "", "", sum);
}
