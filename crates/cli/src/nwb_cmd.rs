//! `neurochunk nwb …`: inspect, check, read, dereference, demo-write and convert NWB files
//! stored as Zarr, in either hdmf-zarr convention.
//!
//! Exit codes: 0 success, 1 a failure (unreadable file, bad input, or for `check`: at least
//! one link or reference that does not resolve). Errors are one line on stderr naming the
//! file and the object.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use neurochunk_array::{parse_selection, NodeTree};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_hdmf::demo::{write_demo, write_demo_into, DemoOptions};
use neurochunk_hdmf::{
    check, convert_file, convert_into, load_namespace_file, structure_problems, to_npy,
    AttributeValue, Convention, Dataset, DatasetValue, ExternalPolicy, FieldValue, FileLocation,
    Inventory, NodeKind, NwbFile, NwbWriter, Reference, WriteOptions,
};
use serde_json::{json, Value};

use crate::store_args::{Location, ReplaceArgs, WriteArgs, URL_FORMS};
use crate::{CmdResult, Failure};

/// Open the file at a path or URL, external links confined to the directory (prefix)
/// holding it.
fn open_file(location: &Location) -> Result<NwbFile, Failure> {
    ExternalArgs::default().open(location)
}

/// A writer of a new file at a URL (the prefix is emptied first; objects are written in
/// place, see docs/remote.md).
fn remote_writer(
    location: &Location,
    convention: Convention,
    options: WriteOptions,
) -> Result<NwbWriter, Failure> {
    let store = location.open_remote_replace(&NodeTree, options.overwrite)?;
    Ok(NwbWriter::create_at(
        FileLocation::named(store, "", location.display()),
        convention,
        options,
    )?)
}

/// The convention to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ConventionArg {
    /// Legacy Zarr v2 convention (hdmf-zarr <= 0.13).
    Zarr2,
    /// Zarr v3 convention (hdmf-zarr 0.14).
    Zarr3,
}

impl From<ConventionArg> for Convention {
    fn from(c: ConventionArg) -> Self {
        match c {
            ConventionArg::Zarr2 => Convention::Legacy,
            ConventionArg::Zarr3 => Convention::V3,
        }
    }
}

/// Where links and references may lead outside the file.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ExternalArgs {
    /// Also follow external links and references into this directory tree (repeatable; by
    /// default only the directory holding the file). For a file opened by URL: a URL prefix
    /// in the same bucket (by default the prefix holding the file).
    #[arg(long, value_name = "DIR")]
    allow_external: Vec<Location>,
    /// Follow external links and references anywhere (for a URL: anywhere in its bucket).
    #[arg(long)]
    allow_any_external: bool,
    /// Ignore consolidated metadata and list the store.
    #[arg(long)]
    no_consolidated: bool,
}

impl ExternalArgs {
    /// Where external links may lead: the one policy of the library
    /// ([`ExternalPolicy`]), which the Python package applies too.
    pub(crate) fn policy(&self) -> ExternalPolicy {
        ExternalPolicy {
            allowed: self
                .allow_external
                .iter()
                .map(|l| l.store_location().clone())
                .collect(),
            allow_any: self.allow_any_external,
            files: Some(neurochunk_hdf5::hdf5_files()),
        }
    }

