# cuscope build. Plain `make` builds build/bin/cuscope and build/lib/cuscope/libcuscope.so.
# Options: DEBUG=1 (no optimisation), ASAN=1 (sanitized viewer and unit tests), V=1 (echo commands).

CC        ?= gcc
CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
BUILD     ?= build

ifeq ($(V),1)
Q :=
else
Q := @
endif

OPT := -O2
ifeq ($(DEBUG),1)
OPT := -O0
endif

WARN     := -Wall -Wextra -Wshadow -Wno-missing-field-initializers
CPPFLAGS := -Iinclude -isystem $(CUDA_HOME)/include -D_GNU_SOURCE
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 $(WARN) -fno-omit-frame-pointer
# WERROR=1 (CI) turns every warning into an error.
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif
SAN      :=
ifeq ($(ASAN),1)
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
endif

NCURSES_CFLAGS := $(shell pkg-config --cflags ncursesw 2>/dev/null)
NCURSES_LIBS   := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
# Everything the viewer library needs at link time (CLI, unit tests, benchmarks).
VIEWER_LIBS    := $(NCURSES_LIBS) -lzstd -lz -liberty -lstdc++ -lpthread -lm

VERSION := 0.1.0

# Modules: the collector links only base + wire; the viewer links everything else.
BASE_SRC      := $(wildcard src/base/*.c)
WIRE_SRC      := $(wildcard src/wire/*.c)
COLLECTOR_SRC := $(wildcard src/collector/*.c)
VIEWER_SRC    := $(BASE_SRC) $(WIRE_SRC) $(wildcard src/store/*.c src/model/*.c src/target/*.c src/ui/*.c src/dump/*.c)
CLI_SRC       := $(wildcard src/cli/*.c)

# The collector never dies on allocation failure, so it links no dying allocator and no viewer logging.
COLLECTOR_BASE := src/base/clock.c src/base/crc32.c src/base/elfsym.c src/base/rank.c src/base/safefs.c
COLLECTOR_OBJ := $(patsubst src/%.c,$(BUILD)/pic/%.o,$(COLLECTOR_BASE) $(WIRE_SRC) $(COLLECTOR_SRC))
VIEWER_OBJ    := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(VIEWER_SRC))
CLI_OBJ       := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(CLI_SRC))

CLI       := $(BUILD)/bin/cuscope
COLLECTOR := $(BUILD)/lib/cuscope/libcuscope.so
VIEWER_LIB := $(BUILD)/obj/libviewer.a

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
PROG_SRC  := $(wildcard tests/progs/*.c)
PROG_BIN  := $(patsubst tests/progs/%.c,$(BUILD)/tests/progs/%,$(PROG_SRC))

.PHONY: all deps test test-unit demo bench dist install clean format fuzz
PYHOOK := $(BUILD)/lib/cuscope/python/sitecustomize.py
all: $(CLI) $(COLLECTOR) $(PYHOOK) $(BUILD)/share/man/man1/cuscope.1

# Python hook (GC ranges) shipped beside the collector; launch mode puts its folder on PYTHONPATH.
$(PYHOOK): src/collector/python/sitecustomize.py
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

$(BUILD)/pic/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [collector] $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -DCUSCOPE_COLLECTOR -MMD -MP -c $< -o $@

# cupti_profiler_host.h includes C++'s <string> (see src/collector/cxxshim/string).
$(BUILD)/pic/collector/pmconfig.o $(BUILD)/pic-san/collector/pmconfig.o: CPPFLAGS += -isystem src/collector/cxxshim

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) $(CFLAGS) $(SAN) -DCUSCOPE_VERSION='"$(VERSION)"' -MMD -MP -c $< -o $@

$(VIEWER_LIB): $(VIEWER_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(COLLECTOR): $(COLLECTOR_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) -shared -o $@ $^ -Wl,-z,defs -Wl,-soname,libcuscope.so -lpthread -ldl -lrt '-Wl,-rpath,$$ORIGIN/..' -Wl,--disable-new-dtags

# The collector with the sanitizers (ASAN=1 builds), for tests that preload libasan into their
# target and point CUSCOPE_COLLECTOR at it (t214); not the one the CLI ships with.
SAN_COLLECTOR := $(BUILD)/lib/cuscope-san/libcuscope.so
SAN_COLLECTOR_OBJ := $(patsubst src/%.c,$(BUILD)/pic-san/%.o,$(COLLECTOR_BASE) $(WIRE_SRC) $(COLLECTOR_SRC))
$(BUILD)/pic-san/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [collector+san] $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -fPIC -fvisibility=hidden -DCUSCOPE_COLLECTOR -MMD -MP -c $< -o $@
$(SAN_COLLECTOR): $(SAN_COLLECTOR_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) -shared $(SAN) -o $@ $^ -lpthread -ldl -lrt

# $ORIGIN/../lib finds the libraries `make dist` copies beside the binary.
$(CLI): $(CLI_OBJ) $(VIEWER_LIB) $(COLLECTOR) | $(PYHOOK)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD $@")
	$(Q)$(CC) $(SAN) -o $@ $(CLI_OBJ) $(VIEWER_LIB) $(VIEWER_LIBS) '-Wl,-rpath,$$ORIGIN/../lib' -Wl,--disable-new-dtags

$(BUILD)/share/man/man1/cuscope.1: contrib/cuscope.1
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

# Unit tests link the viewer library and, for collector parts, the PIC objects.
# Collector parts that stand alone (no process-wide state) are unit-tested directly.
COLLECTOR_UNIT_OBJ := $(BUILD)/pic/collector/ring.o $(BUILD)/pic/collector/strtab.o \
	$(BUILD)/pic/collector/sendq.o $(BUILD)/pic/collector/nvtxname.o \
	$(BUILD)/pic/collector/nvtxpayload.o $(BUILD)/pic/collector/fd.o \
	$(BUILD)/pic/collector/pmconfig.o $(BUILD)/pic/collector/gpulock.o
$(BUILD)/tests/test_%: tests/unit/test_%.c $(VIEWER_LIB) $(COLLECTOR_UNIT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) $(CFLAGS) $(SAN) -o $@ $< $(VIEWER_LIB) \
		$(COLLECTOR_UNIT_OBJ) \
		-lcmocka $(VIEWER_LIBS) -ldl

# The CLI's own logic (the options table) is unit-tested from its objects, main.o left out.
CLI_LIB := $(BUILD)/obj/libcli.a
$(CLI_LIB): $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/tests/test_options $(BUILD)/tests/test_captures: $(BUILD)/tests/test_%: tests/unit/test_%.c $(CLI_LIB) $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) $(CFLAGS) $(SAN) -o $@ $< $(CLI_LIB) $(VIEWER_LIB) \
		-lcmocka $(VIEWER_LIBS) -ldl

# Test target programs: plain C with NVTX3 headers (header-only) and threads.
$(BUILD)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -o $@ $< -lpthread -ldl

# The stand-in libcupti of the CPU-only CUPTI tests (t210-t214), loaded through CUSCOPE_CUPTI_PATH.
# The stand-in NVML of the GPU metrics fallback test (t293), found by name through LD_LIBRARY_PATH.
FAKE_NVML := $(BUILD)/tests/support/nvml/libnvidia-ml.so.1
$(FAKE_NVML): tests/support/fake_nvml.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -o $@ $<
FAKE_CUPTI := $(BUILD)/tests/support/libfakecupti.so
$(FAKE_CUPTI): tests/support/fake_cupti.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread -ldl

# Shared objects for test programs written in Python (ctypes), e.g. NVTX calls.
PROG_LIB_SRC := $(wildcard tests/progs/lib/*.c)
PROG_LIB_BIN := $(patsubst tests/progs/lib/%.c,$(BUILD)/tests/progs/lib/%.so,$(PROG_LIB_SRC))
$(BUILD)/tests/progs/lib/%.so: tests/progs/lib/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O1 -g -Wall -Wextra -shared -fPIC -o $@ $< -ldl

# Benchmarks: a producer target and the in-process pipeline harness (uses target/'s launch and tap).
BENCH_BIN := $(BUILD)/tests/bench/nvtx_producer $(BUILD)/tests/bench/bench_pipeline $(BUILD)/tests/bench/cpu_work
$(BUILD)/tests/bench/cpu_work: tests/bench/cpu_work.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O2 -g -Wall -Wextra -o $@ $< -lpthread
$(BUILD)/tests/bench/nvtx_producer: tests/bench/nvtx_producer.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -O2 -g -Wall -Wextra -o $@ $< -lpthread -ldl
$(BUILD)/tests/bench/bench_pipeline: tests/bench/bench_pipeline.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -o $@ $^ $(VIEWER_LIBS)

# libFuzzer harnesses (tests/fuzz/fuzz_*.c) on the viewer library built with clang, ASan and UBSan in
# build-fuzz/, then tests/fuzz/run.sh runs each for FUZZ_SECONDS (default 60) on seeds from real captures.
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
fuzz: all tests-build
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=build-fuzz 'SAN=$(FUZZ_SAN)' build-fuzz/obj/libviewer.a
	$(Q)for h in capture wire elfsym relay trigger; do \
		clang $(CPPFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer -o build-fuzz/fuzz_$$h tests/fuzz/fuzz_$$h.c \
			build-fuzz/obj/libviewer.a $(VIEWER_LIBS) || exit 1; \
	done
	$(Q)./tests/fuzz/run.sh

# The UI frame benchmark (tests/bench/run.sh builds it on demand).
$(BUILD)/tests/bench/ui_bench: tests/bench/ui_bench.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) $(CFLAGS) -o $@ $^ $(VIEWER_LIBS)

# The ranks pane's recomputation cost (stats_ranks_compute on a store of 2 M events over 8 ranks).
$(BUILD)/tests/bench/ranks_bench: tests/bench/ranks_bench.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ $(VIEWER_LIBS)

# The cost of inferring steps (steps_infer on a store of 1 M kernels without NVTX).
$(BUILD)/tests/bench/steps_bench: tests/bench/steps_bench.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $^ $(VIEWER_LIBS)

deps:
	$(Q)./tests/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all tests-build
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan ASAN=1 $(patsubst $(BUILD)/%,build-asan/%,$(UNIT_BIN)) build-asan/bin/cuscope \
		build-asan/lib/cuscope-san/libcuscope.so
	$(Q)./tests/run.sh

# CUDA test programs for tests/gpu (built here with nvcc, run on the GPU host); skipped without nvcc.
.PHONY: tests-gpu-build
tests-gpu-build:
	$(Q)./tests/gpu/build.sh

# Reads a capture's sampled stacks (GPU-host Python perf-trampoline check); needs no CUDA.
$(BUILD)/tests/stack_grep: tests/gpu/stack_grep.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(VIEWER_LIB) $(VIEWER_LIBS) -ldl

# Prints a capture's cost frames (the overhead-budget test and benchmark).
$(BUILD)/tests/cost_frames: tests/runtime/cost_frames.c $(VIEWER_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(VIEWER_LIB) $(VIEWER_LIBS)

tests-build: $(UNIT_BIN) $(PROG_BIN) $(FAKE_CUPTI) $(FAKE_NVML) $(PROG_LIB_BIN) $(BUILD)/tests/stack_grep $(BUILD)/tests/cost_frames tests-gpu-build

demo: deps
	$(Q)$(MAKE) --no-print-directory all tests-build
	$(Q)./contrib/demo.sh

bench: all tests-build $(BENCH_BIN)
	$(Q)./tests/bench/run.sh

dist: all
	$(Q)./contrib/make-dist.sh $(BUILD) dist/cuscope

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/cuscope $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/cuscope
	install -m 0755 $(COLLECTOR) $(DESTDIR)$(PREFIX)/lib/cuscope/libcuscope.so
	install -d $(DESTDIR)$(PREFIX)/lib/cuscope/python
	install -m 0644 $(PYHOOK) $(DESTDIR)$(PREFIX)/lib/cuscope/python/sitecustomize.py
	install -m 0644 contrib/cuscope.1 $(DESTDIR)$(PREFIX)/share/man/man1/cuscope.1
	install -d $(DESTDIR)$(PREFIX)/share/cuscope/themes
	install -m 0644 themes/*.theme $(DESTDIR)$(PREFIX)/share/cuscope/themes/ 2>/dev/null || true

format:
	clang-format -i $(shell find src include tests -name '*.[ch]')

clean:
	rm -rf build build-asan dist

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
