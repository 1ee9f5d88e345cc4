# Entry points a person types. Every install step lives in ci/setup.sh.
CARGO ?= cargo
FUZZ_SECONDS ?= 20
# Where cargo builds (CARGO_TARGET_DIR, as cargo reads it; the ci/ scripts do the same).
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)

.PHONY: demo test setup lint fuzz-smoke bench measure-embed kdb kdb-check device-pack capi header examples dist install package-check

## Run kiln's main job on its embedded default databases: every ResNet-50 conv layer through
## kiln (on a GPU: run and verify; without one: resolve for every target, verify code objects);
## then an ONNX ResNet-50 imported and embedded in the binary, listed, planned on every target
## and (on a GPU) run against the CPU reference (ci/demo.sh).
demo:
	$(CARGO) build --release --quiet -p kiln-cli
	$(TARGET_DIR)/release/kiln devices || [ $$? -eq 3 ]  # 3: no GPU here (the demo then resolves)
	$(TARGET_DIR)/release/kiln demo
	@echo
	$(TARGET_DIR)/release/kiln resolve --target mi300x -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1
	@echo
	CARGO=$(CARGO) bash ci/demo.sh

## Install toolchains (clang-19, NVRTC wheel, strace, libamdhip64) and run every test: the
## workspace (library, both binaries, build-time crate), the HIP struct-layout check against
## hip-runtime-sys, the vendor-only builds, kdb freshness (every key, a rebuilt sample of
## objects), the ONNX import against onnxruntime, the AMD objects executed in kiln-emu (its
## per-target counts printed), and the examples (C and Rust; the C library under valgrind).
test: setup
	$(CARGO) test --workspace
	@cat "$(TARGET_DIR)/tmp/kiln-emu-conformance.txt"
	$(CARGO) build --quiet -p kiln --features hip-abi-check
	$(CARGO) test --quiet -p kiln --lib --no-default-features --features hip,all-amd
	$(CARGO) test --quiet -p kiln --lib --no-default-features --features cuda,all-nvidia
	$(CARGO) run --quiet -p kiln-tools -- kdb build --check --sample 8  # make kdb-check: all
	python3 ci/onnx_check.py --tools $(TARGET_DIR)/debug/kiln-tools  # ONNX import against onnxruntime
	$(MAKE) examples PROFILE=debug

## kiln's C library, staged in target/kiln-c/ (under CARGO_TARGET_DIR where set): include/kiln.h, lib/libkiln.a, lib/libkiln.so,
## lib/pkgconfig/kiln.pc (PROFILE=release by default).
capi:
	bash ci/capi.sh

## Regenerate capi/include/kiln.h with cbindgen (a test fails while the committed one is stale).
header:
	KILN_BLESS=1 $(CARGO) test --quiet -p kiln-c --test header

## Release `kiln` for x86_64 and aarch64 Linux with a glibc floor of 2.28 (cargo-zigbuild and
## zig, installed by ci/setup-dist.sh) into dist/; checks the GLIBC symbol versions and runs the
## aarch64 binary under qemu-user.
dist:
	bash ci/dist.sh

## Install the appliance binary and the C library under $(DESTDIR)$(PREFIX): bin/kiln,
## include/kiln.h, lib/libkiln.a, lib/libkiln.so(.0), lib/pkgconfig/kiln.pc (relocatable),
## share/doc/kiln/{LICENSE,THIRD_PARTY_NOTICES}.
PREFIX ?= /usr/local
install: capi
	$(CARGO) build --release --quiet -p kiln-cli
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/doc/kiln
	install -m 755 $(TARGET_DIR)/release/kiln $(DESTDIR)$(PREFIX)/bin/kiln
	install -m 644 $(TARGET_DIR)/kiln-c/include/kiln.h $(DESTDIR)$(PREFIX)/include/kiln.h
	install -m 644 $(TARGET_DIR)/kiln-c/lib/libkiln.a $(DESTDIR)$(PREFIX)/lib/libkiln.a
	install -m 755 $(TARGET_DIR)/kiln-c/lib/libkiln.so.0 $(DESTDIR)$(PREFIX)/lib/libkiln.so.0
	ln -sf libkiln.so.0 $(DESTDIR)$(PREFIX)/lib/libkiln.so
	install -m 644 $(TARGET_DIR)/kiln-c/lib/pkgconfig/kiln.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/kiln.pc
	install -m 644 LICENSE THIRD_PARTY_NOTICES $(DESTDIR)$(PREFIX)/share/doc/kiln/

## kiln as a registry crate: cargo package of kiln-format, kiln-embed and kiln (each under
## crates.io's 10 MB), then a downstream crate built offline from the unpacked packages alone.
package-check:
	bash ci/package-check.sh

## Build and run the examples: the C program against libkiln.a, the C library's bad-input
## check against libkiln.so under valgrind, and the Rust example. Without a GPU they print the
## plan and the no-device error.
examples:
	bash ci/examples.sh

## Rebuild every target's kdb from kernels/ (commit the result).
kdb: setup
	$(CARGO) run --quiet -p kiln-tools -- kdb build

## Rebuild every object of every target's kdb, uncached, and compare with the committed kdbs
## (`make test` rebuilds one object in eight per source file).
kdb-check: setup
	$(CARGO) run --quiet -p kiln-tools -- kdb build --check

## Build the H100 package (device-pack/): release kiln and kiln-tools, the GPU and backend
## conformance test binaries; run it on a machine with the GPU: bash device-pack/on-device.sh
device-pack:
	bash ci/device-run.sh

setup:
	bash ci/setup.sh

## fmt, clippy (warnings are errors), rustdoc, and the third-party notices.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p kiln --all-targets --no-default-features --features hip,all-amd,harness -- -D warnings
	$(CARGO) clippy -p kiln --all-targets --no-default-features --features cuda,all-nvidia,harness -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet
	python3 ci/notices.py --check  # every crate the binaries link is in THIRD_PARTY_NOTICES

## Each text-parser fuzz target for FUZZ_SECONDS (cargo-fuzz on stable via RUSTC_BOOTSTRAP).
fuzz-smoke:
	bash ci/fuzz-smoke.sh $(FUZZ_SECONDS)

## Lookup benchmarks (criterion); figures go to benches/RESULTS.md by hand.
bench:
	$(CARGO) bench --bench lookup

## Build cost of embedding a synthetic 200,000-key find-db.
measure-embed:
	bash ci/measure-embed-200k.sh
