# SPDX-License-Identifier: GPL-2.0
#
# rrxe: Soft-RoCE in Rust. See README.md.
#
#   make            build rdma_rrxe.ko against the debug guest kernel
#   make run        set up, build, boot a VM and show the driver working
#   make check      set up, build, run every test; ends with "N passed, N failed"
#   make bench      rrxe against C rdma_rxe in one VM (release kernel)
#
# VARIANT=release|debug picks the guest kernel `make`/`make module` build for.
# The kernels are cached outside the repository (RRXE_CACHE, default
# ~/.cache/rrxe).

VARIANT ?= debug

all: module

deps:
	@scripts/deps.sh

kernel: deps
	@scripts/kernel.sh build $(VARIANT) >/dev/null

module: deps
	@scripts/module.sh $(VARIANT)

run: deps
	@scripts/run.sh

check: deps
	@scripts/check.sh

.PHONY: bench
bench: deps
	@scripts/bench.sh

clean:
	rm -rf out
	cd drivers/infiniband/sw/rrxe/proto && cargo clean 2>/dev/null || true

.PHONY: all deps kernel module run check clean
