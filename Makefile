# Makefile: the one non-recursive build of ferrum.
#
# Every object lands under $(BUILD)/ (out of tree), with header dependencies from -MMD.
# Kernels are the only code compiled with an ISA's flags: each family's kernels.inc, built
# three times (kernels.scalar.o, kernels.avx2.o, kernels.avx512.o: see "Kernels" below), and
# hand-written kernel files named avx512.c / avx2.c. The library itself targets baseline
# x86-64 and picks kernels at run time (cpuid), so a build made on an AVX-512 machine runs,
# slower, on one without it.
#
#   make            libferrum.a, libferrum.so (libferrum.so.0.1.0, soname libferrum.so.0) and the ferrum CLI
#   make install    headers, libraries and ferrum.pc under $(DESTDIR)$(PREFIX) (default /usr/local)
#   make examples   installs into $(BUILD)/install and builds examples/ against it with pkg-config
#   make test       installs what is missing, builds, runs the default test suite (-j$(nproc))
#   make test-extensive   the suite plus the cases marked extensive
#   make bench      builds and runs the benchmarks (prints the machine beside the numbers)
#   make asan | ubsan     the test suite under AddressSanitizer / UBSan
#   make fuzz       builds the libFuzzer targets (clang) and runs each briefly
#   make run        the main job (see README.md)
#   make clean

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
CFLAGS_COMMON = -std=c11 $(OPT) -g -Wall -Wextra -Wpedantic -Werror -Wno-missing-field-initializers -fvisibility=hidden -fPIC \
                -D_GNU_SOURCE -Iinclude -Isrc -Itests -MMD -MP $(SAN)
LDLIBS  = -ljansson -lxxhash -lpcre2-8 -lutf8proc -lpthread -lm
# the CLI's own (ferrum serve's HTTP server), never the library's
CLI_LDLIBS = -lmicrohttpd
ISA_AVX512 = -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma -mf16c
ISA_AVX2   = -mavx2 -mfma -mf16c

isa_flags = $(if $(filter %/avx512.c,$<),$(ISA_AVX512),$(if $(filter %/avx2.c,$<),$(ISA_AVX2)))

# Kernels: a kernels.inc under folder $(1) becomes one object per ISA, e.g.
# $(BUILD)/src/ops/gemm/kernels.avx512.o, compiled by the pattern rules below.
KERNEL_ISAS := scalar avx2 avx512
kernel_objs = $(foreach f,$(shell find $(1) -name kernels.inc | sort),$(foreach i,$(KERNEL_ISAS),$(BUILD)/$(f:.inc=.$(i).o)))

