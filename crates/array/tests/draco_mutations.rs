//! Damaged Draco fragments (the `draco` feature): every fragment of the fixture
//! `tests/data/multires_draco`, with bytes changed, cut short or repeated by a fixed
//! pseudo-random sequence, decodes to a mesh or to an error; never a panic, an abort or an
//! allocation the fragment's size cannot justify.
#![cfg(feature = "draco")]

use neurochunk_array::precomputed::mesh::decode_draco_fragment;

/// The fixture's non-empty fragments (unsharded layer, segment 5): byte ranges of `mesh/5`.
fn fragments() -> Vec<Vec<u8>> {
    let data = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/multires_draco/plain/mesh/5"
    ))
    .unwrap();
    vec![
        data[..123].to_vec(),
        data[123..219].to_vec(),
        data[219..314].to_vec(),
    ]
}

/// xorshift64*: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(rng: &mut Rng, good: &[u8]) -> Vec<u8> {
    let mut bytes = good.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(5) {
            0 => {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next() as u8;
            }
            1 => {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
            2 => {
                let at = rng.below(bytes.len());
                bytes[at] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)];
            }
            3 => {
                let keep = rng.below(bytes.len()).max(1);
                bytes.truncate(keep);
            }
            _ => {
                let at = rng.below(bytes.len());
                let run = bytes[at..].iter().take(8).copied().collect::<Vec<u8>>();
                bytes.splice(at..at, run);
            }
        }
    }
    bytes
}

#[test]
fn mutated_fragments_decode_or_fail_cleanly() {
    let fragments = fragments();
    let cases: usize = std::env::var("DRACO_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let verbose = std::env::var_os("DRACO_MUTATIONS_VERBOSE").is_some();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut decoded, mut refused) = (0, 0);
    for case in 0..cases {
        let good = &fragments[case % fragments.len()];
        let bytes = mutate(&mut rng, good);
        if verbose {
            eprintln!(
                "case {case}: {}",
                bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
        }
        match decode_draco_fragment(&bytes, 10) {
            Ok(_) => decoded += 1,
            Err(message) => {
                assert!(!message.is_empty());
                refused += 1;
            }
        }
    }
    assert_eq!(decoded + refused, cases);
    assert!(refused > cases / 4, "{refused} of {cases} refused");
}

/// leb128, as Draco writes its counts.
fn leb128(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// An edgebreaker mesh header declaring these counts, then a few bytes of nothing.
fn edgebreaker_header(vertices: u64, faces: u64, splits: u64) -> Vec<u8> {
    let mut out = b"DRACO".to_vec();
    out.extend([2, 2, 1, 1, 0, 0, 0]);
    leb128(vertices, &mut out);
    leb128(faces, &mut out);
    out.push(0);
    leb128(faces, &mut out);
    leb128(0, &mut out);
    leb128(splits, &mut out);
    out.extend([0; 16]);
    out
}

/// Counts the data cannot hold are refused before the decoder sizes anything by them.
#[test]
fn counts_past_the_data_are_refused_up_front() {
    let err = decode_draco_fragment(&edgebreaker_header(10, 10, 1 << 40), 10).unwrap_err();
    assert!(err.contains("topology splits"), "{err}");
    let err = decode_draco_fragment(&edgebreaker_header(10, 1 << 40, 0), 10).unwrap_err();
    assert!(
        err.contains("faces") && err.contains("bytes of data"),
        "{err}"
    );
    let err = decode_draco_fragment(&edgebreaker_header(1 << 30, 10, 0), 10).unwrap_err();
    assert!(err.contains("vertices"), "{err}");
    // Plausible counts reach the decoder, which refuses the missing data its own way.
    let err = decode_draco_fragment(&edgebreaker_header(10, 10, 0), 10).unwrap_err();
    assert!(!err.contains("bytes of data"), "{err}");
}
