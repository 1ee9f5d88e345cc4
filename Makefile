# Entry points a person types. Every install step lives in ci/setup.sh.
CARGO ?= cargo
FUZZ_SECONDS ?= 20

.PHONY: demo test setup lint fuzz-smoke bench measure-embed check-fmt

## Run kiln's main job on its embedded default databases.
demo:
	$(CARGO) build --release --quiet
	./target/release/kiln info
	@echo
	./target/release/kiln resolve --target gfx942130 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1
	@echo
	./target/release/kiln resolve --target mi300x 1280-4-4-1x1-1280-4-4-30-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F

## Install toolchains (clang-19, NVRTC wheel, strace) and run every test.
test: setup
	$(CARGO) test --workspace

setup:
	bash ci/setup.sh

## fmt, clippy (warnings are errors) and rustdoc.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet

## Each text-parser fuzz target for FUZZ_SECONDS (cargo-fuzz on stable via RUSTC_BOOTSTRAP).
fuzz-smoke:
	bash ci/fuzz-smoke.sh $(FUZZ_SECONDS)

## Lookup benchmarks (criterion); figures go to benches/RESULTS.md by hand.
bench:
	$(CARGO) bench --bench lookup

## Build cost of embedding a synthetic 200,000-key find-db.
measure-embed:
	bash ci/measure-embed-200k.sh
