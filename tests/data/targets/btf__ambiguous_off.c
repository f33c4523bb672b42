// SPDX-License-Identifier: MIT OR Apache-2.0
/* ambiguous.bpf.o: both flavors match amb.b, at different offsets. */
struct amb_ok {
	int pad;
	int z;
};

struct amb___x {
	long a;
	int b;
};

struct amb___y {
	int b;
	long a;
};

void btf__ambiguous_off(struct amb_ok *o, struct amb___x *x, struct amb___y *y) {}
