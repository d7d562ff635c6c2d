/*
 * memsnap public header: version, status codes and diagnostics.
 *
 * Every fallible function returns ms_status. Results come back through
 * out-parameters that are written only on MS_OK; the detail of a failure
 * (message, byte offset, record number) goes into an optional struct ms_diag.
 */
#ifndef MEMSNAP_MEMSNAP_H
#define MEMSNAP_MEMSNAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MS_VERSION_MAJOR  0
#define MS_VERSION_MINOR  1
#define MS_VERSION_PATCH  0
#define MS_VERSION_STRING "0.1.0"
#define MS_VERSION_NUMBER (MS_VERSION_MAJOR * 10000 + MS_VERSION_MINOR * 100 + MS_VERSION_PATCH)

#if defined(__GNUC__)
#define MS_API          __attribute__((visibility("default")))
#define MS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MS_API
#define MS_PRINTF(f, a)
#endif

/*
 * Status codes. Values are explicit and never reused; a retired code stays
 * as MS_ERR_OBSOLETE_<n>.
 */
#define MS_STATUS_MAP(XX)                                \
	XX(OK, 0, "success")                             \
	XX(ERR_NOMEM, 1, "out of memory")                \
	XX(ERR_IO, 2, "input/output error")              \
	XX(ERR_FORMAT, 3, "malformed input")             \
	XX(ERR_VERSION, 4, "unsupported format version") \
	XX(ERR_TRUNCATED, 5, "truncated input")          \
	XX(ERR_UNSUPPORTED, 6, "unsupported feature")    \
	XX(ERR_INVALID_ARG, 7, "invalid argument")       \
	XX(ERR_BACKEND, 8, "backend failure")            \
	XX(ERR_COMPRESSION, 9, "compression error")      \
	XX(ERR_LIMIT, 10, "input exceeds a limit")       \
	XX(ERR_UNSAFE, 11, "refused to execute code in input")

enum ms_status {
#define XX(name, val, str) MS_##name = val,
	MS_STATUS_MAP(XX)
#undef XX
};
typedef enum ms_status ms_status;

/* Text of a status ("truncated input"); never NULL. */
MS_API const char *ms_strerror(ms_status s);
/* Name of a status ("ERR_TRUNCATED"); never NULL. */
MS_API const char *ms_status_name(ms_status s);
/* MS_VERSION_NUMBER of the library actually linked. */
MS_API unsigned ms_version_number(void);

/*
 * The detail of a failure. Functions that take one fill it on error (and
 * may leave warnings on success). Zero-initialise with MS_DIAG_INIT.
 * offset and record are -1 when unknown.
 */
struct ms_diag {
	char msg[512];
	int64_t offset;    /* byte offset in the input, or -1 */
	int64_t record;    /* record / event / entry number, or -1 */
	unsigned warnings; /* number of warnings noted (e.g. missing END) */
	char warning[512]; /* the first warning */
};
#define MS_DIAG_INIT            \
	{                       \
		{0}, -1, -1, 0, \
		{               \
			0       \
		}               \
	}

#ifdef __cplusplus
}
#endif

#endif
