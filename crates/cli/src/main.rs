//! `neurochunk`: the command-line tool over the neurochunk libraries.
//!
//! Every subcommand prints one line `neurochunk: error: …` on stderr and exits non-zero when it
//! fails; the message names the file, node and chunk concerned.

#[macro_use]
mod output;
mod arrays;
mod codec_spec;
mod demo;
mod inspect;
mod mesh_cmd;
mod npz;
mod nwb_cmd;
mod nwb_validate;
mod ome_cmd;
mod progress;
mod repo_cmd;
mod serve_cmd;
mod store_args;
mod table_annotations;
mod table_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Read, write, inspect and convert chunked neuroscience data: Zarr v2, Zarr v3 (with
/// sharding and consolidated metadata), N5 and neurarrow tables.
///
/// PATH arguments are directories or URLs: the array or group to work on. Formats are
/// detected from the metadata documents found there (`.zarray`/`.zgroup` for Zarr v2,
/// `zarr.json` for v3, `attributes.json` for N5).
#[derive(Parser)]
#[command(name = "neurochunk", version, long_version = long_version(), about, long_about = None,
          propagate_version = true, after_help = store_args::URL_FORMS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    remote: store_args::RemoteArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Show the hierarchy below PATH: every group and array with its shape, data type, chunk
    /// shape and codecs.
    #[command(after_help = store_args::URL_FORMS)]
    Tree(inspect::TreeArgs),
    /// Show one node's metadata and attributes.
    #[command(after_help = store_args::URL_FORMS)]
    Info(inspect::InfoArgs),
    /// Read an array (or a region of it) into a NumPy .npy file.
    #[command(after_help = store_args::URL_FORMS)]
    Get(arrays::GetArgs),
    /// Create an array from a NumPy .npy file.
    #[command(after_help = store_args::URL_FORMS)]
    Put(arrays::PutArgs),
    /// Copy an array or a whole hierarchy into another format, chunking or codec.
    #[command(after_help = store_args::URL_FORMS)]
    Convert(arrays::ConvertArgs),
    /// Write consolidated metadata for the group at PATH (v2 `.zmetadata`, v3 inline).
    #[command(after_help = store_args::URL_FORMS)]
    Consolidate(arrays::ConsolidateArgs),
    /// Write a realistic volume, a small hierarchy and neurarrow tables into DIR in every
    /// format, read them back and report throughput.
    Demo(demo::DemoArgs),
    /// neurarrow tables: validate, inspect, convert, derive fields, SWC import/export.
    Table {
        #[command(subcommand)]
        command: table_cmd::TableCommand,
    },
    /// Build a multiscale image (OME-Zarr 0.4 / 0.5, BigDataViewer or n5-viewer N5) from a
    /// single-scale array, each level downsampled from the previous one.
    #[command(after_help = store_args::URL_FORMS)]
    Pyramid(ome_cmd::PyramidArgs),
    /// Neuroglancer precomputed meshes: list, show, export as tables, import from tables.
    Mesh {
        #[command(subcommand)]
        command: mesh_cmd::MeshCommand,
    },
    /// Multiscale images (OME-Zarr, BigDataViewer / n5-viewer N5): validate, describe.
    Ome {
        #[command(subcommand)]
        command: ome_cmd::OmeCommand,
    },
    /// NWB files on Zarr (both hdmf-zarr conventions): inspect, check, validate, read,
    /// dereference, write a demo, convert between conventions.
    Nwb {
        #[command(subcommand)]
        command: nwb_cmd::NwbCommand,
    },
    /// Serve a local directory over HTTP (read-only, byte ranges, CORS) and print a Neuroglancer
    /// link opening the volumes, segmentations, skeletons and meshes found in it.
    Serve(serve_cmd::ServeArgs),
    /// Create an empty Icechunk repository (with its `main` branch) at a new directory or an
    /// empty URL prefix.
    Init(repo_cmd::InitArgs),
    /// List an Icechunk repository's history (id, time, message of each snapshot, newest
    /// first, from the head of `--branch`, `--tag` or `--snapshot`; default main), its
    /// branches and its tags.
    Log(repo_cmd::LogArgs),
    /// Create a tag (which never moves) in an Icechunk repository, at the snapshot
    /// `--branch`, `--tag` or `--snapshot` names (default: the head of main).
    Tag(repo_cmd::RefArgs),
    /// Create a branch in an Icechunk repository, at the snapshot `--branch`, `--tag` or
    /// `--snapshot` names (default: the head of main).
    Branch(repo_cmd::RefArgs),
    /// Print a completion script for SHELL on stdout, e.g.
    /// `neurochunk completions bash > ~/.local/share/bash-completion/completions/neurochunk`,
    /// `neurochunk completions zsh > ~/.zfunc/_neurochunk`,
    /// `neurochunk completions fish > ~/.config/fish/completions/neurochunk.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `neurochunk completions SHELL`: the script on stdout (a closed pipe ends it quietly).
fn completions(shell: clap_complete::Shell) -> CmdResult {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "neurochunk", &mut script);
    match std::io::Write::write_all(&mut std::io::stdout(), &script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure(format!("writing the completion script: {e}")))
        }
        _ => Ok(()),
    }
}

