// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * `signed` on a floating-point member. libbpf up to 1.2 reads any
 * non-integer's signedness from the word after its header, as if it were an
 * int's encoding: a float has nothing after its header, so that is the next
 * type's name in the full BTF. When the float is the last type of the
 * minimized BTF it is the start of the string section instead, which must
 * not read as signed (here the first string would be "frac", whose third
 * byte is odd).
 */
#include "fixture.h"

struct fs_holder {
	int x;
	double frac;
} __core;

SEC("raw_tp/sys_enter")
int floatsign_read(void *ctx)
{
	struct fs_holder *h = fixture_ptr(struct fs_holder);

	return core_field_signed(h, frac);
}

char LICENSE[] SEC("license") = "GPL";
