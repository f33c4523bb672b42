// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for guards.bpf.o: gd_task without `gone` and `gone2`, no gd_missing,
 * enum gd_state without GD_GONE, gd_shape without `c` (so no type match). */
struct gd_task {
	int pid;
	int tgid;
};

enum gd_state { GD_A = 0, GD_B = 1 };

struct gd_shape {
	int a;
};

void btf__guards(struct gd_task *t, enum gd_state s, struct gd_shape *sh) {}
