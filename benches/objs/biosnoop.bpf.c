// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' biosnoop: block requests, their disk, sector, size and latency. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct stage {
	u64 issue;
	dev_t dev;
	char disk[32];
};

struct event {
	u64 delta, sector;
	u32 len, cmd_flags;
	dev_t dev;
	char disk[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, struct request *);
	__type(value, struct stage);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/blk_mq_start_request")
int BPF_KPROBE(blk_mq_start_request, struct request *rq)
{
	struct stage stage = { .issue = bpf_ktime_get_ns() };
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);

	stage.dev = BPF_CORE_READ(rq, part, bd_dev);
	bpf_probe_read_kernel_str(stage.disk, sizeof(stage.disk), disk->disk_name);
	bpf_map_update_elem(&start, &rq, &stage, 0);
	return 0;
}

SEC("kprobe/blk_mq_end_request")
int BPF_KPROBE(blk_mq_end_request, struct request *rq)
{
	struct stage *stage = bpf_map_lookup_elem(&start, &rq);
	struct event e = {};

	if (!stage)
		return 0;
	e.delta = bpf_ktime_get_ns() - stage->issue;
	e.sector = BPF_CORE_READ(rq, __sector);
	e.len = BPF_CORE_READ(rq, __data_len);
	e.cmd_flags = BPF_CORE_READ(rq, cmd_flags);
	e.dev = stage->dev;
	__builtin_memcpy(e.disk, stage->disk, sizeof(e.disk));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	bpf_map_delete_elem(&start, &rq);
	return 0;
}
