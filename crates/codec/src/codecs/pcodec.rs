//! numcodecs `pcodec` (array→bytes; Zarr v3 `numcodecs.pcodec`): one pco standalone file per
//! chunk (`pco::standalone::simple_compress`, what numcodecs' `pcodec` package writes), of
//! 16-, 32- or 64-bit integers or floats in C order.
//!
//! Every configuration key only steers the encoder, so a value the encoder would refuse
//! (an unknown `delta_spec`, a level out of range) is kept and reported only when encoding:
//! reading never depends on it.

use neurochunk_dtype::DataType;
use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};
use serde_json::{json, Map, Value};

use crate::util::{config_err, corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const ID: &str = "pcodec";
/// numcodecs' default page size.
const DEFAULT_MAX_PAGE_N: i64 = 262_144;

/// numcodecs `pcodec` with its (encoding-only) configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct PcodecCodec {
    level: i64,
    mode_spec: String,
    delta_spec: String,
    paging_spec: String,
    delta_encoding_order: Option<i64>,
    equal_pages_up_to: i64,
}

impl Default for PcodecCodec {
    fn default() -> Self {
        Self::new(8)
    }
}

impl PcodecCodec {
    /// `pcodec` at `level` (0–12, numcodecs default 8) with numcodecs' other defaults.
    pub fn new(level: u32) -> Self {
        PcodecCodec {
            level: level.into(),
            mode_spec: "auto".into(),
            delta_spec: "auto".into(),
            paging_spec: "equal_pages_up_to".into(),
            delta_encoding_order: None,
            equal_pages_up_to: DEFAULT_MAX_PAGE_N,
        }
    }

    /// Parse a numcodecs / v3 configuration. Only types are checked here; values are checked
    /// when encoding (see the module documentation).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let d = Self::default();
        Ok(PcodecCodec {
            level: c.i64("level")?.unwrap_or(d.level),
            mode_spec: c.str("mode_spec")?.map_or(d.mode_spec, str::to_string),
            delta_spec: c.str("delta_spec")?.map_or(d.delta_spec, str::to_string),
            paging_spec: c.str("paging_spec")?.map_or(d.paging_spec, str::to_string),
            delta_encoding_order: c.i64("delta_encoding_order")?,
            equal_pages_up_to: c.i64("equal_pages_up_to")?.unwrap_or(d.equal_pages_up_to),
        })
    }

    /// The compression level.
    pub fn level(&self) -> i64 {
        self.level
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("level".into(), json!(self.level));
        m.insert("mode_spec".into(), json!(self.mode_spec));
        m.insert("delta_spec".into(), json!(self.delta_spec));
        m.insert("paging_spec".into(), json!(self.paging_spec));
        m.insert(
            "delta_encoding_order".into(),
            json!(self.delta_encoding_order),
        );
        m.insert("equal_pages_up_to".into(), json!(self.equal_pages_up_to));
        m
    }

    /// The pco chunk configuration numcodecs builds from the same keys.
    pub fn chunk_config(&self) -> CodecResult<ChunkConfig> {
        if !(0..=12).contains(&self.level) {
            return Err(config_err(
                ID,
                format!("'level' must be 0-12, found {}", self.level),
            ));
        }
        let mode = match self.mode_spec.as_str() {
            "auto" => ModeSpec::Auto,
            "classic" => ModeSpec::Classic,
            other => {
                return Err(config_err(
                    ID,
                    format!("'mode_spec' {other:?} is not supported (auto, classic)"),
                ))
            }
        };
        let order = |o: i64| {
            usize::try_from(o).ok().filter(|o| *o <= 7).ok_or_else(|| {
                config_err(ID, format!("'delta_encoding_order' must be 0-7, found {o}"))
            })
        };
        let delta = match (self.delta_spec.as_str(), self.delta_encoding_order) {
            ("auto", Some(o)) => DeltaSpec::TryConsecutive(order(o)?),
            (_, Some(_)) if self.delta_spec != "try_consecutive" => {
                return Err(config_err(
                    ID,
                    "'delta_encoding_order' can only be set for delta_spec 'try_consecutive'",
                ))
            }
            ("auto", None) => DeltaSpec::Auto,
            ("none", _) => DeltaSpec::NoOp,
            ("try_consecutive", o) => DeltaSpec::TryConsecutive(order(o.unwrap_or(0))?),
            ("try_lookback", _) => DeltaSpec::TryLookback,
            (other, _) => {
                return Err(config_err(
                    ID,
                    format!(
                        "'delta_spec' {other:?} is not supported \
                         (auto, none, try_consecutive, try_lookback)"
                    ),
                ))
            }
        };
        if self.paging_spec != "equal_pages_up_to" {
            return Err(config_err(
                ID,
                format!(
                    "'paging_spec' {:?} is not supported (equal_pages_up_to)",
                    self.paging_spec
                ),
            ));
        }
        let pages = usize::try_from(self.equal_pages_up_to)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                config_err(
                    ID,
                    format!(
                        "'equal_pages_up_to' must be positive, found {}",
                        self.equal_pages_up_to
                    ),
                )
            })?;
        Ok(ChunkConfig::default()
            .with_compression_level(self.level as usize)
            .with_mode_spec(mode)
            .with_delta_spec(delta)
            .with_paging_spec(PagingSpec::EqualPagesUpTo(pages)))
    }

    /// Check that chunks of `repr` can be stored (a 16-, 32- or 64-bit number type).
    pub fn check_type(repr: &ChunkRepr) -> CodecResult<()> {
        match repr.data_type {
            DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float16
            | DataType::Float32
            | DataType::Float64 => Ok(()),
            ref other => Err(unsupported(
                ID,
                format!(
                    "stores 16-, 32- and 64-bit integers and floats, not {other} \
                     (choose another compressor, e.g. zstd)"
                ),
            )),
        }
    }
}

