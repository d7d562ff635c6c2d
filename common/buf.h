/* Growable byte buffer: ms_buf_init/_release/_detach, MS_BUF_INIT. */
#ifndef MEMSNAP_COMMON_BUF_H
#define MEMSNAP_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

struct ms_buf {
	char *data;
	size_t len, cap;
};
#define MS_BUF_INIT        \
	{                  \
		NULL, 0, 0 \
	}

ms_status ms_buf_reserve(struct ms_buf *b, size_t extra);
ms_status ms_buf_append(struct ms_buf *b, const void *p, size_t n);
ms_status ms_buf_printf(struct ms_buf *b, const char *fmt, ...) MS_PRINTF(2, 3);
/* Ownership of the bytes moves to the caller (free with ms_free); b is empty afterwards. */
char *ms_buf_detach(struct ms_buf *b, size_t *len);
void ms_buf_release(struct ms_buf *b);

/* PyTorch's format_size (torch-allocator.md §3.5): "2.93 GiB", "1024.00 KiB"; buf >= 32 bytes. */
const char *ms_format_size(char *buf, size_t cap, uint64_t n);

#endif
