// SPDX-License-Identifier: MIT OR Apache-2.0
/* ambiguous.bpf.o: two identical flavors; every field relocation agrees,
 * only target_type_id (a different ID per candidate) is ambiguous. */
struct amb_ok {
	int z;
};

struct amb___x {
	long a;
	int b;
};

struct amb___y {
	long a;
	int b;
};

void btf__ambiguous_id(struct amb_ok *o, struct amb___x *x, struct amb___y *y) {}
