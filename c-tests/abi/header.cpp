// SPDX-License-Identifier: MIT OR Apache-2.0
// btfgen.h from C++ (g++ -Wall -Wextra -Werror): compiles, links with C linkage, runs.
#include "btfgen.h"

#include <cerrno>
#include <cstdio>

int main()
{
	struct btf_reloc_info *info = bpf_reloc_info__new(nullptr);
	long err = libbpf_get_error(info);
	struct bpf_object_open_opts opts = {};

	opts.sz = sizeof(opts);
	opts.object_name = "cxx";
	if (info != nullptr || err != -EINVAL) {
		std::fprintf(stderr, "bpf_reloc_info__new(nullptr): %p, %ld\n", (void *)info, err);
		return 1;
	}
	if (bpf_object__open_file("/nonexistent", &opts) != nullptr || errno != ENOENT) {
		std::fprintf(stderr, "bpf_object__open_file(/nonexistent): errno %d\n", errno);
		return 1;
	}
	bpf_reloc_info__free(nullptr);
	std::puts("header.cpp: ok");
	return 0;
}
