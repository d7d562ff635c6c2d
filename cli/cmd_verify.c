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
#include "json/verify.h"
#include "replay/replay.h"
#include "replay/verify.h"

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

static void show(const char *what, const struct ms_seg_event *a, size_t n, size_t at)
{
	size_t from = at > 3 ? at - 3 : 0;

	printf("  %s:\n", what);
	for (size_t i = from; i < n && i < at + 4; i++)
		printf("    %s #%zu  event %-8llu %-14s %llu\n", i == at ? ">" : " ", i,
		       (unsigned long long)a[i].index, ms_action_name(a[i].action),
		       (unsigned long long)a[i].size);
}

/* A divergence: where the segment events first differ, what the trace cannot tell, and each
 * figure that differs. */
static void print_divergence(const struct ms_replay_cli *c, const char *path, const char *label,
                             const struct ms_replay_result *rp, const struct ms_verify *v)
{
	const char *ref_name = c->torch ? "model" : "recorded";
	const char *got_name = c->torch ? "PyTorch" : "replayed";
	size_t i = v->first_divergence, n_ref = v->n_ref;
	uint64_t rec_peak = v->ref_peak;
	int end_same = v->end_same;
	const struct ms_seg_event *ref = v->ref;

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
		printf("  first different segment event: #%zu (of %zu %s, %zu %s)\n", i, n_ref,
		       ref_name, rp->n_produced, got_name);
		show(ref_name, ref, n_ref, i);
		show(got_name, rp->produced, rp->n_produced, i);
		if (!c->torch)
			printf("  (a recorded segment event is numbered by its own entry, "
			       "a "
			       "replayed one by the allocation or free that made it: "
			       "PyTorch "
			       "records a segment_alloc just before its alloc)\n");
	}
	if (!c->torch && rp->allocs_pool_unknown && !rp->allocs_private &&
	    !rp->end_private_segments)
		printf("  the trace does not say which memory pool its allocations used "
		       "(PyTorch 2.11 and older): replayed in the default pools, they "
		       "differ "
		       "from what PyTorch did if the job had private pools (CUDA graphs, "
		       "MemPools) whose segments were all given back before the "
		       "snapshot\n");
	/* a snapshot with private pools cannot say how they were made or used (memsnap's
	 * recorder marks it) */
	if (!c->torch && (rp->allocs_private || rp->end_private_segments) &&
	    ms_file_is_snapshot(path) > 0 && !rp->use_on_oom_pools && !rp->no_split_pools &&
	    !rp->limit_marks)
		printf("  the trace has private pools and does not say how they were made "
		       "or "
		       "used (a snapshot): a MemPool made with no_split=True or "
		       "use_on_oom=True (--no-split-pools, --use-on-oom-pools say it), an "
		       "open use_mem_pool or a CUDA graph capture (memsnap record marks "
		       "them) change what PyTorch does\n");
	if (!c->torch && rp->misplaced_allocs)
		printf("  first allocation placed elsewhere than PyTorch placed it: event "
		       "%llu (recorded 0x%llx, replayed 0x%llx); %llu in all\n",
		       (unsigned long long)rp->first_misplaced_index,
		       (unsigned long long)rp->first_misplaced_recorded,
		       (unsigned long long)rp->first_misplaced_replayed,
		       (unsigned long long)rp->misplaced_allocs);
	if ((uint64_t)rp->stats.reserved_bytes[0].peak != rec_peak)
		printf("  reserved peak: %s %llu, %s %lld\n", ref_name,
		       (unsigned long long)rec_peak, got_name,
		       (long long)rp->stats.reserved_bytes[0].peak);
	if (c->torch &&
	    rp->stats.allocated_bytes[0].peak != c->out.model.stats.allocated_bytes[0].peak)
		printf("  allocated peak: model %lld, PyTorch %lld\n",
		       (long long)c->out.model.stats.allocated_bytes[0].peak,
		       (long long)rp->stats.allocated_bytes[0].peak);
	if (rp->reproduced_ooms != rp->recorded_ooms)
		printf("  OOMs: %llu recorded, %llu reproduced\n",
		       (unsigned long long)rp->recorded_ooms,
		       (unsigned long long)rp->reproduced_ooms);
	if (rp->ended_by_oom)
		printf("  the replay ran out of memory at event %llu, where the recorded "
		       "run did not\n",
		       (unsigned long long)rp->first_oom.index);
	if (!end_same)
		printf("  the segments at the end differ: the model has %zu, PyTorch's "
		       "snapshot %zu (sizes, allocated bytes and blocks compared)\n",
		       c->out.model.snap.n_segs, rp->n_end_segs);
}

/* One device of path: compared, reported (text on stdout, or *jout); an exit code. */
static int verify_one(struct ms_replay_cli *c, const char *path, uint32_t device, const char *label,
                      int json, cJSON **jout)
{
	struct ms_replay_result r;
	struct ms_limit_range lim;
	struct ms_verify v;

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
	ms_verify_compare(&r, c->torch ? &c->out.model : NULL, &v);
	size_t n_ref = v.n_ref;
	uint64_t rec_peak = v.ref_peak;
	int same = v.identical;
	if (json) {
		cJSON *o = ms_verify_json(path, device, &r, &v, &lim);
		if (!o)
			ms_die(MS_EXIT_ERROR, "out of memory");
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
		print_divergence(c, path, label, &r, &v);
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
