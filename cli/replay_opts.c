/* Options shared by the replay commands. */
#include "cli/replay_opts.h"

#include <stdlib.h>
#include <string.h>

void ms_replay_cli_init(struct ms_replay_cli *c, struct ms_opt *opts, int *json)
{
	int i = 0;

	memset(c, 0, sizeof(*c));
	opts[i++] = (struct ms_opt)MS_OPT_STRING(0, "backend", &c->backend, "sim",
	                                         "allocator backend (only sim for now)");
	opts[i++] = (struct ms_opt)MS_OPT_STRING(
	        0, "alloc-conf", &c->o.alloc_conf, "S",
	        "PYTORCH_CUDA_ALLOC_CONF to replay with (default: the recorded one)");
	opts[i++] = (struct ms_opt)MS_OPT_SIZE(0, "limit", &c->o.limit, "N",
	                                       "per-process limit in bytes (KiB/MiB/GiB suffixes)");
	opts[i++] = (struct ms_opt)MS_OPT_STRING(0, "memory-fraction", &c->fraction, "F",
	                                         "limit as set_per_process_memory_fraction(F)");
	opts[i++] =
	        (struct ms_opt)MS_OPT_SIZE(0, "device-memory", &c->o.device_memory, "N",
	                                   "memory of the simulated device (default: recorded)");
	opts[i++] = (struct ms_opt)MS_OPT_U64(0, "device", &c->device, "D",
	                                      "device whose events are replayed (default 0)");
	opts[i++] = (struct ms_opt)MS_OPT_BOOL(0, "json", json, "print one JSON object");
	opts[i++] = (struct ms_opt)MS_OPT_END();
}

void ms_replay_cli_check(struct ms_replay_cli *c, const struct ms_opt *opts,
                         const char *const *usage)
{
	if (c->backend && strcmp(c->backend, "sim") != 0)
		ms_usage_error(opts, usage, "--backend %s is not available (this build has: sim)",
		               c->backend);
	if (c->fraction) {
		char *end;
		double f = strtod(c->fraction, &end);
		if (*end || f <= 0 || f > 1)
			ms_usage_error(opts, usage, "--memory-fraction must be in (0, 1]");
		if (c->o.limit)
			ms_usage_error(opts, usage,
			               "--limit and --memory-fraction exclude each other");
		c->o.fraction = f;
	}
	if (c->device > 65535)
		ms_usage_error(opts, usage, "--device must be below 65536");
	c->o.device = (uint32_t)c->device;
}
