//! The numcodecs `lzma` codec (bytes→bytes; Zarr v3 `numcodecs.lzma`), i.e. Python's
//! `lzma.compress`: format 1 = `.xz` container (check −1 ⇒ CRC-64), 2 = legacy `.lzma`
//! ("alone"), 3 = raw LZMA stream described by `filters`. N5's `xz` compression is format 1.

use liblzma::stream::{Action, Check, Filters, LzmaOptions, Status, Stream, CONCATENATED};
use serde_json::{json, Value};

use crate::util::{
    check_size, config_err, corrupt, grow_stream_output, obj, stalled_stream, start_stream_output,
    unsupported, v2_json, v3_json, Conf,
};
use crate::{BytesToBytesCodec, CodecResult};

const ID: &str = "lzma";
/// Memory the decoder may use (dictionary); presets 0–9 need at most 65 MiB.
const MEMLIMIT: u64 = 1 << 30;
const FILTER_LZMA1: u64 = 0x4000_0000_0000_0001;
const FILTER_LZMA2: u64 = 0x21;
const FILTER_DELTA: u64 = 0x03;

/// Python `lzma` format codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LzmaFormat {
    /// 1: the `.xz` container.
    Xz = 1,
    /// 2: the legacy `.lzma` ("alone") format.
    Alone = 2,
    /// 3: a raw LZMA stream; the configuration's `filters` describe it.
    Raw = 3,
}

/// numcodecs `lzma`.
#[derive(Clone, Debug, PartialEq)]
pub struct LzmaCodec {
    format: LzmaFormat,
    check: i64,
    preset: Option<u32>,
    filters: Option<Value>,
}

impl LzmaCodec {
    /// `.xz` with CRC-64 and the given preset (0–9; `None` = 6).
    pub fn xz(preset: Option<u32>) -> Self {
        LzmaCodec {
            format: LzmaFormat::Xz,
            check: -1,
            preset: preset.map(|p| p.min(9)),
            filters: None,
        }
    }

