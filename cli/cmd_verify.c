/* memsnap verify TRACE: the model's segment events, peaks and OOMs against the recorded ones. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "parse/trace.h"
#include "common/alloc.h"
#include "replay/replay.h"

static const char *const usage[] = {
        "memsnap verify [--backend sim|cuda|torch] [--alloc-conf S] [--limit N | --memory-fraction "
        "F]",
        "               [--device-memory N] [--device D] [--json] <trace>",
        "",
        "Replay a trace with the recorded settings and compare what the model does with what",
        "PyTorch did: the sequence of segment events (action and size), the reserved peak and",
        "the OOMs. Prints the first divergence with the events around it. Exit 0 if identical,",
        "4 if not, 1 on error.",
        "",
        "--backend torch compares the model with PyTorch's own caching allocator instead, on",
        "a real GPU (see `memsnap help replay`): the same trace through both, their segment",
        "events, reserved and allocated peaks and OOMs.",
        NULL,
};

/* Reserved bytes over the recorded segment events: their peak. */
static uint64_t recorded_peak(const struct ms_replay_result *r)
{
	/* a mid-run trace starts with what was reserved before its first event */
	int64_t cur = (int64_t)r->initial_reserved, peak = cur;

	for (size_t i = 0; i < r->n_recorded; i++) {
		const struct ms_seg_event *e = &r->recorded[i];
		if (e->action == MS_ACT_SEGMENT_ALLOC || e->action == MS_ACT_SEGMENT_MAP)
			cur += (int64_t)e->size;
		else
			cur -= (int64_t)e->size;
		if (cur > peak)
			peak = cur;
	}
	return (uint64_t)peak;
}

static void show(const char *what, const struct ms_seg_event *a, size_t n, size_t at)
{
	size_t from = at > 3 ? at - 3 : 0;

	printf("  %s:\n", what);
	for (size_t i = from; i < n && i < at + 4; i++)
		printf("    %s #%zu  event %-8llu %-14s %llu\n", i == at ? ">" : " ", i,
		       (unsigned long long)a[i].index, ms_action_name(a[i].action),
		       (unsigned long long)a[i].size);
}

/* Order segments by (total, allocated, blocks, allocated blocks) to compare them as multisets. */
static int cmp_end(const void *a, const void *b)
{
	const struct ms_end_segment *x = a, *y = b;

	if (x->total_size != y->total_size)
		return x->total_size < y->total_size ? -1 : 1;
	if (x->allocated_size != y->allocated_size)
		return x->allocated_size < y->allocated_size ? -1 : 1;
	if (x->n_blocks != y->n_blocks)
		return x->n_blocks < y->n_blocks ? -1 : 1;
	return x->n_allocated < y->n_allocated ? -1 : x->n_allocated > y->n_allocated;
}

/* The model's segments at the end (its snapshot) against PyTorch's, addresses aside. */
static int same_end_state(const struct ms_replay_snap *snap, const struct ms_replay_result *r)
{
	struct ms_end_segment *m;
	const struct ms_block *b = snap->blocks;
	int same;

	if (!snap->taken || snap->n_segs != r->n_end_segs)
		return 0;
	if (!snap->n_segs)
		return 1;
	m = ms_calloc(snap->n_segs, sizeof(*m));
	struct ms_end_segment *t = ms_calloc(snap->n_segs, sizeof(*t));
	if (!m || !t) {
		ms_free(m);
		ms_free(t);
		return 0;
	}
	for (size_t i = 0; i < snap->n_segs; i++) {
		const struct ms_segment *s = &snap->segs[i];
		m[i].total_size = s->total_size;
		m[i].allocated_size = s->allocated_size;
		m[i].n_blocks = s->n_blocks;
		for (uint32_t k = 0; k < s->n_blocks; k++)
			m[i].n_allocated += b[k].state == MS_BLOCK_ACTIVE_ALLOCATED;
		b += s->n_blocks;
	}
	memcpy(t, r->end_segs, snap->n_segs * sizeof(*t));
	qsort(m, snap->n_segs, sizeof(*m), cmp_end);
	qsort(t, snap->n_segs, sizeof(*t), cmp_end);
	same = 1;
	for (size_t i = 0; i < snap->n_segs && same; i++)
		same = m[i].total_size == t[i].total_size &&
		       m[i].allocated_size == t[i].allocated_size &&
		       m[i].n_blocks == t[i].n_blocks && m[i].n_allocated == t[i].n_allocated;
	ms_free(m);
	ms_free(t);
	return same;
}

