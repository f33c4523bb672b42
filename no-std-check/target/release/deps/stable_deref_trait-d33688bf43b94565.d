/work/main/no-std-check/target/release/deps/stable_deref_trait-d33688bf43b94565.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/stable_deref_trait-1.2.1/src/lib.rs

/work/main/no-std-check/target/release/deps/libstable_deref_trait-d33688bf43b94565.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/stable_deref_trait-1.2.1/src/lib.rs

/work/main/no-std-check/target/release/deps/libstable_deref_trait-d33688bf43b94565.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/stable_deref_trait-1.2.1/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/stable_deref_trait-1.2.1/src/lib.rs:
