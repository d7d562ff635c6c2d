/* Diagnostics on stderr (git's message rules: lower case, no full stop) and size formatting. */
#define _DEFAULT_SOURCE /* readlink */
#include "cli/messages.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

int ms_quiet;

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "memsnap: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void ms_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
}

void ms_error_more(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void ms_warning(const char *fmt, ...)
{
	va_list ap;

	if (ms_quiet)
		return;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void ms_note(const char *fmt, ...)
{
	va_list ap;

	if (ms_quiet)
		return;
	va_start(ap, fmt);
	vmsg("note: ", fmt, ap);
	va_end(ap);
}

void ms_said(const char *fmt, ...)
{
	va_list ap;

	if (ms_quiet)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void ms_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
	exit(code);
}

void ms_report(const char *path, ms_status s, const struct ms_diag *d)
{
	if (d && d->msg[0])
		ms_error("%s: %s", path, d->msg);
	else
		ms_error("%s: %s", path, ms_strerror(s));
}

void ms_report_warnings(const char *path, const struct ms_diag *d)
{
	if (d && d->warnings)
		ms_warning("%s: %s", path, d->warning);
}

void ms_json_devices_begin(struct ms_json_devices *j, const char *trace, size_t n_devices)
{
	j->all = j->by_dev = NULL;
	if (n_devices > 1) {
		j->all = cJSON_CreateObject();
		ms_json_schema(j->all);
		cJSON_AddStringToObject(j->all, "trace", trace);
		j->by_dev = cJSON_AddObjectToObject(j->all, "devices");
	}
}

void ms_json_devices_add(struct ms_json_devices *j, uint32_t device, struct cJSON *o)
{
	char key[16];

	if (!o)
		return;
	snprintf(key, sizeof(key), "%u", device);
	if (j->by_dev)
		cJSON_AddItemToObject(j->by_dev, key, o);
	else
		j->all = o;
}

void ms_json_devices_end(struct ms_json_devices *j, int print, const char *verdict, int value)
{
	if (j->all && print) {
		char *str;
		if (j->by_dev && verdict)
			cJSON_AddBoolToObject(j->all, verdict, value);
		if ((str = cJSON_Print(j->all)))
			puts(str);
		cJSON_free(str);
	}
	cJSON_Delete(j->all);
	j->all = j->by_dev = NULL;
}

int ms_ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int ms_path_join(char *out, size_t cap, const char *a, const char *b)
{
	int n = a ? snprintf(out, cap, "%s/%s", a, b) : snprintf(out, cap, "%s", b);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int ms_find_libdir(char *out, size_t cap)
{
	const char *env = getenv("MEMSNAP_LIBDIR");
	char exe[4096];
	ssize_t n;
	char *slash;

	if (env && *env) {
		int k = snprintf(out, cap, "%s", env);
		return k < 0 || (size_t)k >= cap ? -1 : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	/* installed: bin/memsnap and MS_LIBDIR_FROM_BIN; build tree: cli/memsnap and lib/memsnap */
	if (ms_path_join(out, cap, exe, MS_LIBDIR_FROM_BIN) == 0 && access(out, F_OK) == 0)
		return 0;
	if (ms_path_join(out, cap, exe, "../lib/memsnap") == 0 && access(out, F_OK) == 0)
		return 0;
	return -1;
}
