// SPDX-License-Identifier: MIT OR Apache-2.0
/* Second target for fields.bpf.o: no anonymous members at all (b, c, d
 * directly in the struct), arrays too short for some accesses (arr[2],
 * grid[2][2]), 'tail' no longer the last member (so not a flexible array),
 * 'pp' a void *, 'cv' a long (signed, so a direct load can't be resized)
 * and 'usz' an unsigned long (resized load); 'maybe' present. */
struct fld_inner {
	int x;
	int y;
};

struct fld_node {
	long val;
	struct fld_node *next;
};

typedef struct fld_node fld_node_t;
typedef const fld_node_t fld_node_alias_t;

struct fld_sample {
	int a;
	int b;
	int c;
	long d;
	struct fld_inner arr[2];
	int grid[2][2];
	fld_node_alias_t *node;
	void *pp;
	long cv;
	unsigned long usz;
	int maybe;
	int tail_len;
	int tail[0];
	int after_tail;
};

void btf__fields_flat(struct fld_sample *s, struct fld_inner *i, struct fld_node *n) {}
