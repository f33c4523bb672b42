/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Pointers btfgen did not create, passed to every entry point that takes a
 * struct btf *, struct bpf_object * or struct btf_reloc_info *: each must
 * fail cleanly (-EINVAL, or NULL / 0 with errno EINVAL; the free functions
 * leave the pointer alone and set errno), never crash. The foreign objects:
 *   - real libbpf objects (libbpf.so.1 loaded with dlopen, RTLD_LOCAL), what
 *     a program linked with both libraries can pass by mistake;
 *   - a btfgen object of another type (a struct btf as a bpf_object, ...);
 *   - zeroed and 0xab-filled memory.
 * Run under valgrind by run.sh: nothing foreign may be read past its first
 * 8 bytes or freed.
 *
 * usage: foreign TARGET_BTF OBJECT OUTDIR
 */
#define _GNU_SOURCE
#include "btfgen.h"
#include "check.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

struct foreign {
	const char *what;
	void *ptr;
};

static char out_path[4096];

/* Every entry point taking a struct btf *. */
static void as_btf(const struct foreign *f, struct bpf_object *obj)
{
	struct btf *btf = f->ptr;
	struct bpf_prog_load_info info;
	uint32_t size = 7;
	size_t buf_sz = 0;

	errno = 0;
	CHECK(btf__raw_data(btf, &size) == NULL && errno == EINVAL && size == 7, "%s", f->what);
	errno = 0;
	CHECK(btf__type_cnt(btf) == 0 && errno == EINVAL, "%s", f->what);
	CHECK(btf__save_to_file(btf, out_path) == -EINVAL && access(out_path, F_OK) != 0, "%s",
	      f->what);
	errno = 0;
	CHECK(btf__parse_split(out_path, btf) == NULL && errno == EINVAL, "%s", f->what);
	CHECK(bpf_object__prog_load_info(obj, "fields_read", btf, &info, NULL, &buf_sz) ==
		      -EINVAL,
	      "%s", f->what);
	errno = 0;
	btf__free(btf);
	CHECK(errno == EINVAL, "btf__free(%s) errno %d", f->what, errno);
}

/* Every entry point taking a struct bpf_object *. */
static void as_object(const struct foreign *f, struct btf_reloc_info *info)
{
	struct bpf_object *obj = f->ptr;
	struct bpf_prog_load_info load;
	size_t buf_sz = 0;

	CHECK(bpf_object__reloc_info_gen(info, obj) == -EINVAL && errno == EINVAL, "%s", f->what);
	CHECK(bpf_object__prog_load_info(obj, "fields_read", NULL, &load, NULL, &buf_sz) ==
		      -EINVAL,
	      "%s", f->what);
	errno = 0;
	bpf_object__close(obj);
	CHECK(errno == EINVAL, "bpf_object__close(%s) errno %d", f->what, errno);
}

/* Every entry point taking a struct btf_reloc_info *. */
static void as_info(const struct foreign *f, const char *target, struct bpf_object *obj)
{
	struct btf_reloc_info *info = f->ptr;

	CHECK(bpf_reloc_info__add_module_btf(info, target) == -EINVAL, "%s", f->what);
	CHECK(bpf_object__reloc_info_gen(info, obj) == -EINVAL, "%s", f->what);
	errno = 0;
	CHECK(bpf_reloc_info__get_btf(info) == NULL && errno == EINVAL, "%s", f->what);
	errno = 0;
	bpf_reloc_info__free(info);
	CHECK(errno == EINVAL, "bpf_reloc_info__free(%s) errno %d", f->what, errno);
}

int main(int argc, char **argv)
{
	void *(*libbpf_btf__parse)(const char *, void **);
	void *(*libbpf_object__open)(const char *);
	void (*libbpf_btf__free)(void *);
	void (*libbpf_object__close)(void *);
	struct btf_reloc_info *info;
	struct bpf_object *obj;
	struct btf *btf;
	void *libbpf, *lb_btf, *lb_obj;
	unsigned char zeros[256] = { 0 }, junk[256];

	if (argc != 4) {
		fprintf(stderr, "usage: foreign TARGET_BTF OBJECT OUTDIR\n");
		return 2;
	}
	snprintf(out_path, sizeof(out_path), "%s/foreign.btf", argv[3]);
	memset(junk, 0xab, sizeof(junk));

	libbpf = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!libbpf) {
		fprintf(stderr, "dlopen libbpf.so.1: %s\n", dlerror());
		return 1;
	}
	*(void **)&libbpf_btf__parse = dlsym(libbpf, "btf__parse");
	*(void **)&libbpf_object__open = dlsym(libbpf, "bpf_object__open");
	*(void **)&libbpf_btf__free = dlsym(libbpf, "btf__free");
	*(void **)&libbpf_object__close = dlsym(libbpf, "bpf_object__close");
	if (!libbpf_btf__parse || !libbpf_object__open || !libbpf_btf__free ||
	    !libbpf_object__close) {
		fprintf(stderr, "libbpf.so.1 lacks a function: %s\n", dlerror());
		return 1;
	}
	lb_btf = libbpf_btf__parse(argv[1], NULL);
	lb_obj = libbpf_object__open(argv[2]);
	CHECK(lb_btf && lb_obj, "libbpf opened %s and %s", argv[1], argv[2]);

	info = bpf_reloc_info__new(argv[1]);
	obj = bpf_object__open_file(argv[2], NULL);
	btf = btf__parse(argv[1], NULL);
	CHECK(info && obj && btf, "btfgen opened %s and %s", argv[1], argv[2]);
	if (!lb_btf || !lb_obj || !info || !obj || !btf)
		return checks_done("foreign");

	{
		const struct foreign btfs[] = {
			{ "libbpf's struct btf", lb_btf },
			{ "libbpf's struct bpf_object", lb_obj },
			{ "btfgen's bpf_object", obj },
			{ "btfgen's btf_reloc_info", info },
			{ "zeroed memory", zeros },
			{ "0xab bytes", junk },
		};
		const struct foreign objs[] = {
			{ "libbpf's struct bpf_object", lb_obj },
			{ "libbpf's struct btf", lb_btf },
			{ "btfgen's btf", btf },
			{ "btfgen's btf_reloc_info", info },
			{ "zeroed memory", zeros },
			{ "0xab bytes", junk },
		};
		const struct foreign infos[] = {
			{ "libbpf's struct bpf_object", lb_obj },
			{ "libbpf's struct btf", lb_btf },
			{ "btfgen's btf", btf },
			{ "btfgen's bpf_object", obj },
			{ "zeroed memory", zeros },
			{ "0xab bytes", junk },
		};
		size_t i;

		for (i = 0; i < sizeof(btfs) / sizeof(btfs[0]); i++)
			as_btf(&btfs[i], obj);
		for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
			as_object(&objs[i], info);
		for (i = 0; i < sizeof(infos) / sizeof(infos[0]); i++)
			as_info(&infos[i], argv[1], obj);
	}

	/* btfgen's own objects still work after all that. */
	CHECK(bpf_object__reloc_info_gen(info, obj) == 0, "own object");
	CHECK(btf__type_cnt(btf) > 1, "own btf");
	btf__free(btf);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);
	libbpf_object__close(lb_obj);
	libbpf_btf__free(lb_btf);
	dlclose(libbpf);
	return checks_done("foreign");
}