/// `--version`: the version, then the formats and codecs this build reads and writes.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let registry = neurochunk_codec::CodecRegistry::global();
        format!(
            "{}\nformats: Zarr v2, Zarr v3 (sharding, consolidated metadata), N5, Neuroglancer \
             precomputed, HDF5 (read), NWB (hdmf-zarr legacy and v3 conventions; HDF5 read in \
             place), OME-Zarr 0.4/0.5, BigDataViewer/n5-viewer N5, neurarrow tables (Parquet, \
             Arrow IPC), SWC, LINDI reference files\nstores: local files, s3://, gs://, az://, \
             http(s)://, Icechunk repositories (local or in a bucket)\nZarr v3 codecs: \
             {}\nZarr v2 (numcodecs) codecs: {}",
            env!("CARGO_PKG_VERSION"),
            registry.v3_names().join(", "),
            registry.v2_ids().join(", ")
        )
    })
}

/// A failed command: its one-line message.
#[derive(Debug)]
pub(crate) struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

pub(crate) type CmdResult = Result<(), Failure>;

/// Panics inside the arrow and parquet decoders on corrupt input are caught by the table layer
/// and reported as errors naming the file; the default hook would print them as well. Every
/// other panic is printed as usual.
fn quiet_about_caught_decoder_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !neurochunk_table::io::decoder_panic_is_caught() {
            default(info);
        }
    }));
}

fn main() -> ExitCode {
    quiet_about_caught_decoder_panics();
    let cli = Cli::parse();
    cli.remote.install();
    progress::configure(cli.remote.no_progress, cli.remote.quiet);
    // Every command but the long-running server writes into one session per repository
    // branch it opens, committed below when it succeeds.
    let serving = matches!(cli.command, Command::Serve(_));
    neurochunk_store::icechunk::sessions::set_automatic(!serving);
    let message = cli.remote.message.clone().unwrap_or_else(command_line);
    let quiet = cli.remote.quiet;
    let result = match cli.command {
        Command::Tree(args) => inspect::tree(args),
        Command::Info(args) => inspect::info(args),
        Command::Get(args) => arrays::get(args),
        Command::Put(args) => arrays::put(args),
        Command::Convert(args) => arrays::convert(args),
        Command::Consolidate(args) => arrays::consolidate(args),
        Command::Demo(args) => demo::run(args),
        Command::Pyramid(args) => ome_cmd::pyramid(args),
        Command::Mesh { command } => mesh_cmd::run(command),
        Command::Ome { command } => {
            return finish(ExitCode::from(ome_cmd::run(command)), &message, quiet)
        }
        Command::Table { command } => return finish(table_cmd::run(command), &message, quiet),
        Command::Nwb {
            command: nwb_cmd::NwbCommand::Validate(args),
        } => return finish(ExitCode::from(nwb_validate::run(args)), &message, quiet),
        Command::Nwb { command } => nwb_cmd::run(command),
        Command::Serve(args) => serve_cmd::serve(args),
        Command::Init(args) => repo_cmd::init(args),
        Command::Log(args) => repo_cmd::log(args),
        Command::Tag(args) => repo_cmd::tag(args),
        Command::Branch(args) => repo_cmd::branch(args),
        Command::Completions { shell } => completions(shell),
    };
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            let one_line = output::with_overwrite_hint(&message.replace('\n', " "));
            eprintln!("neurochunk: error: {one_line}");
            ExitCode::FAILURE
        }
    };
    finish(code, &message, quiet)
}

/// The end of a command: on success, the commit of every Icechunk session it changed (a
/// note on standard error names each new snapshot); on failure, nothing is committed.
fn finish(code: ExitCode, message: &str, quiet: bool) -> ExitCode {
    use neurochunk_store::icechunk::sessions;
    if code != ExitCode::SUCCESS {
        sessions::discard_automatic();
        return code;
    }
    match sessions::commit_automatic(message) {
        Ok(committed) => {
            if !quiet {
                for c in committed {
                    eprintln!(
                        "neurochunk: committed snapshot {} to branch '{}' of {}",
                        c.snapshot, c.branch, c.repository
                    );
                }
            }
            code
        }
        Err(e) => {
            eprintln!("neurochunk: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The default commit message: the command line, program name first.
fn command_line() -> String {
    let mut words = vec!["neurochunk".to_string()];
    words.extend(std::env::args().skip(1));
    words.join(" ")
}
