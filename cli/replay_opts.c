/* Options shared by the replay commands. */
#include "cli/replay_opts.h"

#include "cli/out.h"
#include "common/status.h"
#include "common/alloc.h"
#include "parse/devices.h"
#include "parse/trace.h"
#include "replay/device_cuda.h"
#include "replay/replay_torch.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ms_replay_cli_init(struct ms_replay_cli *c, struct ms_opt *opts, int *json)
{
	int i = 0;

	memset(c, 0, sizeof(*c));
	opts[i++] = (struct ms_opt)MS_OPT_STRING(
	        0, "backend", &c->backend, "B",
	        "sim: the model (replay and verify also take cuda and torch: on a GPU)");
	opts[i++] = (struct ms_opt)MS_OPT_STRING(
	        0, "alloc-conf", &c->o.alloc_conf, "S",
	        "PYTORCH_CUDA_ALLOC_CONF to replay with (default: the recorded one)");
	opts[i++] = (struct ms_opt)MS_OPT_SIZE(0, "limit", &c->o.limit, "N",
	                                       "per-process limit (12GiB, 12.5GB, 13061062656)");
	opts[i++] = (struct ms_opt)MS_OPT_STRING(0, "memory-fraction", &c->fraction, "F",
	                                         "limit as set_per_process_memory_fraction(F)");
	opts[i++] =
	        (struct ms_opt)MS_OPT_SIZE(0, "device-memory", &c->o.device_memory, "N",
	                                   "memory of the simulated device (default: recorded)");
	c->device = UINT64_MAX;
	opts[i++] = (struct ms_opt)MS_OPT_U64(
	        0, "device", &c->device, "D",
	        "only this device (default: every device with events, each on its own)");
	opts[i++] = (struct ms_opt)MS_OPT_BOOL(0, "json", json, "print one JSON object");
	opts[i++] = (struct ms_opt)MS_OPT_END();
}

void ms_replay_cli_check(struct ms_replay_cli *c, const struct ms_opt *opts,
                         const char *const *usage)
{
	if (c->backend && strcmp(c->backend, "sim") != 0) {
		if (strcmp(c->backend, "torch") != 0 && strcmp(c->backend, "cuda") != 0)
			ms_usage_error(opts, usage, "--backend must be sim, cuda or torch");
		if (!c->torch_ok)
			ms_usage_error(opts, usage, "this command replays with --backend sim only");
		if (strcmp(c->backend, "torch") == 0)
			c->torch = 1;
		else
			c->cuda = 1;
	}
	if (c->fraction) {
		char *end;
		double f = strtod(c->fraction, &end);
		if (*end || !(f > 0 && f <= 1)) /* NaN too */
			ms_usage_error(opts, usage,
			               "--memory-fraction: '%s' is not a number in (0, 1]",
			               c->fraction);
		if (c->o.limit)
			ms_usage_error(opts, usage,
			               "--limit and --memory-fraction exclude each other");
		c->o.fraction = f;
	}
	if (c->device != UINT64_MAX && c->device > 65535)
		ms_usage_error(opts, usage, "--device must be below 65536");
	c->o.device = c->device == UINT64_MAX ? 0 : (uint32_t)c->device;
	c->o.limit_given = c->o.limit != 0;
}

/* A trace that starts mid-run: replayed again from the state rebuilt before its first event. */
static ms_status replay_mid_run(struct ms_replay_cli *c, const char *path,
                                struct ms_replay_result *r, struct ms_diag *d)
{
	struct ms_trace *t;
	enum ms_mid_run what;
	ms_status s;
	uint64_t unmatched = r->unmatched_frees;

	if ((s = ms_trace_load(path, NULL, &t, NULL, d)))
		return s;
	s = ms_replay_from_rebuilt(t, &c->o, &c->init, r, &what, d);
	if (!s && what == MS_MID_RUN_NO_SEGMENTS && !c->quiet_notes)
		ms_warning("%s: %llu frees of blocks allocated before the trace began, and no "
		           "end-state segments to rebuild them from: the replay starts from an "
		           "empty allocator",
		           path, (unsigned long long)unmatched);
	if (!s && what == MS_MID_RUN_UNSUPPORTED && !c->quiet_notes) {
		ms_warning("%s: the trace may start mid-run and %s; replaying from an empty "
		           "allocator",
		           path, d->msg);
		d->msg[0] = 0;
	}
	if (!s && what == MS_MID_RUN_MISMATCH && !c->quiet_notes && !r->other_allocator[0]) {
		ms_warning(
		        "%s: the end-state segments do not fit the recorded events (%llu of them "
		        "did not): replaying from an empty allocator; what came before the trace, "
		        "if anything, is unknown",
		        path, (unsigned long long)c->init.inconsistent);
		ms_initial_state_release(&c->init);
	}
	if (!s && what == MS_MID_RUN_REBUILT && !c->quiet_notes)
		ms_note("%s starts mid-run (%zu segments, %llu blocks live before "
		        "its "
		        "first event%s%s%s): the state there was rebuilt from the end-state "
		        "segments; peaks before it are unknown",
		        path, c->init.n_segs, (unsigned long long)c->init.live_blocks,
		        unmatched ? ", " : "",
		        unmatched ? "frees of blocks it never allocated" : "",
		        c->init.inconsistent ? "; some recorded events did not fit it" : "");
	ms_trace_free(t);
	return s;
}

/*
 * The GPU backends replay after the model on the simulated device: the limit (inferred when the
 * trace needs one) and, for torch, the program's empty_cache() calls come from it (c->model).
 * Mid-run traces are refused: only the model replays them from a rebuilt state.
 */
static ms_status run_model_first(struct ms_replay_cli *c, const char *path,
                                 struct ms_limit_range *lim, const char *backend, struct ms_diag *d)
{
	struct ms_replay_cli sim = *c;
	ms_status s;

	sim.cuda = sim.torch = 0;
	s = ms_replay_cli_run(&sim, path, &c->model, lim, d);
	ms_initial_state_release(&sim.init);
	if (s)
		return s;
	if (c->model.rebuilt)
		return ms__diag_set(d, MS_ERR_UNSUPPORTED, -1, -1,
		                    "--backend %s: the trace starts mid-run; only sim replays it "
		                    "from a rebuilt state",
		                    backend);
	c->o.limit = sim.o.limit;
	/*
	 * A device size inferred from a recorded OOM is what PyTorch could use then: the real GPU
	 * has more (nothing else holds it now), so PyTorch's allocator gets that much as a limit
	 */
	if (!c->o.limit && !c->model.limit && c->model.device_memory_source == MS_DEVMEM_FROM_OOM) {
		c->o.limit = c->model.device_memory;
		c->model.limit = c->model.device_memory;
	}
	return MS_OK;
}

static void on_sigint(int sig)
{
	(void)sig;
	ms_cuda_interrupted = 1;
}

/*
 * --backend cuda: the model first on the simulated device (the limit, inferred if the trace
 * needs one), then the model again over the real device; Ctrl-C ends the replay at the next
 * device call and everything is freed.
 */
static ms_status run_cuda(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r,
                          struct ms_limit_range *lim, struct ms_diag *d)
{
	struct ms_replay_opts o;
	struct sigaction sa, old;
	uint64_t fr, total;
	ms_status s;

	if ((s = run_model_first(c, path, lim, "cuda", d)) ||
	    (s = ms_cuda_open((int)c->o.device, c->o.limit, &c->dev, d)))
		return s;
	ms_cuda_mem_info(c->dev, &fr, &total);
	o = c->o;
	o.device_memory = total; /* the real device: its cudaMalloc says when it is full */
	o.dev = ms_cuda_model_device(c->dev);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	s = ms_replay_run(path, &o, r, d);
	r->device_memory_source = MS_DEVMEM_REAL;
	sigaction(SIGINT, &old, NULL);
	snprintf(r->backend, sizeof(r->backend), "cuda");
	if (!s && ms_cuda_interrupted)
		s = ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                 "--backend cuda: interrupted; device memory freed");
	return s;
}

ms_status ms_replay_cli_run(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r,
                            struct ms_limit_range *lim, struct ms_diag *d)
{
	struct ms_trace *t;
	struct ms_replay_opts q;
	uint64_t missed;
	ms_status s;
	char b1[32], b2[32], b3[32];

	memset(lim, 0, sizeof(*lim));
	if (c->cuda)
		return run_cuda(c, path, r, lim, d);
	if (c->torch) {
		char libdir[4096], plugin[4200];
		if ((s = run_model_first(c, path, lim, "torch", d)))
			return s;
		if (ms_find_libdir(libdir, sizeof(libdir)))
			return ms__diag_set(
			        d, MS_ERR_BACKEND, -1, -1,
			        "--backend torch: the plugins' folder is not found (set "
			        "MEMSNAP_LIBDIR)");
		snprintf(plugin, sizeof(plugin), "%s/libmemsnap_torch_replay.so", libdir);
		if (access(plugin, R_OK) != 0)
			return ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
			                    "--backend torch: %s: not built (MEMSNAP_TORCH needs "
			                    "PyTorch and CUDA at build time)",
			                    plugin);
		return ms_replay_torch(path, plugin, &c->o, &c->model, r, d);
	}
	s = ms_replay_run(path, &c->o, r, d);
	/*
	 * A trace that starts mid-run frees what it never allocated, or ends with other segments
	 * than its replay from an empty allocator: then the state before its first event is
	 * rebuilt (which loads it whole). A replay that stopped at an OOM cannot tell: rebuild.
	 */
	if (!s && !c->o.init &&
	    (r->unmatched_frees ||
	     (r->end_segments &&
	      (r->ended_by_oom ||
	       r->end_reserved != (uint64_t)r->stats.reserved_bytes[0].current))))
		s = replay_mid_run(c, path, r, d);
	/*
	 * A device size inferred from the recorded OOM bounds the whole run, not only what comes
	 * after it: replay again with it from the start
	 */
	if (!s && r->ended_by_oom && r->device_memory_source == MS_DEVMEM_UNKNOWN &&
	    !c->o.device_memory) {
		/* it ran out before the recorded OOM that bounds the device: find that bound
		   without the limit */
		struct ms_replay_opts unlimited = c->o;
		struct ms_replay_result probe;
		unlimited.limit = 0;
		unlimited.limit_given = 0;
		unlimited.fraction = 0;
		if (ms_replay_run(path, &unlimited, &probe, d) == MS_OK &&
		    probe.device_memory_source == MS_DEVMEM_FROM_OOM) {
			r->device_memory_source = MS_DEVMEM_FROM_OOM;
			r->device_memory = probe.device_memory;
			r->oom_seen = 1;
			r->oom_reserved = probe.oom_reserved;
			r->oom_device_free = probe.oom_device_free;
		}
		d->msg[0] = 0;
		ms_replay_result_release(&probe);
	}
	if (!s && r->device_memory_source == MS_DEVMEM_FROM_OOM && !c->o.device_memory) {
		uint64_t ores = r->oom_reserved, ofree = r->oom_device_free;
		c->o.device_memory = r->device_memory;
		c->o.device_memory_from_oom = 1;
		ms_replay_result_release(r);
		s = ms_replay_run(path, &c->o, r, d);
		if (!s &&
		    !r->oom_seen) { /* the bound's figures, where this replay did not get there */
			r->oom_seen = 1;
			r->oom_reserved = ores;
			r->oom_device_free = ofree;
		}
	}
	if (s || !r->recorded_ooms || c->o.limit || c->o.fraction > 0 || r->limit)
		return s;
	/*
	 * OOMs that the recorded settings' replay does not have, with room on the device: the job
	 * ran under a per-process limit. It is a property of the job, found with the recorded
	 * settings whatever --alloc-conf asks (which then replays under it).
	 */
	if ((s = ms_trace_load(path, NULL, &t, NULL, d)))
		return s;
	q = c->o;
	q.alloc_conf = NULL;
	missed = r->missed_ooms;
	if (c->o.alloc_conf) {
		struct ms_replay_result rr;
		if ((s = ms_replay_trace(t, &q, &rr, d))) {
			ms_trace_free(t);
			return s;
		}
		missed = rr.missed_ooms;
		ms_replay_result_release(&rr);
	}
	if (!missed) {
		ms_trace_free(t);
		return MS_OK;
	}
	s = ms_replay_infer_limit(t, &q, &lim->lo, &lim->hi, d);
	if (s == MS_OK) {
		lim->inferred = 1;
		lim->used = lim->lo + (lim->hi - lim->lo) / 2;
		c->o.limit = lim->used;
		ms_replay_result_release(r);
		s = ms_replay_trace(t, &c->o, r, d);
		r->limit_inferred = 1;
		if (!c->quiet_notes)
			ms_note("%s recorded %llu OOM(s) while the device had room: "
			        "the job "
			        "ran under a per-process limit; inferred between %s and %s (%llu "
			        "to %llu "
			        "bytes), replayed with %s",
			        path, (unsigned long long)r->recorded_ooms,
			        ms_format_size(b1, sizeof(b1), lim->lo),
			        ms_format_size(b2, sizeof(b2), lim->hi),
			        (unsigned long long)lim->lo, (unsigned long long)lim->hi,
			        ms_format_size(b3, sizeof(b3), lim->used));
	} else if (s == MS_ERR_UNSUPPORTED) {
		ms_warning("%s: the recorded OOMs are not reproduced by any limit: %s", path,
		           d->msg);
		d->msg[0] = 0;
		s = MS_OK;
	}
	ms_trace_free(t);
	return s;
}

void ms_replay_cli_release(struct ms_replay_cli *c)
{
	ms_initial_state_release(&c->init);
	c->o.init = NULL;
	ms_replay_result_release(&c->model);
	ms_cuda_close(c->dev);
	c->dev = NULL;
}

int ms_replay_cli_run_reported(struct ms_replay_cli *c, const char *path,
                               struct ms_replay_result *r, struct ms_limit_range *lim)
{
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s = ms_replay_cli_run(c, path, r, lim, &d);

	if (s) {
		ms_report(path, s, &d);
		ms_replay_result_release(r);
		return MS_EXIT_ERROR;
	}
	ms_report_warnings(path, &d);
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
	if (r->other_allocator[0] && !c->foreign_refused && !c->quiet_notes && !c->said_allocator++)
		ms_warning(
		        "%s: a %s snapshot: memsnap models PyTorch's CUDA caching allocator only; "
		        "the replay shows what that allocator would do with these requests",
		        path, r->other_allocator);
	return MS_EXIT_OK;
}

int ms_replay_cli_devices(const struct ms_replay_cli *c, const char *path, const char *cmd,
                          uint32_t **devs, size_t *n)
{
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t raw = 0, segs = 0, events = 0;
	char list[256];
	ms_status s;

	*devs = NULL;
	*n = 0;
	if ((s = ms_devices_read(path, &ds, &d))) {
		ms_report(path, s, &d);
		return MS_EXIT_ERROR;
	}
	ms_devices_describe(&ds, list, sizeof(list));
	if (!(*devs = ms_calloc(ds.n ? ds.n : 1, sizeof(**devs))))
		ms_die(MS_EXIT_ERROR, "out of memory");
	for (size_t i = 0; i < ds.n; i++) {
		raw += ds.d[i].raw_events;
		segs += ds.d[i].segments;
		events += ds.d[i].events;
		if (ds.d[i].allocs && (c->device == UINT64_MAX || ds.d[i].device == c->device))
			(*devs)[(*n)++] = ds.d[i].device;
	}
	if (*n) {
		ms_devices_release(&ds);
		return MS_EXIT_OK;
	}
	if (c->device != UINT64_MAX && ds.n && ms_devices_find(&ds, (uint32_t)c->device) == NULL)
		ms_error("%s: nothing on device %llu; the trace is about %s", path,
		         (unsigned long long)c->device, list);
	else if (c->device != UINT64_MAX && ms_devices_find(&ds, (uint32_t)c->device) &&
	         strstr(list, "events"))
		ms_error("%s: no allocator events on device %llu; events are on %s", path,
		         (unsigned long long)c->device, list);
	else if (segs && events)
		ms_error("%s: no trace: %llu end-state segments and %llu event%s but no allocation "
		         "(enabled=\"state\" keeps a few); %s needs them (`memsnap stats` and "
		         "`render` read the segments)",
		         path, (unsigned long long)segs, (unsigned long long)events,
		         events == 1 ? "" : "s", cmd);
	else if (segs)
		ms_error("%s: no trace: end-state segments only, on %s; no allocator events: %s "
		         "needs them (`memsnap stats` and `render` read the segments)",
		         path, list, cmd);
	else if (raw)
		ms_error("%s: only raw CUDA calls (%llu events), no events of PyTorch's allocator: "
		         "nothing for the allocator model to replay (`memsnap stats` reads them)",
		         path, (unsigned long long)raw);
	else
		ms_error("%s: no events and no segments: nothing to %s", path, cmd);
	ms_devices_release(&ds);
	ms_free(*devs);
	*devs = NULL;
	return MS_EXIT_ERROR;
}

const char *ms_replay_cli_label(const char *path, uint32_t dev, size_t n_devs, char *buf,
                                size_t cap)
{
	if (dev == 0 && n_devs == 1)
		return path;
	snprintf(buf, cap, "%s (device %u)", path, dev);
	return buf;
}
