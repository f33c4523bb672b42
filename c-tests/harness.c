// SPDX-License-Identifier: MIT OR Apache-2.0
/* Shared by the libbpf-linked harnesses; see harness.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "harness.h"

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

bool bpf_usable(void)
{
	struct bpf_insn insns[] = {
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 }, /* r0 = 0 */
		{ .code = 0x95 },			  /* exit */
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, 2, NULL);

	if (fd < 0) {
		fprintf(stderr, "SKIP: BPF syscalls refused here (bpf_prog_load: %s)\n",
			strerror(errno));
		return false;
	}
	close(fd);
	return true;
}

int elf_native(const char *path)
{
	unsigned char ident[EI_NIDENT];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(ident, 1, sizeof(ident), f);
	fclose(f);
	if (n != sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		fprintf(stderr, "%s: %s: not an ELF file\n", program_invocation_short_name, path);
		return -1;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return ident[EI_DATA] == ELFDATA2LSB;
#else
	return ident[EI_DATA] == ELFDATA2MSB;
#endif
}

char *flatten_split(const char *split_path, const char *base_path)
{
	static char tmpl[] = "/tmp/btfgen-harness.XXXXXX";
	struct btf *base, *split, *flat;
	const void *raw;
	__u32 raw_sz, id, cnt;
	int fd;

	base = btf__parse(base_path, NULL);
	if (!base) {
		fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, base_path, strerror(errno));
		return NULL;
	}
	split = btf__parse_split(split_path, base);
	if (!split) {
		fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, split_path, strerror(errno));
		return NULL;
	}
	flat = btf__new_empty();
	if (!flat)
		return NULL;
	cnt = btf__type_cnt(split);
	for (id = 1; id < cnt; id++) {
		/* types are added in ID order, so every reference stays valid */
		int nid = btf__add_type(flat, split, btf__type_by_id(split, id));

		if (nid != (int)id) {
			fprintf(stderr, "%s: flattening type [%u] failed: %d\n", program_invocation_short_name, id, nid);
			return NULL;
		}
	}
	btf__set_endianness(flat, btf__endianness(split));
	raw = btf__raw_data(flat, &raw_sz);
	fd = mkstemp(tmpl);
	if (!raw || fd < 0 || write(fd, raw, raw_sz) != (ssize_t)raw_sz) {
		fprintf(stderr, "%s: writing flattened BTF failed\n", program_invocation_short_name);
		return NULL;
	}
	close(fd);
	btf__free(flat);
	btf__free(split);
	btf__free(base);
	return tmpl;
}
