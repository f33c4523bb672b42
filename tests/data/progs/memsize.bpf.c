// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Load/store sizes of array members (LDX/ST/STX relocations), where libbpf
 * 1.1 and 1.6+ disagree: 1.6+ ("fix LDX/STX/ST CO-RE relocation size
 * adjustment logic") sizes an access through an array member by one element,
 * 1.1 by the whole array. One-byte loads and stores through char arrays
 * (`*t->name`, `comm[0]`, `name[1]`), a 2-D array as a row (`*t->grid[1]`)
 * and as a whole (`**t->grid`), an array element (`counts[3]`) whose type
 * grows, an array whose element grows (`*t->counts`, never resizable) and
 * one whose element grows while its total size stays (`*t->pair`: 1.1
 * relocates, 1.6+ poisons), and an index past a too-small target array
 * (`small[3]`).
 */
#include "fixture.h"

struct ms_task {
	int pid;
	char comm[16];
	unsigned int counts[4];
	int grid[2][3];
	long long small[4];
	char name[8];
	unsigned int pair[4];
} __core;

SEC("raw_tp/sys_enter")
int memsize_access(void *ctx)
{
	struct ms_task *t = fixture_ptr(struct ms_task);
	long sum = 0;

	sum += t->comm[0];
	sum += *t->name;
	sum += t->counts[3];
	sum += *t->counts;
	sum += *t->grid[1];
	sum += **t->grid;
	sum += t->grid[1][2];
	sum += t->small[3];
	sum += *t->pair;
	t->name[1] = 3;
	*t->name = 2;
	return sum;
}

char LICENSE[] SEC("license") = "GPL";
