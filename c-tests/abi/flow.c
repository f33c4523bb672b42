/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The canonical client of the btfgen C API: a minimized BTF for OBJECTs
 * against TARGET, written to OUTPUT through btf__raw_data(). Its output must be
 * byte-identical to `btfgen min-core-btf TARGET OUTPUT OBJECT...` (run.sh
 * compares them). Built twice: linked to libbtfgen.so.1 and to libbtfgen.a.
 *
 * usage: flow [-m] [-M MODULE_BTF]... TARGET OUTPUT OBJECT...
 *   -m  open the objects from memory (bpf_object__open_mem, with
 *       opts.object_name) instead of bpf_object__open_file
 *   -M  add a kernel module BTF (bpf_reloc_info__add_module_btf)
 */
#define _POSIX_C_SOURCE 200809L
#include "btfgen.h"
#include "check.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODULES 8

static struct bpf_object *open_object(const char *path, int from_memory)
{
	struct bpf_object_open_opts opts;
	struct bpf_object *obj;
	unsigned char *buf;
	size_t len;
	int err;

	if (!from_memory)
		return bpf_object__open_file(path, NULL);
	buf = read_all(path, &len);
	if (!buf)
		return NULL;
	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.object_name = path;
	obj = bpf_object__open_mem(buf, len, &opts);
	err = errno;
	free(buf); /* the library copied the bytes */
	errno = err;
	return obj;
}

int main(int argc, char **argv)
{
	const char *modules[MAX_MODULES];
	int n_modules = 0, from_memory = 0, opt, i, err = 0;
	struct btf_reloc_info *info = NULL;
	struct btf *btf = NULL, *again = NULL;
	const void *raw, *raw_again;
	uint32_t size = 0, size_again = 0;

	while ((opt = getopt(argc, argv, "mM:")) != -1) {
		if (opt == 'm') {
			from_memory = 1;
		} else if (opt == 'M' && n_modules < MAX_MODULES) {
			modules[n_modules++] = optarg;
		} else {
			fprintf(stderr, "usage: flow [-m] [-M MODULE_BTF]... TARGET OUTPUT OBJECT...\n");
			return 2;
		}
	}
	if (argc - optind < 3) {
		fprintf(stderr, "usage: flow [-m] [-M MODULE_BTF]... TARGET OUTPUT OBJECT...\n");
		return 2;
	}

	info = bpf_reloc_info__new(argv[optind]);
	if (!info) {
		fprintf(stderr, "bpf_reloc_info__new(%s): %s\n", argv[optind], strerror(errno));
		return 1;
	}
	for (i = 0; i < n_modules; i++) {
		err = bpf_reloc_info__add_module_btf(info, modules[i]);
		CHECK(err == 0, "add_module_btf(%s): %s", modules[i], strerror(-err));
	}
	for (i = optind + 2; i < argc; i++) {
		struct bpf_object *obj = open_object(argv[i], from_memory);

		if (!obj) {
			CHECK(0, "open %s: %s", argv[i], strerror(errno));
			continue;
		}
		err = bpf_object__reloc_info_gen(info, obj);
		CHECK(err == 0, "reloc_info_gen(%s): %s", argv[i], strerror(-err));
		bpf_object__close(obj);
	}

	btf = bpf_reloc_info__get_btf(info);
	CHECK(btf != NULL, "get_btf: %s", strerror(errno));
	if (btf) {
		raw = btf__raw_data(btf, &size);
		CHECK(raw != NULL && size >= 24, "raw_data: %p, %u bytes", raw, (unsigned)size);
		CHECK(btf__type_cnt(btf) >= 1, "type_cnt %u", (unsigned)btf__type_cnt(btf));
		if (raw)
			CHECK(write_all(argv[optind + 1], raw, size) == 0, "write %s",
			      argv[optind + 1]);

		/* A second get_btf gives an identical, independent BTF. */
		again = bpf_reloc_info__get_btf(info);
		CHECK(again != NULL && again != btf, "second get_btf");
		raw_again = again ? btf__raw_data(again, &size_again) : NULL;
		CHECK(raw_again && size_again == size && memcmp(raw, raw_again, size) == 0,
		      "second get_btf differs");
		btf__free(again);

		/* The output parses back with the same type count. */
		again = btf__parse(argv[optind + 1], NULL);
		CHECK(again != NULL, "btf__parse(output): %s", strerror(errno));
		if (again)
			CHECK(btf__type_cnt(again) == btf__type_cnt(btf), "type_cnt %u != %u",
			      (unsigned)btf__type_cnt(again), (unsigned)btf__type_cnt(btf));
		btf__free(again);
	}

	/* The BTF outlives the info it came from. */
	bpf_reloc_info__free(info);
	if (btf)
		CHECK(btf__raw_data(btf, NULL) == raw, "raw data moved");
	btf__free(btf);
	return checks_done("flow");
}
