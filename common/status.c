/* Names and texts of the status codes, expanded from MS_STATUS_MAP; diagnostic helpers. */
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ms_strerror(ms_status s)
{
	switch (s) {
#define XX(name, val, str) \
	case MS_##name:    \
		return str;
		MS_STATUS_MAP(XX)
#undef XX
	}
	return "unknown status";
}

const char *ms_status_name(ms_status s)
{
	switch (s) {
#define XX(name, val, str) \
	case MS_##name:    \
		return #name;
		MS_STATUS_MAP(XX)
#undef XX
	}
	return "UNKNOWN";
}

unsigned ms_version_number(void)
{
	return MS_VERSION_NUMBER;
}

ms_status ms__diag_set(struct ms_diag *d, ms_status s, int64_t offset, int64_t record,
                       const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return s;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	d->offset = offset;
	d->record = record;
	return s;
}

void ms__diag_warn(struct ms_diag *d, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return;
	if (d->warnings++ == 0) {
		va_start(ap, fmt);
		vsnprintf(d->warning, sizeof(d->warning), fmt, ap);
		va_end(ap);
	}
}

void ms_diag_clear(struct ms_diag *d)
{
	if (!d)
		return;
	memset(d, 0, sizeof(*d));
	d->offset = -1;
	d->record = -1;
}
