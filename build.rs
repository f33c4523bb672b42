//! Builds the C half of the C ABI's print callback (`src/ffi/print.c`) when the `ffi` feature
//! is on; nothing otherwise.

fn main() {
    println!("cargo::rerun-if-changed=src/ffi/print.c");
    #[cfg(feature = "ffi")]
    cc::Build::new()
        .file("src/ffi/print.c")
        .warnings(true)
        .compile("btfgen_print");
}
