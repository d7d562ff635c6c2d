/* Writing a trace as a PyTorch snapshot in JSON form (what `convert x.zst -o y.json` does). */
#ifndef MEMSNAP_PARSE_TORCH_JSON_WRITE_H
#define MEMSNAP_PARSE_TORCH_JSON_WRITE_H

#include <stdio.h>

#include "parse/trace.h"

/*
 * Write t to f as {"segments", "device_traces", "allocator_settings",
 * "external_annotations", "memsnap"}; the last key carries what PyTorch's
 * layout has no place for (devices, producer, limit), and memsnap reads it back.
 * @return MS_OK or MS_ERR_IO
 */
ms_status ms_torch_json_write(const struct ms_trace *t, FILE *f, int pretty);

#endif
