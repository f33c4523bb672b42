# SPDX-License-Identifier: MIT OR Apache-2.0
#
# btfgen's C library: the C ABI of src/ffi/, declared by include/btfgen.h.
#
#   make cli            target/static/release/btfgen: the command-line tool linked statically
#                       (glibc included), which starts ~0.5 ms faster than the dynamically
#                       linked one `cargo build` makes (benches/README.md)
#   make lib            target/release/libbtfgen.so.1 (SONAME libbtfgen.so.1, every symbol
#                       versioned BTFGEN_0.x by capi.map), the libbtfgen.so symlink, and
#                       target/release/libbtfgen.a
#   make header         regenerate include/btfgen.h with cbindgen $(CBINDGEN_VERSION)
#                       (cargo install cbindgen --locked --version $(CBINDGEN_VERSION))
#   make check-header   fail if include/btfgen.h differs from what cbindgen generates
#   make install        lib + header + btfgen.pc into $(DESTDIR)$(PREFIX); the compatibility
#                       headers <bpf/libbpf.h>, <bpf/btf.h> go to INCLUDEDIR/btfgen/bpf/ (on the
#                       include path through btfgen.pc, never over libbpf-dev's /usr/include/bpf)
#   make uninstall
#   make -C c-tests/abi check   the C tests of the library
#
# The shared library is linked by $(CC) from the static one instead of being built by rustc as a
# cdylib: for a cdylib rustc hands the linker its own anonymous version script, which wins over
# capi.map and leaves the exported symbols unversioned. Building only the staticlib also keeps
# crate-type = ["rlib"] in Cargo.toml, so crates depending on btfgen never build a C library.

CARGO ?= cargo
CBINDGEN ?= cbindgen
CBINDGEN_VERSION := 0.29.4
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
OUT := target/release
SONAME := libbtfgen.so.1
# What Rust's standard library needs from the system (`rustc --print native-static-libs`,
# x86_64/aarch64-unknown-linux-gnu); also the Libs.private of btfgen.pc.
RUST_NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: cli lib header check-header cbindgen-version install uninstall

# crt-static goes to the final link only (`cargo rustc` passes it to the binary's crate alone):
# set for every crate, it would also reach the proc-macro crates, which cannot be static.
cli:
	$(CARGO) rustc --release --bin btfgen --target-dir target/static -- -C target-feature=+crt-static

lib:
	$(CARGO) rustc --release --lib --no-default-features --features ffi-global-alloc --crate-type staticlib
	$(CC) -shared -o $(OUT)/$(SONAME).tmp -Wl,-soname,$(SONAME) \
		-Wl,--version-script=capi.map -Wl,--gc-sections -Wl,-Bsymbolic-functions \
		-Wl,-z,relro,-z,now -Wl,--as-needed \
		-Wl,--whole-archive $(OUT)/libbtfgen.a -Wl,--no-whole-archive $(RUST_NATIVE_LIBS)
	mv -f $(OUT)/$(SONAME).tmp $(OUT)/$(SONAME)
	ln -sfn $(SONAME) $(OUT)/libbtfgen.so

# cbindgen reads src/ffi/mod.rs only: every exported function and C type is declared there.
CBINDGEN_RUN = $(CBINDGEN) --quiet --config cbindgen.toml --output $(1) src/ffi/mod.rs

cbindgen-version:
	@v=$$($(CBINDGEN) --version 2>/dev/null | awk '{print $$2}'); \
	if [ "$$v" != "$(CBINDGEN_VERSION)" ]; then \
		echo "cbindgen $(CBINDGEN_VERSION) needed (found: '$$v'):" \
			"cargo install cbindgen --locked --version $(CBINDGEN_VERSION)" >&2; \
		exit 1; \
	fi

header: cbindgen-version
	$(call CBINDGEN_RUN,include/btfgen.h)

check-header: cbindgen-version
	@mkdir -p $(OUT)
	$(call CBINDGEN_RUN,$(OUT)/btfgen.h.generated)
	@if diff -u include/btfgen.h $(OUT)/btfgen.h.generated; then \
		echo "include/btfgen.h is up to date"; \
	else \
		echo "include/btfgen.h differs from src/ffi/: run 'make header' and commit it" >&2; \
		exit 1; \
	fi

install: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 755 $(OUT)/$(SONAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libbtfgen.so
	install -m 644 $(OUT)/libbtfgen.a $(DESTDIR)$(LIBDIR)/libbtfgen.a
	install -m 644 include/btfgen.h $(DESTDIR)$(INCLUDEDIR)/btfgen.h
	install -d $(DESTDIR)$(INCLUDEDIR)/btfgen/bpf
	install -m 644 include/btfgen/bpf/libbpf.h include/btfgen/bpf/btf.h \
		$(DESTDIR)$(INCLUDEDIR)/btfgen/bpf/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(RUST_NATIVE_LIBS)|' btfgen.pc.in \
		> $(DESTDIR)$(PKGCONFIGDIR)/btfgen.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/btfgen.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libbtfgen.so \
		$(DESTDIR)$(LIBDIR)/libbtfgen.a $(DESTDIR)$(INCLUDEDIR)/btfgen.h \
		$(DESTDIR)$(PKGCONFIGDIR)/btfgen.pc \
		$(DESTDIR)$(INCLUDEDIR)/btfgen/bpf/libbpf.h $(DESTDIR)$(INCLUDEDIR)/btfgen/bpf/btf.h
	-rmdir $(DESTDIR)$(INCLUDEDIR)/btfgen/bpf $(DESTDIR)$(INCLUDEDIR)/btfgen 2>/dev/null
