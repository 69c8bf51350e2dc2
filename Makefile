# knob: storage-stack tuning and benchmarking for HPC clusters.
#
#   make            build knobd and knobctl into $(BUILD)/
#   make deps       install the Debian packages the build and tests need (idempotent)
#   make check      run every test, then again under ASan+UBSan
#   make demo       the demo play on two local agents: baseline, tune, sweep, compare, report, roll back
#   make bench      benchmarks under bench/ (figures, not pass/fail)
#   make peers      ior and mdtest from ../shared/vendor into build/peers/ (tests, bench)
#   make install DESTDIR=...   binaries, units, man pages, completion, profiles, plays
#   make deb        build-deb/knob_VERSION_ARCH.deb (dpkg-deb)
#
# Out-of-tree build directories: $(BUILD) (default build/) and build-san/ for
# the sanitizer pass.  Generated protobuf code lives only in $(BUILD)/proto/.

BUILD   ?= build
VERSION := $(shell sed -n 's/^\#define KNOB_VERSION "\(.*\)"/\1/p' common/util.h)
SAN     ?=
PREFIX  ?= /usr/local
DESTDIR ?=

PKGS = libprotobuf-c libxml-2.0 libnl-3.0 libnl-route-3.0 libssh2 openssl sqlite3 json-c

DEB_PKGS = build-essential pkg-config protobuf-c-compiler libprotobuf-c-dev \
	libxml2-dev libxml2-utils libnl-3-dev libnl-route-3-dev libssh2-1-dev \
	libssl-dev libsqlite3-dev sqlite3 libjson-c-dev check fio iproute2 \
	openssh-server openssh-client sudo util-linux procps kmod e2fsprogs \
	liburing-dev libaio-dev chromium libfuse3-dev fuse3 prometheus systemd slurmctld slurmd slurm-client \
	openmpi-bin libopenmpi-dev autoconf automake libtool libfaketime \
	clang libclang-rt-dev systemd-container \
	lintian man-db groff-base binutils \
	time clustershell pdsh strace zstd openssl

CC      ?= cc
WARN    = -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes \
	  -Wmissing-prototypes -Wformat=2 -Wformat-security -Wundef \
	  -Wcast-qual -Wwrite-strings -Wnull-dereference -Wimplicit-fallthrough \
	  -Wno-format-truncation  # snprintf truncation of messages is intended and bounded
OPT     ?= -O2 -g
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong \
	  -pthread -MMD -MP $(OPT) -Icommon -Iagent -Icontroller -Isim -isystem $(BUILD)/proto
# The sanitizer and fuzzing builds keep line tables and function names
# (-g1: all their reports print), not full debug information: it was most
# of their compile and link time.
ifeq ($(SAN),1)
OPT     = -O1 -g1 -fno-omit-frame-pointer
CFLAGS_BASE := $(filter-out -D_FORTIFY_SOURCE=2,$(CFLAGS_BASE))
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all
endif
# Fuzzing build (build-fuzz/): clang, libFuzzer coverage, ASan+UBSan.
ifeq ($(FUZZ),1)
CC      = clang
OPT     = -O1 -g1 -fno-omit-frame-pointer
CFLAGS_BASE := $(filter-out -D_FORTIFY_SOURCE=2,$(CFLAGS_BASE))
SANFLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
WARN    = -w    # warnings are the gcc build's job
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
CFLAGS  += $(CFLAGS_BASE) $(WARN) $(PKG_CFLAGS) $(SANFLAGS)
LDFLAGS += -pthread -Wl,-z,relro,-z,now $(SANFLAGS)	# full RELRO: knobd runs as root (Debian hardening)
LDLIBS  += $(PKG_LIBS) -lm
# the agent's benchmark engine: queued I/O through io_uring, else libaio
PKG_CFLAGS += $(shell pkg-config --cflags liburing 2>/dev/null)
AGENT_LIBS := $(shell pkg-config --libs liburing 2>/dev/null) -laio

# The objects that compile the data directory in ($(PREFIX)/share/knob):
# every other object is the same for any PREFIX, so the .deb's build takes
# them from the plain build's (deb, pkg/seed-build.sh).
DATADIR_OBJ = $(BUILD)/obj/common/profile.o $(BUILD)/obj/controller/sweep_file.o
$(DATADIR_OBJ): private CFLAGS += -DKNOB_DATADIR=\"$(PREFIX)/share/knob\"