    /// The NWB file at `location` ([`NwbFile::open_any`]).
    pub(crate) fn open(&self, location: &Location) -> Result<NwbFile, Failure> {
        Ok(NwbFile::open_any(
            location.store_location(),
            crate::store_args::remote_options(),
            !self.no_consolidated,
            &self.policy(),
        )?)
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum NwbCommand {
    /// List typed objects, links and references (`--json`: the machine-readable inventory).
    #[command(after_help = URL_FORMS)]
    Inspect {
        /// The NWB file (a .nwb.zarr directory, or a URL).
        path: Location,
        /// Print the inventory as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        external: ExternalArgs,
    },
    /// Resolve every link and reference; report each one that does not resolve (exit 1).
    #[command(after_help = URL_FORMS)]
    Check {
        /// The NWB file (a directory or a URL).
        path: Location,
        #[command(flatten)]
        external: ExternalArgs,
    },
    /// List the cached specifications (namespace, version, documents).
    #[command(after_help = URL_FORMS)]
    Specs {
        /// The NWB file (a directory or a URL).
        path: Location,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
        /// Print one cached document, given as NAMESPACE/VERSION/DOCUMENT.
        #[arg(long, value_name = "NS/VERSION/DOC")]
        show: Option<String>,
    },
    /// Find typed objects by type or object id; prints their paths.
    #[command(after_help = URL_FORMS)]
    Find {
        /// The NWB file (a directory or a URL).
        path: Location,
        /// The neurodata_type to look for.
        #[arg(long = "type", value_name = "TYPE")]
        neurodata_type: Option<String>,
        /// The object id to look for.
        #[arg(long, value_name = "UUID")]
        object_id: Option<String>,
    },
    /// Read a dataset by its path in the file (links followed) into a .npy file: scalars as
    /// 0-d arrays, text as <U, references as <U target paths, compounds as structured arrays.
    #[command(after_help = URL_FORMS)]
    Get {
        /// The NWB file (a directory or a URL).
        path: Location,
        /// The dataset, e.g. /acquisition/ElectricalSeries/data.
        object: String,
        /// Region to read, per axis an index or `start:stop[:step]`.
        #[arg(long, value_name = "SEL", allow_hyphen_values = true)]
        region: Option<String>,
        /// The .npy file to write (a path or a URL).
        #[arg(short, long, value_name = "OUT.npy")]
        output: Location,
        #[command(flatten)]
        external: ExternalArgs,
    },
    /// Follow a reference stored in an attribute or a dataset element: print its target as
    /// JSON and, with -o, write the data it selects (the region for region references).
    #[command(after_help = URL_FORMS)]
    Deref {
        /// The NWB file (a directory or a URL).
        path: Location,
        /// The object holding the reference.
        object: String,
        /// The attribute holding the reference.
        #[arg(long, conflicts_with = "index")]
        attribute: Option<String>,
        /// The element (flat index) of a reference dataset.
        #[arg(long)]
        index: Option<usize>,
        /// The compound field holding the reference.
        #[arg(long, requires = "index")]
        field: Option<String>,
        /// The .npy file to write (a path or a URL).
        #[arg(short, long, value_name = "OUT.npy")]
        output: Option<Location>,
        #[command(flatten)]
        external: ExternalArgs,
    },
    /// Write a realistic extracellular-electrophysiology NWB file.
    #[command(after_help = URL_FORMS)]
    Demo {
        /// The file to write, a directory or a URL (replaced if it exists).
        out: Location,
        #[arg(long, value_enum, default_value_t = ConventionArg::Zarr2)]
        convention: ConventionArg,
        /// Add this many extra typed TimeSeries (large-file testing).
        #[arg(long, default_value_t = 0)]
        scale: usize,
        /// Cache this namespace YAML and its schema sources (repeatable).
        #[arg(long, value_name = "NAMESPACE.yaml")]
        namespace: Vec<PathBuf>,
        /// Compressors of numeric datasets, e.g. zstd:3 or blosc:lz4:5.
        #[arg(long, value_name = "SPEC")]
        compressors: Option<String>,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        replace: ReplaceArgs,
    },
    /// Validate files against the specifications they cache (or --namespace ones): schema
    /// rules and DynamicTable rules, one line per problem; exit 0 valid, 1 invalid, 2
    /// unreadable.
    #[command(after_help = URL_FORMS)]
    Validate(crate::nwb_validate::ValidateArgs),
    /// Convert a file to the other convention (or re-compress it in the same one).
    #[command(after_help = URL_FORMS)]
    Convert {
        /// The file to convert (a directory or a URL).
        src: Location,
        /// The file to write, a directory or a URL (replaced if it exists).
        dst: Location,
        #[arg(long, value_enum)]
        convention: ConventionArg,
        /// Compressors of numeric datasets, e.g. zstd:3 or blosc:lz4:5 (default: kept).
        #[arg(long, value_name = "SPEC")]
        compressors: Option<String>,
        #[command(flatten)]
        external: ExternalArgs,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        replace: ReplaceArgs,
    },
    /// Import an HDF5 NWB file (as pynwb's NWBHDF5IO writes them) into either convention.
    ///
    /// Chunking and compression are kept where Zarr can express them (deflate -> zlib,
    /// shuffle -> shuffle; such chunks are copied as stored); contiguous datasets get chunks of
    /// about 1 MiB. External links must lead inside the source file's directory (or an
    /// --allow-external tree); their target file is named with `.zarr` appended, the name it
    /// gets when imported beside this one.
    Import {
        /// The HDF5 file: a path, or a URL (https://, s3://, ...; read by ranged requests as
        /// the import goes, nothing downloaded first; with --virtual the chunk entries name
        /// the URL).
        src: Location,
        /// The NWB Zarr file to write (a directory, replaced if it exists; or a path inside
        /// an Icechunk repository); with --virtual outside a repository, the reference file
        /// (`NAME.lindi.json`).
        dst: PathBuf,
        #[arg(long, value_enum, required_unless_present = "virtual_refs")]
        convention: Option<ConventionArg>,
        /// Reference the HDF5 file's chunks instead of copying them: into an Icechunk
        /// repository, as virtual chunks (Zarr v3 arrays whose chunks are byte ranges of the
        /// file, which icechunk reads through the repository's container of the file's
        /// directory); elsewhere, a LINDI reference file (small datasets and attributes
        /// inline).
        #[arg(long = "virtual", id = "virtual_refs", conflicts_with_all = ["compressors", "chunks"])]
        virtual_refs: bool,
        /// With --virtual: the URL (or path) the chunk entries name (default: the source's
        /// absolute path).
        #[arg(long, requires = "virtual_refs")]
        url: Option<String>,
        /// Compressors of every numeric dataset, e.g. zstd:3 or blosc:lz4:5 (default: the
        /// HDF5 filters' equivalents, or the convention's default where there is none).
        #[arg(long, value_name = "SPEC")]
        compressors: Option<String>,
        /// Re-chunk numeric datasets: a size in bytes per chunk (e.g. 4M) for all, or
        /// PATH=D0,D1,... for one dataset (repeatable).
        #[arg(long, value_name = "SIZE|PATH=SHAPE")]
        chunks: Vec<String>,
        /// Also allow external links into this directory tree (repeatable).
        #[arg(long, value_name = "DIR")]
        allow_external: Vec<PathBuf>,
        /// Allow external links anywhere.
        #[arg(long)]
        allow_any_external: bool,
        #[command(flatten)]
        write: WriteArgs,
        #[command(flatten)]
        replace: ReplaceArgs,
    },
}

/// `--chunks`: a chunk size in bytes for all numeric datasets, and shapes of particular ones.
type ChunkArgs = (
    Option<usize>,
    std::collections::BTreeMap<String, Vec<usize>>,
);

/// `--chunks` values: one size for all numeric datasets, shapes for particular ones.
fn parse_chunks(specs: &[String]) -> Result<ChunkArgs, Failure> {
    let mut size = None;
    let mut shapes = std::collections::BTreeMap::new();
    for spec in specs {
        if let Some((path, shape)) = spec.split_once('=') {
            let dims = shape
                .split(',')
                .map(|d| d.trim().parse::<usize>().ok().filter(|&d| d > 0))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    Failure(format!(
                        "--chunks {spec}: the shape must be positive integers separated by commas"
                    ))
                })?;
            let path = format!("/{}", path.trim_matches('/'));
            shapes.insert(path, dims);
        } else {
            let text = spec.trim();
            let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
                Some(i) => text.split_at(i),
                None => (text, ""),
            };
            let factor: usize = match unit.to_ascii_lowercase().as_str() {
                "" | "b" => 1,
                "k" | "kb" | "kib" => 1 << 10,
                "m" | "mb" | "mib" => 1 << 20,
                "g" | "gb" | "gib" => 1 << 30,
                _ => 0,
            };
            let n = digits
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(factor))
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    Failure(format!(
                        "--chunks {spec}: expected a size such as 4M, or PATH=D0,D1,..."
                    ))
                })?;
            size = Some(n);
        }
    }
    Ok((size, shapes))
}

