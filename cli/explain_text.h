/* explain's report (explain/report.h) as the text explain prints, under a label (path, device). */
#ifndef MEMSNAP_CLI_EXPLAIN_TEXT_H
#define MEMSNAP_CLI_EXPLAIN_TEXT_H

#include "explain/report.h"
#include "cli/replay_opts.h"

struct cJSON;

void ms_explain_print(const struct ms_explain_report *r, const char *label);
/*
 * A snapshot without a trace (history off, enabled="state"), device dev of t: what its end state
 * tells, and a failed request's verdict where request is not 0; as text, or into *jout.
 */
int ms_explain_end_state(const struct ms_replay_cli *c, const char *path, const struct ms_trace *t,
                         uint32_t dev, const char *label, uint64_t request, int json,
                         struct cJSON **jout);

/* Its parts: the steps and growth, what is live at the end and what the trace shows
 * (explain_steps.c); the OOM and what to change (explain_advice.c). */
void ms_explain_print_steps(const struct ms_explain_report *r);
void ms_explain_print_end(const struct ms_explain_report *r);
void ms_explain_print_oom(const struct ms_explain_report *r);
void ms_explain_print_changes(const struct ms_explain_report *r);
/* The categories of x, a line each with the rule that placed them; the sites of s[0..n). */
void ms_explain_print_cats(const struct ms_explain *x, uint64_t allocated, uint64_t served,
                           uint64_t cached, uint64_t outside, enum ms_outside_how outside_how,
                           uint64_t mark);
void ms_explain_print_sites(const struct ms_symtab *y, const struct ms_explain_site *s, size_t n);
/* The categories as one line ("parameters 51 MiB, ..."), those with bytes. */
void ms_explain_print_cats_line(const struct ms_explain *x, uint64_t served);

#endif
