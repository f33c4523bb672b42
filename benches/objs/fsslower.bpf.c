// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' fsslower: file reads slower than a threshold, with file name and size. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

const volatile u64 min_lat_ns = 10000000;

struct data {
	u64 ts;
	loff_t start;
	struct file *fp;
};

struct event {
	u64 delta_us, end_ns;
	loff_t offset, size;
	pid_t pid;
	char file[32];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, u32);
	__type(value, struct data);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/vfs_read")
int BPF_KPROBE(vfs_read, struct file *fp, char *buf, unsigned long count, loff_t *pos)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct data data = { .ts = bpf_ktime_get_ns(), .fp = fp };

	bpf_probe_read_kernel(&data.start, sizeof(data.start), pos);
	bpf_map_update_elem(&starts, &tid, &data, 0);
	return 0;
}

SEC("kretprobe/vfs_read")
int BPF_KRETPROBE(vfs_read_ret, long ret)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct data *data = bpf_map_lookup_elem(&starts, &tid);
	struct event e = {};
	struct dentry *dentry;
	u64 end = bpf_ktime_get_ns();

	if (!data)
		return 0;
	if (end - data->ts >= min_lat_ns) {
		e.delta_us = (end - data->ts) / 1000;
		e.end_ns = end;
		e.offset = data->start;
		e.size = BPF_CORE_READ(data->fp, f_inode, i_size);
		e.pid = bpf_get_current_pid_tgid() >> 32;
		dentry = BPF_CORE_READ(data->fp, f_path.dentry);
		bpf_probe_read_kernel_str(e.file, sizeof(e.file), BPF_CORE_READ(dentry, d_name.name));
		bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}