/// One line on standard error per problem, naming the file, the node and what is wrong.
fn report_problems(path: &Location, problems: &[neurochunk_hdmf::Problem]) {
    for p in problems {
        eprintln!("neurochunk: problem: {}: '{}': {}", path, p.path, p.message);
    }
}

pub(crate) fn run(command: NwbCommand) -> CmdResult {
    match command {
        NwbCommand::Inspect {
            path,
            json,
            external,
        } => {
            let file = external.open(&path)?;
            let problems = structure_problems(&file);
            if !problems.is_empty() {
                report_problems(&path, &problems);
                return Err(Failure(format!(
                    "{}: {}",
                    path,
                    if problems[0].path == "/" && problems[0].message.starts_with("not an") {
                        problems[0].message.clone()
                    } else {
                        format!("{} malformed attribute(s)", problems.len())
                    }
                )));
            }
            let inventory = Inventory::of(&file)?;
            if json {
                outln!(
                    "{}",
                    to_python_json(&inventory.to_json(), PyJsonStyle::ZARR_PYTHON3)
                );
            } else {
                out!("{}", inventory.to_text(&file));
            }
            Ok(())
        }
        NwbCommand::Check { path, external } => {
            let file = external.open(&path)?;
            let problems = check(&file);
            report_problems(&path, &problems);
            if problems.is_empty() {
                outln!(
                    "{}: no problems: every link and reference resolves, typed attributes are \
                     well formed, the store matches its consolidated metadata",
                    path
                );
                Ok(())
            } else {
                Err(Failure(format!(
                    "{}: {} problem(s) (see above)",
                    path,
                    problems.len()
                )))
            }
        }
        NwbCommand::Specs { path, json, show } => specs(path, json, show),
        NwbCommand::Validate(args) => match crate::nwb_validate::run(args) {
            0 => Ok(()),
            status => Err(Failure(format!("validation failed (status {status})"))),
        },
        NwbCommand::Find {
            path,
            neurodata_type,
            object_id,
        } => {
            let file = open_file(&path)?;
            let found: Vec<_> = file
                .typed_objects()
                .into_iter()
                .filter(|o| {
                    neurodata_type
                        .as_deref()
                        .is_none_or(|t| o.neurodata_type == t)
                })
                .filter(|o| {
                    object_id
                        .as_deref()
                        .is_none_or(|id| o.object_id.as_deref() == Some(id))
                })
                .collect();
            for o in &found {
                outln!(
                    "{}\t{}\t{}",
                    o.path,
                    o.neurodata_type,
                    o.object_id.as_deref().unwrap_or("")
                );
            }
            if found.is_empty() {
                return Err(Failure(format!("{}: no typed object matches", path)));
            }
            Ok(())
        }
        NwbCommand::Get {
            path,
            object,
            region,
            output,
            external,
        } => {
            let file = external.open(&path)?;
            let selection = match region.as_deref() {
                None => None,
                Some(text) => {
                    Some(parse_selection(text).map_err(|e| Failure(format!("--region: {e}")))?)
                }
            };
            let dataset = file.read_dataset(&object, selection.as_ref())?;
            write_dataset(&output, &dataset, &path, &object)
        }
        NwbCommand::Deref {
            path,
            object,
            attribute,
            index,
            field,
            output,
            external,
        } => {
            let file = external.open(&path)?;
            let reference = find_reference(
                &file,
                &object,
                attribute.as_deref(),
                index,
                field.as_deref(),
            )?;
            let target = file.dereference(&reference)?;
            let kind = match target.kind {
                NodeKind::Group => "group",
                NodeKind::Dataset => "dataset",
            };
            let target_file = file.file_of(&target);
            let mut info = json!({"source": reference.source, "path": target.path, "kind": kind, "file": target_file.name()});
            if let Some(region) = &reference.region {
                info["region"] = region.to_json();
            }
            outln!("{}", to_python_json(&info, PyJsonStyle::COMPACT));
            if let Some(out) = output {
                let dataset = file.read_reference(&reference)?;
                write_dataset(&out, &dataset, &path, &reference.path)?;
            }
            Ok(())
        }
        NwbCommand::Demo {
            out,
            convention,
            scale,
            namespace,
            compressors,
            write,
            replace,
        } => {
            let mut namespaces = Vec::new();
            for ns in &namespace {
                namespaces.extend(load_namespace_file(ns)?);
            }
            let options = DemoOptions {
                convention: convention.into(),
                scale,
                namespaces,
                write: WriteOptions {
                    compressors: parse_compressors(compressors.as_deref())?,
                    durability: write.durability(),
                    overwrite: replace.policy(),
                },
            };
            let summary = match out.local() {
                Some(path) => write_demo(path, &options)?,
                None => write_demo_into(
                    remote_writer(&out, options.convention, options.write.clone())?,
                    &options,
                )?,
            };
            let file = open_file(&out)?;
            outln!(
                "wrote {} ({}): {} typed objects, {} electrodes x {} samples, {} units, {} trials, {} cached namespaces",
                summary.name,
                file.convention(),
                file.typed_objects().len(),
                summary.electrodes,
                summary.samples,
                summary.units,
                summary.trials,
                file.specifications()?.len()
            );
            Ok(())
        }
        NwbCommand::Convert {
            src,
            dst,
            convention,
            compressors,
            external,
            write,
            replace,
        } => {
            let file = external.open(&src)?;
            let total = file.nodes().count() as u64;
            let bar = crate::progress::bar_of(total, "converting", "objects");
            let progress = |n: u64| bar.inc(n);
            let write = WriteOptions {
                compressors: parse_compressors(compressors.as_deref())?,
                durability: write.durability(),
                overwrite: replace.policy(),
            };
            let summary = match dst.local() {
                Some(path) => convert_file(&file, path, convention.into(), write, &progress)?.1,
                None => {
                    if dst.display() == src.display() {
                        return Err(Failure(format!("{src}: cannot convert a file into itself")));
                    }
                    let writer = remote_writer(&dst, convention.into(), write)?;
                    convert_into(&file, writer, &progress)?
                }
            };
            bar.finish_and_clear();
            outln!(
                "converted {} -> {} ({}): {} groups, {} datasets ({} streamed chunk by chunk), {} links, {} cached namespaces",
                src,
                dst,
                Convention::from(convention),
                summary.groups,
                summary.datasets,
                summary.streamed,
                summary.links,
                summary.namespaces
            );
            Ok(())
        }
        NwbCommand::Import {
            src,
            dst,
            convention,
            virtual_refs,
            url,
            compressors,
            chunks,
            allow_external,
            allow_any_external,
            write,
            replace,
        } => {
            let src_shown = src.display();
            // A destination inside an Icechunk repository is written into its session.
            let in_repository: Location = dst
                .to_string_lossy()
                .parse()
                .map_err(|e: String| Failure(format!("{}: {e}", dst.display())))?;
            let repository = in_repository.repository_root()?;
            if virtual_refs && repository.is_none() {
                if !dst.to_string_lossy().ends_with(".lindi.json") {
                    return Err(Failure(format!(
                        "{}: a reference file's name must end in .lindi.json",
                        dst.display()
                    )));
                }
                let options = neurochunk_hdf5::VirtualOptions {
                    url,
                    allowed_roots: allow_external,
                    allow_any_external,
                    overwrite: replace.policy(),
                };
                let summary = neurochunk_hdf5::write_reference_location(
                    src.store_location(),
                    crate::store_args::remote_options(),
                    &dst,
                    &options,
                )?;
                for note in &summary.notes {
                    eprintln!("note: {note}");
                }
                outln!(
                    "wrote {} -> {}: {} groups, {} datasets ({} inline), {} chunk references, {} links, {} external links",
                    src_shown,
                    dst.display(),
                    summary.groups,
                    summary.datasets,
                    summary.inline,
                    summary.chunk_refs,
                    summary.links,
                    summary.external_links
                );
                return Ok(());
            }
            if virtual_refs && url.is_some() {
                return Err(Failure(
                    "--url names the file in a reference file; in a repository, virtual chunks \
                     name the file's own path or URL"
                        .into(),
                ));
            }
            // Virtual chunks are Zarr v3 (an Icechunk repository holds nothing else).
            let convention = match (convention, virtual_refs) {
                (Some(c), _) => c,
                (None, true) => ConventionArg::Zarr3,
                (None, false) => return Err(Failure("--convention is required".into())),
            };
            if let (Some(root), true) = (&repository, virtual_refs) {
                // The repository must have a container holding the file before the session
                // that records references into it begins.
                let file_url = match src.store_location().local_path() {
                    Some(path) => {
                        neurochunk_hdf5::import::file_reference(path)
                            .map_err(|e| Failure(format!("{src_shown}: {e}")))?
                            .0
                    }
                    None => src_shown.clone(),
                };
                let mut repo = neurochunk_store::icechunk::Repo::open(
                    root,
                    crate::store_args::remote_options(),
                )?;
                repo.add_virtual_container(&file_url, crate::store_args::remote_options())?;
            }
            let (chunk_bytes, chunk_shapes) = parse_chunks(&chunks)?;
            let options = neurochunk_hdf5::ImportOptions {
                convention: convention.into(),
                write: WriteOptions {
                    compressors: parse_compressors(compressors.as_deref())?,
                    durability: write.durability(),
                    overwrite: replace.policy(),
                },
                chunk_bytes,
                chunks: chunk_shapes,
                allowed_roots: allow_external,
                allow_any_external,
                virtual_refs,
                ..neurochunk_hdf5::ImportOptions::default()
            };
            let bar = crate::progress::bytes_bar("importing");
            let progress = BarProgress(&bar);
            let summary = if repository.is_some() {
                let writer =
                    remote_writer(&in_repository, options.convention, options.write.clone())?;
                neurochunk_hdf5::import_location_into(
                    src.store_location(),
                    crate::store_args::remote_options(),
                    writer,
                    &options,
                    &progress,
                )?
            } else {
                neurochunk_hdf5::import_location(
                    src.store_location(),
                    crate::store_args::remote_options(),
                    &dst,
                    &options,
                    &progress,
                )?
            };
            bar.finish_and_clear();
            for note in &summary.notes {
                eprintln!("note: {note}");
            }
            outln!(
                "imported {} -> {} ({}): {} groups, {} datasets ({} streamed: {} chunks {}, {} encoded), {} links, {} external links, {} cached namespaces",
                src_shown,
                dst.display(),
                Convention::from(convention),
                summary.groups,
                summary.datasets,
                summary.streamed,
                summary.chunks_copied,
                if virtual_refs {
                    "as virtual references to the file (or copied as stored)"
                } else {
                    "copied as stored"
                },
                summary.chunks_encoded,
                summary.links,
                summary.external_links,
                summary.namespaces
            );
            Ok(())
        }
    }
}

