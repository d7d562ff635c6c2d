# Convenience targets; the build itself is CMake (CMakeLists.txt).
#   make          build (build/cli/memsnap); installs nothing
#   make demo     install what is missing, build, run what the README's quick start runs on a
#                 bundled real snapshot
#   make test     install what is missing, build (warnings as errors), run the tests,
#                 then build again with ASan+UBSan and run them there too
#   make install  put memsnap and its libraries under PREFIX (default /usr/local)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
DEMO_TRACE ?= testdata/snapshots/dynamic_oom.pickle
PREFIX ?= /usr/local
MEMSNAP = ./$(BUILD)/cli/memsnap

.PHONY: all deps test-deps build install demo test test-fast test-asan format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

# the tests also open the HTML report in Chromium, where it can be installed
test-deps:
	@bash scripts/install-deps.sh --test

build:
	@cmake -S . -B $(BUILD) -DMEMSNAP_WERROR=ON >$(BUILD).configure.log 2>&1 || \
		(cat $(BUILD).configure.log; echo "make deps installs what is missing (Debian, Ubuntu)"; exit 1)
	@grep -A15 "feature summary" $(BUILD).configure.log | sed 's/^-- //'
	@cmake --build $(BUILD) -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# what a user runs on a snapshot of a job that died of an OOM (README, "Quick start")
demo: deps
	@$(MAKE) --no-print-directory build
	@echo "== memsnap info $(DEMO_TRACE)"
	@$(MEMSNAP) info $(DEMO_TRACE)
	@echo
	@echo "== memsnap replay $(DEMO_TRACE)   (why did it run out of memory?)"
	@$(MEMSNAP) replay $(DEMO_TRACE)
	@echo
	@echo "== memsnap stats $(DEMO_TRACE)   (where does the memory go?)"
	@$(MEMSNAP) stats $(DEMO_TRACE)
	@echo
	@echo "== memsnap explain $(DEMO_TRACE)   (what is the peak made of, what grows, what to change?)"
	@$(MEMSNAP) explain $(DEMO_TRACE)
	@echo
	@echo "== memsnap whatif $(DEMO_TRACE)   (which setting, how much memory, would have avoided it?)"
	@$(MEMSNAP) whatif $(DEMO_TRACE)
	@echo
	@echo "== memsnap render $(DEMO_TRACE) -o $(BUILD)/report.html   (the postmortem page)"
	@$(MEMSNAP) render $(DEMO_TRACE) -o $(BUILD)/report.html
	@echo "report: $(CURDIR)/$(BUILD)/report.html"

test-fast: test-deps
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: test-deps
	@cmake -S . -B $(ASAN_BUILD) -DMEMSNAP_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
		-DMEMSNAP_SANITIZE=address,undefined >$(ASAN_BUILD).configure.log 2>&1 || (cat $(ASAN_BUILD).configure.log; exit 1)
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@if command -v clang-format >/dev/null; then \
		clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && echo "format: clean"; \
	else echo "format: clang-format not installed, check skipped"; fi

test: format-check test-fast test-asan

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BUILD).configure.log $(ASAN_BUILD).configure.log
