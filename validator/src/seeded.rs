//! A small deterministic generator (xorshift64*) for the property-style unit tests that draw
//! their cases rather than list them (`shell_tests.rs`, `rules/meaning_tests.rs`): the same cases
//! on every run, from the seed each test names. Test code only; it uses nothing of the crate, so
//! the test of any layer may use it (`validator/tests/layers.rs`, `TEST_ONLY`).

pub struct Gen(pub u64);

impl Gen {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// One to nine lowercase ASCII letters.
    pub fn word(&mut self) -> String {
        let len = 1 + self.below(9);
        (0..len).map(|_| (b'a' + self.below(26) as u8) as char).collect()
    }
    /// Up to `max` characters drawn from `alphabet`.
    pub fn text(&mut self, alphabet: &str, max: usize) -> String {
        let cs: Vec<char> = alphabet.chars().collect();
        (0..self.below(max + 1)).map(|_| cs[self.below(cs.len())]).collect()
    }
}
