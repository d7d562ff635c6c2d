/* check's Markdown summary and JUnit XML (check_report.h). */
#include "cli/check_report.h"

#include <stdio.h>
#include <string.h>

#include "cli/messages.h"

static size_t failed_gates(const struct ms_check_row *rows, size_t n, size_t *gates)
{
	size_t failed = 0;

	*gates = 0;
	for (size_t i = 0; i < n; i++) {
		*gates += rows[i].res.n_gates;
		for (size_t g = 0; g < rows[i].res.n_gates; g++)
			failed += !rows[i].res.gates[g].passed;
	}
	return failed;
}

/* s in a Markdown table cell: no '|' or line break to end it early. */
static void md_cell(const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", stdout);
		else if (*s == '\n' || *s == '\r')
			putchar(' ');
		else
			putchar(*s);
	}
}

/* s as Markdown text outside a table: its markup characters escaped. */
static void md_text(const char *s)
{
	for (; *s; s++) {
		if (strchr("\\`*_[]<>|#", *s))
			putchar('\\');
		putchar(*s == '\n' || *s == '\r' ? ' ' : *s);
	}
}

/* The most reserved over the run, a column a span of its events, from 0 to its highest. */
static void md_timeline(const struct ms_check_figures *f)
{
	static const char *const bar[] = {"\u2581", "\u2582", "\u2583", "\u2584",
	                                  "\u2585", "\u2586", "\u2587", "\u2588"};
	uint64_t max = 0;
	char b[32];

	for (size_t k = 0; k < f->n_timeline; k++)
		max = f->timeline[k] > max ? f->timeline[k] : max;
	if (!max)
		return;
	fputs("Reserved over the run: `", stdout);
	for (size_t k = 0; k < f->n_timeline; k++)
		fputs(bar[(size_t)(f->timeline[k] * 7 / max)], stdout);
	printf("` (0 to %s, a column for %s of the events from its first segment)\n\n",
	       ms_format_size(b, sizeof(b), max),
	       f->n_timeline == MS_CHECK_TIMELINE ? "1/48" : "each");
}

void ms_check_markdown(const char *trace, const struct ms_check_row *rows, size_t n)
{
	size_t gates, failed = failed_gates(rows, n, &gates);
	char b1[32], b2[32];

	printf("## memsnap check ");
	md_text(trace);
	if (failed)
		printf(": failed (%zu of %zu gate%s)\n\n", failed, gates, gates == 1 ? "" : "s");
	else
		printf(": passed (%zu gate%s)\n\n", gates, gates == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct ms_check_figures *f = &rows[i].f;
		if (f->windowed)
			printf("**Device %u**, the window of events %llu to %llu%s (reserved %s, "
			       "allocated %s at its start): ",
			       (unsigned)rows[i].device, (unsigned long long)f->window.from,
			       (unsigned long long)f->window.to,
			       f->window.closed ? "" : ", open at the end",
			       ms_format_size(b1, sizeof(b1), f->window.reserved_at_start),
			       ms_format_size(b2, sizeof(b2), f->window.allocated_at_start));
		else
			printf("**Device %u**: ", (unsigned)rows[i].device);
		printf("peak reserved %s%s, peak allocated %s%s, waste at the peak "
		       "%.3f of the reserved peak.\n\n",
		       f->mid_run ? "at least " : "", ms_format_size(b1, sizeof(b1), f->reserved),
		       f->mid_run ? "at least " : "", ms_format_size(b2, sizeof(b2), f->allocated),
		       f->waste);
		if (f->mid_run)
			fputs("The trace starts mid-run: its peaks are from its first event on, "
			      "and the "
			      "job's may have been higher before.\n\n",
			      stdout);
		if (f->cut_short)
			fputs("The trace is cut short: its peaks are of the part it holds.\n\n",
			      stdout);
		if (f->verdict[0]) {
			fputs("> ", stdout);
			md_text(f->verdict);
			fputs("\n\n", stdout);
		}
		md_timeline(f);
	}
	printf("| device | gate | value | bound | result |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		const struct ms_check_result *res = &rows[i].res;
		for (size_t g = 0; g < res->n_gates; g++) {
			const struct ms_check_gate *t = &res->gates[g];
			printf("| %u | %s | ", (unsigned)rows[i].device, t->name);
			md_cell(t->value);
			fputs(" | ", stdout);
			md_cell(t->bound);
			if (t->passed) {
				fputs(" | passed |\n", stdout);
			} else {
				fputs(" | **failed**: ", stdout);
				md_cell(t->line < res->n_exceeded ? res->exceeded[t->line] : "");
				fputs(" |\n", stdout);
			}
		}
	}
}

