/work/main/no-std-check/target/release/deps/hash32-ecb23356ca64e70f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/fnv.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/murmur3.rs

/work/main/no-std-check/target/release/deps/libhash32-ecb23356ca64e70f.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/fnv.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/murmur3.rs

/work/main/no-std-check/target/release/deps/libhash32-ecb23356ca64e70f.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/fnv.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/murmur3.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/fnv.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/hash32-0.3.1/src/murmur3.rs:
