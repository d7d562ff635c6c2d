/* Options shared by the replay commands, and their replay through replay/run.h. */
#include "cli/replay_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/messages.h"
#include "common/alloc.h"
#include "parse/devices.h"
#include "parse/source.h"
#include "parse/trace.h"
#include "replay/alloc_conf.h"

/*
 * The inputs a command reads, by path: each opened once (parse/source.h), whatever the devices
 * and passes the command makes of it. A snapshot (pickle or JSON, or anything from standard
 * input) is read whole once; a memsnap .zst trace streams from its descriptor for each pass, in
 * bounded memory, unless the command holds it whole (ms_replay_cli_trace_held). Two at once,
 * for the two files of diff and check --baseline (a third closes the one used least lately);
 * closed at exit, where MEMSNAP_SHOW_PASSES=1 says what each was read for.
 */
static struct {
	struct ms_source *src;
	unsigned long used; /* when it was last asked for */
} opened[2];
static unsigned long uses;

void ms_replay_cli_say_passes(const struct ms_source *src)
{
	const char *show = getenv("MEMSNAP_SHOW_PASSES");
	char line[256];
	size_t n = 0;

	if (!show || strcmp(show, "1"))
		return;
	for (unsigned k = 0; k < MS_PASS_COUNT; k++) {
		unsigned c = ms_source_passes(src, k);
		if (c && n < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s %u", n ? ", " : "",
			                      ms_pass_name(k), c);
	}
	fprintf(stderr, "memsnap: %s: opened once, read %u time%s (%s)\n", src->path,
	        ms_source_passes(src, MS_PASS_COUNT),
	        ms_source_passes(src, MS_PASS_COUNT) == 1 ? "" : "s", n ? line : "none");
}

static void close_one(size_t slot)
{
	if (opened[slot].src)
		ms_replay_cli_say_passes(opened[slot].src);
	ms_source_close(opened[slot].src);
	opened[slot].src = NULL;
}

static void close_inputs(void)
{
	for (size_t i = 0; i < 2; i++)
		close_one(i);
}

ms_status ms_replay_cli_source(const char *path, struct ms_source **src, struct ms_diag *d)
{
	static int registered;
	size_t slot;
	ms_status s;

	for (slot = 0; slot < 2; slot++)
		if (opened[slot].src && !strcmp(opened[slot].src->path, path))
			goto found;
	slot = !opened[0].src ? 0 : !opened[1].src ? 1 : opened[0].used < opened[1].used ? 0 : 1;
	close_one(slot);
	if (!registered++)
		atexit(close_inputs);
	if ((s = ms_source_open(path, &opened[slot].src, d)))
		return s;
found:
	opened[slot].used = ++uses;
	*src = opened[slot].src;
	return MS_OK;
}

void ms_replay_cli_forget(const char *path)
{
	for (size_t slot = 0; slot < 2; slot++)
		if (opened[slot].src && !strcmp(opened[slot].src->path, path))
			close_one(slot);
}

/* The trace at path in memory, read whole once: where whole, or a snapshot (else *t NULL). */
static ms_status trace_of(const char *path, int whole, const struct ms_trace **t, struct ms_diag *d)
{
	struct ms_source *src;
	ms_status s;

	*t = NULL;
	if ((s = ms_replay_cli_source(path, &src, d)))
		return s;
	if (!whole && !src->whole && !ms_source_is_snapshot(src))
		return MS_OK;
	return ms_source_whole(src, t, d);
}

ms_status ms_replay_cli_trace(const char *path, const struct ms_trace **t, struct ms_diag *d)
{
	return trace_of(path, 0, t, d);
}

ms_status ms_replay_cli_trace_held(const char *path, const struct ms_trace **t, struct ms_diag *d)
{
	return trace_of(path, 1, t, d);
}

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
	opts[i++] = (struct ms_opt)MS_OPT_STRING(
	        0, "no-split-pools", &c->no_split_arg, "IDS",
	        "MemPools made with no_split=True, where the trace cannot say (\"0,1 0,2\")");
	opts[i++] = (struct ms_opt)MS_OPT_STRING(
	        0, "use-on-oom-pools", &c->use_on_oom_arg, "IDS",
	        "MemPools made with use_on_oom=True, where the trace cannot say");
	opts[i++] = (struct ms_opt)MS_OPT_BOOL(0, "json", json, "print one JSON object");
	opts[i++] = (struct ms_opt)MS_OPT_END();
}

/*
 * Pool ids as PyTorch prints them, "(0, 1)", or as "0,1", several separated by spaces or ';'
 * ("0,1 0,2"): their codes into out (at most MS_REPLAY_MAX_POOL_ARGS); the count, or -1 with
 * *why where arg is not such a list.
 */
static int parse_pools(const char *arg, uint16_t *out, const char **why)
{
	unsigned long long v[2];
	int n = 0, k = 0;
	const char *s = arg;

	while (*s) {
		if (*s >= '0' && *s <= '9') {
			char *end;
			errno = 0;
			v[k++] = strtoull(s, &end, 10);
			if (errno == ERANGE) {
				*why = "a number too large for a pool id";
				return -1;
			}
			s = end;
			if (k == 2) {
				if (n == MS_REPLAY_MAX_POOL_ARGS) {
					*why = "too many pools (64 at most)";
					return -1;
				}
				if (ms_pool_code(v[0], v[1], &out[n])) {
					*why = v[0] && v[1] ? "not a pool id PyTorch makes (one of "
					                      "the two must be 0)"
					                    : "a pool id too large for memsnap's "
					                      "pools";
					return -1;
				}
				if (out[n] == MS_POOL_DEFAULT) {
					*why = "(0, 0) is the default pool, no MemPool";
					return -1;
				}
				n++;
				k = 0;
			}
		} else if (strchr(" ,;()", *s)) {
			s++;
		} else {
			*why = "pool ids are two numbers each, as \"0,1\" or \"(0, 1)\"";
			return -1;
		}
	}
	if (k || !n) {
		*why = "pool ids are two numbers each, as \"0,1\" or \"(0, 1)\"";
		return -1;
	}
	return n;
}

