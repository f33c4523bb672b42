//! Text dump of a BTF in exactly the format of `bpftool btf dump file FILE` (raw format).