/// The import's progress on a bar of bytes.
struct BarProgress<'a>(&'a indicatif::ProgressBar);

impl neurochunk_hdf5::Progress for BarProgress<'_> {
    fn total(&self, bytes: u64) {
        self.0.set_length(bytes);
    }

    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

fn specs(path: Location, json: bool, show: Option<String>) -> CmdResult {
    let file = open_file(&path)?;
    if let Some(which) = show {
        let parts: Vec<&str> = which.split('/').collect();
        let [ns, version, doc] = parts.as_slice() else {
            return Err(Failure(format!(
                "--show expects NAMESPACE/VERSION/DOCUMENT, got {which:?}"
            )));
        };
        let value = file.specification(ns, version, doc)?;
        outln!("{}", to_python_json(&value, PyJsonStyle::PYTHON_DEFAULT));
        return Ok(());
    }
    let namespaces = file.specifications()?;
    if json {
        let list: Vec<Value> = namespaces
            .iter()
            .map(|n| json!({"namespace": n.name, "version": n.version, "sources": n.sources}))
            .collect();
        outln!(
            "{}",
            to_python_json(&Value::Array(list), PyJsonStyle::ZARR_PYTHON3)
        );
    } else if namespaces.is_empty() {
        outln!("{}: no cached specifications", path);
    } else {
        for n in namespaces {
            outln!("{} {}: {}", n.name, n.version, n.sources.join(", "));
        }
    }
    Ok(())
}