fn to_vec<T: Copy, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    b.chunks_exact(N)
        .map(|c| f(c.try_into().unwrap_or([0; N])))
        .collect()
}

fn compress(bytes: &[u8], dt: &DataType, config: &ChunkConfig) -> pco::errors::PcoResult<Vec<u8>> {
    use pco::standalone::simple_compress as sc;
    match dt {
        DataType::UInt16 => sc(&to_vec(bytes, u16::from_le_bytes), config),
        DataType::UInt32 => sc(&to_vec(bytes, u32::from_le_bytes), config),
        DataType::UInt64 => sc(&to_vec(bytes, u64::from_le_bytes), config),
        DataType::Int16 => sc(&to_vec(bytes, i16::from_le_bytes), config),
        DataType::Int32 => sc(&to_vec(bytes, i32::from_le_bytes), config),
        DataType::Int64 => sc(&to_vec(bytes, i64::from_le_bytes), config),
        DataType::Float16 => sc(&to_vec(bytes, half::f16::from_le_bytes), config),
        DataType::Float32 => sc(&to_vec(bytes, f32::from_le_bytes), config),
        _ => sc(&to_vec(bytes, f64::from_le_bytes), config),
    }
}

fn decompress_as<T: pco::data_types::Number + Default, const N: usize>(
    src: &[u8],
    n: usize,
    out: &mut Vec<u8>,
    to_le: fn(T) -> [u8; N],
) -> CodecResult<()> {
    let mut dst = vec![T::default(); n];
    let progress = pco::standalone::simple_decompress_into(src, &mut dst)
        .map_err(|e| corrupt(ID, format!("invalid pco data: {e}")))?;
    if progress.n_processed != n {
        return Err(corrupt(
            ID,
            format!("holds {} numbers, expected {n}", progress.n_processed),
        ));
    }
    out.reserve(n * N);
    for v in dst {
        out.extend_from_slice(&to_le(v));
    }
    Ok(())
}

