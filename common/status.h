/* Error plumbing shared by the library layers: forwarding macros and diagnostic setters. */
#ifndef MEMSNAP_COMMON_STATUS_H
#define MEMSNAP_COMMON_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#include "memsnap/memsnap.h"

/* Fill d (may be NULL) and return s. */
ms_status ms__diag_set(struct ms_diag *d, ms_status s, int64_t offset, int64_t record,
                       const char *fmt, ...) MS_PRINTF(5, 6);
/* Note a warning in d (may be NULL); only the first text is kept. */
void ms__diag_warn(struct ms_diag *d, const char *fmt, ...) MS_PRINTF(2, 3);
/* Reset d to MS_DIAG_INIT. */
void ms_diag_clear(struct ms_diag *d);

/* Forward any status other than MS_OK. */
#define MS_TRY(expr)                          \
	do {                                  \
		ms_status ms_try_s_ = (expr); \
		if (ms_try_s_ != MS_OK)       \
			return ms_try_s_;     \
	} while (0)

/* Set the diagnostic and return code when cond holds. */
#define MS_FAIL_IF(cond, code, diag, ...)                                         \
	do {                                                                      \
		if (cond)                                                         \
			return ms__diag_set((diag), (code), -1, -1, __VA_ARGS__); \
	} while (0)

/* A broken internal invariant: never for bad input. */
#define MS_BUG(...)                                                             \
	do {                                                                    \
		fprintf(stderr, "memsnap: BUG at %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                   \
		fputc('\n', stderr);                                            \
		abort();                                                        \
	} while (0)

#endif