void ms_replay_cli_check(struct ms_replay_cli *c, const struct ms_opt *opts,
                         const char *const *usage)
{
	const char *why = NULL;
	int n;

	ms_replay_cli_check_windows(c, opts, usage);

	if (c->no_split_arg) {
		if ((n = parse_pools(c->no_split_arg, c->no_split, &why)) < 0)
			ms_usage_error(opts, usage, "--no-split-pools: '%s': %s", c->no_split_arg,
			               why);
		c->o.no_split_pools = c->no_split;
		c->o.n_no_split_pools = (size_t)n;
	}
	if (c->use_on_oom_arg) {
		if ((n = parse_pools(c->use_on_oom_arg, c->use_on_oom, &why)) < 0)
			ms_usage_error(opts, usage, "--use-on-oom-pools: '%s': %s",
			               c->use_on_oom_arg, why);
		c->o.use_on_oom_pools = c->use_on_oom;
		c->o.n_use_on_oom_pools = (size_t)n;
	}
	if (c->o.alloc_conf) { /* PyTorch refuses a bad one at start-up: a usage error here */
		struct ms_alloc_conf ac;
		struct ms_diag d = MS_DIAG_INIT;
		ms_alloc_conf_init(&ac);
		if (ms_alloc_conf_parse(&ac, c->o.alloc_conf, &d))
			ms_usage_error(opts, usage, "--alloc-conf: %s", d.msg);
	}
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

ms_status ms_replay_cli_trace_whole(const char *path, const struct ms_trace **t,
                                    struct ms_trace **owned, struct ms_diag *d)
{
	struct ms_source *src;
	ms_status s;

	*owned = NULL;
	if ((s = ms_replay_cli_trace(path, t, d)) || *t)
		return s;
	if (!(s = ms_replay_cli_source(path, &src, d)) &&
	    !(s = ms_trace_load_source(src, NULL, owned, NULL, d)))
		*t = *owned;
	return s;
}

ms_status ms_replay_cli_run(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r,
                            struct ms_limit_range *lim, struct ms_diag *d)
{
	struct ms_replay_request q;
	struct ms_source *src;
	char libdir[4096], label[MS_LABEL_MAX];
	ms_status s;

	memset(&q, 0, sizeof(q));
	q.path = path;
	if ((s = ms_replay_cli_source(path, &src, d)) ||
	    (s = ms_replay_cli_trace(path, &q.trace, d)))
		return s;
	q.src = src;
	q.o = c->o;
	q.backend = c->cuda ? MS_REPLAY_CUDA : c->torch ? MS_REPLAY_TORCH : MS_REPLAY_SIM;
	if (c->torch && ms_find_libdir(libdir, sizeof(libdir)) == 0)
		q.libdir = libdir;
	s = ms_replay_request_run(&q, &c->out, r, d);
	c->o = c->out.o;
	*lim = c->out.lim;
	/* which device's replay each note is about */
	snprintf(label, sizeof(label), "%s (device %u)", path, c->o.device);
	ms_replay_cli_say_notes(c, r->events_other_devices ? label : path);
	if (!s)
		ms_replay_cli_say_unused_pools(c, path, r);
	return s;
}

void ms_replay_cli_release(struct ms_replay_cli *c)
{
	ms_replay_outcome_release(&c->out);
	c->o.init = NULL;
}

int ms_replay_cli_run_reported(struct ms_replay_cli *c, const char *path,
                               struct ms_replay_result *r, struct ms_limit_range *lim)
{
	struct ms_diag d = MS_DIAG_INIT;
	ms_status s = ms_replay_cli_run(c, path, r, lim, &d);

	if (s) {
		ms_report(path, s, &d);
		ms_replay_result_release(r);
		ms_replay_cli_release(c); /* its notes are said: nothing of it is used after */
		return MS_EXIT_ERROR;
	}
	if (c->warned_path != path) /* each device's replay reads the file: said once */
		ms_report_warnings(path, &d);
	if (d.warnings)
		c->warned_path = path;
	ms_replay_cli_say_result(c, path, r);
	return MS_EXIT_OK;
}

int ms_replay_cli_devices(const struct ms_replay_cli *c, const char *path, const char *cmd,
                          uint32_t **devs, size_t *n)
{
	struct ms_devices ds;
	struct ms_diag d = MS_DIAG_INIT;
	uint64_t raw = 0, segs = 0, events = 0;
	char list[256];
	const struct ms_trace *t;
	struct ms_source *src;
	ms_status s;

	*devs = NULL;
	*n = 0;
	/* a snapshot is read whole first: its devices are counted from it */
	if ((s = ms_replay_cli_source(path, &src, &d)) || (s = ms_replay_cli_trace(path, &t, &d)) ||
	    (s = ms_devices_read_source(src, &ds, &d))) {
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
	else if (d.warnings) /* cut off before its first event */
		ms_error("%s: nothing to %s: %s", path, cmd, d.warning);
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
