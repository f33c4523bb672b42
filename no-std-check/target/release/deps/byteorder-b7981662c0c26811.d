/work/main/no-std-check/target/release/deps/byteorder-b7981662c0c26811.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/byteorder-1.5.0/src/lib.rs

/work/main/no-std-check/target/release/deps/libbyteorder-b7981662c0c26811.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/byteorder-1.5.0/src/lib.rs

/work/main/no-std-check/target/release/deps/libbyteorder-b7981662c0c26811.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/byteorder-1.5.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/byteorder-1.5.0/src/lib.rs:
