// SPDX-License-Identifier: MIT OR Apache-2.0
/* Target for enumsign.bpf.o: the holder first (lower type id), the unsigned
 * enum after it, so the enum is the last type of the minimized BTF. */
struct es_holder {
	long pad;
	enum es_state { ES_IDLE = 1, ES_BUSY = 2, ES_GONE = 3 } state;
};

void btf__enumsign(struct es_holder *h) {}
