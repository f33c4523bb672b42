// SPDX-License-Identifier: MIT OR Apache-2.0
/* "New" target for flavors.bpf.o: fl_task has new_state (only
 * fl_task___v2 matches); fl_dup exists twice, identically (both candidates
 * agree); fl_pr has two flavors that disagree on 'y' unless pruned by the
 * read of 'x' (only fl_pr___a has it). */
struct fl_task {
	int pid;
	int pad;
	int new_state;
};

struct fl_dup {
	int a;
	int b;
};

struct fl_dup___copy {
	int a;
	int b;
};

struct fl_pr___a {
	int x;
	int y;
};

struct fl_pr___b {
	int y;
};

void btf__flavors(struct fl_task *t, struct fl_dup *d, struct fl_dup___copy *c,
		  struct fl_pr___a *a, struct fl_pr___b *b) {}