/* One device of path: compared, reported (text on stdout, or *jout); an exit code. */
static int verify_one(struct ms_replay_cli *c, const char *path, uint32_t device, const char *label,
                      int json, cJSON **jout)
{
	struct ms_replay_result r;
	struct ms_limit_range lim;
	size_t i;
	uint64_t rec_peak;
	int same;

	if (ms_replay_cli_run_reported(c, path, &r, &lim))
		return MS_EXIT_ERROR;
	if (r.other_allocator[0]) {
		ms_error("%s: a %s snapshot: memsnap models PyTorch's CUDA caching allocator only, "
		         "so "
		         "there is nothing to verify it against (`memsnap replay` shows what that "
		         "allocator would do with its requests)",
		         label, r.other_allocator);
		ms_replay_result_release(&r);
		return MS_EXIT_ERROR;
	}
	/* sim: the model against the recording; torch: PyTorch's allocator against the model */
	const struct ms_seg_event *ref = c->torch ? c->out.model.produced : r.recorded;
	size_t n_ref = c->torch ? c->out.model.n_produced : r.n_recorded;
	const char *ref_name = c->torch ? "model" : "recorded";
	const char *got_name = c->torch ? "PyTorch" : "replayed";
	i = ms_seg_events_first_diff(r.produced, r.n_produced, ref, n_ref);
	rec_peak =
	        c->torch ? (uint64_t)c->out.model.stats.reserved_bytes[0].peak : recorded_peak(&r);
	same = i == SIZE_MAX && (uint64_t)r.stats.reserved_bytes[0].peak == rec_peak &&
	       r.reproduced_ooms == r.recorded_ooms && !r.ended_by_oom;
	int end_same = 1;
	if (c->torch) {
		end_same = same_end_state(&c->out.model.snap, &r);
		same = same && end_same && r.ended_by_oom == c->out.model.ended_by_oom &&
		       (uint64_t)r.stats.allocated_bytes[0].peak ==
		               (uint64_t)c->out.model.stats.allocated_bytes[0].peak;
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "trace", path);
		cJSON_AddNumberToObject(o, "device", device);
		cJSON_AddStringToObject(o, "backend", r.backend);
		cJSON_AddBoolToObject(o, "identical", same);
		ms_json_u64(o, c->torch ? "segment_events_model" : "segment_events_recorded",
		            n_ref);
		ms_json_u64(o, "segment_events_replayed", r.n_produced);
		if (i != SIZE_MAX)
			ms_json_u64(o, "first_divergence", i);
		else
			cJSON_AddNullToObject(o, "first_divergence");
		ms_json_u64(o, "allocations_pool_unknown", r.allocs_pool_unknown);
		if (!c->torch && r.misplaced_allocs)
			ms_json_u64(o, "first_misplaced_allocation", r.first_misplaced_index);
		else
			cJSON_AddNullToObject(o, "first_misplaced_allocation");
		ms_json_u64(o, c->torch ? "peak_reserved_model" : "peak_reserved_recorded",
		            rec_peak);
		ms_json_u64(o, "peak_reserved_replayed", (uint64_t)r.stats.reserved_bytes[0].peak);
		ms_json_u64(o, "peak_allocated_replayed",
		            (uint64_t)r.stats.allocated_bytes[0].peak);
		ms_json_u64(o, "peak_requested_replayed",
		            (uint64_t)r.stats.requested_bytes[0].peak);
		ms_json_u64(o, "recorded_ooms", r.recorded_ooms);
		ms_json_u64(o, "reproduced_ooms", r.reproduced_ooms);
		cJSON_AddBoolToObject(o, "ended_by_oom", r.ended_by_oom);
		/* a mid-run trace: what happened before its first event is unknown */
		cJSON_AddBoolToObject(o, "starts_mid_run", r.rebuilt);
		cJSON_AddBoolToObject(o, "trace_cut_short", r.cut_short);
		cJSON_AddStringToObject(o, "device_memory_source",
		                        ms_devmem_source_name(r.device_memory_source));
		if (lim.inferred) {
			cJSON *x = cJSON_AddObjectToObject(o, "limit_inferred");
			ms_json_u64(x, "low_bytes", lim.lo);
			ms_json_u64(x, "high_bytes", lim.hi);
		} else {
			cJSON_AddNullToObject(o, "limit_inferred");
		}
		cJSON_AddBoolToObject(o, "peaks_are_lower_bounds", r.rebuilt || r.cut_short);
		if (c->torch)
			cJSON_AddBoolToObject(o, "end_segments_same", end_same);
		*jout = o;
	} else if (same && !n_ref) {
		/* nothing to compare is not "identical": say what agrees and what is unknown */
		char b1[32];
		printf("%s: agrees, with no segment event to compare: none recorded and none "
		       "replayed over %llu events%s; reserved %s%s throughout, %llu of %llu "
		       "recorded "
		       "OOMs reproduced\n",
		       label, (unsigned long long)r.events_replayed,
		       r.rebuilt ? ", all inside segments that existed before the trace" : "",
		       r.rebuilt ? "" : "at most ", ms_format_size(b1, sizeof(b1), rec_peak),
		       (unsigned long long)r.reproduced_ooms, (unsigned long long)r.recorded_ooms);
	} else if (same) {
		char b1[32];
		printf("%s: identical%s: %zu segment events, reserved peak %s%s, %llu of %llu "
		       "recorded OOMs reproduced%s%s\n",
		       label, c->torch ? " (PyTorch's allocator and the model)" : "", n_ref,
		       r.rebuilt ? "at least " : "", ms_format_size(b1, sizeof(b1), rec_peak),
		       (unsigned long long)r.reproduced_ooms, (unsigned long long)r.recorded_ooms,
		       r.rebuilt ? " (from the first event on: the trace starts mid-run)" : "",
		       r.cut_short ? " (as far as the file goes: it is cut short)" : "");
	} else {
		printf("%s: DIVERGES%s\n", label,
		       c->torch ? " (PyTorch's allocator against the model)" : "");
		if (c->o.alloc_conf && !c->torch)
			printf("  (replayed under --alloc-conf \"%s\", against a recording made "
			       "under "
			       "its own settings: where they differ, so may the segments, which is "
			       "what the settings change, not the model's error; memsnap whatif "
			       "compares settings)\n",
			       c->o.alloc_conf);
		if (i != SIZE_MAX) {
			printf("  first different segment event: #%zu (of %zu %s, %zu %s)\n", i,
			       n_ref, ref_name, r.n_produced, got_name);
			show(ref_name, ref, n_ref, i);
			show(got_name, r.produced, r.n_produced, i);
			if (!c->torch)
				printf("  (a recorded segment event is numbered by its own entry, "
				       "a "
				       "replayed one by the allocation or free that made it: "
				       "PyTorch "
				       "records a segment_alloc just before its alloc)\n");
		}
		if (!c->torch && r.allocs_pool_unknown && !r.allocs_private &&
		    !r.end_private_segments)
			printf("  the trace does not say which memory pool its allocations used "
			       "(PyTorch 2.11 and older): replayed in the default pools, they "
			       "differ "
			       "from what PyTorch did if the job had private pools (CUDA graphs, "
			       "MemPools) whose segments were all given back before the "
			       "snapshot\n");
		/* a snapshot with private pools cannot say how they were made or used (memsnap's
		 * recorder marks it) */
		if (!c->torch && (r.allocs_private || r.end_private_segments) &&
		    ms_file_is_snapshot(path) > 0 && !r.use_on_oom_pools && !r.no_split_pools &&
		    !r.limit_marks)
			printf("  the trace has private pools and does not say how they were made "
			       "or "
			       "used (a snapshot): a MemPool made with no_split=True or "
			       "use_on_oom=True (--no-split-pools, --use-on-oom-pools say it), an "
			       "open use_mem_pool or a CUDA graph capture (memsnap record marks "
			       "them) change what PyTorch does\n");
		if (!c->torch && r.misplaced_allocs)
			printf("  first allocation placed elsewhere than PyTorch placed it: event "
			       "%llu (recorded 0x%llx, replayed 0x%llx); %llu in all\n",
			       (unsigned long long)r.first_misplaced_index,
			       (unsigned long long)r.first_misplaced_recorded,
			       (unsigned long long)r.first_misplaced_replayed,
			       (unsigned long long)r.misplaced_allocs);
		if ((uint64_t)r.stats.reserved_bytes[0].peak != rec_peak)
			printf("  reserved peak: %s %llu, %s %lld\n", ref_name,
			       (unsigned long long)rec_peak, got_name,
			       (long long)r.stats.reserved_bytes[0].peak);
		if (c->torch &&
		    r.stats.allocated_bytes[0].peak != c->out.model.stats.allocated_bytes[0].peak)
			printf("  allocated peak: model %lld, PyTorch %lld\n",
			       (long long)c->out.model.stats.allocated_bytes[0].peak,
			       (long long)r.stats.allocated_bytes[0].peak);
		if (r.reproduced_ooms != r.recorded_ooms)
			printf("  OOMs: %llu recorded, %llu reproduced\n",
			       (unsigned long long)r.recorded_ooms,
			       (unsigned long long)r.reproduced_ooms);
		if (r.ended_by_oom)
			printf("  the replay ran out of memory at event %llu, where the recorded "
			       "run did not\n",
			       (unsigned long long)r.first_oom.index);
		if (!end_same)
			printf("  the segments at the end differ: the model has %zu, PyTorch's "
			       "snapshot %zu (sizes, allocated bytes and blocks compared)\n",
			       c->out.model.snap.n_segs, r.n_end_segs);
	}
	ms_replay_result_release(&r);
	return same ? MS_EXIT_OK : MS_EXIT_DIVERGED;
}

