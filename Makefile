# SPDX-License-Identifier: MIT OR Apache-2.0
#
# btfgen's C library: the C ABI of src/ffi/, declared by include/btfgen.h.
#
#   make cli            target/static/release/btfgen: the command-line tool linked statically
#                       against musl and profile-guided (packaging/build-cli.sh), which starts
#                       ~0.7 ms faster than the dynamically linked one `cargo build` makes
#                       (benches/README.md); needs Rust's musl target, musl-gcc and llvm-tools
#   make lib            target/release/libbtfgen.so.1 (SONAME libbtfgen.so.1, every symbol
#                       versioned BTFGEN_0.x by capi.map), the libbtfgen.so symlink, and
#                       target/release/libbtfgen.a
#   make header         regenerate include/btfgen.h with cbindgen $(CBINDGEN_VERSION)
#                       (cargo install cbindgen --locked --version $(CBINDGEN_VERSION))
#   make check-header   fail if include/btfgen.h differs from what cbindgen generates
#   make install        into $(DESTDIR)$(PREFIX): bin/btfgen, the libraries, the header,
#                       btfgen.pc, the man pages (btfgen(1), btfgen-COMMAND(1) generated from the
#                       clap definitions by the hidden `btfgen generate-docs`, libbtfgen(3)) and
#                       the bash, zsh and fish completions (generated the same way); the
#                       compatibility headers <bpf/libbpf.h>, <bpf/btf.h> go to
#                       INCLUDEDIR/btfgen/bpf/ (on the include path through btfgen.pc, never over
#                       libbpf-dev's /usr/include/bpf)
#   make uninstall      removes exactly those files, btfgen's own directories, and with DESTDIR
#                       every directory under DESTDIR that is left empty
#   make deb            target/release/btfgen_VERSION_ARCH.deb (dpkg-deb): `make install` with
#                       PREFIX=/usr and Debian's directories, staged in target/deb
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
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR ?=

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
OUT := target/release
SONAME := libbtfgen.so.1
# What Rust's standard library needs from the system (`rustc --print native-static-libs`,
# x86_64/aarch64-unknown-linux-gnu); also the Libs.private of btfgen.pc.
RUST_NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: cli bin docs lib header check-header cbindgen-version install uninstall deb

# The shipped builds, the static command and the C library, link the whole program in one
# code-generation unit: that inlines across crates what the release profile's thin local LTO
# leaves as calls (gimli's attribute parser in the DWARF walk, whose returned values then went
# through memory), for a one-object min-core-btf 6% and a debug vmlinux's encode 8% faster
# (benches/measure.py, 41 and 5 rounds; identical outputs). Not the release profile itself:
# every test binary would then link that way, a minute each.
WHOLE_PROGRAM = CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1

# The static command, the build benches/ time (packaging/build-cli.sh says how and why): linked
# against musl, whose start-up, unlike glibc's, probes no CPU; the whole program in one
# code-generation unit, at a fixed address; the binary's crate profile-guided. A one-object
# min-core-btf 3.56 -> 2.65 ms, 20 objects 6.06 -> 5.15 ms against the glibc build
# (benches/measure.py, 41 rounds); with the profile 2.33 -> 1.96 ms and 3.96 -> 3.52 ms (21
# rounds). Needs Rust's musl target and musl-gcc (without them a warning, and glibc linked
# statically), and llvm-tools for the profile (without it a warning, and no profile).
cli:
	CARGO=$(CARGO) bash packaging/build-cli.sh

# The command as `cargo build` makes it (dynamically linked against glibc, as a package wants).
bin:
	$(CARGO) build --release --bin btfgen

# Man pages and completions, from the binary's own clap definitions.
docs: bin
	rm -rf $(OUT)/docs
	$(OUT)/btfgen generate-docs $(OUT)/docs

lib:
	$(WHOLE_PROGRAM) $(CARGO) rustc --release --lib --no-default-features --features ffi-global-alloc --crate-type staticlib
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