/* The entity for c in XML text or an attribute, or NULL: c as it is. XML 1.0 has no control
 * character but tab, LF and CR: the others become a space. */
static const char *xml_entity(char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	default:
		return (unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? " " : NULL;
	}
}

/* s as XML attribute or text content. */
static ms_status xml_text(struct ms_buf *out, const char *s)
{
	ms_status st = MS_OK;

	for (; *s && !st; s++) {
		const char *e = xml_entity(*s);
		st = e ? ms_buf_printf(out, "%s", e) : ms_buf_append(out, s, 1);
	}
	return st;
}

/* One gate's failure element: the line of exceeded[] as its message, value against bound. */
static ms_status junit_failure(struct ms_buf *out, const struct ms_check_result *res,
                               const struct ms_check_gate *t)
{
	ms_status s;

	if ((s = ms_buf_printf(out, ">\n      <failure type=\"%s\" message=\"", t->name)) ||
	    (s = xml_text(out, t->line < res->n_exceeded ? res->exceeded[t->line] : "")) ||
	    (s = ms_buf_printf(out, "\">")) || (s = xml_text(out, t->value)) ||
	    (s = ms_buf_printf(out, " against ")) || (s = xml_text(out, t->bound)))
		return s;
	return ms_buf_printf(out, "</failure>\n    </testcase>\n");
}

ms_status ms_check_junit(const char *trace, const struct ms_check_row *rows, size_t n,
                         struct ms_buf *out)
{
	size_t gates, failed = failed_gates(rows, n, &gates);
	ms_status s;

	if ((s = ms_buf_printf(
	             out,
	             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	             "<testsuites name=\"memsnap check\" tests=\"%zu\" failures=\"%zu\">\n"
	             "  <testsuite name=\"memsnap check ",
	             gates, failed)) ||
	    (s = xml_text(out, trace)) ||
	    (s = ms_buf_printf(out, "\" tests=\"%zu\" failures=\"%zu\">\n", gates, failed)))
		return s;
	/* a window gated: where, as properties of the suite (one element of them) */
	for (size_t i = 0, open = 0; i < n && !s; i++) {
		if (rows[i].f.windowed && !open++)
			s = ms_buf_printf(out, "    <properties>\n");
		if (rows[i].f.windowed && !s)
			s = ms_buf_printf(
			        out,
			        "      <property name=\"device%u.window\" value=\"events %llu "
			        "to %llu\"/>\n",
			        (unsigned)rows[i].device, (unsigned long long)rows[i].f.window.from,
			        (unsigned long long)rows[i].f.window.to);
		if (open && i == n - 1 && !s)
			s = ms_buf_printf(out, "    </properties>\n");
	}
	if (s)
		return s;
	for (size_t i = 0; i < n; i++) {
		const struct ms_check_result *res = &rows[i].res;
		for (size_t g = 0; g < res->n_gates && !s; g++) {
			const struct ms_check_gate *t = &res->gates[g];
			s = ms_buf_printf(
			        out,
			        "    <testcase classname=\"memsnap.check.device%u\" name=\"%s\"",
			        (unsigned)rows[i].device, t->name);
			if (!s)
				s = t->passed ? ms_buf_printf(out, "/>\n")
				              : junit_failure(out, res, t);
		}
		if (s)
			return s;
	}
	return ms_buf_printf(out, "  </testsuite>\n</testsuites>\n");
}
