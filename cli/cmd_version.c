/* memsnap version [--build-options] */
#include <cjson/cJSON.h>
#include <msgpack.h>
#include <stdio.h>
#include <zlib.h>
#include <zstd.h>

#include "cli/cmds.h"
#include "cli/opts.h"
#include "cli/messages.h"
#include "memsnap/format.h"
#include "memsnap/memsnap.h"
#include "ms_config.h"

static const char *const usage[] = {"memsnap version [--build-options]", NULL};

static void feature(const char *name, int on, const char *detail)
{
	printf("  %-10s: [%s] %s\n", name, on ? " on  " : " OFF ", detail);
}

int cmd_version(int argc, const char **argv)
{
	int build = 0;
	const struct ms_opt opts[] = {
	        MS_OPT_BOOL(0, "build-options", &build, "also list what this build contains"),
	        MS_OPT_END(),
	};

	if (ms_parse_options(argc, argv, opts, usage) != 0)
		ms_usage_error(opts, usage, "too many arguments");
	printf("memsnap %s (trace format %d.%d)\n", MS_VERSION_STRING, MS_FORMAT_MAJOR,
	       MS_FORMAT_MINOR);
	if (!build)
		return MS_EXIT_OK;
	printf("build type: %s%s%s\n", MS_BUILD_TYPE, MS_SANITIZE[0] ? ", sanitizers " : "",
	       MS_SANITIZE);
	feature("cuda", 1,
	        "replay --backend cuda (the CUDA runtime and driver are loaded when it runs)");
	feature("graphviz", MS_HAVE_GRAPHVIZ,
	        MS_HAVE_GRAPHVIZ ? "in-process SVG layout (libgvc)"
	                         : "built without libgvc (MEMSNAP_GRAPHVIZ=OFF or not found)");
	feature("torch", MS_HAVE_TORCH,
	        MS_HAVE_TORCH
	                ? "PyTorch plugins: record's hook (libmemsnap_torch), replay --backend "
	                  "torch (libmemsnap_torch_replay)"
	                : "built without the PyTorch plugins (MEMSNAP_TORCH=OFF or not found; "
	                  "they can be built alone: recorder/torch, replay/torch)");
	feature("recorder", 1, "libmemsnap_recorder and the CUDA interposer (libmemsnap_cuda)");
	printf("  %-10s: %s\n", "zstd", ZSTD_versionString());
	printf("  %-10s: %s\n", "msgpack-c", msgpack_version());
	printf("  %-10s: %s\n", "cJSON", cJSON_Version());
	printf("  %-10s: %s\n", "zlib", zlibVersion());
	return MS_EXIT_OK;
}
