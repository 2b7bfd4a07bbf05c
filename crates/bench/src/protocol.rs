//! The parent ↔ child protocol: how a measurement is requested on the command line, how the
//! child runs it, and the one JSON line it prints back.
//!
//! A child is the bench executable re-run as
//! `--child LIBRARY ROW OP DIR --size N --input RAW --expect CHECKSUM`. It loads its input
//! (untimed), times the operation alone, checks what it read against `CHECKSUM`, and prints
//! `NEUROCHUNK-BENCH-RESULT {json}` on stdout. Any failure is a non-zero exit with the reason
//! on stderr. With `--fsync`, a write is asked to be durable; a library that cannot make it so
//! itself has every file it wrote synced by the harness (inside the timed region).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::{json, Value};

use crate::error::{BenchError, BenchResult, Context};
use crate::rows::{Element, Library, Op, Row};
use crate::{rss, volume};

/// Prefix of the result line a child prints.
pub const RESULT_MARKER: &str = "NEUROCHUNK-BENCH-RESULT ";

/// One measurement to run in a child process.
#[derive(Clone, Debug)]
pub struct ChildRequest {
    pub library: String,
    pub row: &'static Row,
    pub op: Op,
    /// Store root of the array (created empty by the child before a write).
    pub dir: PathBuf,
    /// Edge length of the cubic volume.
    pub size: usize,
    /// Raw little-endian `uint16` volume, the input of a write.
    pub input: PathBuf,
    /// [`volume::checksum`] of the volume.
    pub expect: u64,
    /// Writes are durable: the library's own durable mode, or else `fsync` of every written
    /// file by the harness (timed).
    pub fsync: bool,
}

impl ChildRequest {
    /// Command-line arguments that make the bench executable run this request.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--child".into(),
            self.library.clone().into(),
            self.row.id.into(),
            self.op.name().into(),
            self.dir.clone().into(),
            "--size".into(),
            self.size.to_string().into(),
            "--input".into(),
            self.input.clone().into(),
            "--expect".into(),
            format!("{:016x}", self.expect).into(),
        ];
        if self.fsync {
            args.push("--fsync".into());
        }
        args
    }

    /// Parse the arguments after `--child`.
    pub fn parse(args: &[String]) -> BenchResult<ChildRequest> {
        let usage =
            "usage: --child LIBRARY ROW OP DIR --size N --input RAW --expect CHECKSUM [--fsync]";
        let [library, row, op, dir, rest @ ..] = args else {
            return Err(BenchError::msg(usage));
        };
        let row = Row::by_id(row).ok_or_else(|| BenchError::msg(format!("unknown row {row:?}")))?;
        let op =
            Op::parse(op).ok_or_else(|| BenchError::msg(format!("unknown operation {op:?}")))?;
        let (mut size, mut input, mut expect, mut fsync) = (None, None, None, false);
        let mut it = rest.iter();
        while let Some(flag) = it.next() {
            if flag == "--fsync" {
                fsync = true;
                continue;
            }
            let value = it
                .next()
                .ok_or_else(|| BenchError::msg(format!("{flag} needs a value; {usage}")))?;
            match flag.as_str() {
                "--size" => size = Some(value.parse::<usize>().context("--size")?),
                "--input" => input = Some(PathBuf::from(value)),
                "--expect" => expect = Some(u64::from_str_radix(value, 16).context("--expect")?),
                _ => {
                    return Err(BenchError::msg(format!(
                        "unknown child option {flag}; {usage}"
                    )))
                }
            }
        }
        let missing = |what: &str| BenchError::msg(format!("missing {what}; {usage}"));
        Ok(ChildRequest {
            library: library.clone(),
            row,
            op,
            dir: PathBuf::from(dir),
            size: size.ok_or_else(|| missing("--size"))?,
            input: input.ok_or_else(|| missing("--input"))?,
            expect: expect.ok_or_else(|| missing("--expect"))?,
            fsync,
        })
    }

    /// Bytes of decoded data (the whole volume, in the row's element type).
    pub fn decoded_bytes(&self) -> u64 {
        self.row.decoded_bytes(self.size)
    }
}

/// What one child measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub library: String,
    pub row: String,
    pub op: Op,
    /// Wall time of the operation alone (not process start, not loading the input).
    pub seconds: f64,
    pub decoded_bytes: u64,
    /// `VmHWM` at the end of the operation.
    pub peak_rss_bytes: Option<u64>,
    /// `VmRSS` just before the operation (the loaded input of a write, ~0 for a read).
    pub rss_before_bytes: Option<u64>,
}

