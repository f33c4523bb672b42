//! A fixed, dependency-free stream of pseudo-random words for the unit tests that generate
//! their inputs (instruction soups, type sections, corruptions): the same seed, the same
//! stream, on every machine.

/// xorshift64 from `seed` (not 0, which stays 0).
pub(crate) fn xorshift64(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
