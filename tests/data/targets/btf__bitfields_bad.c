// SPDX-License-Identifier: MIT OR Apache-2.0
/* Failing target for bitfields.bpf.o: 'u40' straddles an 8-byte boundary of
 * a packed struct, so no single load of at most 8 bytes covers it and libbpf
 * fails that relocation (and the whole load). */
struct bf_sample {
	unsigned int ub1 : 1;
	unsigned int ub2 : 2;
	int sb7 : 7;
	unsigned int ub10 : 10;
	int sb20 : 20;
	unsigned long long pad : 20;
	unsigned long long u40 : 40;
	long long s33 : 33;
	signed char sc;
	unsigned short us;
} __attribute__((packed));

void btf__bitfields_bad(struct bf_sample *s) {}
