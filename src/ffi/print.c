// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The two pieces of libbpf_set_print() that need a va_list, which Rust can neither create nor
 * declare: calling the user's print callback, and libbpf's default printer. Compiled into the
 * C library by build.rs (feature ffi); src/ffi/print.rs holds the rest. Both symbols stay
 * local to libbtfgen.so.1 (capi.map).
 */
#include <stdarg.h>
#include <stdio.h>

enum libbpf_print_level {
	LIBBPF_WARN,
	LIBBPF_INFO,
	LIBBPF_DEBUG,
};

typedef int (*libbpf_print_fn_t)(enum libbpf_print_level level, const char *, va_list ap);

/* libbpf's default: warnings and info on stderr, debug messages dropped. */
int btfgen_print_default(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, format, args);
}

/* Call `fn` as libbpf's libbpf_print() does: with the arguments after `format` as a va_list. */
int btfgen_print_call(libbpf_print_fn_t fn, enum libbpf_print_level level, const char *format, ...)
{
	va_list args;
	int ret;

	va_start(args, format);
	ret = fn(level, format, args);
	va_end(args);
	return ret;
}
