/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * btfgen and libbpf in one process, despite their identical symbol names:
 * the process links Debian's libbpf (-lbpf) for opening and loading, and
 * dlopen()s libbtfgen.so.1 with RTLD_LOCAL for generating the minimized BTF,
 * looking its functions up by version node (dlvsym, BTFGEN_0.1).
 *
 * 1. generate OUT (a minimized BTF for OBJECT against TARGET) with btfgen;
 * 2. libbpf parses OUT and opens OBJECT with btf_custom_path = OUT;
 * 3. with --load, libbpf also loads OBJECT into the kernel, relocated against
 *    OUT only: the minimized BTF is all its CO-RE relocations need. Exits 77
 *    (skip) with the reason when the kernel refuses BPF syscalls.
 *
 * usage: coexist [--load] LIBBTFGEN_SO TARGET OBJECT OUT
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "check.h"

struct btf_reloc_info;

/* btfgen's functions. Its bpf_object and btf are not libbpf's: they go only to btfgen. */
static struct {
	struct btf_reloc_info *(*reloc_info_new)(const char *path);
	void (*reloc_info_free)(struct btf_reloc_info *info);
	struct btf *(*reloc_info_get_btf)(struct btf_reloc_info *info);
	int (*reloc_info_gen)(struct btf_reloc_info *info, struct bpf_object *obj);
	struct bpf_object *(*open_file)(const char *path, const struct bpf_object_open_opts *opts);
	void (*close)(struct bpf_object *obj);
	const void *(*raw_data)(const struct btf *btf, __u32 *size);
	__u32 (*type_cnt)(const struct btf *btf);
	void (*btf_free)(struct btf *btf);
} btfgen;

/* Look `name` up in `lib` under btfgen's version node; `libbpf_fn` is libbpf's function of
 * the same name (or NULL), which it must not be. */
static void lookup(void *lib, const char *name, void *slot, void *libbpf_fn)
{
	void *sym = dlvsym(lib, name, "BTFGEN_0.1");

	CHECK(sym != NULL, "dlvsym(%s, BTFGEN_0.1): %s", name, dlerror());
	CHECK(sym != libbpf_fn, "%s resolved to libbpf's", name);
	memcpy(slot, &sym, sizeof(sym));
}

static int generate(const char *target, const char *object, const char *out, __u32 *type_cnt)
{
	struct btf_reloc_info *info = btfgen.reloc_info_new(target);
	struct bpf_object *obj;
	struct btf *btf;
	const void *raw;
	__u32 size = 0;
	int err;

	CHECK(info != NULL, "btfgen bpf_reloc_info__new(%s): %s", target, strerror(errno));
	if (!info)
		return -1;
	obj = btfgen.open_file(object, NULL);
	CHECK(obj != NULL, "btfgen bpf_object__open_file(%s): %s", object, strerror(errno));
	err = btfgen.reloc_info_gen(info, obj);
	CHECK(err == 0, "btfgen bpf_object__reloc_info_gen: %s", strerror(-err));
	btfgen.close(obj);
	btf = btfgen.reloc_info_get_btf(info);
	CHECK(btf != NULL, "btfgen bpf_reloc_info__get_btf: %s", strerror(errno));
	raw = btf ? btfgen.raw_data(btf, &size) : NULL;
	CHECK(raw && write_all(out, raw, size) == 0, "writing %s", out);
	*type_cnt = btf ? btfgen.type_cnt(btf) : 0;
	btfgen.btf_free(btf);
	btfgen.reloc_info_free(info);
	return raw ? 0 : -1;
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	int load = argc > 1 && strcmp(argv[1], "--load") == 0, skipped = 0, err;
	const char *lib_path, *target, *object, *out;
	struct bpf_object *obj;
	__u32 type_cnt = 0;
	struct btf *btf;
	void *lib;

	if (argc != 5 + load) {
		fprintf(stderr, "usage: coexist [--load] LIBBTFGEN_SO TARGET OBJECT OUT\n");
		return 2;
	}
	lib_path = argv[1 + load];
	target = argv[2 + load];
	object = argv[3 + load];
	out = argv[4 + load];

	CHECK(dlsym(RTLD_DEFAULT, "bpf_object__open_file") == (void *)bpf_object__open_file,
	      "libbpf's bpf_object__open_file is the global one");
	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	CHECK(lib != NULL, "dlopen(%s): %s", lib_path, dlerror());
	if (!lib)
		return checks_done("coexist");
	lookup(lib, "bpf_reloc_info__new", &btfgen.reloc_info_new, NULL);
	lookup(lib, "bpf_reloc_info__free", &btfgen.reloc_info_free, NULL);
	lookup(lib, "bpf_reloc_info__get_btf", &btfgen.reloc_info_get_btf, NULL);
	lookup(lib, "bpf_object__reloc_info_gen", &btfgen.reloc_info_gen, NULL);
	lookup(lib, "bpf_object__open_file", &btfgen.open_file, (void *)bpf_object__open_file);
	lookup(lib, "bpf_object__close", &btfgen.close, (void *)bpf_object__close);
	lookup(lib, "btf__raw_data", &btfgen.raw_data, (void *)btf__raw_data);
	lookup(lib, "btf__type_cnt", &btfgen.type_cnt, (void *)btf__type_cnt);
	lookup(lib, "btf__free", &btfgen.btf_free, (void *)btf__free);
	/* RTLD_LOCAL: loading btfgen did not change what the process's names resolve to. */
	CHECK(dlsym(RTLD_DEFAULT, "bpf_object__open_file") == (void *)bpf_object__open_file,
	      "libbpf's bpf_object__open_file is still the global one");
	CHECK(dlsym(RTLD_DEFAULT, "bpf_reloc_info__new") == NULL,
	      "btfgen's symbols must not be global");

	if (checks_failed == 0 && generate(target, object, out, &type_cnt) == 0) {
		/* libbpf reads the minimized BTF ... */
		btf = btf__parse(out, NULL);
		CHECK(btf != NULL, "libbpf btf__parse(%s): %s", out, strerror(errno));
		if (btf)
			CHECK(btf__type_cnt(btf) == type_cnt, "libbpf type_cnt %u, btfgen %u",
			      btf__type_cnt(btf), type_cnt);
		btf__free(btf);

		/* ... and relocates the object against it alone. */
		opts.btf_custom_path = out;
		obj = bpf_object__open_file(object, &opts);
		CHECK(obj != NULL, "libbpf bpf_object__open_file(%s): %s", object, strerror(errno));
		if (obj && load) {
			err = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL);
			if (err <= 0) {
				printf("SKIP load: the kernel refuses BPF_PROG_LOAD of raw_tp programs "
				       "(probe: %d, %s)\n", err, err < 0 ? strerror(-err) : "unsupported");
				skipped = 1;
			} else {
				err = bpf_object__load(obj);
				CHECK(err == 0, "libbpf bpf_object__load with btf_custom_path=%s: %d (%s)",
				      out, err, strerror(-err));
			}
		}
		bpf_object__close(obj);
	}
	dlclose(lib);
	err = checks_done(load ? "coexist --load" : "coexist");
	return err == 0 && skipped ? 77 : err;
}
