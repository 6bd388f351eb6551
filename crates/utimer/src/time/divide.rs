//! Division by the tick length without a `div` instruction.
//!
//! Every arm of a timer past wheel level 0 on the monotonic clock turns
//! nanoseconds into ticks (`now()`, to bring a stale base clock forward),
//! and every relative expiry does it again, rounding up. The tick length is
//! fixed when the system is built, but only known then, so the compiler
//! cannot strength-reduce the division; a 64-bit `div` costs 14–40 cycles
//! depending on the processor, and `perf` put 18% of a re-arm on the
//! monotonic clock in it.
//!
//! [`Divider`] precomputes a multiplier so that `n / d` becomes one
//! 64×64→128-bit multiply, a subtraction, an addition and two shifts, exact
//! for every `u64` `n` (the round-up method of Granlund and Montgomery,
//! "Division by invariant integers using multiplication", 1994):
//!
//! * `l = ceil(log2 d)`, `m = floor(2^64 · (2^l − d) / d) + 1` (fits in 64
//!   bits because `2^l − d < d`);
//! * `t = (m · n) >> 64`, then `n / d = (t + ((n − t) >> 1)) >> (l − 1)`.
//!
//! The `>> 1` before the add keeps `t + (n − t)`, which can reach 2^64, from
//! overflowing. A power of two is a shift. The tests compare against `/`
//! over edge values and random numerators for many divisors.

/// Exact `u64` division by a divisor fixed at construction.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Divider {
    d: u64,
    /// The multiplier `m`; 0 for a power of two (then only `shift` is used).
    m: u64,
    /// `l − 1`, or `log2 d` for a power of two.
    shift: u32,
}

impl Divider {
    /// A divider for `d` (at least 1).
    pub(crate) fn new(d: u64) -> Divider {
        assert!(d > 0, "utimer: division by zero");
        if d.is_power_of_two() {
            return Divider {
                d,
                m: 0,
                shift: d.trailing_zeros(),
            };
        }
        // d >= 3 here, so l >= 2.
        let l = 64 - (d - 1).leading_zeros();
        let m = (((1u128 << l) - d as u128) << 64) / d as u128 + 1;
        debug_assert!(m <= u64::MAX as u128);
        Divider {
            d,
            m: m as u64,
            shift: l - 1,
        }
    }

    /// `n / d`, rounded down.
    #[inline(always)]
    pub(crate) fn div(&self, n: u64) -> u64 {
        if self.m == 0 {
            return n >> self.shift;
        }
        let t = ((self.m as u128 * n as u128) >> 64) as u64;
        (t + ((n - t) >> 1)) >> self.shift
    }

    /// `n / d`, rounded up.
    #[inline(always)]
    pub(crate) fn div_ceil(&self, n: u64) -> u64 {
        let q = self.div(n);
        q + (q.wrapping_mul(self.d) != n) as u64
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Divider;

    fn check(d: u64, n: u64) {
        let v = Divider::new(d);
        assert_eq!(v.div(n), n / d, "{n} / {d}");
        assert_eq!(v.div_ceil(n), n.div_ceil(d), "{n} / {d} rounded up");
    }

    fn edges(d: u64) -> impl Iterator<Item = u64> {
        let near = |x: u64| [x.wrapping_sub(1), x, x.wrapping_add(1)];
        [
            0,
            1,
            2,
            d,
            u64::MAX,
            u64::MAX - 1,
            u64::MAX / 2,
            (u64::MAX / d) * d,
        ]
        .into_iter()
        .chain(near(d))
        .chain(near(d.wrapping_mul(2)))
        .chain(near((u64::MAX / d) * d))
        .chain((1..64).flat_map(move |b| near(1u64 << b)))
    }

    #[test]
    fn exact_at_the_edges() {
        let divisors = [
            1,
            2,
            3,
            5,
            7,
            10,
            1_000,
            1_000_000,
            999_999,
            1_000_001,
            1_000_000_000,
            (1 << 32) - 1,
            (1 << 32) + 1,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for d in divisors.into_iter().chain((1..64).map(|b| 1u64 << b)) {
            for n in edges(d) {
                check(d, n);
            }
        }
    }

    #[test]
    fn exact_for_random_numbers() {
        // xorshift: deterministic, no dependency.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (divisors, per) = if cfg!(miri) { (20, 20) } else { (2_000, 500) };
        for _ in 0..divisors {
            // Divisors of every size, not only huge ones.
            let d = (next() >> (next() % 64)).max(1);
            for _ in 0..per {
                let n = next() >> (next() % 64);
                check(d, n);
            }
            for n in edges(d) {
                check(d, n);
            }
        }
    }
}
