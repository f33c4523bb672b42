/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A C client of the installed libbtfgen, built with `pkg-config --cflags --libs btfgen` by
 * packaging/check.sh: TARGET OBJECT OUTPUT, as `btfgen min-core-btf`. */
#include <btfgen.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s TARGET OBJECT OUTPUT\n", argv[0]);
		return 2;
	}
	struct btf_reloc_info *info = bpf_reloc_info__new(argv[1]);
	struct bpf_object *obj = bpf_object__open_file(argv[2], NULL);
	struct btf *btf = NULL;
	int err = 0;

	if (!info || !obj || (err = bpf_object__reloc_info_gen(info, obj)) ||
	    !(btf = bpf_reloc_info__get_btf(info)) || (err = btf__save_to_file(btf, argv[3])))
		fprintf(stderr, "client: %s\n", strerror(err ? -err : errno));
	btf__free(btf);
	bpf_object__close(obj);
	bpf_reloc_info__free(info);
	return btf && !err ? 0 : 1;
}
