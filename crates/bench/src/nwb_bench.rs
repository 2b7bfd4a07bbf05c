//! The neurochunk side of the NWB rows (`--nwb`, see [`crate::nwb_rows`]), each measurement in
//! its own process: the bench executable re-run as `--nwb-child write|open CONVENTION SCALE
//! PATH [NAMESPACE_FILE …]`.
//!
//! - **write**: [`write_demo`] of the realistic ecephys demo file plus `SCALE` typed
//!   TimeSeries under `/processing/scaled`, in the legacy (Zarr v2) or v3 convention. The
//!   namespace YAML files given are parsed before timing starts and cached in the file, as
//!   pynwb would cache its schema.
//! - **open**: [`NwbFile::open`] (one read of the consolidated metadata) and
//!   [`NwbFile::typed_objects`]; the count must exceed `SCALE`.
//! - **validate**: [`NwbFile::open`] and [`validate`] against the cached namespaces; the file
//!   must be valid and hold more than `SCALE` typed objects.
//!
//! The child prints one line starting with [`RESULT_MARKER`] holding a JSON object: `seconds`
//! (the operation alone), `peak_rss_bytes` (`VmHWM`), and for **open** and **validate** the
//! number of typed objects. A bench target that registers [`crate::nwb_rows::NWB`] must call [`child_main`]
//! first thing in its `main`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use neurochunk_hdmf::demo::{write_demo, DemoOptions};
use neurochunk_hdmf::validate::{validate as validate_file, ValidateOptions};
use neurochunk_hdmf::{load_namespace_file, Convention, NwbFile, WriteOptions};
use serde_json::{json, Value};

use crate::error::{BenchError, BenchResult, Context};
use crate::protocol::RESULT_MARKER;
use crate::rss;

/// First argument of an NWB child process.
pub const CHILD_FLAG: &str = "--nwb-child";

/// The two conventions, in the order the rows are run.
pub const CONVENTIONS: [Convention; 2] = [Convention::Legacy, Convention::V3];

/// An NWB operation timed in a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NwbOp {
    /// Write the demo file.
    Write,
    /// Open the file and list its typed objects.
    Open,
    /// Open the file and validate it against its cached namespaces.
    Validate,
}

impl NwbOp {
    /// The command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            NwbOp::Write => "write",
            NwbOp::Open => "open",
            NwbOp::Validate => "validate",
        }
    }
}

/// The convention spelled `zarr2` / `zarr3` ([`Convention::label`]).
pub fn convention_by_label(label: &str) -> Option<Convention> {
    CONVENTIONS.into_iter().find(|c| c.label() == label)
}

/// One measurement to run in a child process.
#[derive(Clone, Debug)]
pub struct NwbRequest {
    pub op: NwbOp,
    pub convention: Convention,
    /// Extra TimeSeries in the demo file.
    pub scale: usize,
    /// The file (a directory).
    pub path: PathBuf,
    /// Namespace YAML files to cache (write only).
    pub namespaces: Vec<PathBuf>,
}

impl NwbRequest {
    /// The child's arguments, [`CHILD_FLAG`] first.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            CHILD_FLAG.into(),
            self.op.name().into(),
            self.convention.label().into(),
            self.scale.to_string().into(),
            self.path.clone().into(),
        ];
        args.extend(self.namespaces.iter().map(|p| p.clone().into()));
        args
    }

    /// Parse the arguments after [`CHILD_FLAG`].
    pub fn parse(args: &[String]) -> BenchResult<NwbRequest> {
        let usage = format!(
            "usage: {CHILD_FLAG} write|open|validate zarr2|zarr3 SCALE PATH [NAMESPACE_FILE …]"
        );
        let [op, convention, scale, path, namespaces @ ..] = args else {
            return Err(BenchError(usage));
        };
        let op = match op.as_str() {
            "write" => NwbOp::Write,
            "open" => NwbOp::Open,
            "validate" => NwbOp::Validate,
            _ => return Err(BenchError(format!("unknown operation {op:?}; {usage}"))),
        };
        Ok(NwbRequest {
            op,
            convention: convention_by_label(convention)
                .ok_or_else(|| BenchError(format!("unknown convention {convention:?}; {usage}")))?,
            scale: scale.parse().context("the SCALE argument")?,
            path: path.into(),
            namespaces: namespaces.iter().map(PathBuf::from).collect(),
        })
    }
}

