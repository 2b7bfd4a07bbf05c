//! Deterministic test volume resembling light-sheet microscopy, and the checksum used to
//! verify every read.
//!
//! The volume is a cube of `uint16`: a smooth background (camera offset plus an illumination
//! falloff along x and gentle variation along y and z), a few thousand bright gaussian blobs
//! (cell nuclei, sigma 1.5–5 voxels), and small signal-dependent noise (standard deviation
//! `1 + 0.15·sqrt(value)`, i.e. about 3 counts on the background). The same size always gives
//! the same bytes, on any machine and thread count.

use rayon::prelude::*;

/// Seed of every pseudo-random choice ("neurochk").
const SEED: u64 = 0x6e65_7572_6f63_686b;
/// One blob per this many voxels.
const VOXELS_PER_BLOB: usize = 65_536;

/// The splitmix64 finaliser: a well-mixed 64-bit hash of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A splitmix64 sequence.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + unit * (hi - lo)
    }
}

/// A gaussian blob, with its separable profile precomputed over its bounding box.
struct Blob {
    /// First voxel of the bounding box along (z, y, x).
    start: [usize; 3],
    /// `amplitude · exp(-d²/2σ²)` along z, and `exp(-d²/2σ²)` along y and x, over the box.
    profile: [Vec<f32>; 3],
}

impl Blob {
    fn random(rng: &mut SplitMix, n: usize) -> Blob {
        let center = [0; 3].map(|_| rng.uniform(0.0, n as f64));
        let sigma = rng.uniform(1.5, 5.0);
        let amplitude = rng.uniform(200.0, 4000.0);
        let radius = (3.0 * sigma).ceil();
        let mut start = [0usize; 3];
        let mut profile: [Vec<f32>; 3] = Default::default();
        for axis in 0..3 {
            let lo = (center[axis] - radius).floor().max(0.0) as usize;
            let hi = ((center[axis] + radius).ceil() as usize).min(n - 1);
            start[axis] = lo;
            let scale = if axis == 0 { amplitude } else { 1.0 };
            profile[axis] = (lo..=hi)
                .map(|i| {
                    let d = i as f64 - center[axis];
                    (scale * (-d * d / (2.0 * sigma * sigma)).exp()) as f32
                })
                .collect();
        }
        Blob { start, profile }
    }

    /// Add this blob's contribution to plane `z` (an `n × n` slice, y-major).
    fn add_to_plane(&self, z: usize, plane: &mut [f32], n: usize) {
        let [pz, py, px] = &self.profile;
        let Some(&wz) = z.checked_sub(self.start[0]).and_then(|i| pz.get(i)) else {
            return;
        };
        for (dy, &wy) in py.iter().enumerate() {
            let row = (self.start[1] + dy) * n + self.start[2];
            let w = wz * wy;
            for (out, &wx) in plane[row..row + px.len()].iter_mut().zip(px) {
                *out += w * wx;
            }
        }
    }
}

/// Generate the `n³` volume as little-endian `uint16` bytes in C order (z, y, x), in parallel.
pub fn generate(n: usize) -> Vec<u8> {
    assert!(n > 0, "volume size must be positive");
    let mut rng = SplitMix(SEED);
    let blob_count = (n * n * n).div_ceil(VOXELS_PER_BLOB);
    let blobs: Vec<Blob> = (0..blob_count).map(|_| Blob::random(&mut rng, n)).collect();
    let nf = n as f32;
    let along_x: Vec<f32> = (0..n)
        .map(|x| 60.0 * (-(x as f32) / (0.7 * nf)).exp())
        .collect();
    let along_y: Vec<f32> = (0..n)
        .map(|y| 15.0 * (std::f32::consts::TAU * y as f32 / (0.61 * nf)).cos())
        .collect();
    let along_z: Vec<f32> = (0..n).map(|z| 20.0 * z as f32 / nf).collect();

    let mut out = vec![0u8; n * n * n * 2];
    out.par_chunks_mut(n * n * 2)
        .enumerate()
        .for_each(|(z, plane_out)| {
            let mut plane = vec![0f32; n * n];
            for blob in &blobs {
                blob.add_to_plane(z, &mut plane, n);
            }
            for (y, (row, row_out)) in plane
                .chunks_exact(n)
                .zip(plane_out.chunks_exact_mut(n * 2))
                .enumerate()
            {
                let base = 100.0 + along_y[y] + along_z[z];
                for (x, (&signal, out)) in row.iter().zip(row_out.chunks_exact_mut(2)).enumerate() {
                    let value = base + along_x[x] + signal;
                    let index = ((z * n + y) * n + x) as u64;
                    let h = mix(SEED ^ index);
                    // Triangular noise from two uniforms: mean 0, standard deviation 1.
                    let u = ((h >> 40) as f32 + (h & 0xff_ffff) as f32) / (1u32 << 24) as f32 - 1.0;
                    let noisy = value + u * 2.449_49 * (1.0 + 0.15 * value.sqrt());
                    let v = noisy.round().clamp(0.0, 65535.0) as u16;
                    out.copy_from_slice(&v.to_le_bytes());
                }
            }
        });
    out
}

/// The blocks [`checksum`] hashes separately (and [`Checksum`] is fed).
pub const CHECKSUM_BLOCK: usize = 1 << 20;

/// An order-sensitive 64-bit checksum of `bytes`, computed in parallel over 1 MiB blocks.
/// Any changed, missing or misplaced byte changes it (with overwhelming probability).
pub fn checksum(bytes: &[u8]) -> u64 {
    let blocks: Vec<u64> = bytes.par_chunks(CHECKSUM_BLOCK).map(block_hash).collect();
    let mut sum = Checksum::new(bytes.len());
    for b in blocks {
        sum.add_hash(b);
    }
    sum.finish()
}

/// [`checksum`] computed block by block, for data read in pieces (e.g. from a file).
pub struct Checksum {
    h: u64,
    next: u64,
}

impl Checksum {
    /// The checksum of `len` bytes, to be fed in order.
    pub fn new(len: usize) -> Self {
        Checksum {
            h: mix(len as u64),
            next: 0,
        }
    }

    /// Add the next block: [`CHECKSUM_BLOCK`] bytes, the last one possibly shorter.
    pub fn add(&mut self, block: &[u8]) {
        self.add_hash(block_hash(block));
    }

    fn add_hash(&mut self, hash: u64) {
        self.h = mix(self.h ^ hash.wrapping_add(self.next));
        self.next += 1;
    }

    /// The checksum of everything added.
    pub fn finish(self) -> u64 {
        self.h
    }
}

fn block_hash(block: &[u8]) -> u64 {
    let mut words = block.chunks_exact(8);
    let mut h = SEED;
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("chunks_exact(8) yields 8 bytes"));
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(h ^ u64::from_le_bytes(tail) ^ block.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_plausible() {
        let a = generate(48);
        assert_eq!(a, generate(48));
        let values: Vec<u16> = a
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        let min = *values.iter().min().expect("non-empty");
        let max = *values.iter().max().expect("non-empty");
        assert!(
            min > 50 && min < 200,
            "background near 100–200, got min {min}"
        );
        assert!(max > 1000, "bright blobs expected, got max {max}");
    }

    #[test]
    fn checksum_sees_changes_and_order() {
        let a = generate(32);
        let mut b = a.clone();
        b[12345] ^= 1;
        assert_ne!(checksum(&a), checksum(&b));
        let mut c = a.clone();
        c.swap(0, 2);
        assert_ne!(checksum(&a), checksum(&c));
        assert_eq!(checksum(&a), checksum(&a.clone()));
        // Fed block by block, the same value (96^3 uint16: two blocks, the last one short).
        let big = generate(96);
        let mut sum = Checksum::new(big.len());
        for block in big.chunks(CHECKSUM_BLOCK) {
            sum.add(block);
        }
        assert_eq!(sum.finish(), checksum(&big));
    }
}
