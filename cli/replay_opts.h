/*
 * The options the replay commands share (one table fragment, one check), and their replay:
 * the request to replay/run.h made from the flags, its notes and errors printed.
 */
#ifndef MEMSNAP_CLI_REPLAY_OPTS_H
#define MEMSNAP_CLI_REPLAY_OPTS_H

#include "cli/opts.h"
#include "replay/run.h"

#define MS_REPLAY_OPTS_MAX      12
#define MS_REPLAY_MAX_POOL_ARGS 64 /* pools --no-split-pools and --use-on-oom-pools may name */

struct ms_replay_cli {
	/* the options given; after ms_replay_cli_run, those that reproduce its replay (the limit
	 * inferred, the rebuilt state of a mid-run trace: out.o) */
	struct ms_replay_opts o;
	/* the last run's outcome: the rebuilt state, the model's replay (--backend torch and
	 * cuda), the device (--backend cuda: its timings) */
	struct ms_replay_outcome out;
	const char *backend, *fraction;
	/* --no-split-pools, --use-on-oom-pools: as given, and the pool codes they name */
	const char *no_split_arg, *use_on_oom_arg;
	uint16_t no_split[MS_REPLAY_MAX_POOL_ARGS], use_on_oom[MS_REPLAY_MAX_POOL_ARGS];
	uint64_t device; /* --device, UINT64_MAX when not given */
	int torch_ok;    /* the command takes --backend torch (set before ms_replay_cli_check) */
	int torch;       /* --backend torch */
	int foreign_refused; /* the command refuses other allocators' traces itself (verify) */
	int quiet_notes;     /* no notes on stderr (a replay made only to choose a device) */
	int html;            /* render: the page (every device on it, with a switch) */
	/* notes said once a command, not once a device */
	int said_release, said_allocator, said_pools, said_unused_pools, said_reuse;
	const char *warned_path; /* the input whose reading's warning was said (once a file) */
	int cuda;                /* --backend cuda */
	/* --from, --to, --windows (ms_replay_cli_window_opts): the windows asked, o.windows */
	const char *win_from, *win_to, *win_prefix, *win_at;
	struct ms_windows_asked windows;
};

/* The window options (--from, --to, --windows) into opts at *k, for the commands that take
 * them; ms_replay_cli_check reads them. */
#define MS_REPLAY_WINDOW_OPTS 4
void ms_replay_cli_window_opts(struct ms_replay_cli *c, struct ms_opt *opts, size_t *k);
/* The windows r measured, a line each (nothing where none was asked). */
void ms_replay_cli_print_windows(const char *lbl, const struct ms_replay_result *r);
/* --from, --to, --windows into c->windows and c->o.windows (usage errors: exit 2). */
void ms_replay_cli_check_windows(struct ms_replay_cli *c, const struct ms_opt *opts,
                                 const char *const *usage);
/*
 * After a replay with windows asked: 0, or MS_EXIT_ERROR with one line said where the window
 * asked for was not in the trace (a mark it lacks, an event past its end).
 */
int ms_replay_cli_window_found(const struct ms_replay_cli *c, const char *path,
                               const struct ms_replay_result *r);

/* Fill opts (MS_REPLAY_OPTS_MAX entries) with the shared options and --json into *json. */
void ms_replay_cli_init(struct ms_replay_cli *c, struct ms_opt *opts, int *json);
/*
 * Replay path with c's options (ms_replay_request_run), its notes said on stderr: a rebuilt
 * state, a limit inferred from the recorded OOMs (*lim gets the range). Returns the status of
 * the replay; c->o and c->out hold what it decided until ms_replay_cli_release.
 */
ms_status ms_replay_cli_run(struct ms_replay_cli *c, const char *path, struct ms_replay_result *r,
                            struct ms_limit_range *lim, struct ms_diag *d);

/*
 * ms_replay_cli_run for a command's own trace: its error reported (r and c->out released) or its
 * warnings printed. Returns MS_EXIT_OK or MS_EXIT_ERROR.
 */
int ms_replay_cli_run_reported(struct ms_replay_cli *c, const char *path,
                               struct ms_replay_result *r, struct ms_limit_range *lim);

/*
 * The devices a command covers in path: --device D alone (an error when D has no events), else
 * every device with events of PyTorch's allocator, in order. A trace without such events is an
 * error that says what the file holds instead (segments without a trace, raw CUDA calls only,
 * nothing), with the commands that read it. On success *devs (ms_free) holds *n >= 1 devices;
 * on error one line is printed and MS_EXIT_ERROR returned.
 */
int ms_replay_cli_devices(const struct ms_replay_cli *c, const char *path, const char *cmd,
                          uint32_t **devs, size_t *n);
struct ms_source;
/* The input at path, opened once per command (parse/source.h): every pass reads it. */
ms_status ms_replay_cli_source(const char *path, struct ms_source **src, struct ms_diag *d);
/* With MEMSNAP_SHOW_PASSES=1 in the environment, what src was read for, on stderr (said as each
 * input is closed). */
void ms_replay_cli_say_passes(const struct ms_source *src);
/* Close the input at path, its trace read whole with it: the command is done with it. */
void ms_replay_cli_forget(const char *path);
/*
 * The trace at path in memory, read once per command (*t stays valid until exit): a snapshot,
 * or anything from standard input ("-"). *t is NULL for a memsnap .zst trace, which the
 * commands stream from its file instead.
 */
ms_status ms_replay_cli_trace(const char *path, const struct ms_trace **t, struct ms_diag *d);
/*
 * As ms_replay_cli_trace, and a memsnap .zst trace is read whole too and kept: every later pass
 * of the command over path (its devices, its replays) uses it instead of the file. For commands
 * that need the trace whole anyway (diff).
 */
ms_status ms_replay_cli_trace_held(const char *path, const struct ms_trace **t, struct ms_diag *d);
/*
 * The trace at path whole in memory: the snapshot read once (ms_replay_cli_trace), else the
 * .zst trace loaded into *owned, which the caller frees with ms_trace_free.
 */
ms_status ms_replay_cli_trace_whole(const char *path, const struct ms_trace **t,
                                    struct ms_trace **owned, struct ms_diag *d);
/* The room for a label: a path of PATH_MAX (4096) and " (device D)". */
#define MS_LABEL_MAX 4200
/* "path" for device 0 of a one-device trace, else "path (device D)". */
const char *ms_replay_cli_label(const char *path, uint32_t dev, size_t n_devs, char *buf,
                                size_t cap);

/* On stderr (replay_notes.c): what the replay decided (c->out's notes), under path or a
 * label; pools given that nothing used; what r asks to be said. */
void ms_replay_cli_say_notes(const struct ms_replay_cli *c, const char *path);
void ms_replay_cli_say_unused_pools(struct ms_replay_cli *c, const char *path,
                                    const struct ms_replay_result *r);
void ms_replay_cli_say_result(struct ms_replay_cli *c, const char *path,
                              const struct ms_replay_result *r);

/* Release what ms_replay_cli_run kept in c (c->out); c can run again afterwards. */
void ms_replay_cli_release(struct ms_replay_cli *c);

/* Validate after parsing; usage errors exit 2. */
void ms_replay_cli_check(struct ms_replay_cli *c, const struct ms_opt *opts,
                         const char *const *usage);

#endif
