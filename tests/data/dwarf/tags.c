/* clang's btf_type_tag and btf_decl_tag attributes (DW_TAG_LLVM_annotation): pahole writes
 * TYPE_TAG for the type tags of pointers, DECL_TAG for the decl tags of structs, unions,
 * their members, typedefs, functions and their parameters. gcc 12 has neither. */
#define __user __attribute__((btf_type_tag("user")))
#define __rcu __attribute__((btf_type_tag("rcu")))
#define __tag(x) __attribute__((btf_decl_tag(x)))

struct tagged {
	int __user *up;
	int __user __rcu *urp;
	char *plain;
	int counted __tag("counter");
} __tag("tagged_struct");

union tagged_u {
	int i __tag("member_of_union");
	long l;
} __tag("tagged_union");

typedef int tagged_int __tag("tagged_typedef");

struct tagged tagged_var;
union tagged_u tagged_u_var;
tagged_int tagged_int_var;

int __tag("tagged_func") tagged_fn(int a __tag("first_param"), struct tagged *t)
{
	return a + *t->up;
}