LIB_SRC   := $(shell find src -name '*.c' | sort)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(call kernel_objs,src)
APP_SRC   := $(shell find apps -name '*.c' | sort)
APP_OBJ   := $(APP_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(wildcard tests/test_*.c)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_LIB_SRC := $(wildcard tests/support/*.c)
TEST_LIB_OBJ := $(TEST_LIB_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
BENCH_LIB_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard bench/support/*.c)) $(call kernel_objs,bench/support)
FUZZ_SRC  := $(wildcard fuzz/fuzz_*.c)

SETUP_STAMP := $(BUILD)/.setup-done

# the library's version is FE_VERSION in ferrum/core.h; the soname carries its major number
VERSION := $(shell sed -n 's/^\#define FE_VERSION "\(.*\)"/\1/p' include/ferrum/core.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
SONAME  := libferrum.so.$(SOMAJOR)
PREFIX  ?= /usr/local
DESTDIR ?=
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

# keep objects between runs (test binaries are built from intermediates)
.SECONDARY:

.PHONY: all test test-extensive bench asan ubsan fuzz fuzz-smoke run clean setup install examples FORCE
all: $(BUILD)/libferrum.a $(BUILD)/libferrum.so $(BUILD)/ferrum

# scripts/setup installs missing Debian packages and fetches the default model (scripts/fetch-model);
# rerun whenever either changes.
$(SETUP_STAMP): scripts/setup scripts/fetch-model
	@mkdir -p $(@D)
	bash scripts/setup
	@touch $@
setup: $(SETUP_STAMP)

$(BUILD)/%.o: %.c | $(SETUP_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(isa_flags) -c $< -o $@

# One kernels.inc, three objects: the ISA's flags and -DFE_BUILD_<ISA>, which device/cpu/vec.h
# checks against the flags (so an object's name always says what it was built for).
$(BUILD)/%.scalar.o: %.inc | $(SETUP_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -DFE_BUILD_SCALAR -x c -c $< -o $@
$(BUILD)/%.avx2.o: %.inc | $(SETUP_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(ISA_AVX2) -DFE_BUILD_AVX2 -x c -c $< -o $@
$(BUILD)/%.avx512.o: %.inc | $(SETUP_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(ISA_AVX512) -DFE_BUILD_AVX512 -x c -c $< -o $@

$(BUILD)/libferrum.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libferrum.so.$(VERSION): $(LIB_OBJ)
	$(CC) -shared $(SAN) -Wl,-soname,$(SONAME) -o $@ $^ $(LDLIBS)
$(BUILD)/libferrum.so: $(BUILD)/libferrum.so.$(VERSION)
	ln -sf libferrum.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf libferrum.so.$(VERSION) $@

$(BUILD)/ferrum.pc: ferrum.pc.in include/ferrum/core.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# PREFIX is written into ferrum.pc, so the .pc is made again for each install
install: $(BUILD)/libferrum.a $(BUILD)/libferrum.so
	@rm -f $(BUILD)/ferrum.pc
	$(MAKE) --no-print-directory $(BUILD)/ferrum.pc PREFIX=$(PREFIX)
	install -d $(DESTDIR)$(PREFIX)/include/ferrum $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/ferrum/*.h $(DESTDIR)$(PREFIX)/include/ferrum/
	install -m 644 $(BUILD)/libferrum.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libferrum.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libferrum.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf libferrum.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libferrum.so
	install -m 644 $(BUILD)/ferrum.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/ferrum.pc

# The examples build as a user's program would: against an installed ferrum, through
# pkg-config only (the rpath lets them run from the build tree). Under a sanitizer build
# they take its flags too, so its runtime comes first in the program, as it must.
EXAMPLE_PREFIX = $(abspath $(BUILD)/install)
$(BUILD)/install/.done: $(BUILD)/libferrum.a $(BUILD)/libferrum.so $(wildcard include/ferrum/*.h) ferrum.pc.in
	$(MAKE) --no-print-directory install PREFIX=$(EXAMPLE_PREFIX) DESTDIR=
	@touch $@
$(BUILD)/examples/%: examples/%.c $(BUILD)/install/.done
	@mkdir -p $(@D)
	$(CC) -std=c11 $(OPT) $(SAN) -Wall -Wextra -Wpedantic -Werror -o $@ $< \
	  $$(PKG_CONFIG_PATH=$(EXAMPLE_PREFIX)/lib/pkgconfig pkg-config --cflags --libs ferrum) \
	  -Wl,-rpath,$(EXAMPLE_PREFIX)/lib
examples: $(EXAMPLE_BIN)

# the study's manifest records the flags the binary was built with
$(BUILD)/apps/study/manifest.o: CFLAGS_COMMON += -DSTUDY_OPT='"$(OPT)"' -DSTUDY_SAN='"$(SAN)"'

$(BUILD)/ferrum: $(APP_OBJ) $(BUILD)/libferrum.a
	$(CC) $(SAN) -o $@ $(APP_OBJ) $(BUILD)/libferrum.a $(CLI_LDLIBS) $(LDLIBS)

# The CLI's objects (all but main) are linked into tests, so test_cli drives it in-process.
CLI_OBJ := $(filter-out $(BUILD)/apps/ferrum/main.o,$(APP_OBJ))
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_LIB_OBJ) $(CLI_OBJ) $(BUILD)/libferrum.a
	$(CC) $(SAN) -o $@ $< $(TEST_LIB_OBJ) $(CLI_OBJ) $(BUILD)/libferrum.a -lcmocka $(CLI_LDLIBS) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BENCH_LIB_OBJ) $(BUILD)/libferrum.a
	$(CC) $(SAN) -o $@ $< $(BENCH_LIB_OBJ) $(BUILD)/libferrum.a $(LDLIBS)

# bench_gemm also times OpenBLAS sgemm, its peer (Debian libopenblas-dev, benchmark only)
$(BUILD)/bench/bench_gemm: $(BUILD)/bench/bench_gemm.o $(BENCH_LIB_OBJ) $(BUILD)/libferrum.a
	$(CC) $(SAN) -o $@ $< $(BENCH_LIB_OBJ) $(BUILD)/libferrum.a $(LDLIBS) -lopenblas

# `make test` runs its steps with -j$(NPROC) whatever -j it was given (CI and new users type
# plain `make test`): the build (library, CLI, tests, the examples against the installed
# library, and the fuzzers with their instrumented library), then the fuzzers' smoke runs side
# by side, then the test binaries, TEST_JOBS at a time, with the examples and check-layers
# (scripts/run-tests shows each one's output whole, in order).
#
# TEST_JOBS, the test binaries side by side, is half the CPUs: each binary already runs a pool
# over every CPU, so on 2 CPUs two at a time took 31 s against 32 s one at a time, for 35%
# more CPU (spinning). Running them beside the fuzz build gained nothing measurable either.
NPROC := $(shell nproc 2>/dev/null || echo 1)
TEST_JOBS := $(shell n=$(NPROC); echo $$(( n / 2 > 1 ? n / 2 : 1 )))
test: $(SETUP_STAMP)
	@$(MAKE) --no-print-directory -j$(NPROC) all $(TEST_BIN) $(FUZZ_BIN)
	@$(MAKE) --no-print-directory examples
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-smoke
	FERRUM_BIN=$(BUILD)/ferrum FERRUM_BUILD=$(BUILD) FERRUM_EXAMPLES=$(BUILD)/examples bash scripts/run-tests -j $(TEST_JOBS) $(TEST_BIN) scripts/test-examples scripts/check-layers

test-extensive: all $(TEST_BIN)
	FERRUM_EXTENSIVE=1 FERRUM_BIN=$(BUILD)/ferrum bash scripts/run-tests -j $(TEST_JOBS) $(TEST_BIN)

bench: all $(BENCH_BIN)
	@for b in $(BENCH_BIN); do echo "== $$b"; $$b || exit 1; done

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,leak -fno-omit-frame-pointer" test

ubsan:
	$(MAKE) BUILD=build-ubsan OPT=-O1 SAN="-fsanitize=undefined -fno-sanitize-recover=all" test

# libFuzzer needs clang; each target runs for a bounded number of inputs from its seed corpus.
# One sub-make builds the instrumented library and an archive of the instrumented CLI objects
# (all but main) that every fuzzer links, so no fuzzer recompiles apps/ (and no race under -j).
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
FUZZ_LIB := build-fuzz/lib/libferrum.a
FUZZ_CLI_LIB := build-fuzz/lib/libferrum-cli.a
FUZZ_STAMP := build-fuzz/lib/.built
$(BUILD)/libferrum-cli.a: $(CLI_OBJ)
	@rm -f $@
	ar rcs $@ $^
ifneq ($(BUILD),build-fuzz/lib)
$(FUZZ_STAMP): $(LIB_SRC) $(APP_SRC) $(shell find src include apps -name '*.h' -o -name '*.inc') | $(SETUP_STAMP)
	$(MAKE) BUILD=build-fuzz/lib CC=clang SAN="-fsanitize=fuzzer-no-link,address,undefined" \
	  SETUP_STAMP=$(SETUP_STAMP) $(FUZZ_LIB) $(FUZZ_CLI_LIB)
	@touch $@
endif
build-fuzz/%: fuzz/%.c $(FUZZ_STAMP)
	clang -std=c11 -g -O1 -D_GNU_SOURCE -Iinclude -Isrc -Itests -fsanitize=fuzzer,address,undefined \
	  -o $@ $< $(FUZZ_CLI_LIB) $(FUZZ_LIB) $(CLI_LDLIBS) $(LDLIBS)
# A short run of every fuzzer over its seed corpus, part of `make test`: the runs go side by
# side under -j, each with its log in build-fuzz/NAME.log; a failing one shows its log's tail.
FUZZ_SMOKE := $(FUZZ_BIN:%=%.smoke)
fuzz-smoke: $(FUZZ_SMOKE)
build-fuzz/%.smoke: build-fuzz/% FORCE
	@n=$*; mkdir -p build-fuzz/corpus/$$n; \
	  if $< -runs=2000 build-fuzz/corpus/$$n fuzz/corpus/$$n > build-fuzz/$$n.log 2>&1; \
	  then echo "fuzz $$n: 2000 inputs, no crash"; \
	  else tail -30 build-fuzz/$$n.log; echo "fuzz $$n: FAILED (build-fuzz/$$n.log)"; exit 1; fi
FORCE:
fuzz: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p build-fuzz/corpus/$$n; \
	  echo "== $$n"; $$f -runs=$${FUZZ_RUNS:-20000} build-fuzz/corpus/$$n fuzz/corpus/$$n || exit 1; done

run: all
	bash scripts/run-main $(BUILD)/ferrum

clean:
	rm -rf build build-asan build-ubsan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