    /// Parse a numcodecs / v3 configuration (`format` default 1, `check` default −1,
    /// `preset` or `filters`, not both; format 3 needs `filters`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let format = match c.i64("format")?.unwrap_or(1) {
            1 => LzmaFormat::Xz,
            2 => LzmaFormat::Alone,
            3 => LzmaFormat::Raw,
            0 => {
                return Err(unsupported(
                    ID,
                    "format 0 (auto) is only valid for decoding",
                ))
            }
            f => return Err(config_err(ID, format!("unknown format {f}"))),
        };
        let check = c.i64("check")?.unwrap_or(-1);
        if !matches!(check, -1 | 0 | 1 | 4 | 10) {
            return Err(config_err(ID, format!("unknown check {check}")));
        }
        if format != LzmaFormat::Xz && !matches!(check, -1 | 0) {
            return Err(config_err(
                ID,
                "an integrity check is only possible with format 1 (xz)",
            ));
        }
        let preset = c.i64("preset")?;
        let preset = match preset {
            None => None,
            Some(p) if p >= 0 && (p & !(1i64 << 31)) <= 9 => Some(p as u32),
            Some(p) => return Err(config_err(ID, format!("invalid preset {p}"))),
        };
        let filters = c.get("filters").cloned();
        if filters.is_some() && preset.is_some() {
            return Err(config_err(
                ID,
                "'preset' and 'filters' cannot both be given",
            ));
        }
        if format == LzmaFormat::Raw && filters.is_none() {
            return Err(config_err(ID, "format 3 (raw) needs 'filters'"));
        }
        let codec = LzmaCodec {
            format,
            check,
            preset,
            filters,
        };
        codec.build_filters()?;
        Ok(codec)
    }

    fn check(&self) -> Check {
        match self.check {
            0 => Check::None,
            1 => Check::Crc32,
            10 => Check::Sha256,
            _ => Check::Crc64,
        }
    }

    /// The filter chain from the Python-style `filters` list (LZMA1/LZMA2 with `preset` /
    /// `dict_size`, delta with `dist`).
    fn build_filters(&self) -> CodecResult<Option<Filters>> {
        let Some(list) = &self.filters else {
            return Ok(None);
        };
        let list = list
            .as_array()
            .ok_or_else(|| config_err(ID, "'filters' must be a list"))?;
        let mut f = Filters::new();
        for spec in list {
            let c = Conf::new(ID, spec)?;
            let id = c.required("filters[].id", c.i64("id")?)? as u64;
            match id {
                FILTER_LZMA1 | FILTER_LZMA2 => {
                    let preset = c.i64_in("preset", 0, 9)?.unwrap_or(6) as u32;
                    let mut opts = LzmaOptions::new_preset(preset)
                        .map_err(|e| config_err(ID, format!("preset: {e}")))?;
                    if let Some(d) = c.i64("dict_size")? {
                        let d =
                            u32::try_from(d).map_err(|_| config_err(ID, "invalid dict_size"))?;
                        opts.dict_size(d);
                    }
                    if id == FILTER_LZMA1 {
                        f.lzma1(&opts);
                    } else {
                        f.lzma2(&opts);
                    }
                }
                FILTER_DELTA => {
                    let dist = c.i64_in("dist", 1, 256)?.unwrap_or(1) as u8;
                    f.delta_properties(&[dist - 1])
                        .map_err(|e| config_err(ID, format!("delta filter: {e}")))?;
                }
                other => {
                    return Err(unsupported(
                        ID,
                        format!("filter id {other:#x} is not supported"),
                    ))
                }
            }
        }
        Ok(Some(f))
    }

    fn preset(&self) -> u32 {
        self.preset.unwrap_or(6)
    }

    fn config(&self) -> serde_json::Map<String, Value> {
        obj([
            ("format", json!(self.format as i64)),
            ("check", json!(self.check)),
            ("preset", self.preset.map_or(Value::Null, |p| json!(p))),
            ("filters", self.filters.clone().unwrap_or(Value::Null)),
        ])
    }

    fn encoder(&self) -> CodecResult<Stream> {
        let err =
            |e: liblzma::stream::Error| config_err(ID, format!("cannot create the encoder: {e}"));
        let filters = self.build_filters()?;
        match (self.format, filters) {
            (LzmaFormat::Xz, None) => {
                Stream::new_easy_encoder(self.preset(), self.check()).map_err(err)
            }
            (LzmaFormat::Xz, Some(f)) => Stream::new_stream_encoder(&f, self.check()).map_err(err),
            (LzmaFormat::Alone, None) => {
                let opts = LzmaOptions::new_preset(self.preset()).map_err(err)?;
                Stream::new_lzma_encoder(&opts).map_err(err)
            }
            (LzmaFormat::Alone, Some(_)) => Err(unsupported(ID, "custom filters with format 2")),
            (LzmaFormat::Raw, Some(f)) => Stream::new_raw_encoder(&f).map_err(err),
            (LzmaFormat::Raw, None) => Err(config_err(ID, "format 3 (raw) needs 'filters'")),
        }
    }

    fn decoder(&self) -> CodecResult<Stream> {
        let err =
            |e: liblzma::stream::Error| corrupt(ID, format!("cannot create the decoder: {e}"));
        match self.format {
            LzmaFormat::Xz => Stream::new_stream_decoder(MEMLIMIT, CONCATENATED).map_err(err),
            LzmaFormat::Alone => Stream::new_lzma_decoder(MEMLIMIT).map_err(err),
            LzmaFormat::Raw => {
                let f = self
                    .build_filters()?
                    .ok_or_else(|| config_err(ID, "format 3 (raw) needs 'filters'"))?;
                Stream::new_raw_decoder(&f).map_err(err)
            }
        }
    }
}

impl BytesToBytesCodec for LzmaCodec {
    fn name(&self) -> &str {
        "numcodecs.lzma"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        let mut s = self.encoder()?;
        out.clear();
        out.reserve(input.len() + input.len() / 3 + 128);
        let mut consumed = 0usize;
        loop {
            let before = s.total_in();
            let status = s
                .process_vec(&input[consumed..], out, Action::Finish)
                .map_err(|e| corrupt(ID, format!("compression failed: {e}")))?;
            consumed += (s.total_in() - before) as usize;
            if status == Status::StreamEnd {
                return Ok(());
            }
            out.reserve(out.capacity().max(1024));
        }
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        let mut s = self.decoder()?;
        out.clear();
        let limit = start_stream_output(out, input.len(), decoded_size);
        let mut consumed = 0usize;
        loop {
            grow_stream_output(out, limit);
            let (bin, bout) = (s.total_in(), s.total_out());
            let status = s
                .process_vec(&input[consumed..], out, Action::Finish)
                .map_err(|e| corrupt(ID, format!("invalid data: {e}")))?;
            consumed += (s.total_in() - bin) as usize;
            if status == Status::StreamEnd {
                break;
            }
            if s.total_in() == bin && s.total_out() == bout {
                return Err(stalled_stream(ID, out, "truncated stream", limit));
            }
        }
        check_size(ID, out.len(), decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}