impl Measurement {
    pub fn to_json(&self) -> Value {
        json!({
            "library": self.library,
            "row": self.row,
            "op": self.op.name(),
            "seconds": self.seconds,
            "decoded_bytes": self.decoded_bytes,
            "peak_rss_bytes": self.peak_rss_bytes,
            "rss_before_bytes": self.rss_before_bytes,
        })
    }

    pub fn from_json(v: &Value) -> BenchResult<Measurement> {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::to_string)
                .ok_or_else(|| BenchError::msg(format!("result line lacks {k:?}")))
        };
        let op = text("op")?;
        Ok(Measurement {
            library: text("library")?,
            row: text("row")?,
            op: Op::parse(&op).ok_or_else(|| {
                BenchError::msg(format!("unknown operation {op:?} in result line"))
            })?,
            seconds: v["seconds"]
                .as_f64()
                .ok_or_else(|| BenchError::msg("result line lacks \"seconds\""))?,
            decoded_bytes: v["decoded_bytes"]
                .as_u64()
                .ok_or_else(|| BenchError::msg("result line lacks \"decoded_bytes\""))?,
            peak_rss_bytes: v["peak_rss_bytes"].as_u64(),
            rss_before_bytes: v["rss_before_bytes"].as_u64(),
        })
    }

    /// Throughput in GB/s (10⁹ bytes of decoded data per second).
    pub fn gbps(&self) -> f64 {
        self.decoded_bytes as f64 / self.seconds / 1e9
    }
}

/// Run a request in this process (the child side) with the matching library.
pub fn run_child(request: &ChildRequest, libraries: &[&dyn Library]) -> BenchResult<Measurement> {
    let library = libraries
        .iter()
        .find(|l| l.name() == request.library)
        .ok_or_else(|| BenchError::msg(format!("unknown library {:?}", request.library)))?;
    let n = request.size as u64;
    let shape = [n, n, n];
    let expected_len = request.decoded_bytes();
    let (seconds, rss_before, peak) = match request.op {
        Op::Write => {
            let data = load_input(request)?;
            std::fs::create_dir_all(&request.dir)
                .context(format!("creating {}", request.dir.display()))?;
            let rss_before = rss::current_bytes();
            let start = Instant::now();
            library.write(request.row, &request.dir, &shape, data, request.fsync)?;
            if request.fsync && !library.syncs_on_request() {
                sync_tree(&request.dir)?;
            }
            (start.elapsed().as_secs_f64(), rss_before, rss::peak_bytes())
        }
        Op::Read => {
            let rss_before = rss::current_bytes();
            let start = Instant::now();
            let data = library.read(request.row, &request.dir)?;
            let seconds = start.elapsed().as_secs_f64();
            // Before the check, which may read the input.
            let peak = rss::peak_bytes();
            if data.len() as u64 != expected_len {
                return Err(BenchError::msg(format!(
                    "{} read {} bytes from {}, expected {expected_len}",
                    request.library,
                    data.len(),
                    request.dir.display()
                )));
            }
            check_read(request, &data)?;
            (seconds, rss_before, peak)
        }
    };
    Ok(Measurement {
        library: request.library.clone(),
        row: request.row.id.to_string(),
        op: request.op,
        seconds,
        decoded_bytes: expected_len,
        peak_rss_bytes: peak,
        rss_before_bytes: rss_before,
    })
}

/// Fill `buf` from `reader` as far as it goes; the number of bytes read (short only at the end).
fn read_block(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..])? {
            0 => break,
            k => filled += k,
        }
    }
    Ok(filled)
}

/// Visit the raw `uint16` volume block by block ([`volume::CHECKSUM_BLOCK`] bytes), checking
/// its size and checksum against the request.
fn each_input_block(
    request: &ChildRequest,
    mut visit: impl FnMut(usize, &[u8]) -> BenchResult<()>,
) -> BenchResult<()> {
    let volume_len = (request.size as u64).pow(3) * 2;
    let what = || format!("reading the input {}", request.input.display());
    let mut file = std::fs::File::open(&request.input).context(what())?;
    let mut block = vec![0u8; volume::CHECKSUM_BLOCK];
    let mut sum = volume::Checksum::new(volume_len as usize);
    let mut offset = 0usize;
    loop {
        let got = read_block(&mut file, &mut block).context(what())?;
        if got == 0 {
            break;
        }
        sum.add(&block[..got]);
        visit(offset, &block[..got])?;
        offset += got;
    }
    if offset as u64 != volume_len || sum.finish() != request.expect {
        return Err(BenchError::msg(format!(
            "input {} is not the expected {}^3 volume",
            request.input.display(),
            request.size
        )));
    }
    Ok(())
}

