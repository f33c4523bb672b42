// SPDX-License-Identifier: MIT OR Apache-2.0
/* ambiguous.bpf.o: both flavors have amb.b at offset 8, but of different
 * sizes: byte_off agrees, byte_sz does not. */
struct amb_ok {
	int z;
};

struct amb___x {
	long a;
	int b;
};

struct amb___y {
	long a;
	long b;
};

void btf__ambiguous_val(struct amb_ok *o, struct amb___x *x, struct amb___y *y) {}
