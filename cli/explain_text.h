/* explain's report (explain/report.h) as the text explain prints, under a label (path, device). */
#ifndef MEMSNAP_CLI_EXPLAIN_TEXT_H
#define MEMSNAP_CLI_EXPLAIN_TEXT_H

#include "explain/report.h"

void ms_explain_print(const struct ms_explain_report *r, const char *label);

#endif
