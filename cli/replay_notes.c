/* What a replay command says on stderr about its replay (replay_opts.h): the notes the replay
 * returns as data, and what its result and the options given ask to be said. */
#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "parse/trace.h"

/* What the replay decided, on stderr. */
void ms_replay_cli_say_notes(const struct ms_replay_cli *c, const char *path)
{
	char b1[32], b2[32], b3[32];

	for (size_t i = 0; i < c->out.n_notes; i++) {
		const struct ms_replay_note *n = &c->out.notes[i];
		/* a limit that reproduces nothing is said even by a replay made only to choose a
		   device */
		if (c->quiet_notes && n->kind != MS_REPLAY_NOTE_NO_LIMIT)
			continue;
		switch (n->kind) {
		case MS_REPLAY_NOTE_NO_SEGMENTS:
			ms_warning("%s: %llu frees of blocks allocated before the trace began, and "
			           "no end-state segments to rebuild them from: the replay starts "
			           "from an empty allocator",
			           path, (unsigned long long)n->n);
			break;
		case MS_REPLAY_NOTE_NOT_REBUILT:
			ms_warning("%s: the trace may start mid-run and %s; replaying from an "
			           "empty allocator",
			           path, n->why);
			break;
		case MS_REPLAY_NOTE_MISMATCH:
			ms_warning(
			        "%s: the end-state segments do not fit the recorded events (%llu "
			        "of them did not): replaying from an empty allocator; what came "
			        "before the trace, if anything, is unknown",
			        path, (unsigned long long)n->n);
			break;
		case MS_REPLAY_NOTE_REBUILT:
			snprintf(b1, sizeof(b1), ", %llu frees", (unsigned long long)n->n);
			ms_note("%s starts mid-run (%zu segments, %llu blocks live before its "
			        "first event%s%s%s): the state there was rebuilt from the "
			        "end-state "
			        "segments; peaks before it are unknown",
			        path, n->segments, (unsigned long long)n->blocks, n->n ? b1 : "",
			        n->n ? " of blocks it never allocated" : "",
			        n->inconsistent ? "; some recorded events did not fit it" : "");
			break;
		case MS_REPLAY_NOTE_PLACED:
			ms_note("%s starts mid-run: %llu block%s (%s) were live before its first "
			        "event, and %s: the replay allocates them first, in the order of "
			        "their addresses (where they lay, and the peaks before the trace, "
			        "are unknown)",
			        path, (unsigned long long)n->blocks, n->blocks == 1 ? "" : "s",
			        ms_format_size(b1, sizeof(b1), n->bytes),
			        n->inconsistent ? "its end-state segments do not fit its events"
			                        : "it has no end-state segments to rebuild them "
			                          "from");
			break;
		case MS_REPLAY_NOTE_NOT_PLACED:
			ms_warning("%s starts mid-run, but %s (the recorded limit or the "
			           "device's size from its OOM): the trace does not agree with "
			           "itself; replaying from an empty allocator",
			           path, n->why);
			break;
		case MS_REPLAY_NOTE_LIMIT_INFERRED:
			ms_note("%s recorded %llu OOM%s while the device had room: the job ran "
			        "under a per-process limit; inferred between %s and %s (%llu to "
			        "%llu bytes), replayed with %s",
			        path, (unsigned long long)n->n, n->n == 1 ? "" : "s",
			        ms_format_size(b1, sizeof(b1), n->lim.lo),
			        ms_format_size(b2, sizeof(b2), n->lim.hi),
			        (unsigned long long)n->lim.lo, (unsigned long long)n->lim.hi,
			        ms_format_size(b3, sizeof(b3), n->lim.used));
			if (n->lim.raised)
				ms_note("%s: the limit is at least %s (%llu bytes): the trace's "
				        "segments held that much at once; lower limits reproduce "
				        "the "
				        "OOMs only by giving back cached memory the job kept",
				        path, ms_format_size(b1, sizeof(b1), n->lim.held),
				        (unsigned long long)n->lim.held);
			break;
		case MS_REPLAY_NOTE_DEVICE_FULL:
			ms_note("%s: the recorded OOM found the device itself full (%s free, below "
			        "the %s "
			        "segment the request needed): no per-process limit is needed to "
			        "explain "
			        "it, none is inferred; what PyTorch could use was what it held "
			        "plus what "
			        "was free (the replay does not reproduce the OOM exactly)",
			        path, ms_format_size(b1, sizeof(b1), n->bytes),
			        ms_format_size(b2, sizeof(b2), n->blocks));
			break;
		case MS_REPLAY_NOTE_NO_LIMIT:
			ms_warning("%s: the recorded OOMs are not reproduced by any limit: %s",
			           path, n->why);
			break;
		}
	}
}

