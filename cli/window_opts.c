/* The replay commands' windows: --from, --to, --windows (analysis/window.h). */
#include <stdio.h>
#include <string.h>

#include "cli/messages.h"
#include "cli/opts.h"
#include "cli/replay_opts.h"
#include "common/size.h"

void ms_replay_cli_window_opts(struct ms_replay_cli *c, struct ms_opt *opts, size_t *k)
{
	opts[(*k)++] = (struct ms_opt)MS_OPT_STRING(
	        0, "from", &c->win_from, "WHERE",
	        "a window from here: an event's number, a time (1.5s, 200ms), mark:NAME[#N], or "
	        "alloc:ADDRESS[#N] / free:ADDRESS[#N] (an allocation, a completed free)");
	opts[(*k)++] = (struct ms_opt)MS_OPT_STRING(
	        0, "to", &c->win_to, "WHERE",
	        "the window up to here (not included): an event, a time, mark:NAME[#N], "
	        "alloc:ADDRESS[#N] or free:ADDRESS[#N]");
	opts[(*k)++] = (struct ms_opt)MS_OPT_STRING(
	        0, "windows", &c->win_prefix, "PREFIX",
	        "a window for each phase whose name starts with PREFIX (its start to its end)");
	opts[(*k)++] = (struct ms_opt)MS_OPT_STRING(
	        0, "at", &c->win_at, "WHERE",
	        "the moment right after one event: an event's number, a time, mark:NAME[#N], or "
	        "alloc:ADDRESS[#N] or free:ADDRESS[#N] (the Nth allocation, or completed free, at "
	        "that address)");
}

/* --from, --to, --windows into c->windows (usage errors where they are not windows). */
void ms_replay_cli_check_windows(struct ms_replay_cli *c, const struct ms_opt *opts,
                                 const char *const *usage)
{
	struct ms_windows_asked *a = &c->windows;
	const char *why;

	memset(a, 0, sizeof(*a));
	if (!c->win_from && !c->win_to && !c->win_prefix && !c->win_at)
		return;
	if (c->win_prefix && (c->win_from || c->win_to))
		ms_usage_error(opts, usage, "--windows takes no --from or --to");
	if (c->win_at && (c->win_from || c->win_to || c->win_prefix))
		ms_usage_error(opts, usage,
		               "--at is one moment: it takes no --from, --to or --windows");
	if (c->win_at) {
		a->one = a->at = 1;
		if ((why = ms_window_end_parse(c->win_at, &a->from)))
			ms_usage_error(opts, usage, "--at '%s': %s", c->win_at, why);
		c->o.windows = a;
		return;
	}
	if (c->win_prefix) {
		if (!c->win_prefix[0])
			ms_usage_error(opts, usage, "--windows: an empty prefix");
		a->prefix = c->win_prefix;
	} else {
		a->one = 1;
		if (c->win_from && (why = ms_window_end_parse(c->win_from, &a->from)))
			ms_usage_error(opts, usage, "--from '%s': %s", c->win_from, why);
		if (c->win_to && (why = ms_window_end_parse(c->win_to, &a->to)))
			ms_usage_error(opts, usage, "--to '%s': %s", c->win_to, why);
		if (ms_window_ends_cross(&a->from, &a->to))
			ms_usage_error(opts, usage, "--to %s comes before --from %s", c->win_to,
			               c->win_from);
	}
	c->o.windows = a;
}

int ms_replay_cli_window_found(const struct ms_replay_cli *c, const char *path,
                               const struct ms_replay_result *r)
{
	char msg[512];

	if (!c->o.windows ||
	    !ms_window_missing(&c->windows, c->win_at ? c->win_at : c->win_from, c->win_to,
	                       r->events_total, r->ended_by_oom ? r->end_oom_index : UINT64_MAX,
	                       r->windows, r->n_windows, r->window_marks_seen, msg, sizeof(msg)))
		return MS_EXIT_OK;
	ms_error("%s: %s", path, msg);
	return MS_EXIT_ERROR;
}

void ms_replay_cli_print_windows(const char *lbl, const struct ms_replay_result *r)
{
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];

	if (!r->windows_asked)
		return;
	if (!r->n_windows)
		printf("%s: windows: no phase whose name starts with that prefix\n", lbl);
	for (size_t i = 0; i < r->n_windows; i++) {
		const struct ms_window_figures *w = &r->windows[i];
		printf("%s: window %s%s%sevents %llu to %llu%s: reserved %s at its start, peak %s "
		       "(+%s); allocated %s at its start, peak %s (+%s)",
		       lbl, w->name ? "'" : "", w->name ? w->name : "", w->name ? "' " : "",
		       (unsigned long long)w->from, (unsigned long long)w->to,
		       w->replay_stopped_inside ? " (the replay ran out of memory inside it)"
		       : !w->closed             ? " (still open at the trace's end)"
		                                : "",
		       ms_format_size(b1, sizeof(b1), w->reserved_at_start),
		       ms_format_size(b2, sizeof(b2), w->peak_reserved),
		       ms_format_size(b3, sizeof(b3), w->peak_reserved - w->reserved_at_start),
		       ms_format_size(b4, sizeof(b4), w->allocated_at_start),
		       ms_format_size(b5, sizeof(b5), w->peak_allocated),
		       ms_format_size(b6, sizeof(b6), w->peak_allocated - w->allocated_at_start));
		if (w->recorded_ooms)
			printf("; %llu recorded OOM%s", (unsigned long long)w->recorded_ooms,
			       w->recorded_ooms == 1 ? "" : "s");
		printf("\n");
	}
}
