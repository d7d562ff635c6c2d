/*
 * The state render draws (ms_model_snapshot through the replay) and the formats drawing it.
 * The judge of the state is PyTorch itself: a snapshot's `segments` are the allocator's state
 * when it was dumped, so the replay's state at the end must equal them block for block.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/alloc.h"
#include "parse/trace.h"
#include "render/render.h"
#include "replay/replay.h"
#include "helpers.h"

/* Replay name to the end (or to event `at`) as the CLI does: a mid-run rebuild, an inferred
 * limit when recorded OOMs had room. */
static struct ms_trace *replay_to(const char *name, uint64_t at, int at_oom,
                                  struct ms_replay_result *r, struct ms_initial_state *init)
{
	const char *path = th_snapshot_path(name);
	struct ms_trace *t;
	struct ms_replay_opts o;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t lo, hi;

	if (!path)
		return NULL;
	cr_assert_eq(ms_trace_load(path, NULL, &t, NULL, &d), MS_OK, "%s", d.msg);
	memset(&o, 0, sizeof(o));
	memset(init, 0, sizeof(*init));
	cr_assert_eq(ms_replay_trace(t, &o, r, &d), MS_OK, "%s", d.msg);
	if (r->unmatched_frees) {
		struct ms_model_conf mc;
		struct ms_model *m;
		memset(&mc, 0, sizeof(mc));
		ms_alloc_conf_from_settings(&mc.ac, &t->meta.settings);
		cr_assert_eq(ms_model_new(&mc, &m), MS_OK);
		cr_assert_eq(ms_rebuild_initial_state(t, 0, m, init, &d), MS_OK, "%s", d.msg);
		ms_model_free(m);
		o.init = init;
	}
	if (r->missed_ooms) {
		cr_assert_eq(ms_replay_infer_limit(t, &o, &lo, &hi, &d), MS_OK, "%s", d.msg);
		o.limit = lo + (hi - lo) / 2;
	}
	ms_replay_result_release(r);
	o.snap = 1;
	o.snap_index = at;
	o.snap_at_oom = at_oom;
	cr_assert_eq(ms_replay_trace(t, &o, r, &d), MS_OK, "%s", d.msg);
	cr_assert(r->snap.taken);
	return t;
}

static void end_state_equals_recorded(const char *name)
{
	struct ms_replay_result r;
	struct ms_initial_state init;
	struct ms_trace *t = replay_to(name, UINT64_MAX, 0, &r, &init);
	size_t n = 0, kb = 0;

	if (!t) {
		cr_skip_test("%s: not available", name);
		return;
	}
	cr_assert_eq(r.snap.index, r.events_total - 1);
	for (size_t i = 0; i < t->n_segs; i++)
		n += t->segs[i].device == 0;
	cr_assert_eq(r.snap.n_segs, n, "%s: %zu segments, PyTorch had %zu", name, r.snap.n_segs, n);
	for (size_t i = 0, j = 0; i < t->n_segs; i++) {
		const struct ms_segment *want = &t->segs[i], *got;
		const struct ms_block *wb = t->blocks + t->seg_block0[i];
		if (want->device != 0)
			continue;
		got = &r.snap.segs[j++];
		cr_assert_eq(got->addr, want->addr, "%s: segment %zu at 0x%llx, PyTorch 0x%llx", name,
		             i, (unsigned long long)got->addr, (unsigned long long)want->addr);
		cr_assert_eq(got->total_size, want->total_size, "%s: segment 0x%llx", name,
		             (unsigned long long)want->addr);
		cr_assert_eq(got->allocated_size, want->allocated_size, "%s: segment 0x%llx", name,
		             (unsigned long long)want->addr);
		cr_assert_eq(got->active_size, want->active_size);
		cr_assert_eq(got->stream, want->stream);
		cr_assert_eq(got->is_small, want->is_small);
		cr_assert_eq(got->is_expandable, want->is_expandable);
		cr_assert_eq(got->n_blocks, want->n_blocks, "%s: segment 0x%llx: %u blocks, PyTorch %u",
		             name, (unsigned long long)want->addr, got->n_blocks, want->n_blocks);
		for (uint32_t k = 0; k < want->n_blocks; k++) {
			const struct ms_block *g = &r.snap.blocks[kb + k];
			cr_assert_eq(g->addr, wb[k].addr);
			cr_assert_eq(g->size, wb[k].size);
			cr_assert_eq(g->state, wb[k].state, "%s: block 0x%llx", name,
			             (unsigned long long)wb[k].addr);
			if (g->state != MS_BLOCK_INACTIVE)
				cr_assert_eq(g->requested_size, wb[k].requested_size);
		}
		kb += want->n_blocks;
	}
	ms_replay_result_release(&r);
	ms_initial_state_release(&init);
	ms_trace_free(t);
}

Test(snapshot, gpt_train_end_state)
{
	end_state_equals_recorded("gpt_train");
}
Test(snapshot, resnet50_end_state)
{
	end_state_equals_recorded("resnet50");
}
Test(snapshot, multistream_end_state)
{
	end_state_equals_recorded("multistream");
}
Test(snapshot, dynamic_oom_end_state)
{
	end_state_equals_recorded("dynamic_oom");
}
Test(snapshot, dynamic_seq_end_state)
{
	end_state_equals_recorded("dynamic_seq");
}
Test(snapshot, dynamic_empty_cache_end_state)
{
	end_state_equals_recorded("dynamic_empty_cache");
}
Test(snapshot, dynamic_expandable_end_state)
{
	end_state_equals_recorded("dynamic_expandable");
}