int cmd_verify(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0, rc = MS_EXIT_OK;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX];
	struct ms_replay_opts base;
	uint32_t *devs;
	size_t nd;
	struct ms_json_devices jd;

	ms_replay_cli_init(&c, opts, &json);
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	c.torch_ok = 1;
	c.foreign_refused = 1;
	ms_replay_cli_check(&c, opts, usage);
	if (c.torch) { /* the model's state at the end, against PyTorch's own snapshot */
		c.o.snap = 1;
		c.o.snap_index = UINT64_MAX;
	}
	if (ms_replay_cli_devices(&c, argv[0], "verify", &devs, &nd))
		return MS_EXIT_ERROR;
	ms_json_devices_begin(&jd, argv[0], json ? nd : 0);
	base = c.o;
	for (size_t i = 0; i < nd; i++) {
		char label[MS_LABEL_MAX];
		cJSON *o = NULL;
		int x;
		c.o = base; /* an inferred limit or a rebuilt state belongs to one device */
		c.o.device = devs[i];
		x = verify_one(&c, argv[0], devs[i],
		               ms_replay_cli_label(argv[0], devs[i], nd, label, sizeof(label)),
		               json, &o);
		ms_replay_cli_release(&c);
		if (x == MS_EXIT_ERROR) {
			rc = x;
			break;
		}
		if (x != MS_EXIT_OK)
			rc = x;
		ms_json_devices_add(&jd, devs[i], o);
	}
	ms_json_devices_end(&jd, rc != MS_EXIT_ERROR, "identical", rc == MS_EXIT_OK);
	ms_free(devs);
	return rc;
}
