/* Growable byte buffer. */
#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

ms_status ms_buf_reserve(struct ms_buf *b, size_t extra)
{
	if (extra > (size_t)-1 - b->len - 1)
		return MS_ERR_NOMEM;
	if (ms_grow(&b->data, &b->cap, b->len + extra + 1, 1))
		return MS_ERR_NOMEM;
	return MS_OK;
}

ms_status ms_buf_append(struct ms_buf *b, const void *p, size_t n)
{
	if (ms_buf_reserve(b, n))
		return MS_ERR_NOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return MS_OK;
}

ms_status ms_buf_printf(struct ms_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MS_ERR_INVALID_ARG;
	if (ms_buf_reserve(b, (size_t)n))
		return MS_ERR_NOMEM;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return MS_OK;
}

char *ms_buf_detach(struct ms_buf *b, size_t *len)
{
	char *d = b->data;

	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}

void ms_buf_release(struct ms_buf *b)
{
	ms_free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *ms_format_size(char *buf, size_t cap, uint64_t n)
{
	/* PyTorch's format_size: the boundaries are inclusive (1 MiB prints as 1024.00 KiB) */
	if (n <= 1024)
		snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
	else if (n <= 1048576)
		snprintf(buf, cap, "%.2f KiB", (double)n / 1024.0);
	else if (n <= 1073741824)
		snprintf(buf, cap, "%.2f MiB", (double)n / 1048576.0);
	else
		snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
	return buf;
}
