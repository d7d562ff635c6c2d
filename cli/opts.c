/* Declarative option tables: parsing and the generated help text. */
#include <stdio.h>

#include "cli/opts.h"
#include "common/size.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/messages.h"

void ms_print_help(FILE *f, const struct ms_opt *opts, const char *const *usage)
{
	const struct ms_opt *o;

	int desc = 0;

	/* usage[0] and further "memsnap ..." lines are usages; after an empty line, prose */
	for (int i = 0; usage && usage[i]; i++) {
		if (!usage[i][0])
			desc = 1;
		if (i == 0)
			fprintf(f, "usage: %s\n", usage[i]);
		else if (!desc && usage[i][0] == ' ')
			fprintf(f, "       %s\n", usage[i]); /* the usage above, continued */
		else if (!desc)
			fprintf(f, "   or: %s\n", usage[i]);
		else
			fprintf(f, "%s\n", usage[i]);
	}
	fputc('\n', f);
	for (o = opts; o && o->type != MS_OPT_T_END; o++) {
		char left[64];
		int n = 0;
		if (o->short_name)
			n += snprintf(left + n, sizeof(left) - (size_t)n, "-%c%s", o->short_name,
			              o->long_name ? ", " : "");
		else
			n += snprintf(left + n, sizeof(left) - (size_t)n, "    ");
		if (o->long_name)
			n += snprintf(left + n, sizeof(left) - (size_t)n, "--%s", o->long_name);
		if (o->argh)
			snprintf(left + n, sizeof(left) - (size_t)n, " <%s>", o->argh);
		fprintf(f, "    %-28s %s\n", left, o->help);
	}
}

void ms_usage_error(const struct ms_opt *opts, const char *const *usage, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ms_error("%s", msg);
	/* the error, then the command's first usage line and where the rest is */
	(void)opts;
	if (usage && usage[0]) {
		const char *cmd = strncmp(usage[0], "memsnap ", 8) ? usage[0] : usage[0] + 8;
		int len = (int)strcspn(cmd, " ");
		ms_error_more("usage: %s\n       (`memsnap help %.*s` lists every option)\n",
		              usage[0], len, cmd);
	}
	exit(MS_EXIT_USAGE);
}

static void set_value(const struct ms_opt *o, const char *arg, const struct ms_opt *opts,
                      const char *const *usage)
{
	char *end;

	switch (o->type) {
	case MS_OPT_T_BOOL:
		*(int *)o->value = 1;
		break;
	case MS_OPT_T_STRING:
		*(const char **)o->value = arg;
		break;
	case MS_OPT_T_LIST: {
		struct ms_opt_list *l = o->value;
		if (l->n == MS_OPT_LIST_MAX)
			ms_usage_error(opts, usage, "--%s is given more than %d times",
			               o->long_name, MS_OPT_LIST_MAX);
		l->v[l->n++] = arg;
	} break;
	case MS_OPT_T_SIZE: {
		const char *why = ms_size_parse(arg, o->value);
		if (!why && !*(uint64_t *)o->value)
			ms_usage_error(opts, usage, "--%s: '%s': must be more than 0 bytes",
			               o->long_name, arg);
		if (why)
			ms_usage_error(opts, usage,
			               "--%s: '%s' is not a size: %s (e.g. 80GiB, 512MB)",
			               o->long_name, arg, why);
	} break;
	case MS_OPT_T_U64:
		errno = 0;
		*(uint64_t *)o->value = strtoull(arg, &end, 10);
		if (errno == ERANGE && *arg != '-' && !*end)
			ms_usage_error(opts, usage, "--%s: '%s' is out of range (at most %llu)",
			               o->long_name, arg, (unsigned long long)UINT64_MAX);
		if (errno || !*arg || *end || *arg == '-')
			ms_usage_error(opts, usage, "--%s: '%s' is not a whole number",
			               o->long_name, arg);
		break;
	case MS_OPT_T_INT: {
		long v;
		errno = 0;
		v = strtol(arg, &end, 10);
		if (!*arg || *end || (errno && errno != ERANGE))
			ms_usage_error(opts, usage, "--%s: '%s' is not a number", o->long_name,
			               arg);
		if (errno == ERANGE || v < -2147483647L || v > 2147483647L)
			ms_usage_error(opts, usage, "--%s: '%s' is out of range", o->long_name,
			               arg);
		*(int *)o->value = (int)v;
		break;
	}
	case MS_OPT_T_END:
		break;
	}
}

int ms_parse_options(int argc, const char **argv, const struct ms_opt *opts,
                     const char *const *usage)
{
	int npos = 0, i, only_pos = 0;
	const char **pos = argv; /* positional args compacted in place (never ahead of i) */

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct ms_opt *o = NULL;
		const char *val = NULL;

		if (only_pos || a[0] != '-' || a[1] == 0) {
			pos[npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			ms_print_help(stdout, opts, usage);
			exit(MS_EXIT_OK);
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			for (o = opts; o->type != MS_OPT_T_END; o++)
				if (o->long_name && strlen(o->long_name) == len &&
				    strncmp(o->long_name, name, len) == 0)
					break;
			if (o->type == MS_OPT_T_END)
				ms_usage_error(opts, usage, "unknown option '%s'", a);
			if (eq)
				val = eq + 1;
		} else {
			for (o = opts; o->type != MS_OPT_T_END; o++)
				if (o->short_name == a[1])
					break;
			if (o->type == MS_OPT_T_END)
				ms_usage_error(opts, usage, "unknown option '%s'", a);
			if (a[2])
				val = a + 2;
		}
		if (o->type == MS_OPT_T_BOOL) {
			if (val)
				ms_usage_error(opts, usage, "option '%s' takes no value", a);
			set_value(o, NULL, opts, usage);
			continue;
		}
		if (!val) {
			if (i + 1 >= argc)
				ms_usage_error(opts, usage, "option '%s' needs a value", a);
			val = argv[++i];
		}
		set_value(o, val, opts, usage);
	}
	return npos;
}

void ms_opts_drop(struct ms_opt *opts, const char *long_name)
{
	size_t i, n;

	for (n = 0; opts[n].type != MS_OPT_T_END; n++)
		;
	for (i = 0; i < n; i++)
		if (opts[i].long_name && !strcmp(opts[i].long_name, long_name)) {
			memmove(&opts[i], &opts[i + 1], (n - i) * sizeof(*opts)); /* the END too */
			return;
		}
}

void ms_opts_help(struct ms_opt *opts, const char *long_name, const char *help)
{
	for (size_t i = 0; opts[i].type != MS_OPT_T_END; i++)
		if (opts[i].long_name && !strcmp(opts[i].long_name, long_name))
			opts[i].help = help;
}
