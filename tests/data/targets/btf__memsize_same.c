// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for memsize.bpf.o: the local layout with every member moved by a
 * leading field; array sizes unchanged, so libbpf 1.1 and 1.6+ agree. */
struct ms_task {
	long long first;
	int pid;
	char comm[16];
	unsigned int counts[4];
	int grid[2][3];
	long long small[4];
	char name[8];
	unsigned int pair[4];
};

void btf__memsize_same(struct ms_task *t) {}
