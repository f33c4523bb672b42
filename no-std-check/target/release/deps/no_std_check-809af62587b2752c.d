/work/main/no-std-check/target/release/deps/no_std_check-809af62587b2752c.d: src/lib.rs

/work/main/no-std-check/target/release/deps/libno_std_check-809af62587b2752c.a: src/lib.rs

src/lib.rs:
