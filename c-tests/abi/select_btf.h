/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What select_tool.c (libbpf's side) needs from select_btf.c (btfgen's side). */
#ifndef BTFGEN_ABI_SELECT_BTF_H
#define BTFGEN_ABI_SELECT_BTF_H

#include <stddef.h>

/* "MATCH KEY ENTRY BTF_SIZE" of the selection for ROOT (NULL: /) and RELEASE (NULL: running). */
int describe_core_btf(const char *root, const char *release, char *out, size_t out_size);
/* btfgen_ensure_core_btf() on the embedded archive: fills *btf_custom_path (NULL: native). */
int ensure_core_btf(const char *root, const char *release, const char **btf_custom_path);
/* btfgen_cleanup_core_btf(). */
void cleanup_core_btf(const char **btf_custom_path);

#endif
