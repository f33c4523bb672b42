// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' mdflush: md (software RAID) flushes and the disk they go to. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

struct event {
	pid_t pid;
	u32 opf;
	char comm[16];
	char disk[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("fentry/md_flush_request")
int BPF_PROG(md_flush_request, void *mddev, struct bio *bio)
{
	struct event e = {};
	struct gendisk *disk = BPF_CORE_READ(bio, bi_bdev, bd_disk);

	e.pid = bpf_get_current_pid_tgid() >> 32;
	e.opf = BPF_CORE_READ(bio, bi_opf);
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	bpf_probe_read_kernel_str(e.disk, sizeof(e.disk), disk->disk_name);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	return 0;
}
