// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for bitfields.bpf.o (also compiled big-endian, btf__bitfields_be):
 * bitfields re-laid out, resized and re-signed; 'ub10' no longer a bitfield
 * but 'us' now one; 'ub2' sits in a packed anonymous struct where it
 * straddles a 4-byte boundary, so reading it needs an 8-byte load; 'sc' is
 * unsigned. */
struct bf_sample {
	struct {
		unsigned char lead;
		unsigned int ub2 : 30; /* bits 8..37 */
	} __attribute__((packed));
	int sb7 : 5;
	unsigned int ub1 : 1;
	unsigned int sb20 : 20;
	short ub10;
	unsigned long long u40 : 40;
	long long s33 : 33;
	unsigned char sc;
	unsigned int us : 12;
};

void btf__bitfields(struct bf_sample *s) {}
