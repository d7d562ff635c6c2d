# Convenience targets; the build itself is CMake (CMakeLists.txt).
#   make demo   install what is missing, build, run memsnap on a bundled real trace
#   make test   install what is missing, build (warnings as errors), run the tests,
#               then build again with ASan+UBSan and run them there too
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
DEMO_TRACE ?= testdata/snapshots/dynamic_oom.pickle

.PHONY: all deps test-deps build demo test test-fast test-asan format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

# the tests also open the HTML report in Chromium, where it can be installed
test-deps:
	@bash scripts/install-deps.sh --test

build: deps
	@cmake -S . -B $(BUILD) -DMEMSNAP_WERROR=ON >$(BUILD).configure.log 2>&1 || (cat $(BUILD).configure.log; exit 1)
	@grep -A15 "feature summary" $(BUILD).configure.log | sed 's/^-- //'
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@echo "== memsnap info $(DEMO_TRACE)"
	@./$(BUILD)/cli/memsnap info $(DEMO_TRACE)
	@echo
	@echo "== memsnap stats $(DEMO_TRACE)"
	@./$(BUILD)/cli/memsnap stats $(DEMO_TRACE)
	@echo
	@echo "== memsnap convert $(DEMO_TRACE) -o $(BUILD)/demo.zst"
	@./$(BUILD)/cli/memsnap convert $(DEMO_TRACE) -o $(BUILD)/demo.zst
	@./$(BUILD)/cli/memsnap info $(BUILD)/demo.zst | grep -E 'format|bytes/event'
	@echo
	@echo "== memsnap verify --limit 13061062656 $(DEMO_TRACE)   (the job ran under a memory fraction)"
	@./$(BUILD)/cli/memsnap verify --limit 13061062656 $(DEMO_TRACE)
	@echo
	@echo "== memsnap replay --limit 13061062656 $(DEMO_TRACE)"
	@./$(BUILD)/cli/memsnap replay --limit 13061062656 $(DEMO_TRACE)
	@echo
	@echo "== memsnap replay --limit 9GiB $(DEMO_TRACE)   (what if the limit had been lower?)"
	@./$(BUILD)/cli/memsnap replay --limit 9GiB $(DEMO_TRACE) || echo "(exit $$?: the replay ended in an OOM)"
	@echo
	@echo "== memsnap whatif --limit 13061062656 $(DEMO_TRACE)   (which setting avoids the OOM?)"
	@./$(BUILD)/cli/memsnap whatif --limit 13061062656 $(DEMO_TRACE)
	@echo
	@echo "== memsnap render --limit 13061062656 $(DEMO_TRACE) -o $(BUILD)/demo-oom.svg   (the segments at the OOM)"
	@./$(BUILD)/cli/memsnap render --limit 13061062656 $(DEMO_TRACE) --format txt | head -12
	@./$(BUILD)/cli/memsnap render --limit 13061062656 $(DEMO_TRACE) -o $(BUILD)/demo-oom.svg
	@echo
	@echo "== memsnap render --limit 13061062656 $(DEMO_TRACE) -o $(BUILD)/report.html   (the postmortem page)"
	@./$(BUILD)/cli/memsnap render --limit 13061062656 $(DEMO_TRACE) -o $(BUILD)/report.html
	@echo "report: $(CURDIR)/$(BUILD)/report.html (and the OOM's segments: $(CURDIR)/$(BUILD)/demo-oom.svg)"

test-fast: test-deps build
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
