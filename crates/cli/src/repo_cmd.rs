//! `init`, `log`, `tag` and `branch`: Icechunk repositories, their history and names; and
//! `--format icechunk`, which makes a destination a repository.

use clap::Args;
use neurochunk_store::icechunk::{Repo, Version};
use neurochunk_store::StoreLocation;

use crate::arrays::FormatArg;
use crate::store_args::{remote_options, Location};
use crate::{CmdResult, Failure};

/// Arguments of `log`.
#[derive(Args, Debug)]
pub(crate) struct LogArgs {
    /// The repository (a local directory or a URL).
    repo: Location,
    /// Print one JSON document (`snapshots`, `branches`, `tags`) instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `tag` and `branch`.
#[derive(Args, Debug)]
pub(crate) struct RefArgs {
    /// The repository (a local directory or a URL).
    repo: Location,
    /// The name of the new tag or branch.
    name: String,
}

/// Arguments of `init`.
#[derive(Args, Debug)]
pub(crate) struct InitArgs {
    /// Where the new repository goes (a local directory that is missing or empty, or a URL
    /// prefix that holds nothing).
    repo: Location,
}

/// `init REPO`: a new, empty repository with its `main` branch.
pub(crate) fn init(args: InitArgs) -> CmdResult {
    create(&args.repo)?;
    note_created(&args.repo);
    Ok(())
}

/// For `--format icechunk`: make `destination` a repository unless it is in one already
/// (its own root or a node below it); other formats leave it as it is.
pub(crate) fn prepare(format: Option<FormatArg>, destination: &Location) -> CmdResult {
    if !matches!(format, Some(FormatArg::Icechunk)) {
        return Ok(());
    }
    if destination.in_repository()? {
        return Ok(());
    }
    create(destination)?;
    note_created(destination);
    Ok(())
}

fn note_created(location: &Location) {
    if !crate::progress::quiet() {
        eprintln!("neurochunk: created an Icechunk repository at {location}");
    }
}

fn create(location: &Location) -> CmdResult {
    let store_location = location.store_location();
    if let StoreLocation::Local(path) = store_location {
        let empty = match std::fs::read_dir(path) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(Failure(format!("{location}: {e}"))),
        };
        if !empty {
            return Err(Failure(format!(
                "{location}: not empty; a new Icechunk repository needs a missing or empty \
                 directory"
            )));
        }
    } else {
        let (store, key) = location.open_parts()?;
        let prefix = if key.is_empty() {
            String::new()
        } else {
            format!("{key}/")
        };
        let listing = store
            .list_dir(&prefix)
            .map_err(|e| Failure(format!("{location}: {e}")))?;
        if !listing.keys.is_empty() || !listing.prefixes.is_empty() {
            return Err(Failure(format!(
                "{location}: holds objects; a new Icechunk repository needs an empty prefix"
            )));
        }
    }
    Repo::create(store_location, remote_options()).map_err(|e| Failure(e.to_string()))?;
    Ok(())
}

fn open(location: &Location) -> Result<Repo, Failure> {
    let store_location: &StoreLocation = location.store_location();
    Repo::open(store_location, remote_options()).map_err(|e| Failure(e.to_string()))
}

fn version() -> Version {
    remote_options().version.clone().unwrap_or_default()
}

pub(crate) fn log(args: LogArgs) -> CmdResult {
    let repo = open(&args.repo)?;
    let version = version();
    let snapshots = repo.log(&version)?;
    let branches = repo.branches()?;
    let tags = repo.tags()?;
    if args.json {
        let named = |refs: &[neurochunk_store::icechunk::NamedRef]| {
            refs.iter()
                .map(|r| serde_json::json!({"name": r.name, "snapshot": r.snapshot}))
                .collect::<Vec<_>>()
        };
        let doc = serde_json::json!({
            "version": version.to_string(),
            "snapshots": snapshots.iter().map(|s| serde_json::json!({
                "id": s.id, "parent": s.parent, "time": s.time, "message": s.message,
            })).collect::<Vec<_>>(),
            "branches": named(&branches),
            "tags": named(&tags),
        });
        println!("{doc:#}");
        return Ok(());
    }
    let names = |id: &str| {
        let mut labels: Vec<String> = branches
            .iter()
            .filter(|b| b.snapshot == id)
            .map(|b| format!("branch {}", b.name))
            .chain(
                tags.iter()
                    .filter(|t| t.snapshot == id)
                    .map(|t| format!("tag {}", t.name)),
            )
            .collect();
        labels.sort();
        if labels.is_empty() {
            String::new()
        } else {
            format!(" ({})", labels.join(", "))
        }
    };
    for s in &snapshots {
        println!("{}  {}  {}{}", s.id, s.time, s.message, names(&s.id));
    }
    Ok(())
}

pub(crate) fn tag(args: RefArgs) -> CmdResult {
    let repo = open(&args.repo)?;
    let id = repo.create_tag(&args.name, &version())?;
    println!("tag {} at {id}", args.name);
    Ok(())
}

pub(crate) fn branch(args: RefArgs) -> CmdResult {
    let repo = open(&args.repo)?;
    let id = repo.create_branch(&args.name, &version())?;
    println!("branch {} at {id}", args.name);
    Ok(())
}
