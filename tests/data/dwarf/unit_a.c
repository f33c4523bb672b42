/* Unit A: every shared type, plus its own `struct same_name`. */
#include "types.h"

struct defined_later {
	int x;
};

/* A different struct under a name unit B uses too: both stay. */
struct same_name {
	int a;
	long b;
};

struct all all_a;
struct same_name same_a;
struct flex *flex_a;

int sum(int n, ...)
{
	return n;
}

static int local_fn(struct all *p)
{
	return p->flags.c;
}

int a_entry(struct all *p, struct same_name *s)
{
	struct local_only {
		int l;
	} lo = { 1 };
	return local_fn(p) + (int)s->a + lo.l;
}
