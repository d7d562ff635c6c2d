/* The options replay, verify and (later) whatif share: one table fragment, one check. */
#ifndef MEMSNAP_CLI_REPLAY_OPTS_H
#define MEMSNAP_CLI_REPLAY_OPTS_H

#include "cli/opts.h"
#include "replay/replay.h"

#define MS_REPLAY_OPTS_MAX 12

struct ms_replay_cli {
	struct ms_replay_opts o;
	const char *backend, *fraction;
	uint64_t device;
};

/* Fill opts (MS_REPLAY_OPTS_MAX entries) with the shared options and --json into *json. */
void ms_replay_cli_init(struct ms_replay_cli *c, struct ms_opt *opts, int *json);
/* Validate after parsing; usage errors exit 2. */
void ms_replay_cli_check(struct ms_replay_cli *c, const struct ms_opt *opts,
                         const char *const *usage);

#endif
