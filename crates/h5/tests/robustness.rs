//! Hostile input: the test files truncated, with bytes flipped (most near the signatures of
//! metadata structures, where they do the most harm), zeroed or set to 0xff, walked whole by
//! `fuzz_parse`. Nothing may panic. `H5_FUZZ_ITERS` sets the number of mutations per file.

mod common;

use common::*;
use neurochunk_h5::fuzz_parse;

const FILES: [&str; 10] = [
    "latest_offsets4.h5",
    "tiny.h5",
    "types.h5",
    "earliest.h5",
    "latest.h5",
    "sb1_offsets4.h5",
    "sohm.h5",
    "refs112.h5",
    "plugins.h5",
    "userblock.h5",
];

const SIGNATURES: [&[u8]; 16] = [
    b"\x89HDF", b"OHDR", b"OCHK", b"TREE", b"SNOD", b"HEAP", b"GCOL", b"FRHP", b"FHDB", b"FHIB",
    b"BTHD", b"BTIN", b"BTLF", b"FAHD", b"FADB", b"EAHD",
];

fn iterations() -> usize {
    std::env::var("H5_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// Positions near the metadata structures of `bytes`.
fn hot_spots(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    for sig in SIGNATURES {
        let mut from = 0;
        while let Some(p) = bytes[from..].windows(sig.len()).position(|w| w == sig) {
            out.push(from + p);
            from += p + 1;
        }
    }
    for extra in [b"EAIB", b"EASB", b"EADB", b"SMTB"] {
        let mut from = 0;
        while let Some(p) = bytes[from..].windows(4).position(|w| w == extra) {
            out.push(from + p);
            from += p + 1;
        }
    }
    out
}

fn mutate(rng: &mut fastrand::Rng, original: &[u8], spots: &[usize]) -> Vec<u8> {
    let mut b = original.to_vec();
    let n = b.len();
    let pick = |rng: &mut fastrand::Rng| -> usize {
        if !spots.is_empty() && rng.u8(..) < 200 {
            let s = spots[rng.usize(..spots.len())];
            (s + rng.usize(..160)).min(n - 1)
        } else {
            rng.usize(..n)
        }
    };
    match rng.u8(..6) {
        0 => {
            // Truncate.
            let at = rng.usize(..n);
            b.truncate(at);
        }
        1 => {
            // Flip a few bits.
            for _ in 0..rng.usize(1..8) {
                let p = pick(rng);
                b[p] ^= 1 << rng.u8(..8);
            }
        }
        2 => {
            // Random bytes.
            for _ in 0..rng.usize(1..16) {
                let p = pick(rng);
                b[p] = rng.u8(..);
            }
        }
        3 => {
            // 0xff runs: undefined addresses, huge sizes.
            let p = pick(rng);
            let len = rng.usize(1..9);
            for x in b.iter_mut().skip(p).take(len) {
                *x = 0xff;
            }
        }
        4 => {
            // Zero runs.
            let p = pick(rng);
            let len = rng.usize(1..32);
            for x in b.iter_mut().skip(p).take(len) {
                *x = 0;
            }
        }
        _ => {
            // Copy a structure's bytes over another's (plausible-looking garbage).
            if spots.len() >= 2 {
                let a = spots[rng.usize(..spots.len())];
                let c = spots[rng.usize(..spots.len())];
                let len = rng.usize(4..64).min(n - a).min(n - c);
                let src = b[a..a + len].to_vec();
                b[c..c + len].copy_from_slice(&src);
            }
        }
    }
    b
}

#[test]
fn unmutated_files_walk_cleanly() {
    for name in FILES {
        fuzz_parse(&file_bytes(name));
    }
    fuzz_parse(&[]);
    fuzz_parse(b"\x89HDF\r\n\x1a\n");
    fuzz_parse(&[0xff; 4096]);
}

#[test]
fn mutated_files_never_panic() {
    let iters = iterations();
    let seed = std::env::var("H5_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_0005);
    let mut rng = fastrand::Rng::with_seed(seed);
    for name in FILES {
        let original = file_bytes(name);
        let spots = hot_spots(&original);
        for _ in 0..iters {
            let m = mutate(&mut rng, &original, &spots);
            fuzz_parse(&m);
        }
    }
}
