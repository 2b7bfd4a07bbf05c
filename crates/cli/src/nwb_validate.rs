//! `neurochunk nwb validate PATH… [--namespace FILE.yaml]… [--json]`: check NWB files against
//! the specifications they cache (or those given), with the rules hdmf-common states in prose.
//!
//! Output: per file a summary line, then one line per problem (`error [rule] /path (Type):
//! message`), errors before warnings; with `--json`, one list of objects (`file`, `severity`,
//! `path`, `type`, `rule`, `message`, and `attribute` for attribute problems) for all files.
//! An HDF5 file, local or at a URL, is validated in place (read by ranged reads, nothing
//! copied); the problems name the HDF5 objects.
//! Exit status: 0 every file valid (warnings allowed), 1 at least one invalid, 2 at least one
//! that could not be read or validated (no specifications, unreadable cache or metadata).

use std::path::PathBuf;

use clap::Args;
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_hdf5::validate::{open_for_validation, validate_opened};
use neurochunk_hdmf::validate::{result_json, status_of, ValidateOptions, UNREADABLE, VALID};
use neurochunk_hdmf::{load_namespace_file, NamespaceDocs};
use serde_json::Value;

use crate::nwb_cmd::ExternalArgs;
use crate::store_args::{remote_options, Location};

#[derive(Args, Debug)]
pub(crate) struct ValidateArgs {
    /// The NWB files: .nwb.zarr directories, HDF5 files, LINDI reference files, or their
    /// URLs (read in place).
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
    let mut status = VALID;
    let mut all: Vec<Value> = Vec::new();
    let policy = args.external.policy();
    for (i, path) in args.paths.iter().enumerate() {
        let last = i + 1 == args.paths.len();
        let name = path.display();
        let result = open_for_validation(path.store_location(), remote_options(), &policy)
            .and_then(|opened| {
                let report = validate_opened(&opened, &name, &options);
                if last {
                    // The process ends here: freeing the node table of a large file (every
                    // document of every node) takes longer than validating it.
                    std::mem::forget(opened);
                }
                report
            });
        status = status.max(status_of(&result));
        match &result {
            Err(message) => eprintln!("neurochunk: error: {}", message.replace('\n', " ")),
            Ok(report) if !args.json => out!("{}", report.to_text()),
            Ok(_) => {}
        }
        if args.json {
            all.extend(result_json(&name, &result));
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
