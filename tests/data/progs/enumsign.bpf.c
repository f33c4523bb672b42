// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * `signed` on an enum-typed member whose enum keeps none of its values in
 * the minimized BTF (only the member is relocated). libbpf up to 1.2 reads
 * an unsigned enum's signedness from the word after its header, as if it
 * were an int's encoding: the first enumerator in the full BTF. Without one
 * it would read what follows; in btf__enumsign's minimized output that is the
 * start of the string section ("\0state"), which reads as signed.
 */
#include "fixture.h"

enum es_state { ES_IDLE, ES_BUSY };

struct es_holder {
	int x;
	enum es_state state;
} __core;

SEC("raw_tp/sys_enter")
int enumsign_read(void *ctx)
{
	struct es_holder *h = fixture_ptr(struct es_holder);

	return core_field_signed(h, state) + BPF_CORE_READ(h, state);
}

char LICENSE[] SEC("license") = "GPL";