/// The input of a write: the volume in the row's element type (converted block by block, so
/// that the peak memory is the converted volume, not both).
fn load_input(request: &ChildRequest) -> BenchResult<Vec<u8>> {
    if request.row.element == Element::UInt16 {
        let data = std::fs::read(&request.input)
            .context(format!("reading the input {}", request.input.display()))?;
        if data.len() as u64 != request.decoded_bytes() || volume::checksum(&data) != request.expect
        {
            return Err(BenchError::msg(format!(
                "input {} is not the expected {}^3 volume",
                request.input.display(),
                request.size
            )));
        }
        return Ok(data);
    }
    let mut data = Vec::with_capacity(request.decoded_bytes() as usize);
    each_input_block(request, |_, block| {
        for v in block.chunks_exact(2) {
            let value = f32::from(u16::from_le_bytes([v[0], v[1]]));
            data.extend_from_slice(&value.to_le_bytes());
        }
        Ok(())
    })?;
    Ok(data)
}

/// Check what a read returned against the volume: its checksum for `uint16` rows; for other
/// element types every value, within the row's tolerance (0 for lossless rows).
fn check_read(request: &ChildRequest, data: &[u8]) -> BenchResult<()> {
    if request.row.element == Element::UInt16 {
        let got = volume::checksum(data);
        if got != request.expect {
            return Err(BenchError::msg(format!(
                "{} read WRONG DATA from {}: checksum {got:016x}, expected {:016x}",
                request.library,
                request.dir.display(),
                request.expect
            )));
        }
        return Ok(());
    }
    let tolerance = request.row.tolerance();
    each_input_block(request, |offset, block| {
        let first = offset / 2;
        for (i, v) in block.chunks_exact(2).enumerate() {
            let expected = f64::from(u16::from_le_bytes([v[0], v[1]]));
            let at = (first + i) * 4;
            let got = f64::from(f32::from_le_bytes([
                data[at],
                data[at + 1],
                data[at + 2],
                data[at + 3],
            ]));
            let error = (got - expected).abs();
            if error.is_nan() || error > tolerance {
                return Err(BenchError::msg(format!(
                    "{} read WRONG DATA from {}: element {} is {got}, expected {expected} \
                     (tolerance {tolerance})",
                    request.library,
                    request.dir.display(),
                    first + i
                )));
            }
        }
        Ok(())
    })
}

/// `fsync` every file under `dir`, in parallel.
fn sync_tree(dir: &Path) -> BenchResult<()> {
    fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> BenchResult<()> {
        for entry in std::fs::read_dir(dir).context(format!("listing {}", dir.display()))? {
            let path = entry.context(format!("listing {}", dir.display()))?.path();
            if path.is_dir() {
                collect(&path, files)?;
            } else {
                files.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.par_iter().try_for_each(|path| {
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .context(format!("syncing {}", path.display()))
    })
}

/// Find and parse the result line in a child's stdout.
pub fn parse_child_output(stdout: &str) -> BenchResult<Measurement> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_MARKER))
        .ok_or_else(|| BenchError::msg("the child printed no result line"))?;
    let value: Value = serde_json::from_str(line).context("parsing the child's result line")?;
    Measurement::from_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips_through_args() {
        let request = ChildRequest {
            library: "neurochunk".into(),
            row: &crate::rows::ROWS[1],
            op: Op::Read,
            dir: "/tmp/x y".into(),
            size: 96,
            input: "/tmp/v.raw".into(),
            expect: 0xdead_beef_0123_4567,
            fsync: true,
        };
        let args: Vec<String> = request
            .to_args()
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        assert_eq!(args[0], "--child");
        let parsed = ChildRequest::parse(&args[1..]).expect("parses");
        assert_eq!(parsed.to_args(), request.to_args());
    }

    #[test]
    fn measurement_round_trips_through_the_result_line() {
        let m = Measurement {
            library: "zarrs".into(),
            row: "zstd".into(),
            op: Op::Write,
            seconds: 0.25,
            decoded_bytes: 1 << 28,
            peak_rss_bytes: Some(300 << 20),
            rss_before_bytes: None,
        };
        let out = format!("noise\n{RESULT_MARKER}{}\n", m.to_json());
        assert_eq!(parse_child_output(&out).expect("parses"), m);
    }
}
