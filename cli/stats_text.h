/* stats' results (analysis/stats_read.h) as the command prints them. */
#ifndef MEMSNAP_CLI_STATS_TEXT_H
#define MEMSNAP_CLI_STATS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stats_read.h"
#include "analysis/stats_view.h"

/* The read as the library shows it, at the command's --frames and --site-depth. */
struct ms_stats_view ms_stats_view_of(const struct ms_stats_read *j);
/* One result's sections. */
void ms_stats_print_one(const struct ms_stats_read *j);
/* Several results: a row each, every peak against their median. */
void ms_stats_print_table(const struct ms_stats_read *all, size_t nall);
/* The median of the results' peaks of requested bytes (those with allocations), 0 if none. */
uint64_t ms_stats_median_peak(const struct ms_stats_read *all, size_t nall);

#endif
