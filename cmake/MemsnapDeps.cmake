# Dependency options (AUTO/ON/OFF, curl's pattern), warnings, sanitizers and the feature summary.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)

# ms_dependency_option(NAME DOC DEFAULT): a tri-state cache option.
macro(ms_dependency_option name doc default)
	set(${name} ${default} CACHE STRING "${doc}: AUTO, ON or OFF")
	set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
	string(TOUPPER "${${name}}" ${name})
	if(NOT ${name} MATCHES "^(AUTO|ON|OFF)$")
		message(FATAL_ERROR "${name} must be AUTO, ON or OFF (got '${${name}}')")
	endif()
endmacro()

# _ms_resolve(NAME FOUND WHAT): ON with the dependency missing is fatal, AUTO falls back to the stub.
function(_ms_resolve name found what)
	if(${name} STREQUAL "OFF")
		set(MS_HAVE_${what} 0 PARENT_SCOPE)
	elseif(found)
		set(MS_HAVE_${what} 1 PARENT_SCOPE)
	elseif(${name} STREQUAL "ON")
		message(FATAL_ERROR "${name}=ON but ${what} was not found")
	else()
		message(STATUS "${what} not found: building without it (${name}=AUTO)")
		set(MS_HAVE_${what} 0 PARENT_SCOPE)
	endif()
endfunction()

macro(ms_find_dependencies)
	find_package(zstd CONFIG REQUIRED)
	if(TARGET zstd::libzstd_shared)
		set(MS_ZSTD_TARGET zstd::libzstd_shared)
	else()
		set(MS_ZSTD_TARGET zstd::libzstd_static)
	endif()
	find_package(msgpack CONFIG QUIET)
	if(TARGET msgpackc)
		set(MS_MSGPACK_TARGET msgpackc)
	else()
		pkg_check_modules(MSGPACK REQUIRED IMPORTED_TARGET msgpack)
		set(MS_MSGPACK_TARGET PkgConfig::MSGPACK)
	endif()
	pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
	# zlib only reads .pickle.gz snapshots (README: Dependencies).
	find_package(ZLIB REQUIRED)

	if(NOT MEMSNAP_GRAPHVIZ STREQUAL "OFF")
		pkg_check_modules(GVC QUIET IMPORTED_TARGET libgvc libcgraph)
	endif()
	_ms_resolve(MEMSNAP_GRAPHVIZ "${GVC_FOUND}" GRAPHVIZ)

	set(_cuda_found FALSE)
	if(NOT MEMSNAP_CUDA STREQUAL "OFF")
		find_package(CUDAToolkit QUIET)
		set(_cuda_found ${CUDAToolkit_FOUND})
	endif()
	_ms_resolve(MEMSNAP_CUDA "${_cuda_found}" CUDA)

	# the recorder's PyTorch hook needs PyTorch's headers (asked of python3) and CUDA's
	set(_torch_found FALSE)
	if(NOT MEMSNAP_TORCH STREQUAL "OFF" AND MS_HAVE_CUDA)
		include(${CMAKE_CURRENT_SOURCE_DIR}/recorder/torch/FindTorchPaths.cmake)
		ms_find_torch_paths(_torch_found)
	endif()
	_ms_resolve(MEMSNAP_TORCH "${_torch_found}" TORCH)
endmacro()

macro(ms_set_warnings)
	set(MS_WARNINGS -Wall -Wextra -Wshadow -Wundef -Wstrict-prototypes -Wmissing-prototypes
		-Wformat=2 -Wno-format-nonliteral -Wpointer-arith -Wvla)
	if(MEMSNAP_WERROR)
		list(APPEND MS_WARNINGS -Werror)
	endif()
endmacro()

macro(ms_set_sanitizers)
	if(MEMSNAP_SANITIZE)
		add_compile_options(-fsanitize=${MEMSNAP_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
		add_link_options(-fsanitize=${MEMSNAP_SANITIZE})
	endif()
endmacro()

# ms_target(TARGET): project-wide compile settings for one of our targets.
function(ms_target t)
	target_compile_options(${t} PRIVATE ${MS_WARNINGS})
	target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/include
		${PROJECT_BINARY_DIR}/generated)
	target_compile_definitions(${t} PRIVATE _POSIX_C_SOURCE=200809L)
endfunction()

# Each layer (common, format, parse, analysis, replay, render, cli) has an include root of its
# own, a folder holding one link to the layer's folder, so `#include "parse/trace.h"` finds the
# header only where the target reads that layer: a layer's library gives its root to those that
# link it (ms_layer), and every link is PRIVATE, so the build, not discipline, keeps the layers
# one way (docs/DESIGN.md, "Layers").
function(ms_layer_root dir out)
	set(root ${PROJECT_BINARY_DIR}/layers/${dir})
	if(NOT EXISTS ${root}/${dir})
		file(MAKE_DIRECTORY ${root})
		file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${root}/${dir} SYMBOLIC)
	endif()
	set(${out} ${root} PARENT_SCOPE)
endfunction()

# The library of layer dir: its own headers for itself and for the targets that link it.
function(ms_layer lib dir)
	ms_layer_root(${dir} root)
	target_include_directories(${lib} PUBLIC ${root})
endfunction()

# A target that reads the headers of these layers without linking their libraries (the
# recorder, built from format's and common's sources; the command line's own headers).
function(ms_reads t)
	foreach(dir ${ARGN})
		ms_layer_root(${dir} root)
		target_include_directories(${t} PRIVATE ${root})
	endforeach()
endfunction()

function(ms_feature_summary)
	message(STATUS "")
	message(STATUS "memsnap ${PROJECT_VERSION} feature summary")
	message(STATUS "  build type      : ${CMAKE_BUILD_TYPE}")
	message(STATUS "  zstd            : ${zstd_VERSION}")
	message(STATUS "  msgpack-c       : ${msgpack_VERSION}${MSGPACK_VERSION}")
	message(STATUS "  cJSON           : ${CJSON_VERSION}")
	message(STATUS "  zlib            : ${ZLIB_VERSION_STRING}")
	message(STATUS "  graphviz (svg)  : ${MS_HAVE_GRAPHVIZ}  (MEMSNAP_GRAPHVIZ=${MEMSNAP_GRAPHVIZ})")
	message(STATUS "  cuda            : ${MS_HAVE_CUDA}  (MEMSNAP_CUDA=${MEMSNAP_CUDA})")
	message(STATUS "  torch (record)  : ${MS_HAVE_TORCH}  (MEMSNAP_TORCH=${MEMSNAP_TORCH}) ${MS_TORCH_VERSION}")
	message(STATUS "  tests           : ${MEMSNAP_BUILD_TESTS}")
	message(STATUS "  fuzz (libFuzzer): ${MEMSNAP_FUZZ}")
	message(STATUS "  sanitizers      : ${MEMSNAP_SANITIZE}")
	message(STATUS "  warnings=errors : ${MEMSNAP_WERROR}")
	message(STATUS "")
endfunction()