/// Write the demo file at `path` (which must not exist); the namespace files are parsed before
/// the timer starts.
pub fn write(
    convention: Convention,
    scale: usize,
    path: &Path,
    namespace_files: &[PathBuf],
) -> BenchResult<Value> {
    let mut namespaces = Vec::new();
    for file in namespace_files {
        namespaces
            .extend(load_namespace_file(file).context(format!("loading {}", file.display()))?);
    }
    let cached: Vec<String> = namespaces
        .iter()
        .map(|n| format!("{} {}", n.name, n.version))
        .collect();
    let options = DemoOptions {
        convention,
        scale,
        namespaces,
        write: WriteOptions::default(),
    };
    let rss_before = rss::current_bytes();
    let started = Instant::now();
    let summary = write_demo(path, &options).context(format!("writing {}", path.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(json!({
        "seconds": seconds,
        "peak_rss_bytes": rss::peak_bytes(),
        "rss_before_bytes": rss_before,
        "extra_series": summary.extra_series,
        "cached_namespaces": cached,
    }))
}

/// Open the file at `path` and list its typed objects; fails unless there are more than `scale`.
pub fn open(convention: Convention, scale: usize, path: &Path) -> BenchResult<Value> {
    let rss_before = rss::current_bytes();
    let started = Instant::now();
    let file = NwbFile::open(path).context(format!("opening {}", path.display()))?;
    let objects = file.typed_objects();
    let seconds = started.elapsed().as_secs_f64();
    if objects.len() <= scale {
        return Err(BenchError(format!(
            "{} has {} typed objects, expected more than {scale}",
            path.display(),
            objects.len()
        )));
    }
    if file.convention() != convention {
        return Err(BenchError(format!(
            "{} was detected as the {}, expected the {convention}",
            path.display(),
            file.convention()
        )));
    }
    Ok(json!({
        "seconds": seconds,
        "peak_rss_bytes": rss::peak_bytes(),
        "rss_before_bytes": rss_before,
        "typed_objects": objects.len(),
        "consolidated": file.used_consolidated_metadata(),
    }))
}

/// Open the file at `path` and validate it against its cached namespaces; fails unless it is
/// valid and holds more than `scale` typed objects.
pub fn validate(convention: Convention, scale: usize, path: &Path) -> BenchResult<Value> {
    let rss_before = rss::current_bytes();
    let started = Instant::now();
    let file = NwbFile::open(path).context(format!("opening {}", path.display()))?;
    let report = validate_file(&file, &ValidateOptions::default())
        .context(format!("validating {}", path.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    if !report.is_valid() || report.objects <= scale || file.convention() != convention {
        return Err(BenchError(format!(
            "{} ({}): expected a valid file of more than {scale} typed objects, got:\n{}",
            path.display(),
            file.convention(),
            report.to_text()
        )));
    }
    Ok(json!({
        "seconds": seconds,
        "peak_rss_bytes": rss::peak_bytes(),
        "rss_before_bytes": rss_before,
        "typed_objects": report.objects,
        "warnings": report.warnings().count(),
        "namespaces": report.namespaces.iter().map(|(n, v)| format!("{n} {v}")).collect::<Vec<_>>(),
    }))
}

/// Run one request in this process.
pub fn run_request(request: &NwbRequest) -> BenchResult<Value> {
    match request.op {
        NwbOp::Write => write(
            request.convention,
            request.scale,
            &request.path,
            &request.namespaces,
        ),
        NwbOp::Open => open(request.convention, request.scale, &request.path),
        NwbOp::Validate => validate(request.convention, request.scale, &request.path),
    }
}

/// Child mode: when this process was started with [`CHILD_FLAG`], run the measurement, print
/// its result line and return the exit code; otherwise `None`.
pub fn child_main() -> Option<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some(CHILD_FLAG) {
        return None;
    }
    Some(
        match NwbRequest::parse(&args[1..]).and_then(|r| run_request(&r)) {
            Ok(result) => {
                println!("{RESULT_MARKER}{result}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("NWB benchmark child failed: {e}");
                ExitCode::FAILURE
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips_through_arguments() {
        let request = NwbRequest {
            op: NwbOp::Write,
            convention: Convention::V3,
            scale: 12,
            path: "/tmp/x.nwb.zarr".into(),
            namespaces: vec!["/a/core.yaml".into()],
        };
        let args: Vec<String> = request
            .to_args()
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        assert_eq!(args[0], CHILD_FLAG);
        let back = NwbRequest::parse(&args[1..]).expect("parses");
        assert_eq!(back.op, NwbOp::Write);
        assert_eq!(back.convention, Convention::V3);
        assert_eq!(back.scale, 12);
        assert_eq!(back.path, request.path);
        assert_eq!(back.namespaces, request.namespaces);
        assert!(
            NwbRequest::parse(&["read".into(), "zarr2".into(), "1".into(), "p".into()]).is_err()
        );
    }

    #[test]
    fn writes_and_opens_a_small_file_in_both_conventions() {
        let base =
            std::env::temp_dir().join(format!("neurochunk-bench-nwb-{}", std::process::id()));
        for convention in CONVENTIONS {
            let path = base.join(format!("demo-{}.nwb.zarr", convention.label()));
            write(convention, 3, &path, &[]).expect("writes");
            let opened = open(convention, 3, &path).expect("opens");
            assert!(opened["typed_objects"].as_u64().expect("count") > 3);
            // Without cached namespaces there is nothing to validate against.
            let err = validate(convention, 3, &path).expect_err("no specifications");
            assert!(
                err.to_string().contains("caches no specifications"),
                "{err}"
            );
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
