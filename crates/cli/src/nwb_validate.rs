//! `neurochunk nwb validate PATH… [--namespace FILE.yaml]… [--json]`: check NWB files against
//! the specifications they cache (or those given), with the rules hdmf-common states in prose.
//!
//! Output: per file a summary line, then one line per problem (`error [rule] /path (Type):
//! message`), errors before warnings; with `--json`, one list of objects (`file`, `severity`,
//! `path`, `type`, `rule`, `message`, and `attribute` for attribute problems) for all files.
//! An HDF5 file is imported (memory, or a temporary directory for large files) and the import
//! validated: it keeps every object path, so the problems name the HDF5 objects.
//! Exit status: 0 every file valid (warnings allowed), 1 at least one invalid, 2 at least one
//! that could not be read or validated (no specifications, unreadable cache or metadata).

use std::path::PathBuf;

use clap::Args;
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_hdf5::validate::{import_scratch, is_hdf5_file, ImportedFile, HDF5_MEMORY_LIMIT};
use neurochunk_hdmf::validate::{namespaces_for, validate_with, SchemaSet, ValidateOptions};
use neurochunk_hdmf::{load_namespace_file, NamespaceDocs, NwbFile};
use serde_json::{json, Value};

use crate::nwb_cmd::ExternalArgs;
use crate::store_args::Location;

/// Exit status of `nwb validate` when a file could not be read or validated.
pub(crate) const UNREADABLE: u8 = 2;
/// Exit status when a file does not conform.
pub(crate) const INVALID: u8 = 1;

#[derive(Args, Debug)]
pub(crate) struct ValidateArgs {
    /// The NWB files (.nwb.zarr directories or URLs, or HDF5 files: those are imported into
    /// scratch storage, removed afterwards, and the import is validated).
    #[arg(required = true)]
    paths: Vec<Location>,
    /// Validate against this namespace YAML (and its schema sources) instead of the cached
    /// namespace of the same name (repeatable).
    #[arg(long, value_name = "NAMESPACE.yaml")]
    namespace: Vec<PathBuf>,
    /// Print the problems of all files as one JSON list.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    external: ExternalArgs,
}

/// A file to validate: NWB on Zarr as it is, or an HDF5 file imported into scratch storage
/// (removed when this is dropped).
enum Opened {
    Zarr(NwbFile),
    Hdf5(ImportedFile),
}

impl Opened {
    fn file(&self) -> &NwbFile {
        match self {
            Opened::Zarr(file) => file,
            Opened::Hdf5(imported) => &imported.file,
        }
    }
}

fn open(external: &ExternalArgs, path: &Location) -> Result<Opened, String> {
    match path.local() {
        Some(local) if is_hdf5_file(local) => {
            let options = external.import_options().map_err(|f| f.0)?;
            import_scratch(local, &options, HDF5_MEMORY_LIMIT)
                .map(Opened::Hdf5)
                .map_err(|e| e.to_string())
        }
        _ => external.open(path).map(Opened::Zarr).map_err(|f| f.0),
    }
}

/// Validate every file; the exit status (0, 1 or 2).
pub(crate) fn run(args: ValidateArgs) -> u8 {
    let mut given: Vec<NamespaceDocs> = Vec::new();
    for path in &args.namespace {
        match load_namespace_file(path) {
            Ok(docs) => given.extend(docs),
            Err(e) => {
                eprintln!("neurochunk: error: --namespace: {e}");
                return UNREADABLE;
            }
        }
    }
    let options = ValidateOptions {
        namespaces: given,
        use_cached: true,
    };
    let mut status = 0u8;
    let mut all: Vec<Value> = Vec::new();
    for (i, path) in args.paths.iter().enumerate() {
        let last = i + 1 == args.paths.len();
        let report = open(&args.external, path).and_then(|opened| {
            let file = opened.file();
            let docs = namespaces_for(file, &options).map_err(|e| e.to_string())?;
            let schema = SchemaSet::from_namespace_docs(&docs);
            let mut report = validate_with(file, &schema);
            match opened {
                Opened::Hdf5(_) => report.file = path.display().to_string(),
                Opened::Zarr(file) if last => {
                    // The process ends here: freeing the node table of a large file (every
                    // document of every node) takes longer than validating it.
                    std::mem::forget(file);
                }
                Opened::Zarr(_) => {}
            }
            Ok(report)
        });
        match report {
            Err(message) => {
                eprintln!("neurochunk: error: {}", message.replace('\n', " "));
                if args.json {
                    all.push(json!({
                        "file": path.display(),
                        "severity": "error",
                        "path": "/",
                        "type": "",
                        "rule": "unreadable",
                        "message": message,
                    }));
                }
                status = status.max(UNREADABLE);
            }
            Ok(report) => {
                if !report.is_valid() {
                    status = status.max(INVALID);
                }
                if args.json {
                    all.extend(report.to_json());
                } else {
                    out!("{}", report.to_text());
                }
            }
        }
    }
    if args.json {
        outln!(
            "{}",
            to_python_json(&Value::Array(all), PyJsonStyle::ZARR_PYTHON3)
        );
    }
    status
}