# $(BUILD)/cflags: the compiler and flags its objects were built with (its
# generated headers' directory written as @B@/proto), rewritten only when
# they change; every object depends on it, so a change of flags rebuilds
# them.
FLAGS_NOW = $(subst $(BUILD)/proto,@B@/proto,$(CC) $(CFLAGS))
$(BUILD)/cflags: FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' '$(FLAGS_NOW)' | cmp -s - $@ || printf '%s\n' '$(FLAGS_NOW)' > $@
FORCE:

PROTO_C = $(BUILD)/proto/knob.pb-c.c
PROTO_H = $(BUILD)/proto/knob.pb-c.h

COMMON_SRC = $(wildcard common/*.c)
AGENT_SRC  = $(filter-out agent/knobd.c,$(wildcard agent/*.c))
CTL_SRC    = $(filter-out controller/knobctl.c,$(wildcard controller/*.c))
TEST_SRC   = $(wildcard tests/check_*.c)
TESTLIB_SRC = $(filter-out tests/check_%.c tests/fuzz_%.c tests/fuse_%.c,$(wildcard tests/*.c))
FUSE_SRC   = $(wildcard tests/fuse_*.c)
FUSE_BIN   = $(patsubst tests/%.c,$(BUILD)/tests/%,$(FUSE_SRC))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ = $(call obj,$(COMMON_SRC)) $(BUILD)/obj/proto/knob.pb-c.o
AGENT_OBJ  = $(call obj,$(AGENT_SRC))
CTL_OBJ    = $(call obj,$(CTL_SRC))
SIM_OBJ    = $(call obj,$(wildcard sim/*.c))
TESTLIB_OBJ = $(call obj,$(TESTLIB_SRC))
TEST_BIN   = $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
FUZZ_SRC   = $(wildcard tests/fuzz_*.c)
FUZZ_BIN   = $(patsubst tests/fuzz_%.c,$(BUILD)/fuzz/fuzz_%,$(filter-out tests/fuzz_common.c,$(FUZZ_SRC)))
BENCH_SRC  = $(wildcard bench/*.c)
BENCH_BIN  = $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

all: $(BUILD)/knobd $(BUILD)/knobctl $(BUILD)/knobctl.1 $(BUILD)/knob-sim

# The man page's OPTIONS and COMMANDS sections come from the option tables
# (knobctl help --man), the rest from doc/knobctl.1.in.
$(BUILD)/knobctl.1: doc/knobctl.1.in $(BUILD)/knobctl
	@echo "  MAN     $@"
	@$(BUILD)/knobctl help --man > $@.gen
	@sed -e '/^@GENERATED@$$/{r $@.gen' -e 'd;}' -e 's/@VERSION@/$(VERSION)/' doc/knobctl.1.in > $@
	@rm -f $@.gen

# One protoc-c run makes both (a grouped target: with -j2 make ran it
# twice at once, both writing the same two files)
$(PROTO_C) $(PROTO_H) &: proto/knob.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto proto/knob.proto

# Everything depends on the generated header, and is rebuilt when it changes:
# it is included as a system header (-isystem), which -MMD does not record,
# and an object built against an older message layout corrupts memory.
$(COMMON_OBJ) $(AGENT_OBJ) $(CTL_OBJ) $(TESTLIB_OBJ) $(BUILD)/obj/agent/knobd.o \
	$(BUILD)/obj/controller/knobctl.o $(call obj,$(TEST_SRC)) $(call obj,$(FUZZ_SRC)) \
	$(SIM_OBJ): $(PROTO_H)

$(BUILD)/obj/proto/knob.pb-c.o: $(PROTO_C) $(BUILD)/cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(filter-out -Wcast-qual -Wmissing-prototypes,$(CFLAGS)) -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(BUILD)/cflags
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libknobcommon.a: $(COMMON_OBJ)
	@rm -f $@; $(AR) rcs $@ $^
$(BUILD)/libknobagent.a: $(AGENT_OBJ)
	@rm -f $@; $(AR) rcs $@ $^
$(BUILD)/libknobctl.a: $(CTL_OBJ)
	@rm -f $@; $(AR) rcs $@ $^

$(BUILD)/knobd: $(BUILD)/obj/agent/knobd.o $(BUILD)/libknobagent.a $(BUILD)/libknobcommon.a
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS) $(LDLIBS)

# knob-sim: many agents in one process (the fleet simulator); it issues its
# block certificates with the controller's CA code.
$(BUILD)/knob-sim: $(SIM_OBJ) $(BUILD)/libknobagent.a $(BUILD)/libknobctl.a $(BUILD)/libknobcommon.a
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS) $(LDLIBS)

$(BUILD)/knobctl: $(BUILD)/obj/controller/knobctl.o $(BUILD)/libknobctl.a $(BUILD)/libknobcommon.a
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJ) $(BUILD)/libknobctl.a $(BUILD)/libknobagent.a $(BUILD)/libknobcommon.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS) $(LDLIBS) $(CHECK_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libknobctl.a $(BUILD)/libknobagent.a $(BUILD)/libknobcommon.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(AGENT_LIBS) $(LDLIBS)

$(call obj,$(BENCH_SRC)): $(PROTO_H)

# Test helpers that are file systems (libfuse3), built on their own.
$(BUILD)/tests/fuse_%: tests/fuse_%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(CC) $(CFLAGS_BASE) $(WARN) $(SANFLAGS) $$(pkg-config --cflags fuse3) -o $@ $< \
		$(LDFLAGS) $$(pkg-config --libs fuse3)

tests: test-bins $(BENCH_BIN)
# what the suite runs (make check's sanitizer build: not the benchmarks)
test-bins: all $(TEST_BIN) $(FUSE_BIN)

# Peer tools: ior and mdtest built once from the vendored source snapshot
# into build/peers/bin (never part of knob; both check passes use them).
PEERS       = build/peers
IOR_TARBALL ?= ../shared/vendor/ior-5fcf0ba.tar.gz
export KNOB_PEERS ?= $(CURDIR)/$(PEERS)/bin

peers: $(PEERS)/bin/mdtest

$(PEERS)/bin/mdtest:
	@test -f $(IOR_TARBALL) || { echo "peers: $(IOR_TARBALL) not found (IOR_TARBALL=...)"; exit 1; }
	@echo "  PEERS   ior, mdtest from $(IOR_TARBALL) (log: $(PEERS)/build.log)"
	@rm -rf $(PEERS)/src && mkdir -p $(PEERS)/src
	@tar -xzf $(IOR_TARBALL) -C $(PEERS)/src
	@cd $(PEERS)/src/ior && { ./bootstrap && ./configure --prefix=$(CURDIR)/$(PEERS) && \
		$(MAKE) -j2 && $(MAKE) install; } >$(CURDIR)/$(PEERS)/build.log 2>&1 || \
		{ tail -n 30 $(CURDIR)/$(PEERS)/build.log; exit 1; }

# Run the suite normally and under ASan+UBSan (build-san/) and a 3 s fuzz
# smoke of each target (fixed seed): one queue of jobs, longest first, shared
# by two workers (tests/run-suites.sh says how they are kept apart).
# Its four builds (tests, the .deb, the sanitizer build, the fuzz targets)
# use every CPU: built one file at a time they took about 5 of its minutes.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests peers
	@$(MAKE) --no-print-directory -j$(JOBS) deb
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build-san SAN=1 test-bins
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=build-fuzz FUZZ=1 fuzz-bins
	tests/run-suites.sh $(BUILD) build-san env FUZZ_SEED=1 tests/run-fuzz.sh build-fuzz 3

# One quick pass without sanitizers (for iterating).
check-fast: tests peers
	tests/run-tests.sh $(BUILD)

# libFuzzer targets (tests/fuzz_*.c, seeds in tests/fuzz/corpus/TARGET/),
# each run for FUZZ_SECONDS; `make check` runs a 3 s smoke of each with a
# fixed seed (FUZZ_SEED=1: the same mutations every time); `make fuzz` draws
# a new seed per run unless FUZZ_SEED is given.
FUZZ_SECONDS ?= 60
FUZZ_SEED    ?= 0
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/tests/fuzz_%.o $(BUILD)/obj/tests/fuzz_common.o \
		$(BUILD)/libknobctl.a $(BUILD)/libknobagent.a $(BUILD)/libknobcommon.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(AGENT_LIBS) $(LDLIBS)

fuzz-bins: $(FUZZ_BIN)

fuzz: deps
	@$(MAKE) --no-print-directory BUILD=build-fuzz FUZZ=1 fuzz-bins
	FUZZ_SEED=$(FUZZ_SEED) tests/run-fuzz.sh build-fuzz $(FUZZ_SECONDS)

# Targets that start with deps build in a sub-make: pkg-config flags are read
# when make starts, so they must be read again after deps installed them.
demo: deps
	@$(MAKE) --no-print-directory all
	tests/demo.sh $(BUILD)

# Benchmarks print figures and ratios against peers; they are not pass/fail.
bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	$(BUILD)/bench/tls_handshake 400
	$(BUILD)/bench/profile_load 100000
	$(BUILD)/bench/ctl_scale 10000
	bench/engine-vs-fio $(BUILD)
	@$(MAKE) --no-print-directory peers
	bench/engine-vs-ior $(BUILD)
	bench/engine-vs-mdtest $(BUILD)
	bench/control-plane $(BUILD)

deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

print-deps:
	@echo $(DEB_PKGS)

# Units: knobd.service and every other unit or timer next to it (the sweep
# timer); @SBINDIR@ and @BINDIR@ are filled in.
UNITS   = $(wildcard agent/*.service agent/*.timer controller/*.service controller/*.timer \
	  sweep/*.service sweep/*.timer)
MANDIR  = $(PREFIX)/share/man
COMPDIR = $(PREFIX)/share/bash-completion/completions

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)/lib/systemd/system $(DESTDIR)$(PREFIX)/share/knob/profiles \
		$(DESTDIR)$(PREFIX)/share/knob/plays $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(COMPDIR)
	install -d -m 0700 $(DESTDIR)/var/lib/knob
	install -m 0755 $(BUILD)/knobd $(DESTDIR)$(PREFIX)/sbin/knobd
	install -m 0755 $(BUILD)/knobctl $(DESTDIR)$(PREFIX)/bin/knobctl
	for u in $(UNITS); do \
		sed -e 's,@SBINDIR@,$(PREFIX)/sbin,g' -e 's,@BINDIR@,$(PREFIX)/bin,g' "$$u" \
			> $(DESTDIR)/lib/systemd/system/$$(basename "$$u") && \
		chmod 0644 $(DESTDIR)/lib/systemd/system/$$(basename "$$u") || exit 1; \
	done
	gzip -9n < $(BUILD)/knobctl.1 > $(DESTDIR)$(MANDIR)/man1/knobctl.1.gz
	gzip -9n < doc/knobd.8 > $(DESTDIR)$(MANDIR)/man8/knobd.8.gz
	gzip -9n < doc/knob-sweep.8 > $(DESTDIR)$(MANDIR)/man8/knob-sweep.8.gz
	chmod 0644 $(DESTDIR)$(MANDIR)/man1/knobctl.1.gz $(DESTDIR)$(MANDIR)/man8/knobd.8.gz \
		$(DESTDIR)$(MANDIR)/man8/knob-sweep.8.gz
	install -m 0644 pkg/knobctl.bash $(DESTDIR)$(COMPDIR)/knobctl
	for f in profiles/*; do [ -f "$$f" ] && install -m 0644 "$$f" $(DESTDIR)$(PREFIX)/share/knob/profiles/; done; true
	for f in ansible-like-plays/*.xml ansible-like-plays/*.rng; do [ -f "$$f" ] && install -m 0644 "$$f" $(DESTDIR)$(PREFIX)/share/knob/plays/; done; true

# The .deb: its own build with PREFIX=/usr (the profile directory is
# compiled in), staged by make install, packed by pkg/mkdeb.sh (dpkg-deb).
# A new $(DEB_BUILD) starts from $(BUILD)'s objects when both compile with
# the same flags (pkg/seed-build.sh): only DATADIR_OBJ differ, and the
# protobuf code's object (its asserts name its file, under the build
# directory).  The binaries are then the same as a build from scratch's,
# but for the build ID (pkg/seed-build.sh says how that was checked).
DEB_BUILD ?= build-deb
deb: deps
	@$(MAKE) --no-print-directory BUILD=$(DEB_BUILD) PREFIX=/usr SAN= $(DEB_BUILD)/cflags
	@pkg/seed-build.sh $(BUILD) $(DEB_BUILD) obj/common/profile.o obj/controller/sweep_file.o \
		obj/proto/knob.pb-c.o
	@$(MAKE) --no-print-directory BUILD=$(DEB_BUILD) PREFIX=/usr SAN= all
	rm -rf $(DEB_BUILD)/stage
	@$(MAKE) --no-print-directory BUILD=$(DEB_BUILD) PREFIX=/usr SAN= \
		DESTDIR=$(abspath $(DEB_BUILD))/stage install >/dev/null
	pkg/mkdeb.sh $(abspath $(DEB_BUILD))/stage \
		$(DEB_BUILD)/knob_$(VERSION)_$$(dpkg --print-architecture).deb $(VERSION)
	ln -sf knob_$(VERSION)_$$(dpkg --print-architecture).deb $(DEB_BUILD)/knob.deb

clean:
	rm -rf build build-san build-fuzz build-deb

.PHONY: all tests test-bins check check-fast demo bench fuzz fuzz-bins deps print-deps install deb clean peers FORCE

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
