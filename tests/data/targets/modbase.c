// SPDX-License-Identifier: MIT OR Apache-2.0
/* Base ("vmlinux") BTF of the split-BTF fixture: compiled into base.btf,
 * then mkmodule.c stacks module.btf on top of it. */
struct mod_base_obj {
	int id;
	unsigned long flags;
	const char *name;
};

struct mod_other {
	unsigned int x;
	long long y;
};

void modbase(struct mod_base_obj *o, struct mod_other *x) {}
