/*
 * The user's own categories: NAME=REGEX, each a POSIX extended regular expression searched in
 * each frame of an allocation's stack, written "file:line function" (a native frame without a
 * file: its function alone). An allocation belongs to the first category, in the order given,
 * one of whose frames the expression matches; a user's category wins over memsnap's own rules.
 * Given as --category NAME=REGEX (repeatable) and --categories FILE (a NAME=REGEX a line; blank
 * lines and lines starting with # are skipped).
 */
#ifndef MEMSNAP_ANALYSIS_USER_CATS_H
#define MEMSNAP_ANALYSIS_USER_CATS_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

struct ms_symtab;

#define MS_USER_CATS_MAX     32
#define MS_USER_CAT_NAME_MAX 64

struct ms_user_cats;

/* @return an empty set, or NULL out of memory. */
struct ms_user_cats *ms_user_cats_new(void);
void ms_user_cats_free(struct ms_user_cats *u);

/*
 * Adds "NAME=REGEX". @return MS_OK, MS_ERR_NOMEM, or MS_ERR_INVALID_ARG with err saying what is
 * wrong (no '=', an empty or duplicate name, a name with other than letters, digits, '_', '-' and
 * '.', too many categories, an expression regcomp refuses).
 */
ms_status ms_user_cats_add(struct ms_user_cats *u, const char *spec, char *err, size_t cap);
/* Adds each line of a file. @return as ms_user_cats_add (err names the file and the line), or
 * MS_ERR_IO where it cannot be read. */
ms_status ms_user_cats_load(struct ms_user_cats *u, const char *path, char *err, size_t cap);

size_t ms_user_cats_count(const struct ms_user_cats *u);
const char *ms_user_cats_name(const struct ms_user_cats *u, size_t i);
const char *ms_user_cats_pattern(const struct ms_user_cats *u, size_t i);

/*
 * The category of a stack of y: its index, or -1 (none matches, or stack 0). Callers that ask of
 * many allocations keep the answer per stack (ms_user_cats_of_stacks).
 */
int ms_user_cats_match(const struct ms_user_cats *u, const struct ms_symtab *y, uint32_t stack);
/* Each stack's category (indexed by stack id) into a new array of ms_symtab_nstacks(y) + 1 the
 * caller frees, or NULL out of memory. */
int8_t *ms_user_cats_of_stacks(const struct ms_user_cats *u, const struct ms_symtab *y);

/*
 * The bytes and allocations of sites (stack, bytes, count) by category: bytes[i], count[i] for
 * category i, and at index ms_user_cats_count(u) those none matches.
 */
struct ms_stats_site;
void ms_user_cats_sum_sites(const struct ms_user_cats *u, const struct ms_symtab *y,
                            const struct ms_stats_site *sites, size_t n,
                            uint64_t bytes[MS_USER_CATS_MAX + 1],
                            uint64_t count[MS_USER_CATS_MAX + 1]);

#endif
