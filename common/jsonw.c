/* Streaming JSON writer (see jsonw.h). */
#include "common/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void ms_jsonw_init(struct ms_jsonw *w, FILE *f, int pretty)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->pretty = pretty;
	w->first[0] = 1;
}

static void indent(struct ms_jsonw *w)
{
	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

/* Before a value or key: comma unless first; a value after a key needs nothing. */
static void sep(struct ms_jsonw *w)
{
	if (w->first[w->depth] == 2) { /* value after key */
		w->first[w->depth] = 0;
		return;
	}
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = 0;
	if (w->depth)
		indent(w);
}

static void open(struct ms_jsonw *w, char c)
{
	sep(w);
	fputc(c, w->f);
	if (w->depth < 31)
		w->depth++;
	w->first[w->depth] = 1;
}

static void close_(struct ms_jsonw *w, char c)
{
	int empty = w->first[w->depth] == 1;

	if (w->depth)
		w->depth--;
	if (!empty)
		indent(w);
	fputc(c, w->f);
}

void ms_jsonw_obj_begin(struct ms_jsonw *w)
{
	open(w, '{');
}

void ms_jsonw_obj_end(struct ms_jsonw *w)
{
	close_(w, '}');
}

void ms_jsonw_arr_begin(struct ms_jsonw *w)
{
	open(w, '[');
}

void ms_jsonw_arr_end(struct ms_jsonw *w)
{
	close_(w, ']');
}

/* s escaped, without its quotes */
static void raw_body(struct ms_jsonw *w, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"':
			fputs("\\\"", w->f);
			break;
		case '\\':
			fputs("\\\\", w->f);
			break;
		case '\n':
			fputs("\\n", w->f);
			break;
		case '\r':
			fputs("\\r", w->f);
			break;
		case '\t':
			fputs("\\t", w->f);
			break;
		case '<':
			fputs("\\u003c", w->f);
			break; /* safe inside <script> */
		default:
			if (c < 0x20)
				fprintf(w->f, "\\u%04x", c);
			else
				fputc(c, w->f);
		}
	}
}

static void raw_str(struct ms_jsonw *w, const char *s, size_t n)
{
	fputc('"', w->f);
	raw_body(w, s, n);
	fputc('"', w->f);
}

void ms_jsonw_str_parts(struct ms_jsonw *w, const char *const *parts, size_t n)
{
	sep(w);
	fputc('"', w->f);
	for (size_t i = 0; i < n; i++)
		raw_body(w, parts[i], strlen(parts[i]));
	fputc('"', w->f);
}

void ms_jsonw_value(struct ms_jsonw *w, const char *json)
{
	sep(w);
	for (const char *c = json; *c; c++)
		if (*c == '<') /* only inside a string: safe inside <script> as in raw_str */
			fputs("\\u003c", w->f);
		else
			fputc(*c, w->f);
}

void ms_jsonw_key(struct ms_jsonw *w, const char *k)
{
	sep(w);
	raw_str(w, k, strlen(k));
	fputc(':', w->f);
	if (w->pretty)
		fputc(' ', w->f);
	w->first[w->depth] = 2;
}

void ms_jsonw_str(struct ms_jsonw *w, const char *s, size_t n)
{
	sep(w);
	raw_str(w, s, n);
}

void ms_jsonw_cstr(struct ms_jsonw *w, const char *s)
{
	ms_jsonw_str(w, s, strlen(s));
}

void ms_jsonw_u64(struct ms_jsonw *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "%" PRIu64, v);
}

void ms_jsonw_i64(struct ms_jsonw *w, int64_t v)
{
	sep(w);
	fprintf(w->f, "%" PRId64, v);
}

void ms_jsonw_f64(struct ms_jsonw *w, double v)
{
	sep(w);
	if (isfinite(v))
		fprintf(w->f, "%.17g", v);
	else
		fputs("null", w->f);
}

void ms_jsonw_bool(struct ms_jsonw *w, int v)
{
	sep(w);
	fputs(v ? "true" : "false", w->f);
}

void ms_jsonw_null(struct ms_jsonw *w)
{
	sep(w);
	fputs("null", w->f);
}
