// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for memsize.bpf.o: every array longer (comm, name, grid in both
 * dimensions), counts' elements unsigned long, pair as two unsigned long
 * long (same 16 bytes), small too short for small[3]. */
struct ms_task {
	int pid;
	char comm[32];
	unsigned long counts[4];
	int grid[4][5];
	long long small[2];
	char name[16];
	unsigned long long pair[2];
};

void btf__memsize(struct ms_task *t) {}
