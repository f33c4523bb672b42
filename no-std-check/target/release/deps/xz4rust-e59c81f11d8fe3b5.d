/work/main/no-std-check/target/release/deps/xz4rust-e59c81f11d8fe3b5.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc32.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc64xz.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/decoder.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/clamp.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/vli.rs

/work/main/no-std-check/target/release/deps/libxz4rust-e59c81f11d8fe3b5.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc32.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc64xz.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/decoder.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/clamp.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/vli.rs

/work/main/no-std-check/target/release/deps/libxz4rust-e59c81f11d8fe3b5.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc32.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc64xz.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/decoder.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/clamp.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/vli.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc32.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/crc64xz.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/decoder.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/clamp.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/xz4rust-0.2.3/src/vli.rs:
