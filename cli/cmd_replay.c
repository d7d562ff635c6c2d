/* memsnap replay TRACE: the trace against the allocator model on a simulated device. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "cli/replay_opts.h"
#include "cli/replay_text.h"
#include "cli/verdict_out.h"
#include "json/replay.h"
#include "explain/explain.h"
#include "common/alloc.h"
#include "cli/sites.h"
#include "replay/device_cuda.h"
#include "replay/replay.h"

static const char *const usage[] = {
        "memsnap replay [--backend sim|cuda|torch] [--alloc-conf S] [--limit N | --memory-fraction "
        "F]",
        "               [--device-memory N] [--device D] [--frames user|all|N]",
        "               [--no-split-pools IDS] [--use-on-oom-pools IDS] [--json] <trace>",
        "",
        "Replay a trace against memsnap's model of PyTorch's CUDA caching allocator on a",
        "simulated device, to reproduce an out-of-memory error offline or to try other",
        "settings. Exit 0 when the replay completes, 3 when it ends in an OOM the recorded",
        "run did not have, 1 on error, 2 on usage. At an OOM it lists who holds the memory:",
        "the largest live allocations and their sites (--frames: see `memsnap help stats`).",
        "",
        "Each allocation is replayed in its memory pool: the default pools, or the private pool",
        "of a CUDA graph or torch.cuda.MemPool. memsnap's recordings and PyTorch 2.12+ name each",
        "event's pool; for older snapshots it is told from the end-state segments, and the",
        "allocations it cannot place (in segments given back before the end) are replayed in",
        "the default pools. The report shows each private pool's share.",
        "",
        "--backend cuda runs the model over a real GPU (--device): each segment it creates is",
        "a cudaMalloc, each expandable segment an address range mapped page by page with the",
        "CUDA virtual memory calls; an OOM happens where the device is full or the limit is",
        "reached. It adds the device's memory, the CUDA context's, and every driver call's",
        "latency (p50, p99, max, total). Ctrl-C stops it; everything is freed.",
        "",
        "--backend torch replays the same allocations and frees through PyTorch's own",
        "caching allocator on a real GPU (the plugin libmemsnap_torch_replay, built where",
        "PyTorch is; --device is the GPU), with the settings and limit the model uses and the",
        "program's empty_cache() calls where the model places them. Its report has the same",
        "fields, PyTorch's own memory_stats and OOM message; the free-block detail of an OOM",
        "is the model's alone.",
        NULL,
};

/*
 * The cause of r's OOM (explain/verdict.h), as explain gives it: with the steps of the trace read
 * whole where it is not too long (*death then set, *has_death 1), else from the replay alone.
 */
static void oom_cause(const struct ms_replay_cli *c, const char *path,
                      const struct ms_replay_result *r, const struct ms_limit_range *lim,
                      struct ms_oom_verdict *ov, struct ms_death *death, int *has_death)
{
	const struct ms_trace *t = NULL;
	struct ms_trace *owned = NULL;
	struct ms_diag d = MS_DIAG_INIT;

	/* the verdict reads the trace whole, where it is small enough (else the replay's alone) */
	if (r->has_oom && r->events_total <= MS_CLI_VERDICT_EVENTS &&
	    ms_replay_cli_trace_whole(path, &t, &owned, &d))
		t = NULL;
	ms_verdict_oom_of_replay(t, &c->o, r, lim, ov, death, has_death);
	ms_trace_free(owned);
}

int cmd_replay(int argc, const char **argv)
{
	struct ms_replay_cli c;
	int n, json = 0, rc = MS_EXIT_OK;
	struct ms_opt opts[MS_REPLAY_OPTS_MAX + 1 + MS_REPLAY_WINDOW_OPTS];
	struct ms_frames_opt frames = {0};
	size_t k;
	struct ms_replay_opts base;
	struct ms_replay_result r;
	struct ms_limit_range lim;
	uint32_t *devs;
	size_t nd;
	struct ms_json_devices jd;
	struct ms_oom_verdict ov;
	struct ms_death death;
	int has_death = 0;

	ms_replay_cli_init(&c, opts, &json);
	for (k = 0; opts[k].type != MS_OPT_T_END; k++)
		;
	opts[k++] = (struct ms_opt)MS_OPT_FRAMES(&frames);
	ms_replay_cli_window_opts(&c, opts, &k);
	opts[k] = (struct ms_opt)MS_OPT_END();
	n = ms_parse_options(argc, argv, opts, usage);
	if (n != 1)
		ms_usage_error(opts, usage, n ? "one trace at a time" : "no trace given");
	c.torch_ok = 1;
	ms_replay_cli_check(&c, opts, usage);
	ms_frames_opt_check(&frames, opts, usage);
	if (c.o.windows && (c.torch || c.cuda))
		ms_usage_error(opts, usage, "windows are measured on the model: --backend sim");
	if (ms_replay_cli_devices(&c, argv[0], "replay", &devs, &nd))
		return MS_EXIT_ERROR;
	ms_json_devices_begin(&jd, argv[0], json ? nd : 0);
	base = c.o;
	for (size_t i = 0; i < nd; i++) {
		char label[MS_LABEL_MAX];
		const char *lbl;
		c.o = base; /* an inferred limit or a rebuilt state belongs to one device */
		c.o.device = devs[i];
		if (ms_replay_cli_run_reported(&c, argv[0], &r, &lim)) {
			rc = MS_EXIT_ERROR;
			break;
		}
		if (ms_replay_cli_window_found(&c, argv[0], &r)) {
			ms_replay_result_release(&r);
			ms_replay_cli_release(&c);
			rc = MS_EXIT_ERROR;
			break;
		}
		lbl = ms_replay_cli_label(argv[0], devs[i], c.device != UINT64_MAX ? 2 : nd, label,
		                          sizeof(label));
		/* the OOM's cause, as explain gives it (the model's replay: a GPU backend has
		   its own message) */
		if (!r.backend_message[0])
			oom_cause(&c, argv[0], &r, &lim, &ov, &death, &has_death);
		else
			has_death = 0;
		if (json) {
			cJSON *o = ms_replay_result_json(
			        argv[0], devs[i], &r, &lim, c.out.dev, frames.n,
			        r.has_oom && !r.backend_message[0] ? &ov : NULL);
			ms_json_devices_add(&jd, devs[i], o);
		} else {
			if (i)
				putchar('\n');
			ms_replay_print(lbl, &r, &lim, frames.n, c.device != UINT64_MAX,
			                !base.alloc_conf && !base.limit && base.fraction <= 0 &&
			                        !base.device_memory,
			                r.has_oom && !r.backend_message[0] ? &ov : NULL,
			                has_death ? &death : NULL);
			if (c.out.dev)
				ms_replay_print_cuda(c.out.dev);
			ms_replay_cli_print_windows(lbl, &r);
		}
		if (r.ended_by_oom && rc == MS_EXIT_OK)
			rc = MS_EXIT_OOM;
		ms_replay_result_release(&r);
		ms_replay_cli_release(&c);
	}
	ms_json_devices_end(&jd, rc != MS_EXIT_ERROR, NULL, rc == MS_EXIT_OK);
	ms_free(devs);
	return rc;
}
