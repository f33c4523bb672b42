// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for fields.bpf.o: every member moved, the anonymous union first in
 * its anonymous struct, bigger arrays (arr[4], grid[3][4]), a shorter
 * typedef chain, 'usz' shrunk to unsigned short, 'maybe' missing. */
struct fld_inner {
	int pad;
	int y;
	int x;
};

struct fld_node {
	int pad;
	long val;
	struct fld_node *next;
};

typedef struct fld_node fld_node_alias_t;

struct fld_sample {
	long pad0;
	struct {
		union {
			long d;
			int c;
		};
		int b;
	};
	int a;
	int grid[3][4];
	struct fld_inner arr[4];
	const fld_node_alias_t *node;
	struct fld_node **pp;
	volatile int cv;
	unsigned short usz;
	int tail_len;
	int tail[];
};

void btf__fields(struct fld_sample *s, struct fld_inner *i, struct fld_node *n) {}
