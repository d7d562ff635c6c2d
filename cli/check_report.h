/*
 * check's gate for a CI job: a Markdown summary for the job's page, and JUnit XML for its test
 * report, of every device judged (explain/check.h's gates).
 */
#ifndef MEMSNAP_CLI_CHECK_REPORT_H
#define MEMSNAP_CLI_CHECK_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cli/output_file.h"
#include "common/buf.h"
#include "explain/check.h"

/* One device judged. */
struct ms_check_row {
	uint32_t device;
	struct ms_check_figures f;
	struct ms_check_result res;
};

/* The Markdown summary of rows[0..n) of trace to standard output. */
void ms_check_markdown(const char *trace, const struct ms_check_row *rows, size_t n);
/* The JUnit XML of rows[0..n) into out (a test case per gate and device, a failure per gate
 * that failed). MS_ERR_NOMEM only. */
ms_status ms_check_junit(const char *trace, const struct ms_check_row *rows, size_t n,
                         struct ms_buf *out);

#endif
