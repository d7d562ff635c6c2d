/* The user's own categories, by regular expressions on stack frames (user_cats.h). */
#include "analysis/user_cats.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "analysis/trace_stats.h"
#include "common/alloc.h"
#include "common/symtab.h"

struct ms_user_cats {
	size_t n;
	char name[MS_USER_CATS_MAX][MS_USER_CAT_NAME_MAX];
	char *pattern[MS_USER_CATS_MAX];
	regex_t re[MS_USER_CATS_MAX];
};

struct ms_user_cats *ms_user_cats_new(void)
{
	return ms_calloc(1, sizeof(struct ms_user_cats));
}

void ms_user_cats_free(struct ms_user_cats *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		regfree(&u->re[i]);
		ms_free(u->pattern[i]);
	}
	ms_free(u);
}

/* The names the reports give their own rows (explain's categories and the rest of the state, as
 * its JSON keys them): a user's category of the same name would make two rows of one name. */
static const char *const builtin[] = {"parameters",  "gradients",       "optimizer_state",
                                      "weights",     "kv_cache",        "activations",
                                      "other",       "unplaced",        "rounding",
                                      "cached_free", "outside_pytorch", "recorded_oom_request"};

static int name_ok(const char *s, size_t n)
{
	if (!n || n >= MS_USER_CAT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

ms_status ms_user_cats_add(struct ms_user_cats *u, const char *spec, char *err, size_t cap)
{
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : 0;
	int rc;

	if (!eq) {
		snprintf(err, cap, "a category is NAME=REGEX, not '%s'", spec);
		return MS_ERR_INVALID_ARG;
	}
	if (!name_ok(spec, n)) {
		snprintf(
		        err, cap,
		        "a category's name is 1 to %d letters, digits, '_', '-' or '.', not '%.*s'",
		        MS_USER_CAT_NAME_MAX - 1, (int)(n > 80 ? 80 : n), spec);
		return MS_ERR_INVALID_ARG;
	}
	for (size_t i = 0; i < sizeof(builtin) / sizeof(*builtin); i++)
		if (strlen(builtin[i]) == n && !memcmp(builtin[i], spec, n)) {
			snprintf(err, cap,
			         "'%s' is one of memsnap's own categories: give yours another name",
			         builtin[i]);
			return MS_ERR_INVALID_ARG;
		}
	for (size_t i = 0; i < u->n; i++)
		if (strlen(u->name[i]) == n && !memcmp(u->name[i], spec, n)) {
			snprintf(err, cap, "category '%s' is given twice", u->name[i]);
			return MS_ERR_INVALID_ARG;
		}
	if (u->n == MS_USER_CATS_MAX) {
		snprintf(err, cap, "at most %d categories", MS_USER_CATS_MAX);
		return MS_ERR_INVALID_ARG;
	}
	if (!eq[1]) {
		snprintf(err, cap, "category '%.*s' has an empty expression", (int)n, spec);
		return MS_ERR_INVALID_ARG;
	}
	if ((rc = regcomp(&u->re[u->n], eq + 1, REG_EXTENDED | REG_NOSUB))) {
		char why[200];
		regerror(rc, &u->re[u->n], why, sizeof(why));
		snprintf(err, cap, "category '%.*s': the expression '%s' is not valid: %s", (int)n,
		         spec, eq + 1, why);
		return MS_ERR_INVALID_ARG;
	}
	if (!(u->pattern[u->n] = ms_strndup(eq + 1, strlen(eq + 1)))) {
		regfree(&u->re[u->n]);
		return MS_ERR_NOMEM;
	}
	memcpy(u->name[u->n], spec, n);
	u->name[u->n][n] = 0;
	u->n++;
	return MS_OK;
}

ms_status ms_user_cats_load(struct ms_user_cats *u, const char *path, char *err, size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	unsigned no = 0;
	ms_status s = MS_OK;
	int c = 0;

	if (!f) {
		snprintf(err, cap, "%s: %s", path, strerror(errno));
		return MS_ERR_IO;
	}
	/* a line at a time, read byte by byte: a NUL byte or an overlong line is said, never
	 * read on without end (/dev/zero) */
	while (!s && c != EOF) {
		size_t n = 0;
		char why[600];
		no++;
		while ((c = getc(f)) != EOF && c != '\n') {
			if (!c) {
				snprintf(err, cap,
				         "%s:%u: a NUL byte: not a text file of NAME=REGEX lines",
				         path, no);
				fclose(f);
				return MS_ERR_INVALID_ARG;
			}
			if (n == sizeof(line) - 1) {
				snprintf(err, cap, "%s:%u: the line is longer than %zu bytes", path,
				         no, sizeof(line) - 1);
				fclose(f);
				return MS_ERR_INVALID_ARG;
			}
			line[n++] = (char)c;
		}
		while (n && line[n - 1] == '\r')
			n--;
		line[n] = 0;
		if (!n || line[0] == '#')
			continue;
		if ((s = ms_user_cats_add(u, line, why, sizeof(why))) == MS_ERR_INVALID_ARG)
			snprintf(err, cap, "%s:%u: %s", path, no, why);
	}
	if (!s && ferror(f)) {
		snprintf(err, cap, "%s: %s", path, strerror(errno));
		s = MS_ERR_IO;
	}
	fclose(f);
	return s;
}

size_t ms_user_cats_count(const struct ms_user_cats *u)
{
	return u ? u->n : 0;
}

const char *ms_user_cats_name(const struct ms_user_cats *u, size_t i)
{
	return i < u->n ? u->name[i] : "";
}

const char *ms_user_cats_pattern(const struct ms_user_cats *u, size_t i)
{
	return i < u->n ? u->pattern[i] : "";
}

int ms_user_cats_match(const struct ms_user_cats *u, const struct ms_symtab *y, uint32_t stack)
{
	const uint32_t *fr;
	size_t n;
	char label[1200];

	if (!u || !u->n || !stack)
		return -1;
	fr = ms_symtab_get_stack(y, stack, &n);
	for (size_t c = 0; c < u->n; c++)
		for (size_t i = 0; i < n; i++) {
			const struct ms_frame *f = &y->frames[fr[i]];
			const char *file = ms_symtab_get_str(y, f->file)->s;
			const char *name = ms_symtab_get_str(y, f->name)->s;
			if (file[0])
				snprintf(label, sizeof(label), "%s:%u %s", file, f->line, name);
			else
				snprintf(label, sizeof(label), "%s", name);
			if (!regexec(&u->re[c], label, 0, NULL, 0))
				return (int)c;
		}
	return -1;
}

int8_t *ms_user_cats_of_stacks(const struct ms_user_cats *u, const struct ms_symtab *y)
{
	size_t ns = ms_symtab_nstacks(y); /* ids 0 .. ns - 1 */
	int8_t *of = ms_malloc(ns + 1);

	if (!of)
		return NULL;
	for (size_t s = 0; s < ns; s++)
		of[s] = (int8_t)ms_user_cats_match(u, y, (uint32_t)s);
	of[ns] = -1;
	return of;
}

void ms_user_cats_sum_sites(const struct ms_user_cats *u, const struct ms_symtab *y,
                            const struct ms_stats_site *sites, size_t n,
                            uint64_t bytes[MS_USER_CATS_MAX + 1],
                            uint64_t count[MS_USER_CATS_MAX + 1])
{
	size_t nu = ms_user_cats_count(u);

	memset(bytes, 0, (MS_USER_CATS_MAX + 1) * sizeof(*bytes));
	memset(count, 0, (MS_USER_CATS_MAX + 1) * sizeof(*count));
	for (size_t i = 0; i < n; i++) {
		int c = ms_user_cats_match(u, y, sites[i].stack);
		size_t k = c < 0 ? nu : (size_t)c;
		bytes[k] += sites[i].bytes;
		count[k] += sites[i].count;
	}
}
