# spacekeeper: one non-recursive Makefile.
#   make              binaries in bin/ (spacekeeper, spacectl, sandboxsim)
#   make test         installs deps, builds with ASan+UBSan, runs every suite
#   make SANITIZE=1   the sanitizer build, in build/san/bin
#   make fmt-check    clang-format against .clang-format
#   make verify-deps  includes follow the layering; the planner links alone
#   make docs         the CLI reference (docs/cli/*.md, docs/man/*.1) from each --help
#   make verify-docs  those pages are current and lint-clean (make test runs it too)
#   make bench-sim    simulator throughput and memory
#   make bench        convergence, "day of use", migration, replicas, archive, application,
#                     capacity and scale benchmarks
#   make demo         the embedded-defaults demo (README)

CC ?= cc
PKG_CONFIG ?= pkg-config
PC_DEPS := libmongoc-1.0 jansson yaml-0.1 libcurl libmicrohttpd gnutls
SANITIZE ?= 0

# BUILD=build/NAME keeps a separate tree (parallel developers, benchmarks).
BUILD ?= build
ifeq ($(SANITIZE),1)
OUT := $(BUILD)/san
BIN := $(OUT)/bin
OPT := -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
OUT := $(BUILD)/rel
BIN := $(if $(filter build,$(BUILD)),bin,$(OUT)/bin)
OPT := -O2
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
CFLAGS ?=
CFLAGS += -std=gnu11 -g $(OPT) $(WARN) -fno-omit-frame-pointer -pthread \
	-D_GNU_SOURCE -Ipkg $(shell $(PKG_CONFIG) --cflags $(PC_DEPS))
LDLIBS := $(shell $(PKG_CONFIG) --libs $(PC_DEPS)) -lm -pthread
LDFLAGS ?=
ifeq ($(SANITIZE),1)
LDFLAGS += -fsanitize=address,undefined
endif
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check)

