//! Parser for the auxiliary vector (`/proc/PID/auxv`, `getauxval(3)`).
//!
//! The vector is pairs of machine words in the *target's* word size: a
//! 32-bit process on a 64-bit kernel has 4-byte words. procfs decodes it with
//! the reader's `usize`, which is wrong for such a target, so we decode it
//! here with an explicit [`WordSize`].

use crate::error::{Error, Result};

/// The word size of the process whose auxv is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordSize {
    W32,
    W64,
}

impl WordSize {
    fn bytes(self) -> usize {
        match self {
            WordSize::W32 => 4,
            WordSize::W64 => 8,
        }
    }
}

/// One `(a_type, a_val)` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuxEntry {
    pub key: u64,
    pub value: u64,
}

/// `AT_NULL`: ends the vector.
pub const AT_NULL: u64 = 0;
/// `AT_SYSINFO_EHDR`: the address of the vDSO's ELF header.
pub const AT_SYSINFO_EHDR: u64 = 33;

/// Decode native-endian words up to and excluding `AT_NULL`. Bytes after
/// AT_NULL (the kernel pads /proc/PID/auxv) are ignored; a vector without
/// AT_NULL or with a partial pair is malformed.
pub fn parse(bytes: &[u8], word: WordSize) -> Result<Vec<AuxEntry>> {
    let w = word.bytes();
    let read = |chunk: &[u8]| -> u64 {
        match word {
            WordSize::W32 => u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) as u64,
            WordSize::W64 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                u64::from_ne_bytes(b)
            }
        }
    };
    let mut entries = Vec::new();
    for pair in bytes.chunks(2 * w) {
        if pair.len() != 2 * w {
            return Err(Error::malformed(
                "auxv",
                format!("{} trailing bytes do not make a whole {}-byte pair", pair.len(), 2 * w),
            ));
        }
        let entry = AuxEntry { key: read(&pair[..w]), value: read(&pair[w..]) };
        if entry.key == AT_NULL {
            return Ok(entries);
        }
        entries.push(entry);
    }
    Err(Error::malformed("auxv", "no AT_NULL terminator"))
}

/// Guess the word size of an auxv blob when the executable cannot be read:
/// decoded as 64-bit, a 32-bit vector yields keys far above any AT_* value.
pub fn guess_word_size(bytes: &[u8]) -> WordSize {
    match parse(bytes, WordSize::W64) {
        Ok(entries) if !entries.is_empty() && entries.iter().all(|e| e.key < 64) => WordSize::W64,
        _ => WordSize::W32,
    }
}

/// Value of the first entry with `key`.
pub fn get(entries: &[AuxEntry], key: u64) -> Option<u64> {
    entries.iter().find(|e| e.key == key).map(|e| e.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words64(pairs: &[(u64, u64)]) -> Vec<u8> {
        pairs.iter().flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat()).collect()
    }
    fn words32(pairs: &[(u32, u32)]) -> Vec<u8> {
        pairs.iter().flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat()).collect()
    }

    #[test]
    fn decodes_both_word_sizes() {
        let b64 = words64(&[(33, 0x7fff_0000_1000), (6, 4096), (0, 0), (0, 0)]);
        let e = parse(&b64, WordSize::W64).unwrap();
        assert_eq!(e, vec![AuxEntry { key: 33, value: 0x7fff_0000_1000 }, AuxEntry { key: 6, value: 4096 }]);
        assert_eq!(guess_word_size(&b64), WordSize::W64);

        let b32 = words32(&[(32, 0xf7f0_1234), (33, 0xf7f0_0000), (6, 4096), (0, 0)]);
        let e = parse(&b32, WordSize::W32).unwrap();
        assert_eq!(get(&e, AT_SYSINFO_EHDR), Some(0xf7f0_0000));
        assert_eq!(e.len(), 3);
        assert_eq!(guess_word_size(&b32), WordSize::W32);
    }

    #[test]
    fn malformed_vectors_are_errors() {
        assert!(parse(&[], WordSize::W64).is_err());
        assert!(parse(&[1, 2, 3], WordSize::W64).is_err());
        assert!(parse(&words64(&[(6, 4096)]), WordSize::W64).is_err());
        let mut b = words64(&[(6, 4096)]);
        b.extend_from_slice(&[0; 7]);
        assert!(parse(&b, WordSize::W64).is_err());
    }
}