# Every file `make install` writes, relative to $(DESTDIR); `make uninstall` removes these.
INSTALLED_FILES = $(BINDIR)/btfgen $(LIBDIR)/$(SONAME) $(LIBDIR)/libbtfgen.so \
	$(LIBDIR)/libbtfgen.a $(INCLUDEDIR)/btfgen.h $(PKGCONFIGDIR)/btfgen.pc \
	$(INCLUDEDIR)/btfgen/bpf/libbpf.h $(INCLUDEDIR)/btfgen/bpf/btf.h \
	$(MANDIR)/man3/libbtfgen.3 $(BASHCOMPDIR)/btfgen $(ZSHCOMPDIR)/_btfgen \
	$(FISHCOMPDIR)/btfgen.fish
MAN1_PAGES = btfgen btfgen-min-core-btf btfgen-batch btfgen-select btfgen-relocate btfgen-dump \
	btfgen-encode btfgen-gen btfgen-btf

install: lib docs
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 755 $(OUT)/btfgen $(DESTDIR)$(BINDIR)/btfgen
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
	@# The generated pages must be exactly the commands this Makefile knows (and uninstalls).
	@ls $(OUT)/docs/man1 | sed 's/\.1$$//' | sort > $(OUT)/docs/man1.list
	@printf '%s\n' $(MAN1_PAGES) | sort | diff -u - $(OUT)/docs/man1.list || \
		{ echo "btfgen's commands changed: update MAN1_PAGES in the Makefile" >&2; exit 1; }
	install -m 644 $(addprefix $(OUT)/docs/man1/,$(addsuffix .1,$(MAN1_PAGES))) \
		$(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/libbtfgen.3 $(DESTDIR)$(MANDIR)/man3/libbtfgen.3
	install -m 644 $(OUT)/docs/completions/btfgen.bash $(DESTDIR)$(BASHCOMPDIR)/btfgen
	install -m 644 $(OUT)/docs/completions/_btfgen $(DESTDIR)$(ZSHCOMPDIR)/_btfgen
	install -m 644 $(OUT)/docs/completions/btfgen.fish $(DESTDIR)$(FISHCOMPDIR)/btfgen.fish

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES)) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(addsuffix .1,$(MAN1_PAGES)))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/btfgen/bpf $(DESTDIR)$(INCLUDEDIR)/btfgen 2>/dev/null
	@# A staging directory holds only what was installed: leave nothing of it behind.
	$(if $(DESTDIR),find $(DESTDIR) -mindepth 1 -depth -type d -empty -delete)

# The Debian package: one package with the command, the libraries, the header and .pc file,
# man pages and completions in Debian's directories.
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_MULTIARCH = $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
DEB_ROOT = target/deb/root
DEB_FILE = $(OUT)/btfgen_$(VERSION)_$(DEB_ARCH).deb

deb:
	rm -rf $(DEB_ROOT)
	$(MAKE) install DESTDIR=$(abspath $(DEB_ROOT)) PREFIX=/usr \
		LIBDIR=/usr/lib/$(DEB_MULTIARCH) ZSHCOMPDIR=/usr/share/zsh/vendor-completions
	@# Debug info stays in target/release; the package ships stripped files.
	strip --strip-unneeded $(DEB_ROOT)/usr/bin/btfgen $(DEB_ROOT)/usr/lib/$(DEB_MULTIARCH)/$(SONAME)
	strip --strip-debug $(DEB_ROOT)/usr/lib/$(DEB_MULTIARCH)/libbtfgen.a
	install -d $(DEB_ROOT)/DEBIAN
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@ARCH@|$(DEB_ARCH)|' \
		-e "s|@SIZE@|$$(du -sk $(DEB_ROOT) | cut -f1)|" packaging/debian/control.in \
		> $(DEB_ROOT)/DEBIAN/control
	install -m 644 packaging/debian/triggers $(DEB_ROOT)/DEBIAN/triggers
	dpkg-deb --root-owner-group --build $(DEB_ROOT) $(DEB_FILE)
