/* _Atomic, which BTF has no kind for: the member keeps the unqualified type. Kept in a unit
 * of its own because pahole 1.24 does not know DW_TAG_atomic_type (see tests/dwarf.rs). */
struct list_node {
	struct list_node *next;
};

struct with_atomic {
	_Atomic int counter;
	_Atomic(struct list_node *) head;
	const _Atomic long cal;
	int plain;
};

struct with_atomic atomic_var;