LIB_SRCS := $(sort $(wildcard pkg/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(OUT)/%.o)
LIB := $(OUT)/libspacekeeper.a
CMDS := spacekeeper spacectl sandboxsim
CMD_BINS := $(CMDS:%=$(BIN)/%)

TEST_KINDS := unit integration e2e
TEST_COMMON := test/runner.c test/testutil.c
TEST_BINS := $(TEST_KINDS:%=$(OUT)/test/%_tests)
TOOLS := $(OUT)/tools/mongoping $(OUT)/tools/loadgen $(OUT)/tools/connectload \
	$(OUT)/tools/archivebench

.PHONY: all test check test-unit test-integration test-e2e test-readme test-demo test-conformance \
	test-client tests fmt fmt-check clean deps bench bench-sim demo verify-deps docs verify-docs
all: $(CMD_BINS)

$(OUT)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

# Each binary: the objects of cmd/NAME/ linked with the library.
define cmd_rule
$(BIN)/$(1): $(patsubst %.c,$(OUT)/%.o,$(sort $(wildcard cmd/$(1)/*.c))) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach c,$(CMDS),$(eval $(call cmd_rule,$(c))))

# Each test kind: test/KIND/*.c, each file defining `Suite *sk_suite_NAME(void)`;
# the list of suites is generated so that adding a file adds its suites.
define test_rule
$(OUT)/test/$(1)_suites.inc: $(sort $(wildcard test/$(1)/*.c))
	@mkdir -p $$(dir $$@)
	@sed -n 's/^sk_suite_\([a-z0-9_]*\)(void)$$$$/SK_SUITE(\1)/p' $$^ /dev/null >$$@.tmp
	@mv $$@.tmp $$@
$(OUT)/test/$(1)_runner.o: test/runner.c $(OUT)/test/$(1)_suites.inc
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -DSK_SUITES_INC='"$(1)_suites.inc"' -I$(OUT)/test -c -o $$@ $$<
$(OUT)/test/$(1)_tests: $(OUT)/test/$(1)_runner.o $(OUT)/test/testutil.o \
		$(patsubst %.c,$(OUT)/%.o,$(sort $(wildcard test/$(1)/*.c))) $(LIB)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(CHECK_LIBS) $$(LDLIBS)
endef
$(foreach k,$(TEST_KINDS),$(eval $(call test_rule,$(k))))

$(OUT)/tools/mongoping: $(OUT)/test/tools/mongoping.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The HTTP load generator of make bench-sim (test/bench/loadgen.c).
$(OUT)/tools/loadgen: $(OUT)/test/bench/loadgen.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The connect load of make bench's "day of use" (test/bench/connectload.c).
$(OUT)/tools/connectload: $(OUT)/test/bench/connectload.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The archive engine of make bench's "archive" (test/bench/archivebench.c).
$(OUT)/tools/archivebench: $(OUT)/test/bench/archivebench.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tests: $(CMD_BINS) $(TEST_BINS) $(TOOLS)

deps:
	@./hack/deps.sh

# The README's test command: dependencies, sanitizer build, every suite.
# The build uses every CPU unless make was given its own -j.
NPROC := $(shell nproc 2>/dev/null || echo 1)
test: deps
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC)) SANITIZE=1 check

TEST_ENV := SK_BIN_DIR=$(abspath $(BIN)) SK_TOOLS_DIR=$(abspath $(OUT)/tools) \
	SK_ROOT=$(abspath .) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LSAN_OPTIONS=suppressions=$(abspath test/lsan.supp):print_suppressions=0

# SUITES="e2e/guard readme": those suites only (names as hack/run-tests.sh prints them).
check: tests verify-deps
	@$(TEST_ENV) ./hack/run-tests.sh $(OUT)/test $(SUITES)

# Includes point down the layering and the planner's objects link with api and
# util only (nm); the self-test shows both checks catch a violation.
# The objects are built on every CPU unless make was given a -j: on a fresh
# clone their build is most of the target's time.
verify-deps:
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC)) $(LIB_OBJS)
	@./hack/verify-deps.sh --self-test $(OUT)
	@./hack/verify-deps.sh $(OUT)

# The command-line reference: PROG __gen-docs markdown|man DIR for each binary
# (hack/check-docs.sh); make test fails when the committed pages are stale.
docs: $(CMD_BINS)
	@SK_BIN_DIR=$(abspath $(BIN)) ./hack/check-docs.sh --write

verify-docs: $(CMD_BINS)
	@SK_BIN_DIR=$(abspath $(BIN)) ./hack/check-docs.sh --self-test
	@SK_BIN_DIR=$(abspath $(BIN)) ./hack/check-docs.sh

# integration and e2e start one FerretDB per process (hack/run-tests.sh: one per suite).
test-unit test-integration test-e2e: test-%: tests
	@$(TEST_ENV) $(if $(filter unit,$*),,SK_TEST_NEEDS_MONGO=1) $(OUT)/test/$*_tests

# The examples of README.md and docs/*.md (SK_README_SETUP=NAME: one setup),
# and make demo's spacectl context (test/e2e/check_readme.py, check_demo.py).
test-readme test-demo: test-%: $(CMD_BINS) $(TOOLS)
	@$(TEST_ENV) python3 test/e2e/check_$*.py

test-conformance: tests
	@$(TEST_ENV) node test/conformance/e2b_sdk.mjs
	@$(TEST_ENV) .deps/pyclient/bin/python test/conformance/e2b_sdk.py

# The Python client suite (test/client/run.sh; pytest from .deps/pyclient).
test-client: tests
	@$(TEST_ENV) ./test/client/run.sh

# The API server's own validation of crds/ and the documents, beside spacectl's
# (test/crdcheck/run.sh; the checker is built by hack/deps.sh).
test-crdcheck: $(CMD_BINS)
	@$(TEST_ENV) ./test/crdcheck/run.sh

# The offline checks of manifests/deploy, the Containerfile and the systemd unit
# (test/deploy/check.sh; make check runs it too).
test-deploy: $(CMD_BINS) $(TOOLS)
	@$(TEST_ENV) ./test/deploy/check.sh

# The container image (Containerfile) with podman or buildah, whichever is installed.
IMAGE ?= spacekeeper:$(shell sed -n 's/^\#define SK_VERSION "\(.*\)"$$/\1/p' pkg/util/version.h)
image:
	@if command -v podman >/dev/null 2>&1; then \
		podman build -f Containerfile -t $(IMAGE) .; \
	elif command -v buildah >/dev/null 2>&1; then \
		buildah build -f Containerfile -t $(IMAGE) .; \
	else \
		echo "make image: neither podman nor buildah is installed" \
			"(apt-get install podman, or build Containerfile with any OCI builder)" >&2; \
		exit 1; \
	fi
.PHONY: test-deploy test-crdcheck image

fmt:
	@clang-format -i $$(git ls-files '*.c' '*.h')

fmt-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

bench-sim: deps
	@$(MAKE) --no-print-directory all
	@./test/bench/bench-sim.sh

bench: deps
	@$(MAKE) --no-print-directory all build/rel/tools/connectload build/rel/tools/archivebench
	@./test/bench/bench.sh
	@./test/bench/dayofuse.sh
	@./test/bench/migrate.sh
	@./test/bench/replicas.sh
	@./test/bench/archive.sh
	@./test/bench/scale.sh
	@./test/bench/application.sh
	@./test/bench/capacity.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@./hack/demo.sh

clean:
	rm -rf build bin

export TEST_ENV
-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