impl ArrayToBytesCodec for PcodecCodec {
    fn name(&self) -> &str {
        "numcodecs.pcodec"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        Self::check_type(repr)?;
        let config = self.chunk_config()?;
        let size = repr.data_type.fixed_size().unwrap_or(0);
        let ArrayBytes::Fixed(bytes) = data else {
            return Err(unsupported(
                ID,
                "variable-length elements are not supported",
            ));
        };
        if bytes.len() != size * repr.num_elements() {
            return Err(corrupt(
                ID,
                format!(
                    "chunk has {} bytes, expected {}",
                    bytes.len(),
                    size * repr.num_elements()
                ),
            ));
        }
        compress(&bytes, &repr.data_type, &config)
            .map_err(|e| unsupported(ID, format!("compression failed: {e}")))
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        Self::check_type(repr)?;
        let n = repr.num_elements();
        let mut out = Vec::new();
        // The decoder is pure Rust and reports corruption as errors; a panic on hostile input
        // would still be a bug, so it is caught and reported as corruption too.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let o = &mut out;
            match repr.data_type {
                DataType::UInt16 => decompress_as(&bytes, n, o, u16::to_le_bytes),
                DataType::UInt32 => decompress_as(&bytes, n, o, u32::to_le_bytes),
                DataType::UInt64 => decompress_as(&bytes, n, o, u64::to_le_bytes),
                DataType::Int16 => decompress_as(&bytes, n, o, i16::to_le_bytes),
                DataType::Int32 => decompress_as(&bytes, n, o, i32::to_le_bytes),
                DataType::Int64 => decompress_as(&bytes, n, o, i64::to_le_bytes),
                DataType::Float16 => decompress_as(&bytes, n, o, half::f16::to_le_bytes),
                DataType::Float32 => decompress_as(&bytes, n, o, f32::to_le_bytes),
                _ => decompress_as(&bytes, n, o, f64::to_le_bytes),
            }
        }));
        match result {
            Ok(r) => r?,
            Err(_) => return Err(corrupt(ID, "invalid pco data (the decoder failed)")),
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(n: usize, dt: DataType) -> ChunkRepr {
        let size = dt.fixed_size().unwrap();
        ChunkRepr {
            shape: vec![n],
            data_type: dt,
            fill_value: vec![0; size],
        }
    }

    #[test]
    fn roundtrip_every_type_and_corrupt_input_errors() {
        for dt in [
            DataType::UInt16,
            DataType::Int32,
            DataType::UInt64,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
        ] {
            let r = repr(1000, dt);
            let size = r.data_type.fixed_size().unwrap();
            let data: Vec<u8> = (0..1000 * size).map(|i| (i * 7 % 13) as u8).collect();
            let codec = PcodecCodec::new(8);
            let enc = codec.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
            assert_eq!(
                codec.decode(enc.clone(), &r).unwrap(),
                ArrayBytes::Fixed(data)
            );
            for cut in [0, 1, 5, enc.len() / 2, enc.len() - 1] {
                assert!(codec.decode(enc[..cut].to_vec(), &r).is_err());
            }
            let mut bad = enc.clone();
            for i in (0..bad.len()).step_by(3) {
                bad[i] ^= 0x5a;
            }
            let _ = codec.decode(bad, &r);
        }
        assert!(PcodecCodec::new(8)
            .encode(ArrayBytes::Fixed(vec![0; 4]), &repr(4, DataType::UInt8))
            .is_err());
    }

    #[test]
    fn encoding_only_values_never_stop_a_read() {
        let codec =
            PcodecCodec::from_config(&json!({"level": 99, "delta_spec": "no_op", "extra": 1}))
                .unwrap();
        assert!(codec.chunk_config().is_err());
        let r = repr(10, DataType::Int32);
        let good = PcodecCodec::new(8)
            .encode(ArrayBytes::Fixed(vec![1; 40]), &r)
            .unwrap();
        assert_eq!(
            codec.decode(good, &r).unwrap(),
            ArrayBytes::Fixed(vec![1; 40])
        );
    }
}
