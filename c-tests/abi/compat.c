/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * btfgen.h against libbpf 1.1's own headers, at compile time only:
 *  - every function btfgen.h declares that libbpf also declares is redeclared
 *    here after libbpf's declaration, so the compiler rejects any prototype
 *    that differs from libbpf's (conflicting types);
 *  - struct bpf_object_open_opts, the one type both define, is renamed on
 *    btfgen's side (with the two functions taking it) and compared field by
 *    field: same offsets, sizes and total size.
 */
#include <stddef.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define bpf_object_open_opts btfgen_bpf_object_open_opts
#define bpf_object__open_file btfgen_bpf_object__open_file
#define bpf_object__open_mem btfgen_bpf_object__open_mem
#include "btfgen.h"
#undef bpf_object_open_opts
#undef bpf_object__open_file
#undef bpf_object__open_mem

#define LIBBPF_OPTS_T struct bpf_object_open_opts
#define BTFGEN_OPTS_T struct btfgen_bpf_object_open_opts
#define SAME_FIELD(f)                                                                      \
	_Static_assert(offsetof(LIBBPF_OPTS_T, f) == offsetof(BTFGEN_OPTS_T, f) &&         \
			       sizeof(((LIBBPF_OPTS_T *)0)->f) == sizeof(((BTFGEN_OPTS_T *)0)->f), \
		       "struct bpf_object_open_opts: field " #f " differs from libbpf's")

SAME_FIELD(sz);
SAME_FIELD(object_name);
SAME_FIELD(relaxed_maps);
SAME_FIELD(pin_root_path);
SAME_FIELD(kconfig);
SAME_FIELD(btf_custom_path);
SAME_FIELD(kernel_log_buf);
SAME_FIELD(kernel_log_size);
SAME_FIELD(kernel_log_level);
_Static_assert(sizeof(LIBBPF_OPTS_T) == sizeof(BTFGEN_OPTS_T),
	       "struct bpf_object_open_opts: size differs from libbpf's");
/* libbpf's bpf_object_open_opts__last_field, which OPTS_VALID checks against. */
_Static_assert(offsetof(BTFGEN_OPTS_T, kernel_log_level) + sizeof(__u32) ==
		       offsetof(LIBBPF_OPTS_T, bpf_object_open_opts__last_field) + sizeof(__u32),
	       "last known field differs from libbpf's");

/* The renamed functions: libbpf's prototypes but for the struct tag. */
static struct bpf_object *(*const open_file)(const char *, const BTFGEN_OPTS_T *) =
	btfgen_bpf_object__open_file;
static struct bpf_object *(*const open_mem)(const void *, size_t, const BTFGEN_OPTS_T *) =
	btfgen_bpf_object__open_mem;

int main(void)
{
	return open_file == NULL || open_mem == NULL;
}
