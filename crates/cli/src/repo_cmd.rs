//! `log`, `tag` and `branch`: the history and the names of an Icechunk repository.

use clap::Args;
use neurochunk_store::icechunk::{Repo, Version};
use neurochunk_store::StoreLocation;

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
