// SPDX-License-Identifier: MIT OR Apache-2.0
/* Files, as filetop/fsslower/filelife read them: the path walked up
 * d_parent in a bpf_loop() callback, inode times whose layout changed in
 * 6.11 (i_atime -> i_atime_sec), and file mode/flag classification. */
#include "guard.h"

char LICENSE[] SEC("license") = "GPL";

#define PATH_DEPTH 16

struct walk_ctx {
	struct dentry *d;
	u64 h;
	u64 len;
};

static long walk_one(__u32 index, void *data)
{
	struct walk_ctx *w = data;
	struct dentry *d = w->d;
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	u64 len = BPF_CORE_READ(d, d_name.len);

	FOLD(w->h, len > 8, 1, 2);
	FOLD(w->h, GET_OR(d, d_flags, 0) != 0, 3, 4);
	FOLD(w->h, GET_OR(d, d_time, 0) != 0, 5, 6);
	w->len += len;
	if (!parent || parent == d)
		return 1;
	w->d = parent;
	return 0;
}

static __noinline u64 inode_times(struct inode *inode, struct event *e)
{
	struct inode___old *old = (void *)inode;
	u64 h = 3;

	if (bpf_core_field_exists(inode->i_atime_sec)) {
		e->a[0] = BPF_CORE_READ(inode, i_atime_sec);
		e->a[1] = GET_OR(inode, i_mtime_sec, 0);
		e->a[2] = GET_OR(inode, i_ctime_sec, 0);
		h = 5;
	} else {
		e->a[0] = BPF_CORE_READ(old, i_atime.tv_sec);
		e->a[1] = BPF_CORE_READ(old, i_mtime.tv_sec);
	}
	FOLD(h, e->a[0] > e->a[1], 1, 2);
	FOLD(h, GET_OR(inode, i_atime_nsec, 0) > 500000000, 3, 4);
	return h;
}

static __noinline u64 inode_kind(struct inode *inode)
{
	u64 mode = GET_OR(inode, i_mode, 0), h = 7;

	FOLD(h, (mode & 0170000) == 0100000, 1, 2);
	FOLD(h, (mode & 0170000) == 0040000, 3, 4);
	FOLD(h, (mode & 0170000) == 0120000, 5, 6);
	FOLD(h, (mode & 0170000) == 0020000, 7, 8);
	FOLD(h, (mode & 0170000) == 0060000, 9, 10);
	FOLD(h, (mode & 0170000) == 0010000, 11, 12);
	FOLD(h, GET_OR(inode, i_size, 0) > 1048576, 13, 14);
	FOLD(h, GET_OR(inode, i_blocks, 0) > 2048, 15, 16);
	FOLD(h, GET_OR(inode, __i_nlink, 1) > 1, 17, 18);
	FOLD(h, GET_OR(inode, i_flags, 0) != 0, 19, 20);
	FOLD(h, GET_OR(inode, i_generation, 0) != 0, 21, 22);
	FOLD(h, BPF_CORE_READ(inode, i_sb, s_magic) == 0xef53, 23, 24);
	FOLD(h, BPF_CORE_READ(inode, i_sb, s_flags) & 1, 25, 26);
	return h;
}

static __always_inline u64 file_flags(struct file *f)
{
	u64 flags = GET_OR(f, f_flags, 0), mode = GET_OR(f, f_mode, 0), h = 1;

#pragma unroll
	for (int i = 0; i < 12; i++)
		FOLD(h, (flags >> i) > (mode >> i), i + 1, i + 2);
	FOLD(h, GET_OR(f, f_pos, 0) > 0, 3, 4);
	return h;
}

static __always_inline int trace_file(void *ctx, struct file *f)
{
	struct event *e = scratch_event();
	struct walk_ctx w = {};
	struct inode *inode;

	if (!e)
		return 0;
	inode = bpf_core_field_exists(f->f_inode) ? BPF_CORE_READ(f, f_inode)
						  : BPF_CORE_READ(f, f_path.dentry, d_inode);
	w.d = BPF_CORE_READ(f, f_path.dentry);
	w.h = 1;
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop))
		bpf_loop(PATH_DEPTH, walk_one, &w, 0);
	e->a[8] = w.h;
	e->a[9] = w.len;
	e->a[10] = inode_times(inode, e);
	e->a[11] = inode_kind(inode);
	e->a[12] = file_flags(f);
	e->a[13] = GET_OR(inode, i_ino, 0) + BPF_CORE_READ(inode, i_sb, s_dev);
	emit(ctx, e);
	return 0;
}

SEC("kprobe/vfs_read")
int BPF_KPROBE(vfs_read, struct file *f)
{
	return trace_file(ctx, f);
}

SEC("kprobe/vfs_write")
int BPF_KPROBE(vfs_write, struct file *f)
{
	return trace_file(ctx, f);
}

SEC("kprobe/vfs_fsync_range")
int BPF_KPROBE(vfs_fsync, struct file *f)
{
	return trace_file(ctx, f);
}
