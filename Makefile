# codecell — GNU make + pkg-config.  `make run` and `make test` set up what
# is missing first (scripts/setup.sh, idempotent).

CC ?= cc
BUILD ?= build
PKGS := libseccomp jansson libmicrohttpd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libmicrohttpd is loaded by `codecell serve` when it starts (src/http/mhd.c),
# not linked: its dependencies would slow every other command down.
PKG_LIBS := $(shell pkg-config --libs jansson 2>/dev/null) -lpthread
# libseccomp compiles the filters at build time (tools/gen-seccomp) and is
# linked into the tests; the codecell binary does not load it.
SECCOMP_LIBS := $(shell pkg-config --libs libseccomp 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wvla -Wno-format-nonliteral
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
OPT ?= -O2 -g
CFLAGS_ALL := -std=gnu11 -D_GNU_SOURCE $(OPT) $(WARN) $(HARDEN) -Isrc -I$(BUILD)/gen \
              $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS_ALL := -pie -Wl,-z,relro,-z,now $(EXTRA_LDFLAGS)
LIBS := $(PKG_LIBS) -lm

LIB_SRC := $(filter-out src/sandbox/seccomp_policy.c src/sandbox/cell.c,$(wildcard src/util/*.c src/sandbox/*.c src/session/*.c src/engine/*.c))
POLICY_OBJ := $(BUILD)/src/sandbox/seccomp_policy.o
CLI_SRC := $(wildcard src/cli/*.c src/http/*.c src/api/*.c src/e2b/*.c src/mcp/*.c src/agent/*.c) src/main.c
GEN_SRC := $(BUILD)/gen/kernels.c
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/kernels.o $(BUILD)/gen/seccomp_bpf.o \
	   $(BUILD)/gen/site_py.o
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
KERNELS := $(wildcard kernels/*.py kernels/*.js)

UNIT_SRC := $(wildcard tests/unit/test-*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%)
SHIM_SRC := $(wildcard tests/shims/*.c)
SHIM_LIB := $(SHIM_SRC:tests/shims/%.c=$(BUILD)/shims/%.so)

.PHONY: all setup run demo test sanitize bench soak fuzz format-check format clean surface surface-update \
	security compare compat

all: $(BUILD)/codecell $(UNIT_BIN) $(HELPER_BIN) $(SHIM_LIB)

$(BUILD)/codecell: $(CLI_OBJ) $(BUILD)/libcodecell.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/libcodecell.a: $(LIB_OBJ)
	ar rcs $@ $^

# Each object depends on the headers it includes, as the compiler lists
# them (-MMD; -MP keeps a deleted header from breaking the build).  The
# generated kernels.h is order-only: it must exist before the first
# compile, and the .d files name it afterwards where it is included.
DEPFLAGS = -MMD -MP
$(BUILD)/%.o: %.c | $(BUILD)/gen/kernels.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

# The playground's files are embedded (.incbin) by src/api/web.c.
$(BUILD)/src/api/web.o: $(wildcard web/*)

# The in-sandbox drivers are embedded in the binary: one file to install.
# So is cell.so, which a warm pool's template loads to fork cells.
# One run of embed.sh makes both files: a grouped target (&:, GNU make
# 4.3), or `make -j` ran the recipe twice at once and one run's mv found
# the other's .tmp gone.
$(BUILD)/gen/kernels.c $(BUILD)/gen/kernels.h &: $(KERNELS) $(BUILD)/cell.so scripts/embed.sh
	@mkdir -p $(BUILD)/gen
	sh scripts/embed.sh $(BUILD)/gen/kernels $(KERNELS) $(BUILD)/cell.so

# cell.so runs inside the template (a Python process), so it is built
# without the sanitizers of `make sanitize` (their runtime would have to be
# loaded first) and exports codecell_cell_enter only.  One compiler run
# for several sources writes one .d file over the other, so this and
# gen-seccomp depend on every header instead.
CELL_SRC := src/sandbox/cell.c src/sandbox/child.c src/sandbox/rootfs.c src/sandbox/landlock.c \
	    src/sandbox/seccomp.c src/util/fs.c src/util/buf.c
$(BUILD)/cell.so: $(CELL_SRC) $(BUILD)/gen/seccomp_bpf.c $(BUILD)/gen/site_py.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN) -fPIC -fvisibility=hidden -shared \
		-Wl,--no-undefined -Wl,-z,relro,-z,now -Isrc -I$(BUILD)/gen -o $@ \
		$(CELL_SRC) $(BUILD)/gen/seccomp_bpf.c $(BUILD)/gen/site_py.c

# The sandbox's sitecustomize, with its .pyc compiled by the host's Python
# (scripts/embed-site.sh says why).
$(BUILD)/gen/site_py.c: src/sandbox/sitecustomize.py scripts/embed-site.sh
	@mkdir -p $(BUILD)/gen
	sh scripts/embed-site.sh $@ src/sandbox/sitecustomize.py

$(BUILD)/gen/site_py.o: $(BUILD)/gen/site_py.c
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(BUILD)/gen/kernels.o: $(BUILD)/gen/kernels.c
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

# The seccomp filter is compiled at build time by the same code the tests
# check it against.
SECCOMP_GEN_SRC := src/sandbox/seccomp_policy.c src/util/buf.c
$(BUILD)/tools/gen-seccomp: tools/gen-seccomp.c $(SECCOMP_GEN_SRC) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ tools/gen-seccomp.c $(SECCOMP_GEN_SRC) $(LIBS) $(SECCOMP_LIBS)

$(BUILD)/gen/seccomp_bpf.c: $(BUILD)/tools/gen-seccomp
	@mkdir -p $(BUILD)/gen
	$(BUILD)/tools/gen-seccomp > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/seccomp_bpf.o: $(BUILD)/gen/seccomp_bpf.c
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c -o $@ $<

CLI_LIB_OBJ := $(filter-out $(BUILD)/src/main.o,$(CLI_OBJ))
# named only by the pattern rule below, make took it for an intermediate
# file, deleted it after the build, and the next `make` relinked every test
.SECONDARY: $(POLICY_OBJ)
$(BUILD)/tests/%: tests/unit/%.c $(CLI_LIB_OBJ) $(POLICY_OBJ) $(BUILD)/libcodecell.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) $(LDFLAGS_ALL) -o $@ $< $(CLI_LIB_OBJ) $(POLICY_OBJ) $(BUILD)/libcodecell.a $(LIBS) $(SECCOMP_LIBS) -lcmocka

# Attack helpers run inside the sandbox: built static, so they need
# nothing from the sandbox's /usr.
$(BUILD)/helpers/%: tests/helpers/%.c $(wildcard tests/helpers/*.h)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O1 -Wall -static -o $@ $<

# Preload shims that make codecell see an older kernel (tests only).
$(BUILD)/shims/%.so: tests/shims/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O1 -Wall -shared -fPIC -o $@ $<

setup:
	sh scripts/setup.sh

# The main job: the API and playground on http://127.0.0.1:$(PORT), with a
# warm pool of kernels that have pandas and matplotlib imported.
# `make run PORT=9000` for another port.
PORT ?= 8080
run: setup
	@$(MAKE) --no-print-directory -s all
	build/codecell serve --listen 127.0.0.1:$(PORT) --pool 4 --preload numpy,pandas,matplotlib.pyplot

# A tour of the CLI in the terminal.
demo: setup
	@$(MAKE) --no-print-directory -s all
	sh examples/demo.sh

test: setup
	$(MAKE) all
	sh tests/run.sh

# The escape corpus (tests/escape/) against codecell and the control.
security: setup
	$(MAKE) all
	CODECELL_BUILD=$(BUILD) /usr/bin/python3 tests/escape/run.py --security

# The same corpus against bwrap, firejail, gVisor and no sandbox.
compare: setup
	sh scripts/setup.sh compare
	$(MAKE) all
	CODECELL_BUILD=$(BUILD) /usr/bin/python3 tests/escape/run.py --compare

# The suite again under ASan+UBSan, in its own build directory.
sanitize: setup
	$(MAKE) BUILD=build-san OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
		HARDEN="-fPIE" EXTRA_LDFLAGS="-fsanitize=address,undefined" all
	CODECELL_BUILD=build-san ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1 sh tests/run.sh

$(BUILD)/bench/bench_session: bench/bench_session.c $(BUILD)/libcodecell.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $(LDFLAGS_ALL) -o $@ $< $(BUILD)/libcodecell.a $(LIBS)

$(BUILD)/bench/bench_pool: bench/bench_pool.c $(BUILD)/libcodecell.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Iinclude $(LDFLAGS_ALL) -o $@ $< $(BUILD)/libcodecell.a $(LIBS)

# The HTTP load generator is a client only: no codecell code in it.
$(BUILD)/bench/bench_serve: bench/bench_serve.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< -lpthread

# the engine's pipeline (validation, policy, audit) per call
$(BUILD)/bench/bench_pipeline: bench/bench_pipeline.c $(BUILD)/src/http/request.o $(BUILD)/libcodecell.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(BUILD)/src/http/request.o $(BUILD)/libcodecell.a $(LIBS)

bench: setup
	$(MAKE) all $(BUILD)/bench/bench_session $(BUILD)/bench/bench_serve $(BUILD)/bench/bench_pool \
		$(BUILD)/bench/bench_pipeline
	$(BUILD)/bench/bench_pipeline
	sh bench/run.sh
	sh bench/bench_serve.sh $(BUILD)
	sh bench/bench_e2b.sh $(BUILD)
	CODECELL_BUILD=$(BUILD) /usr/bin/python3 bench/bench_agent.py

# The kernel surface report, tests/surface/x86_64.txt (tests/helpers/
# surface.c run in a one-shot run and a pool cell): `surface` regenerates
# it and fails on any difference or a verdict the policy does not explain;
# `surface-update` rewrites it.
surface: setup
	$(MAKE) all
	/usr/bin/python3 tests/surface/surface.py --check

surface-update: setup
	$(MAKE) all
	/usr/bin/python3 tests/surface/surface.py --update

# CPython's regression tests and Node checks on the host (as nobody) and
# inside codecell run and a session; fails on a difference that
# tests/compat/accepted.txt does not explain (tests/compat/compat.py).
compat: setup
	$(MAKE) all
	/usr/bin/python3 tests/compat/compat.py --build $(BUILD)

# A long run of the server under load (bench/soak.sh): figures, and a
# non-zero exit on an unexpected outcome or figures that do not come back.
soak: setup
	$(MAKE) all
	sh bench/soak.sh $(BUILD)

# libFuzzer targets (clang), each run for FUZZ_SECONDS on its corpus.
FUZZ_SECONDS ?= 20
FUZZ_SRC := $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_LIB_SRC := $(filter-out src/sandbox/seccomp_policy.c,$(wildcard src/util/*.c src/engine/*.c src/session/*.c src/sandbox/*.c)) src/sandbox/seccomp_policy.c
# the pure parsers of `codecell serve` (no libmicrohttpd calls in them)
FUZZ_API_SRC := src/http/request.c src/http/route.c src/api/route.c src/http/text.c src/e2b/connect.c src/e2b/parse.c
fuzz: setup
	$(MAKE) BUILD=build-fuzz build-fuzz/gen/kernels.h build-fuzz/gen/seccomp_bpf.c build-fuzz/gen/site_py.c
	@mkdir -p build-fuzz/fuzz
	@set -e; for f in $(FUZZ_SRC); do \
		name=$$(basename $$f .c); \
		clang -std=gnu11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
			-Isrc -Ibuild-fuzz/gen $(PKG_CFLAGS) -o build-fuzz/fuzz/$$name $$f \
			$(FUZZ_LIB_SRC) $(FUZZ_API_SRC) build-fuzz/gen/kernels.c build-fuzz/gen/seccomp_bpf.c build-fuzz/gen/site_py.c \
			$(LIBS) $(SECCOMP_LIBS); \
		seed=tests/fuzz/corpus/$${name#fuzz-}; work=build-fuzz/corpus-$${name#fuzz-}; \
		mkdir -p $$work; \
		echo "fuzz: $$name for $(FUZZ_SECONDS) s, seeds in $$seed"; \
		build-fuzz/fuzz/$$name -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
			-print_final_stats=1 $$work $$seed > build-fuzz/$$name.log 2>&1 \
			|| { tail -40 build-fuzz/$$name.log; exit 1; }; \
		grep -E 'stat::(number_of_executed_units|new_units_added)' build-fuzz/$$name.log; \
	done

# the dependency lists -MMD wrote (none before the first build)
-include $(wildcard $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(POLICY_OBJ:.o=.d) $(UNIT_BIN:=.d))

# The C sources as .clang-format lays them out (chosen to fit the code as
# it was written: Linux braces, tabs, 100 columns).  CI runs the check.
FORMAT_SRC := $(wildcard src/*/*.c src/*/*.h src/*.c tests/unit/*.c tests/fuzz/*.c tools/*.c)

format-check: setup
	clang-format --dry-run --Werror $(FORMAT_SRC)

format:
	clang-format -i $(FORMAT_SRC)

clean:
	rm -rf build build-san build-fuzz
