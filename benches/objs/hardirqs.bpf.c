// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' hardirqs: time spent in each hard interrupt handler, by name. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct irq_key {
	char name[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct irq_key);
	__type(value, u64);
} infos SEC(".maps");

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_handler_entry, int irq, struct irqaction *action)
{
	u32 zero = 0;
	u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&start, &zero, &ts, 0);
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irq_handler_exit, int irq, struct irqaction *action)
{
	static const u64 none;
	struct irq_key key = {};
	u32 zero = 0;
	u64 *tsp = bpf_map_lookup_elem(&start, &zero), *total;

	if (!tsp || !*tsp)
		return 0;
	bpf_probe_read_kernel_str(key.name, sizeof(key.name), BPF_CORE_READ(action, name));
	bpf_map_update_elem(&infos, &key, &none, BPF_NOEXIST);
	total = bpf_map_lookup_elem(&infos, &key);
	if (total)
		__sync_fetch_and_add(total, bpf_ktime_get_ns() - *tsp);
	return 0;
}
