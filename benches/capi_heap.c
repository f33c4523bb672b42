/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The C library's peak heap for one bpf_reloc_info over TARGET (a path: mapped
 * when the kernel maps it) and OBJECTs, as bpf_reloc_info__mem_peak reports it;
 * printed as one line for benches/compare.sh. Not a test: c-tests/abi/mapped.c
 * checks the bound.
 *
 * usage: capi_heap TARGET OBJECT...
 */
#define _POSIX_C_SOURCE 200809L
#include "btfgen.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	struct btf_reloc_info *info;
	struct btf *btf;
	struct stat st;
	size_t peak;
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: capi_heap TARGET OBJECT...\n");
		return 2;
	}
	info = bpf_reloc_info__new(argv[1]);
	if (!info || stat(argv[1], &st)) {
		fprintf(stderr, "capi_heap: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 2; i < argc; i++) {
		struct bpf_object *obj = bpf_object__open_file(argv[i], NULL);
		int err = obj ? bpf_object__reloc_info_gen(info, obj) : -errno;

		bpf_object__close(obj);
		if (err) {
			fprintf(stderr, "capi_heap: %s: %s\n", argv[i], strerror(-err));
			return 1;
		}
	}
	btf = bpf_reloc_info__get_btf(info);
	if (!btf) {
		fprintf(stderr, "capi_heap: get_btf: %s\n", strerror(errno));
		return 1;
	}
	peak = bpf_reloc_info__mem_peak(info);
	printf("%zu bytes peak (%.1f%% of the %lld-byte target)\n", peak,
	       100.0 * (double)peak / (double)st.st_size, (long long)st.st_size);
	btf__free(btf);
	bpf_reloc_info__free(info);
	return 0;
}
