# SPDX-License-Identifier: GPL-2.0
#
# rrxe: Soft-RoCE in Rust. See README.md; `make help` lists the targets.
#
# The kernels are cached outside the repository (RRXE_CACHE, default
# ~/.cache/rrxe).

VARIANT ?= debug
KDIR ?=

all: module

help:
	@echo 'rrxe: Soft-RoCE (RoCEv2) in Rust, rdma_rrxe.ko. Targets:'
	@echo '  make all           the same as make module (what plain make does)'
	@echo '  make run           set up, build, boot a VM and show the driver working'
	@echo '  make check         set up, build, run every test; ends with "N passed, N failed, N skipped"'
	@echo '  make bench         rrxe against C rdma_rxe (and siw): in one VM, then between two (release kernel), into out/bench/'
	@echo '  make module        build rdma_rrxe.ko against the cached guest kernel of VARIANT,'
	@echo '                     or with KDIR set, against that kernel tree'
	@echo '  make kernel        build (or reuse) the cached guest kernel of VARIANT'
	@echo '  make install       install the rdma_rrxe.ko built for KDIR'"'"'s kernel (make KDIR= first) into'
	@echo '                     /lib/modules/KVER/updates and run depmod (without KDIR: the guest'"'"'s, into DESTDIR)'
	@echo '  make uninstall     remove it again (same KDIR/DESTDIR)'
	@echo '  make install-link  a udev rule adding the link LINK (default rrxe0) on NETDEV at each boot'
	@echo '  make uninstall-link  remove that rule'
	@echo '  make deps          install the pinned dependencies (Debian 12, as root)'
	@echo '  make clean         remove out/ and the protocol crate'"'"'s cargo build'
	@echo '  make help          this list'
	@echo 'Variables:'
	@echo '  VARIANT=debug|release  the guest kernel make, make module and make kernel use (default debug)'
	@echo '  KDIR=DIR           build against your own configured and built 6.12 kernel with Rust'
	@echo '                     (its object tree); the result is out/kdir/drivers/infiniband/sw/rrxe/rdma_rrxe.ko'
	@echo '  RUSTC=, BINDGEN=   with KDIR: the rustc and bindgen that kernel was built with'
	@echo '  DESTDIR=DIR        make install and install-link: a root to install under (default /)'
	@echo '  NETDEV=, LINK=     make install-link: the net device and the RDMA link name'
	@echo '  RRXE_CACHE=DIR     where the kernels are cached (default ~/.cache/rrxe)'
	@echo '  RRXE_ACCEL=tcg|kvm the QEMU accelerator (default: probed once, cached)'
	@echo '  BENCH_*            make bench settings (Documentation/bench.md)'

deps:
	@scripts/deps.sh

kernel: deps
	@scripts/kernel.sh build $(VARIANT) >/dev/null

# With KDIR, the user's own kernel: no packages or guest kernel needed.
module: $(if $(KDIR),,deps)
ifneq ($(KDIR),)
	@scripts/kdir.sh "$(KDIR)"
else
	@scripts/module.sh $(VARIANT)
endif

# Each value single-quoted for the shell (install.sh checks NETDEV and LINK).
q = '$(subst ','\'',$(1))'
INSTALL = KDIR=$(call q,$(KDIR)) DESTDIR=$(call q,$(DESTDIR)) VARIANT=$(call q,$(VARIANT)) \
	NETDEV=$(call q,$(NETDEV)) LINK=$(call q,$(LINK)) scripts/install.sh

install:
	@$(INSTALL) install

uninstall:
	@$(INSTALL) uninstall

install-link:
	@$(INSTALL) install-link

uninstall-link:
	@$(INSTALL) uninstall-link

run:
	@scripts/run.sh

check: deps
	@scripts/check.sh

bench: deps
	@scripts/bench.sh

clean:
	rm -rf out
	cd drivers/infiniband/sw/rrxe/proto && cargo clean 2>/dev/null || true

.PHONY: all help deps kernel module install uninstall install-link uninstall-link run check bench clean
