// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for floatsign.bpf.o: the holder first (lower type id), the double
 * after it, so the double is the last type of the minimized BTF. */
struct fs_holder {
	long pad;
	double frac;
};

void btf__floatsign(struct fs_holder *h) {}
