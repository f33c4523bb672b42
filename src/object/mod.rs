//! BPF ELF objects: program sections, instructions, `.BTF` and `.BTF.ext`.
