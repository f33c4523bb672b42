/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * A client in the style of the original BTFGen tool, written against the
 * API its libbpf patch proposed: errors checked with libbpf_get_error(),
 * objects opened with the legacy bpf_object__open(), the result written with
 * btf__save_to_file(). It builds unchanged against btfgen.h.
 *
 * usage: legacy SOURCE_BTF OUTPUT OBJECT...
 */
#include "btfgen.h"

#include <stdio.h>
#include <string.h>

static int generate_btf(const char *src_btf, const char *dst_btf, const char *objspaths[])
{
	struct btf_reloc_info *reloc_info;
	struct btf *btf_new = NULL;
	int err;

	reloc_info = bpf_reloc_info__new(src_btf);
	err = libbpf_get_error(reloc_info);
	if (err) {
		fprintf(stderr, "failed to allocate info structure for %s: %s\n", src_btf,
			strerror(-err));
		return err;
	}

	for (int i = 0; objspaths[i] != NULL; i++) {
		struct bpf_object *obj;

		printf("processing %s object\n", objspaths[i]);

		obj = bpf_object__open(objspaths[i]);
		err = libbpf_get_error(obj);
		if (err) {
			fprintf(stderr, "error opening object %s: %s\n", objspaths[i],
				strerror(-err));
			goto out;
		}

		err = bpf_object__reloc_info_gen(reloc_info, obj);
		bpf_object__close(obj);
		if (err) {
			fprintf(stderr, "failed to generate btf info for object %s: %s\n",
				objspaths[i], strerror(-err));
			goto out;
		}
	}

	btf_new = bpf_reloc_info__get_btf(reloc_info);
	err = libbpf_get_error(btf_new);
	if (err) {
		fprintf(stderr, "error generating btf: %s\n", strerror(-err));
		goto out;
	}

	printf("saving BTF to %s\n", dst_btf);
	err = btf__save_to_file(btf_new, dst_btf);
	if (err)
		fprintf(stderr, "error saving btf file %s: %s\n", dst_btf, strerror(-err));

out:
	btf__free(btf_new);
	bpf_reloc_info__free(reloc_info);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s SOURCE_BTF OUTPUT OBJECT...\n", argv[0]);
		return 2;
	}
	/* argv[argc] is NULL: the object list is NULL-terminated, as BTFGen's. */
	return generate_btf(argv[1], argv[2], (const char **)&argv[3]) ? 1 : 0;
}
