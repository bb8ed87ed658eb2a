//! Extending a CRC-32/IEEE over bytes whose own CRC is already known, without reading
//! them again: the record CRC (format §1.5) covers the body, whose CRC the record's
//! header holds, so a writer hashes the header and the tail and shifts past the body.
//!
//! CRC-32 is linear over GF(2): for finished CRCs of `a` and `b`,
//! `crc(a ‖ b) = crc(a) · x^(8·|b|) mod P  ⊕  crc(b)`. Polynomials are kept reflected, as
//! the CRC itself is: bit 31 is the coefficient of x⁰.

use std::cell::RefCell;

/// P, reflected.
const POLY: u32 = 0xEDB8_8320;
/// The polynomial 1 (x⁰), reflected.
const ONE: u32 = 1 << 31;

/// a · b mod P (a `const fn`, so the table below is built with it at compile time).
const fn multiply(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    let mut bit = ONE;
    while bit != 0 {
        if a & bit != 0 {
            product ^= b;
        }
        // b · x: one step towards x³¹ (right in the reflected form), reduced by P.
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        bit >>= 1;
    }
    product
}

/// x^(2^k) mod P for k = 0..64 (x^(2^k) for every bit of a 64-bit exponent).
const fn powers_of_two() -> [u32; 64] {
    let mut table = [0u32; 64];
    // x¹, reflected.
    table[0] = ONE >> 1;
    let mut k = 1;
    while k < 64 {
        table[k] = multiply(table[k - 1], table[k - 1]);
        k += 1;
    }
    table
}

const X_TO_TWO_TO_THE: [u32; 64] = powers_of_two();

/// x^(8·length) mod P: the factor that moves a CRC past `length` bytes (a `const fn`:
/// `crc32_clmul` builds its fold multipliers from it at compile time).
pub(crate) const fn factor_for(length: u64) -> u32 {
    let mut factor = ONE;
    // 8·length = length << 3: bit k of length is bit k + 3 of the exponent.
    let mut rest = length;
    let mut k = 3;
    while rest != 0 {
        if rest & 1 != 0 {
            factor = multiply(factor, X_TO_TWO_TO_THE[k]);
        }
        rest >>= 1;
        k += 1;
    }
    factor
}

/// Multiplication by one fixed factor, a nibble of the multiplicand at a time: since the
/// product is linear in the multiplicand, it is the XOR of one table entry per nibble
/// (eight lookups instead of `multiply`'s 32 steps).
struct FixedFactor {
    length: u64,
    tables: [[u32; 16]; 8],
}

impl FixedFactor {
    fn new(length: u64) -> Self {
        // basis[d] = x^d · factor: each one more step towards x³¹ than the last.
        let mut basis = [0u32; 32];
        basis[0] = factor_for(length);
        for degree in 1..32 {
            let b = basis[degree - 1];
            basis[degree] = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        }
        let mut tables = [[0u32; 16]; 8];
        for (nibble, table) in tables.iter_mut().enumerate() {
            for value in 1..16usize {
                // Bit j of nibble k is the coefficient of x^(31 − 4k − j).
                let low = value.trailing_zeros() as usize;
                table[value] = table[value & (value - 1)] ^ basis[31 - 4 * nibble - low];
            }
        }
        FixedFactor { length, tables }
    }

    fn times(&self, a: u32) -> u32 {
        self.tables
            .iter()
            .enumerate()
            .fold(0, |product, (nibble, table)| {
                product ^ table[((a >> (4 * nibble)) & 0xF) as usize]
            })
    }
}

thread_local! {
    /// The last body length's factor: a batch's bodies are mostly one size, so its tables
    /// are built once per batch (or once for many), not per record.
    static LAST_FACTOR: RefCell<Option<FixedFactor>> = const { RefCell::new(None) };
}

/// `crc(prefix ‖ bytes)` from `crc(prefix)` and `crc(bytes)` (both finished CRC-32s) and
/// the length of `bytes`.
pub fn crc32_combine(prefix_crc: u32, bytes_crc: u32, bytes_length: u64) -> u32 {
    LAST_FACTOR.with(|last| {
        let mut last = last.borrow_mut();
        let factor = match &*last {
            Some(factor) if factor.length == bytes_length => factor,
            _ => last.insert(FixedFactor::new(bytes_length)),
        };
        factor.times(prefix_crc) ^ bytes_crc
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combining_equals_hashing_the_whole() {
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for split in [0, 1, 7, 64, 100, 1024, 2999, 3000] {
            for end in [split, split + 1, 3000] {
                if end > bytes.len() || end < split {
                    continue;
                }
                let (a, b) = bytes[..end].split_at(split);
                let whole = crc32fast::hash(&bytes[..end]);
                let combined =
                    crc32_combine(crc32fast::hash(a), crc32fast::hash(b), b.len() as u64);
                assert_eq!(combined, whole, "split {split} end {end}");
                // The cached factor, asked again for the same length.
                let again = crc32_combine(crc32fast::hash(a), crc32fast::hash(b), b.len() as u64);
                assert_eq!(again, whole);
            }
        }
    }
}
