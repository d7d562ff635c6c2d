/* diff's result (explain/diff.h) as the command prints it. */
#ifndef MEMSNAP_CLI_DIFF_TEXT_H
#define MEMSNAP_CLI_DIFF_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "explain/diff.h"

/* One pair of devices, labelled la and lb: top rows a table, sites' frames as --frames asks. */
void ms_diff_print(const struct ms_diff *d, const char *la, const char *lb, size_t top,
                   uint32_t frames);

#endif
