// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Relocations against a kernel module's split BTF: struct mod_base_obj lives
 * in the base (vmlinux-like) BTF targets/base.btf, while struct mod_dev,
 * enum mod_state, enum mod_big (ENUM64) and typedef mod_dev_t exist only in
 * the split (module) BTF targets/module.btf built by targets/mkmodule.c.
 * Against base.btf alone the module types are missing.
 */
#include "fixture.h"

struct mod_base_obj {
	int id;
	unsigned long flags;
} __core;

enum mod_state { MOD_IDLE, MOD_ACTIVE };

enum mod_big { MOD_BIG = 0x1234567890ULL };

struct mod_dev {
	int unit;
	struct mod_base_obj *obj;
	unsigned int mode : 3;
	enum mod_state state;
} __core;

typedef struct mod_dev mod_dev_t;

SEC("raw_tp/sys_enter")
int mod_read(void *ctx)
{
	mod_dev_t *d = fixture_ptr(mod_dev_t);
	long sum = 0;

	sum += BPF_CORE_READ(d, unit);
	sum += BPF_CORE_READ(d, obj, id);
	sum += BPF_CORE_READ(d, obj, flags);
	sum += BPF_CORE_READ_BITFIELD_PROBED(d, mode);
	sum += BPF_CORE_READ(d, state);
	return sum;
}

SEC("raw_tp/sys_exit")
int mod_info(void *ctx)
{
	long sum = 0;

	sum += bpf_core_type_exists(struct mod_dev);
	sum += bpf_core_type_id_kernel(struct mod_dev);
	sum += bpf_core_type_size(mod_dev_t);
	sum += bpf_core_type_size(struct mod_base_obj);
	sum += bpf_core_type_matches(struct mod_base_obj);
	sum += bpf_core_enum_value_exists(enum mod_state, MOD_ACTIVE);
	if (bpf_core_enum_value_exists(enum mod_big, MOD_BIG))
		sum += bpf_core_enum_value(enum mod_big, MOD_BIG) & 0xff;
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