/* Pools given to --no-split-pools or --use-on-oom-pools that nothing in the trace used. */
void ms_replay_cli_say_unused_pools(struct ms_replay_cli *c, const char *path,
                                    const struct ms_replay_result *r)
{
	const uint16_t *codes[2] = {c->o.no_split_pools, c->o.use_on_oom_pools};
	size_t n[2] = {c->o.n_no_split_pools, c->o.n_use_on_oom_pools};
	const char *opt[2] = {"--no-split-pools", "--use-on-oom-pools"};

	if (c->said_unused_pools)
		return;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < n[k]; i++) {
			const struct ms_model_pool *p = NULL;
			uint64_t id[2];
			char b[48];
			for (size_t j = 0; j < r->n_pools && !p; j++)
				if (r->pools[j].code == codes[k][i])
					p = &r->pools[j];
			if (p && (p->allocated_bytes.allocated || p->segment.allocated))
				continue;
			ms_pool_id(codes[k][i], id);
			ms_warning("%s: pool %s, given to %s, has no allocation in the trace "
			           "(`memsnap stats` lists its pools)",
			           path, ms_pool_id_text(id, b, sizeof(b)), opt[k]);
			c->said_unused_pools = 1;
		}
}

/*
 * A limit the user gave that the trace itself contradicts: below what its segments held at once
 * (the job could not have run under it), or one under which the replay serves an OOM the job
 * recorded (the OOM proves the job had less). Said, not refused: a limit is also a question
 * ("what if the job had this much?").
 */
static void limit_against_trace(const struct ms_replay_cli *c, const char *path,
                                const struct ms_replay_result *r)
{
	const struct ms_trace *t = NULL;
	struct ms_diag d = MS_DIAG_INIT;
	char b1[32], b2[32];
	uint64_t held;

	if (!c->o.limit_given || !r->limit || c->quiet_notes)
		return;
	if (!ms_replay_cli_trace(path, &t, &d) && t && !r->rebuilt &&
	    (held = ms_trace_held_reserved(t, (uint32_t)c->o.device)) > r->limit)
		ms_warning(
		        "%s: the limit given (%s) is below what the trace's segments held at once "
		        "(%s): the job did not run under it; the answers are for a job that had "
		        "less memory than this one",
		        path, ms_format_size(b1, sizeof(b1), r->limit),
		        ms_format_size(b2, sizeof(b2), held));
	if (r->missed_ooms && !c->o.alloc_conf) /* another setting may well get past it */
		ms_warning("%s: under the limit given (%s) the replay serves %llu OOM%s the job "
		           "recorded: the job had less than that (its OOM proves it); the answers "
		           "are for a job that had more memory than this one",
		           path, ms_format_size(b1, sizeof(b1), r->limit),
		           (unsigned long long)r->missed_ooms, r->missed_ooms == 1 ? "" : "s");
}

/* What the replay's result asks to be said: a release other than 2.11's, the torch backend's
 * surprises, pools the trace does not tell, settings replayed as recorded, another allocator's
 * snapshot, a limit the trace contradicts. */
void ms_replay_cli_say_result(struct ms_replay_cli *c, const char *path,
                              const struct ms_replay_result *r)
{
	if (r->older_release[0] && !c->quiet_notes && !c->said_release++)
		ms_note("%s was written by PyTorch %s (from its fields); the model "
		        "is "
		        "2.11's allocator, and where the two differ the replay follows 2.11 "
		        "(docs/snapshot-versions.md lists the changes)",
		        path, r->older_release);
	if (r->torch_misplaced_segments)
		ms_note("%s: --backend torch: %llu segments not at their recorded place (the "
		        "replay's order differs from the recording's there)",
		        path, (unsigned long long)r->torch_misplaced_segments);
	if (r->torch_forced_frees)
		ms_warning("%s: --backend torch: %llu deferred frees were completed early (the "
		           "allocator waited on them)",
		           path, (unsigned long long)r->torch_forced_frees);
	if (r->end_private_segments && r->allocs_pool_unknown && !c->quiet_notes &&
	    !c->said_pools++)
		ms_warning(
		        "%s: the trace has private memory pools (CUDA graphs, torch.cuda.MemPool), "
		        "but %llu allocation%s in segments given back before its end, whose "
		        "pool PyTorch does not record: replayed in the default pools, the replay "
		        "may differ from what PyTorch did from the first of them",
		        path, (unsigned long long)r->allocs_pool_unknown,
		        r->allocs_pool_unknown == 1 ? " lies" : "s lie");
	if (ms_replay_reuse_as_recorded(r) && !c->quiet_notes && !c->said_reuse++)
		ms_note("%s: graph_capture_record_stream_reuse is replayed as recorded: a free "
		        "that "
		        "waits on other streams (record_stream) during a CUDA graph capture "
		        "completes "
		        "where the trace has it; when the other setting would complete it depends "
		        "on "
		        "the graph's dependencies and the record_stream calls, which no trace "
		        "holds",
		        path);
	if (r->other_allocator[0] && !c->foreign_refused && !c->quiet_notes && !c->said_allocator++)
		ms_warning(
		        "%s: a %s snapshot: memsnap models PyTorch's CUDA caching allocator only; "
		        "the replay shows what that allocator would do with these requests",
		        path, r->other_allocator);
	limit_against_trace(c, path, r);
}
