// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Builds the split ("kernel module") BTF fixture with libbpf's BTF writer:
 *
 *   mkmodule BASE_BTF OUT_MODULE_BTF
 *
 * On top of BASE_BTF (targets/base.btf, compiled from modbase.c) it adds
 * types that exist only in the module: struct mod_dev (with a pointer to
 * the base's struct mod_base_obj, a bitfield and an enum member), a
 * self-pointer, enum mod_state, ENUM64 mod_big and typedef mod_dev_t.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>

static int find(const struct btf *btf, const char *name, int kind)
{
	int id = btf__find_by_name_kind(btf, name, kind);

	if (id <= 0)
		fprintf(stderr, "mkmodule: base has no %s\n", name);
	return id;
}

#define CHECK(expr)                                                           \
	do {                                                                  \
		if ((expr) < 0) {                                             \
			fprintf(stderr, "mkmodule: %s failed\n", #expr);      \
			return 1;                                             \
		}                                                             \
	} while (0)

int main(int argc, char **argv)
{
	int int_id, uint_id, obj_id, state_id, big_id, obj_ptr_id, dev_id;
	struct btf *base, *mod;
	const void *raw;
	__u32 raw_sz;
	FILE *out;

	if (argc != 3) {
		fprintf(stderr, "usage: %s BASE_BTF OUT_MODULE_BTF\n", argv[0]);
		return 1;
	}
	base = btf__parse(argv[1], NULL);
	if (!base) {
		fprintf(stderr, "mkmodule: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int_id = find(base, "int", BTF_KIND_INT);
	uint_id = find(base, "unsigned int", BTF_KIND_INT);
	obj_id = find(base, "mod_base_obj", BTF_KIND_STRUCT);
	if (int_id <= 0 || uint_id <= 0 || obj_id <= 0)
		return 1;

	mod = btf__new_empty_split(base);
	if (!mod) {
		fprintf(stderr, "mkmodule: btf__new_empty_split: %s\n", strerror(errno));
		return 1;
	}

	CHECK(state_id = btf__add_enum(mod, "mod_state", 4));
	CHECK(btf__add_enum_value(mod, "MOD_IDLE", 0));
	CHECK(btf__add_enum_value(mod, "MOD_DEAD", 2));
	CHECK(btf__add_enum_value(mod, "MOD_ACTIVE", 3));

	CHECK(big_id = btf__add_enum64(mod, "mod_big", 8, false));
	CHECK(btf__add_enum64_value(mod, "MOD_HUGE", 0xfffffffffffffff0ULL));
	CHECK(btf__add_enum64_value(mod, "MOD_BIG", 0xabcdef0123ULL));

	CHECK(obj_ptr_id = btf__add_ptr(mod, obj_id));

	/* struct mod_dev, 32 bytes; 'next' points at the PTR added right after */
	CHECK(dev_id = btf__add_struct(mod, "mod_dev", 32));
	CHECK(btf__add_field(mod, "flags", uint_id, 0, 0));
	CHECK(btf__add_field(mod, "unit", int_id, 32, 0));
	CHECK(btf__add_field(mod, "obj", obj_ptr_id, 64, 0));
	CHECK(btf__add_field(mod, "state", state_id, 128, 0));
	CHECK(btf__add_field(mod, "mode", uint_id, 160 + 5, 3));
	CHECK(btf__add_field(mod, "next", dev_id + 1, 192, 0));
	CHECK(btf__add_ptr(mod, dev_id));

	CHECK(btf__add_typedef(mod, "mod_dev_t", dev_id));
	(void)big_id;

	raw = btf__raw_data(mod, &raw_sz);
	if (!raw) {
		fprintf(stderr, "mkmodule: btf__raw_data failed\n");
		return 1;
	}
	out = fopen(argv[2], "wb");
	if (!out || fwrite(raw, 1, raw_sz, out) != raw_sz || fclose(out)) {
		fprintf(stderr, "mkmodule: writing %s failed\n", argv[2]);
		return 1;
	}
	btf__free(mod);
	btf__free(base);
	return 0;
}
