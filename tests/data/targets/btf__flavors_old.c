// SPDX-License-Identifier: MIT OR Apache-2.0
/* "Old" target for flavors.bpf.o: fl_task has old_state (only
 * fl_task___v1 matches); the fl_dup / fl_pr cases as in btf__flavors.c but
 * with the flavors in the other type-ID order and every offset moved. */
struct fl_task {
	int old_state;
	int pid;
};

struct fl_dup___copy {
	int pad;
	int a;
	int b;
};

struct fl_dup {
	int pad;
	int a;
	int b;
};

struct fl_pr___b {
	int y;
};

struct fl_pr___a {
	int pad;
	int x;
	int y;
};

/* parameter order fixes the type IDs: flavored types come first here */
void btf__flavors_old(struct fl_task *t, struct fl_dup___copy *c, struct fl_dup *d,
		      struct fl_pr___b *b, struct fl_pr___a *a) {}