fn find_reference(
    file: &NwbFile,
    object: &str,
    attribute: Option<&str>,
    index: Option<usize>,
    field: Option<&str>,
) -> Result<Reference, Failure> {
    let where_ = || format!("{}: '{object}'", file.name());
    if let Some(name) = attribute {
        return match file.attribute(object, name)? {
            Some(AttributeValue::Reference(r)) => Ok(r),
            Some(AttributeValue::Value(_)) => Err(Failure(format!(
                "{}: attribute '{name}' is not a reference",
                where_()
            ))),
            None => Err(Failure(format!("{}: no attribute '{name}'", where_()))),
        };
    }
    let Some(index) = index else {
        return Err(Failure(
            "say which reference: --attribute NAME or --index N [--field F]".into(),
        ));
    };
    let dataset = file.read_dataset(object, None)?;
    let reference = match (&dataset.value, field) {
        (DatasetValue::References(refs), None) => refs.get(index).cloned().ok_or_else(|| {
            Failure(format!(
                "{}: index {index} is out of range ({} elements)",
                where_(),
                refs.len()
            ))
        })?,
        (DatasetValue::Compound { fields, rows }, Some(name)) => {
            let pos = fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| Failure(format!("{}: no field '{name}'", where_())))?;
            let row = rows.get(index).ok_or_else(|| {
                Failure(format!(
                    "{}: index {index} is out of range ({} rows)",
                    where_(),
                    rows.len()
                ))
            })?;
            match row.get(pos) {
                Some(FieldValue::Reference(r)) => r.clone(),
                _ => {
                    return Err(Failure(format!(
                        "{}: field '{name}' does not hold references",
                        where_()
                    )))
                }
            }
        }
        (DatasetValue::Compound { .. }, None) => {
            return Err(Failure(format!(
                "{}: a compound dataset needs --field",
                where_()
            )))
        }
        _ => return Err(Failure(format!("{}: not a reference dataset", where_()))),
    };
    reference.ok_or_else(|| Failure(format!("{}: element {index} holds no reference", where_())))
}

fn write_dataset(output: &Location, dataset: &Dataset, file: &Location, object: &str) -> CmdResult {
    let (data_type, bytes) =
        to_npy(&dataset.value).map_err(|m| Failure(format!("{file}: '{object}': {m}")))?;
    crate::arrays::write_npy_to(output, &data_type, &dataset.shape, &bytes)
}

/// The `--compressors` option as typed codecs.
fn parse_compressors(spec: Option<&str>) -> Result<Option<Vec<neurochunk_codec::Codec>>, Failure> {
    spec.map(|s| {
        crate::codec_spec::parse_codecs(s).map_err(|e| Failure(format!("--compressors: {e}")))
    })
    .transpose()
}
