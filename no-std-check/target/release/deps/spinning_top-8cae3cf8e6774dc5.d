/work/main/no-std-check/target/release/deps/spinning_top-8cae3cf8e6774dc5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/relax.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/rw_spinlock.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/spinlock.rs

/work/main/no-std-check/target/release/deps/libspinning_top-8cae3cf8e6774dc5.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/relax.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/rw_spinlock.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/spinlock.rs

/work/main/no-std-check/target/release/deps/libspinning_top-8cae3cf8e6774dc5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/relax.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/rw_spinlock.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/spinlock.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/relax.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/rw_spinlock.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/spinning_top-0.3.1/src/spinlock.rs:
