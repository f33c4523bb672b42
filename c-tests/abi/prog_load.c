/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * bpf_object__prog_load_info end to end, for loaders that do not link libbpf: every named
 * program of OBJECT is loaded into the running kernel twice with raw BPF_PROG_LOAD, once with
 * kernel-side CO-RE (the bpf_core_relo records) and once with user-space CO-RE (instructions
 * patched against TARGET_BTF), and the kernel's translated instructions must be identical.
 *
 *   prog_load OBJECT TARGET_BTF PROG...     exit 0 ok, 77 (SKIP) where BPF syscalls are refused
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>

#include "btfgen.h"

#define SKIP 77

static char log_buf[1 << 20];

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* The program's BTF, then the program; -errno on failure (the verifier log on stderr). */
static int load(const char *name, const struct bpf_prog_load_info *info)
{
	union bpf_attr attr;
	int btf_fd, fd;

	memset(&attr, 0, sizeof(attr));
	attr.btf = (uintptr_t)info->btf;
	attr.btf_size = info->btf_size;
	btf_fd = sys_bpf(BPF_BTF_LOAD, &attr);
	if (btf_fd < 0)
		return -errno;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
	attr.insns = (uintptr_t)info->insns;
	attr.insn_cnt = info->insn_cnt;
	attr.license = (uintptr_t)"GPL";
	strncpy(attr.prog_name, name, sizeof(attr.prog_name) - 1);
	attr.prog_btf_fd = btf_fd;
	attr.func_info = (uintptr_t)info->func_info;
	attr.func_info_cnt = info->func_info_cnt;
	attr.func_info_rec_size = info->func_info_rec_size;
	attr.line_info = (uintptr_t)info->line_info;
	attr.line_info_cnt = info->line_info_cnt;
	attr.line_info_rec_size = info->line_info_rec_size;
	attr.core_relos = (uintptr_t)info->core_relos;
	attr.core_relo_cnt = info->core_relo_cnt;
	attr.core_relo_rec_size = info->core_relo_rec_size;
	fd = sys_bpf(BPF_PROG_LOAD, &attr);
	if (fd < 0) {
		int err = -errno;

		attr.log_buf = (uintptr_t)log_buf;
		attr.log_size = sizeof(log_buf);
		attr.log_level = 1;
		sys_bpf(BPF_PROG_LOAD, &attr);
		fprintf(stderr, "%s: BPF_PROG_LOAD: %s\n%s\n", name, strerror(-err), log_buf);
		fd = err;
	}
	close(btf_fd);
	return fd;
}

/* The kernel's translated instructions of program fd (malloc'd, *len bytes). */
static void *xlated(int fd, uint32_t *len)
{
	struct bpf_prog_info info;
	union bpf_attr attr;
	void *insns;

	memset(&info, 0, sizeof(info));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = fd;
	attr.info.info_len = sizeof(info);
	attr.info.info = (uintptr_t)&info;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr))
		return NULL;
	*len = info.xlated_prog_len;
	insns = malloc(*len);
	if (!insns)
		return NULL;
	memset(&info, 0, sizeof(info));
	info.xlated_prog_len = *len;
	info.xlated_prog_insns = (uintptr_t)insns;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr)) {
		free(insns);
		return NULL;
	}
	return insns;
}

/* The load info of one program: a size query, then the real call into an aligned buffer. */
static void *load_info(const struct bpf_object *obj, const struct btf *targ, const char *name,
		       struct bpf_prog_load_info *info)
{
	size_t size = 0;
	void *buf;
	int err;

	err = bpf_object__prog_load_info(obj, name, targ, info, NULL, &size);
	if (err != -ENOSPC) {
		fprintf(stderr, "%s: size query returned %d, expected -ENOSPC\n", name, err);
		return NULL;
	}
	buf = aligned_alloc(8, (size + 7) & ~(size_t)7);
	if (!buf)
		return NULL;
	err = bpf_object__prog_load_info(obj, name, targ, info, buf, &size);
	if (err) {
		fprintf(stderr, "%s: bpf_object__prog_load_info: %d\n", name, err);
		free(buf);
		return NULL;
	}
	return buf;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct btf *targ;
	int i, rc = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: %s OBJECT TARGET_BTF PROG...\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	targ = btf__parse(argv[2], NULL);
	if (!obj || !targ) {
		perror("open");
		return 1;
	}
	for (i = 3; i < argc && rc == 0; i++) {
		struct bpf_prog_load_info kernel_side, user_space;
		void *kbuf = load_info(obj, NULL, argv[i], &kernel_side);
		void *ubuf = load_info(obj, targ, argv[i], &user_space);
		void *kx = NULL, *ux = NULL;
		uint32_t klen = 0, ulen = 0;
		int kfd = -1, ufd = -1;

		if (!kbuf || !ubuf) {
			rc = 1;
		} else if ((kfd = load(argv[i], &kernel_side)) == -EPERM || kfd == -EACCES) {
			printf("SKIP: BPF_PROG_LOAD refused (%s)\n", strerror(-kfd));
			rc = SKIP;
		} else if (kfd < 0 || (ufd = load(argv[i], &user_space)) < 0) {
			rc = 1;
		} else if (!(kx = xlated(kfd, &klen)) || !(ux = xlated(ufd, &ulen))) {
			perror("BPF_OBJ_GET_INFO_BY_FD");
			rc = 1;
		} else {
			int same = klen == ulen && memcmp(kx, ux, klen) == 0;

			printf("%s: %u insns, %u CO-RE records; xlated %u vs %u bytes: %s\n", argv[i],
			       kernel_side.insn_cnt, kernel_side.core_relo_cnt, klen, ulen,
			       same ? "identical" : "DIFFERENT");
			rc = same ? 0 : 1;
		}
		if (kfd >= 0)
			close(kfd);
		if (ufd >= 0)
			close(ufd);
		free(kx);
		free(ux);
		free(kbuf);
		free(ubuf);
	}
	btf__free(targ);
	bpf_object__close(obj);
	return rc;
}
