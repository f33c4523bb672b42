// SPDX-License-Identifier: MIT OR Apache-2.0
/* Like libbpf-tools' filelife: files from creation to deletion, with their names. */
#include "kernel.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT 00170000
#define S_IFREG 0100000

struct event {
	u64 delta_ns;
	u32 tgid;
	char file[32];
	char task[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct dentry *);
	__type(value, u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

SEC("kprobe/security_inode_create")
int BPF_KPROBE(security_inode_create, struct inode *dir, struct dentry *dentry)
{
	u64 ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&start, &dentry, &ts, 0);
	return 0;
}

SEC("kprobe/vfs_unlink")
int BPF_KPROBE(vfs_unlink, void *idmap, struct inode *dir, struct dentry *dentry)
{
	u64 *tsp = bpf_map_lookup_elem(&start, &dentry);
	struct event e = {};
	const unsigned char *name;

	if (!tsp)
		return 0;
	if ((BPF_CORE_READ(dentry, d_inode, i_mode) & S_IFMT) == S_IFREG) {
		e.delta_ns = bpf_ktime_get_ns() - *tsp;
		e.tgid = bpf_get_current_pid_tgid() >> 32;
		name = BPF_CORE_READ(dentry, d_name.name);
		bpf_probe_read_kernel_str(e.file, sizeof(e.file), name);
		bpf_get_current_comm(e.task, sizeof(e.task));
		bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &e, sizeof(e));
	}
	bpf_map_delete_elem(&start, &dentry);
	return 0;
}
