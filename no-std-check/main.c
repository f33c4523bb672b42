/* Runs the no_std build of btfgen (libno_std_check.a): exit 0 when it parses and
 * round-trips a tiny BTF and reports out-of-memory as an error. */
#include <stdio.h>
#include <stdlib.h>

int btfgen_no_std_check(void);
int btfgen_no_std_check_oom(void);

/* The precompiled `core`/`alloc` carry unwind tables that name Rust's personality routine;
 * with panic = "abort" nothing unwinds, so it is never called. */
void rust_eh_personality(void)
{
	abort();
}

int main(void)
{
	int count = btfgen_no_std_check();
	int oom = btfgen_no_std_check_oom();

	printf("no_std btfgen: type_cnt=%d (want 3), out-of-memory reported=%d (want 1)\n",
	       count, oom);
	return count == 3 && oom == 1 ? 0 : 1;
}
