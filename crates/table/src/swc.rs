//! SWC import and export through the `net.clbarnes.swc` extension.
//!
//! Import: every SWC file becomes one fragment of a skeletons table. The SWC
//! sample number becomes `sample_id`, the structure type
//! `net.clbarnes.swc:type_id`, a negative radius becomes null (as the extension
//! requires), the header comment block goes to `net.clbarnes.swc:header:{fragment}`
//! and type names (the NeuroMorpho defaults plus any SWC+ `<customTypes>`) to
//! `net.clbarnes.swc:type:{code}`. When several files reuse the same sample
//! numbers, later files are shifted by an offset recorded in
//! `frag:{fragment}:swc_id_offset`, so export restores the original numbers. A file holding
//! several trees (several roots, nothing else wrong) becomes one fragment per tree: the first
//! keeps the file's fragment id, the others take ids after every file's, each named after the
//! file and its root in `frag:{fragment}:name`; every sample keeps its number.
//! Export writes the fields SWC has back out, a null radius as `-1`.

use crate::error::{Result, TableError};
use crate::io::{RowFilter, TableSource, TableTarget, WriteOptions, DEFAULT_BATCH_SIZE};
use crate::schema::{SPEC_VERSION, SWC_EXT, SWC_EXT_VERSION};
use crate::tree::{build_tree, IdIndex, TreeInput};
use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use neurochunk_store::{join_key, Bytes, Store};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One SWC sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct SwcSample {
    /// Sample number.
    pub id: u64,
    /// Structure type code.
    pub type_id: i64,
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Z.
    pub z: f64,
    /// Radius (may be negative = unknown).
    pub radius: f64,
    /// Parent sample number, `None` for -1.
    pub parent: Option<u64>,
}

/// A parsed SWC file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SwcFile {
    /// Header text: comment lines before the first sample, `#` and the shared
    /// indentation stripped, blank lines dropped.
    pub header: String,
    /// Samples in file order.
    pub samples: Vec<SwcSample>,
    /// SWC+ custom types `(code, name)` found in the header.
    pub custom_types: Vec<(i64, String)>,
}

/// The NeuroMorpho structure-type names written for every import.
pub const DEFAULT_TYPES: [(i64, &str); 5] = [
    (0, "undefined"),
    (1, "soma"),
    (2, "axon"),
    (3, "basal dendrite"),
    (4, "apical dendrite"),
];

fn parse_int(tok: &str) -> Option<i64> {
    if let Ok(v) = tok.parse::<i64>() {
        return Some(v);
    }
    // Some writers emit integral floats ("3.0").
    let f: f64 = tok.parse().ok()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

fn strip_header(lines: &[&str]) -> String {
    let stripped: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_start().trim_start_matches('#').trim_end())
        .filter(|l| !l.trim().is_empty())
        .collect();
    // Shared indentation, counted in ASCII blanks so slicing stays on char boundaries.
    let indent = stripped
        .iter()
        .map(|l| l.bytes().take_while(|b| *b == b' ' || *b == b'\t').count())
        .min()
        .unwrap_or(0);
    stripped
        .iter()
        .map(|l| &l[indent.min(l.len())..])
        .collect::<Vec<_>>()
        .join("\n")
}

fn xml_attr(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(pos) = rest.find(name) {
        let before_ok = pos == 0
            || rest[..pos]
                .chars()
                .next_back()
                .is_some_and(char::is_whitespace);
        let after = rest[pos + name.len()..].trim_start();
        if before_ok {
            if let Some(after) = after.strip_prefix('=') {
                let after = after.trim_start();
                let q = after.chars().next()?;
                if q == '"' || q == '\'' {
                    let body = &after[1..];
                    let end = body.find(q)?;
                    return Some(body[..end].to_string());
                }
            }
        }
        rest = &rest[pos + name.len()..];
    }
    None
}

/// SWC+ custom types from an XML header (`<customTypes><tree id=".." name=".."/>`).
fn swc_plus_types(header: &str) -> Vec<(i64, String)> {
    let Some(start) = header.find("<customTypes") else {
        return vec![];
    };
    let body = &header[start..];
    let end = body.find("</customTypes>").unwrap_or(body.len());
    let body = &body[..end];
    let mut out = Vec::new();
    for chunk in body.split('<').skip(2) {
        let tag = chunk.split('>').next().unwrap_or("");
        if tag.starts_with('/') {
            continue;
        }
        if let (Some(id), Some(name)) = (xml_attr(tag, "id"), xml_attr(tag, "name")) {
            if let Ok(id) = id.trim().parse::<i64>() {
                out.push((id, name));
            }
        }
    }
    out
}

/// Parses SWC text; errors name the file and line.
pub fn parse_swc(text: &str, path: &Path) -> Result<SwcFile> {
    let mut header_lines: Vec<&str> = Vec::new();
    let mut in_header = true;
    let mut samples = Vec::new();
    for (no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            if in_header {
                header_lines.push(raw);
            }
            continue;
        }
        in_header = false;
        let data = line.split('#').next().unwrap_or("");
        let toks: Vec<&str> = data.split_whitespace().collect();
        let bad =
            |what: &str| TableError::format(path, format!("line {}: {what}: {line:?}", no + 1));
        if toks.len() != 7 {
            return Err(bad(&format!(
                "expected 7 columns (n T x y z R P), found {}",
                toks.len()
            )));
        }
        let id = parse_int(toks[0])
            .filter(|v| *v >= 0)
            .ok_or_else(|| bad("sample number is not a non-negative integer"))?
            as u64;
        let type_id = parse_int(toks[1]).ok_or_else(|| bad("type is not an integer"))?;
        let num = |i: usize, what: &str| -> Result<f64> {
            toks[i]
                .parse::<f64>()
                .map_err(|_| bad(&format!("{what} is not a number")))
        };
        let (x, y, z, radius) = (num(2, "x")?, num(3, "y")?, num(4, "z")?, num(5, "radius")?);
        let p = parse_int(toks[6]).ok_or_else(|| bad("parent is not an integer"))?;
        let parent = match p {
            -1 => None,
            p if p >= 0 => Some(p as u64),
            _ => return Err(bad("parent must be -1 (root) or a sample number")),
        };
        samples.push(SwcSample {
            id,
            type_id,
            x,
            y,
            z,
            radius,
            parent,
        });
    }
    let header = strip_header(&header_lines);
    let custom_types = swc_plus_types(&header);
    Ok(SwcFile {
        header,
        samples,
        custom_types,
    })
}

impl SwcFile {
    /// What keeps the file from being one tree, as neurarrow requires of a fragment:
    /// duplicate sample numbers, parents that name no sample or the sample itself, no root or
    /// several roots, and cycles. Empty when the file is one tree.
    pub fn tree_problems(&self) -> Vec<String> {
        const SHOWN: usize = 3;
        let ids: Vec<u64> = self.samples.iter().map(|s| s.id).collect();
        let parents: Vec<u64> = self.samples.iter().map(|s| s.parent.unwrap_or(0)).collect();
        let parent_valid: Vec<bool> = self.samples.iter().map(|s| s.parent.is_some()).collect();
        let fragments = vec![0u32; ids.len()];
        let (index, duplicates) = IdIndex::build(&ids);
        let mut problems = Vec::new();
        let examples = |items: Vec<String>, total: usize| {
            let more = if total > items.len() { ", …" } else { "" };
            format!("{}{more}", items.join(", "))
        };
        if !duplicates.is_empty() {
            problems.push(format!(
                "duplicate sample numbers ({})",
                examples(
                    duplicates
                        .iter()
                        .take(SHOWN)
                        .map(|d| d.id.to_string())
                        .collect(),
                    duplicates.len()
                )
            ));
        }
        let (_, found) = build_tree(
            &TreeInput {
                ids: &ids,
                parents: &parents,
                parent_valid: &parent_valid,
                fragments: &fragments,
                fragment_ids: &[0],
            },
            &index,
        );
        let [missing, own, _, _, cycles] = found.counts;
        if missing > 0 {
            problems.push(format!(
                "parents that are not in the file ({})",
                examples(
                    found
                        .missing_parent
                        .iter()
                        .take(SHOWN)
                        .map(|&(row, parent)| format!("sample {} -> {parent}", ids[row as usize]))
                        .collect(),
                    missing
                )
            ));
        }
        if own > 0 {
            problems.push(format!(
                "samples that are their own parent ({})",
                examples(
                    found
                        .self_parent
                        .iter()
                        .take(SHOWN)
                        .map(|&row| ids[row as usize].to_string())
                        .collect(),
                    own
                )
            ));
        }
        if let Some(&(_, roots, _)) = found.root_counts.first() {
            problems.push(match roots {
                0 => "no root (a sample with parent -1)".to_string(),
                n => format!("{n} roots"),
            });
        }
        if cycles > 0 {
            problems.push(format!(
                "{cycles} cycle(s) ({})",
                examples(
                    found
                        .cycles
                        .iter()
                        .take(SHOWN)
                        .map(|(rows, len)| {
                            let members: Vec<String> =
                                rows.iter().map(|&r| ids[r as usize].to_string()).collect();
                            let more = if *len > rows.len() { " -> …" } else { "" };
                            format!("through samples {}{more}", members.join(" -> "))
                        })
                        .collect(),
                    cycles
                )
            ));
        }
        problems
    }

    /// The trees of a file that is a forest: several roots, every other sample's parent in
    /// the file and no cycle or repeated sample number (what MorphIO's `multiple_soma.swc` or
    /// a neuron with a detached fragment look like). For each sample, the position (in file
    /// order of the roots) of the tree it belongs to, and the roots' sample numbers; `None`
    /// when the file is one tree or not a forest.
    pub fn forest(&self) -> Option<(Vec<usize>, Vec<u64>)> {
        let mut position: HashMap<u64, usize> = HashMap::with_capacity(self.samples.len());
        for (i, s) in self.samples.iter().enumerate() {
            if position.insert(s.id, i).is_some() {
                return None;
            }
        }
        let mut roots = Vec::new();
        let mut parent_row = Vec::with_capacity(self.samples.len());
        for (i, s) in self.samples.iter().enumerate() {
            match s.parent {
                None => {
                    parent_row.push(None);
                    roots.push(i);
                }
                Some(p) => match position.get(&p) {
                    Some(&row) if row != i => parent_row.push(Some(row)),
                    _ => return None,
                },
            }
        }
        if roots.len() < 2 {
            return None;
        }
        // Each sample's tree: follow parents up to a known tree, then mark the path.
        const UNSET: usize = usize::MAX;
        let mut tree = vec![UNSET; self.samples.len()];
        for (t, &r) in roots.iter().enumerate() {
            tree[r] = t;
        }
        let mut path = Vec::new();
        for start in 0..self.samples.len() {
            let mut row = start;
            path.clear();
            while tree[row] == UNSET {
                if path.len() > self.samples.len() {
                    return None; // a cycle
                }
                path.push(row);
                row = parent_row[row]?;
            }
            let t = tree[row];
            for &r in &path {
                tree[r] = t;
            }
        }
        let root_ids = roots.iter().map(|&r| self.samples[r].id).collect();
        Some((tree, root_ids))
    }
}

/// Options for SWC import.
#[derive(Debug, Clone)]
pub struct SwcImportOptions {
    /// Context identifier (required metadata).
    pub context: String,
    /// Unit (SWC is conventionally in micrometers).
    pub unit: String,
    /// Optional space identifier.
    pub space: Option<String>,
    /// Fragment id of the first file (else from the file stem, else its index).
    pub fragment_id: Option<u64>,
    /// Write files that are neither one tree nor a forest (see [`SwcFile::tree_problems`];
    /// a forest is split into one fragment per tree) instead of refusing them; each one's
    /// problems become a note of the summary.
    pub allow_invalid: bool,
}

impl Default for SwcImportOptions {
    fn default() -> Self {
        SwcImportOptions {
            context: String::new(),
            unit: "micrometer".into(),
            space: None,
            fragment_id: None,
            allow_invalid: false,
        }
    }
}

/// Result of an import.
#[derive(Debug, Clone)]
pub struct SwcImportSummary {
    /// Samples written.
    pub rows: u64,
    /// `(file, fragment id)` per fragment written: one per input, or one per tree of an
    /// input that is a forest ([`SwcFile::forest`]).
    pub fragments: Vec<(PathBuf, u64)>,
    /// Notes (multiple roots, shifted ids, ...).
    pub notes: Vec<String>,
}

/// The schema of an imported SWC table.
pub fn swc_schema(metadata: BTreeMap<String, String>) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("sample_id", DataType::UInt64, false),
            Field::new("fragment_id", DataType::UInt64, false),
            Field::new("x", DataType::Float64, false),
            Field::new("y", DataType::Float64, false),
            Field::new("z", DataType::Float64, false),
            Field::new("parent_id", DataType::UInt64, true),
            Field::new("radius", DataType::Float64, true),
            Field::new("net.clbarnes.swc:type_id", DataType::Int64, false),
        ],
        metadata,
    ))
}

/// Converts parsed SWC files into one skeletons record batch.
pub fn swc_to_batch(
    files: &[(PathBuf, SwcFile)],
    opts: &SwcImportOptions,
) -> Result<(RecordBatch, SwcImportSummary)> {
    if opts.context.is_empty() {
        return Err(TableError::Usage(
            "a context identifier is required (--context)".into(),
        ));
    }
    let mut md: BTreeMap<String, String> = BTreeMap::new();
    md.insert("version".into(), SPEC_VERSION.into());
    md.insert("context".into(), opts.context.clone());
    md.insert("unit".into(), opts.unit.clone());
    if let Some(s) = &opts.space {
        md.insert("space".into(), s.clone());
    }
    md.insert(format!("{SWC_EXT}:version"), SWC_EXT_VERSION.into());
    for (code, name) in DEFAULT_TYPES {
        md.insert(format!("{SWC_EXT}:type:{code}"), name.into());
    }
    let mut summary = SwcImportSummary {
        rows: 0,
        fragments: vec![],
        notes: vec![],
    };
    let total: usize = files.iter().map(|(_, f)| f.samples.len()).sum();
    let mut sid = Vec::with_capacity(total);
    let mut fid = Vec::with_capacity(total);
    let (mut xs, mut ys, mut zs) = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    );
    let mut par: Vec<Option<u64>> = Vec::with_capacity(total);
    let mut rad: Vec<Option<f64>> = Vec::with_capacity(total);
    let mut ty = Vec::with_capacity(total);
    let mut used_frags: HashMap<u64, PathBuf> = HashMap::new();
    let mut max_id: Option<u64> = None;
    let base_frags: Vec<u64> = files
        .iter()
        .enumerate()
        .map(|(k, (path, _))| match (k, opts.fragment_id) {
            (0, Some(v)) => v,
            (_, Some(v)) => v + k as u64,
            _ => path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(k as u64),
        })
        .collect();
    // The fragments of the second and later trees of files that are forests: numbered after
    // every file's own fragment, so they never take one.
    let mut next_extra = base_frags.iter().max().map_or(0, |m| m.saturating_add(1));
    for (k, (path, f)) in files.iter().enumerate() {
        let frag = base_frags[k];
        if let Some(other) = used_frags.insert(frag, path.clone()) {
            return Err(TableError::Usage(format!(
                "{} and {} would both become fragment {frag}",
                other.display(),
                path.display()
            )));
        }
        let min_here = f.samples.iter().map(|s| s.id).min();
        let offset = match (max_id, min_here) {
            (Some(m), Some(lo)) if lo <= m => m + 1,
            _ => 0,
        };
        if offset > 0 {
            md.insert(format!("frag:{frag}:swc_id_offset"), offset.to_string());
            summary.notes.push(format!(
                "{}: sample numbers shifted by {offset} to stay unique in the context",
                path.display()
            ));
        }
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            md.insert(format!("frag:{frag}:name"), stem.to_string());
        }
        if !f.header.is_empty() {
            md.insert(format!("{SWC_EXT}:header:{frag}"), f.header.clone());
        }
        for (code, name) in &f.custom_types {
            md.insert(format!("{SWC_EXT}:type:{code}"), name.clone());
        }
        // A forest becomes one fragment per tree, every sample kept with its number.
        let forest = f.forest();
        let mut tree_frags = vec![frag];
        if let Some((_, roots)) = &forest {
            for root in &roots[1..] {
                let extra = next_extra;
                next_extra = next_extra
                    .checked_add(1)
                    .ok_or_else(|| TableError::data(path, "fragment ids overflow"))?;
                if let Some(other) = used_frags.insert(extra, path.clone()) {
                    return Err(TableError::Usage(format!(
                        "{} and {} would both become fragment {extra}",
                        other.display(),
                        path.display()
                    )));
                }
                tree_frags.push(extra);
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("swc");
                md.insert(
                    format!("frag:{extra}:name"),
                    format!("{stem} (the tree of sample {root})"),
                );
                if offset > 0 {
                    md.insert(format!("frag:{extra}:swc_id_offset"), offset.to_string());
                }
                if !f.header.is_empty() {
                    md.insert(format!("{SWC_EXT}:header:{extra}"), f.header.clone());
                }
            }
            let listed: Vec<String> = roots
                .iter()
                .zip(&tree_frags)
                .map(|(root, fr)| format!("sample {root} -> fragment {fr}"))
                .collect();
            summary.notes.push(format!(
                "{}: {} trees, one fragment each ({})",
                path.display(),
                roots.len(),
                listed.join(", ")
            ));
        } else {
            let problems = f.tree_problems();
            if !problems.is_empty() {
                let what = format!("not one tree: {}", problems.join("; "));
                if !opts.allow_invalid {
                    return Err(TableError::data(
                        path,
                        format!("{what} (neurarrow requires one tree per fragment; --allow-invalid writes it anyway)"),
                    ));
                }
                summary.notes.push(format!("{}: {what}", path.display()));
            }
        }
        for (row, s) in f.samples.iter().enumerate() {
            let id = s
                .id
                .checked_add(offset)
                .ok_or_else(|| TableError::data(path, "sample number overflows after shifting"))?;
            max_id = Some(max_id.map_or(id, |m| m.max(id)));
            sid.push(id);
            fid.push(match &forest {
                Some((trees, _)) => tree_frags[trees[row]],
                None => frag,
            });
            xs.push(s.x);
            ys.push(s.y);
            zs.push(s.z);
            par.push(s.parent.map(|p| p + offset));
            rad.push((s.radius >= 0.0).then_some(s.radius));
            ty.push(s.type_id);
        }
        for fr in &tree_frags {
            summary.fragments.push((path.clone(), *fr));
        }
    }
    summary.rows = sid.len() as u64;
    let schema = swc_schema(md);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(sid)),
        Arc::new(UInt64Array::from(fid)),
        Arc::new(Float64Array::from(xs)),
        Arc::new(Float64Array::from(ys)),
        Arc::new(Float64Array::from(zs)),
        Arc::new(UInt64Array::from(par)),
        Arc::new(Float64Array::from(rad)),
        Arc::new(Int64Array::from(ty)),
    ];
    let batch = RecordBatch::try_new(schema, cols)
        .map_err(|e| TableError::Usage(format!("building the SWC table: {e}")))?;
    Ok((batch, summary))
}

/// Collects `.swc` files from the inputs (directories are scanned, sorted).
pub fn collect_swc_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| TableError::io(p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|q| q.extension().is_some_and(|e| e.eq_ignore_ascii_case("swc")))
                .collect();
            v.sort();
            if v.is_empty() {
                return Err(TableError::format(p, "directory holds no .swc files"));
            }
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Parses the bytes of an SWC file named `path` (its stem gives the default fragment id).
pub fn parse_swc_bytes(bytes: Vec<u8>, path: &Path) -> Result<SwcFile> {
    let text = String::from_utf8(bytes)
        .map_err(|_| TableError::format(path, "SWC file is not valid UTF-8 text"))?;
    parse_swc(&text, path)
}

/// Reads and parses SWC files (or directories of them, see [`collect_swc_inputs`]).
pub fn read_swc_files(inputs: &[PathBuf]) -> Result<Vec<(PathBuf, SwcFile)>> {
    let paths = collect_swc_inputs(inputs)?;
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let bytes = std::fs::read(&p).map_err(|e| TableError::io(&p, e))?;
        let f = parse_swc_bytes(bytes, &p)?;
        files.push((p, f));
    }
    Ok(files)
}

/// Imports SWC files (or directories of them) into a skeletons table at `output`.
pub fn import_swc(
    inputs: &[PathBuf],
    output: &Path,
    opts: &SwcImportOptions,
    write: &WriteOptions,
) -> Result<SwcImportSummary> {
    let files = read_swc_files(inputs)?;
    import_swc_files(
        &files,
        &TableTarget::Path(output.to_path_buf()),
        opts,
        write,
    )
}

/// Imports parsed SWC files (each named by a path or URL) into a skeletons table at
/// `target`.
pub fn import_swc_files(
    files: &[(PathBuf, SwcFile)],
    target: &TableTarget,
    opts: &SwcImportOptions,
    write: &WriteOptions,
) -> Result<SwcImportSummary> {
    let (batch, summary) = swc_to_batch(files, opts)?;
    write_skeletons_batch(&batch, target, write)?;
    Ok(summary)
}

/// Write one skeletons batch to `target` (a directory target names its file `*.skeletons.*`
/// unless `write` says otherwise).
pub(crate) fn write_skeletons_batch(
    batch: &RecordBatch,
    target: &TableTarget,
    write: &WriteOptions,
) -> Result<()> {
    let mut w = write.clone();
    if w.file_infix.is_none() {
        w.file_infix = Some("skeletons".into());
    }
    let mut writer = target.create(batch.schema(), &w)?;
    writer.write(batch)?;
    writer.finish()?;
    Ok(())
}

fn fmt_f64(out: &mut String, v: f64) {
    // Shortest representation that round-trips.
    let _ = write!(out, "{v}");
}

/// Renders one fragment as SWC text.
pub fn render_swc(header: Option<&str>, rows: &[SwcSample]) -> String {
    let mut out = String::with_capacity(rows.len() * 48);
    if let Some(h) = header {
        for l in h.lines() {
            if l.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str("# ");
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    for s in rows {
        let _ = write!(out, "{} {} ", s.id, s.type_id);
        fmt_f64(&mut out, s.x);
        out.push(' ');
        fmt_f64(&mut out, s.y);
        out.push(' ');
        fmt_f64(&mut out, s.z);
        out.push(' ');
        fmt_f64(&mut out, s.radius);
        match s.parent {
            Some(p) => {
                let _ = writeln!(out, " {p}");
            }
            None => out.push_str(" -1\n"),
        }
    }
    out
}

/// Exports a skeletons table to SWC. With one fragment (or `fragment` given) and
/// an output ending in `.swc`, writes that file; otherwise `output` is a
/// directory receiving `{fragment_id}.swc` per fragment. Returns the files written.
pub fn export_swc(input: &Path, output: &Path, fragment: Option<u64>) -> Result<Vec<PathBuf>> {
    export_swc_from(&TableSource::open(input)?, output, fragment)
}

/// [`export_swc`] of an opened table (a file, a Hive directory, or a table in a store).
pub fn export_swc_from(
    src: &TableSource,
    output: &Path,
    fragment: Option<u64>,
) -> Result<Vec<PathBuf>> {
    let texts = render_swc_fragments(src, fragment)?;
    let mut written = Vec::new();
    if output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("swc"))
    {
        let text = single_fragment(src, &texts)?;
        write_atomic(output, text.as_bytes())?;
        written.push(output.to_path_buf());
    } else {
        std::fs::create_dir_all(output).map_err(|e| TableError::io(output, e))?;
        for (fr, text) in &texts {
            let p = output.join(format!("{fr}.swc"));
            write_atomic(&p, text.as_bytes())?;
            written.push(p);
        }
    }
    Ok(written)
}

/// [`export_swc`] into a store: one object at `key` when it ends in `.swc` (one fragment, or
/// `fragment` given), otherwise `{key}/{fragment_id}.swc` per fragment (each object written
/// whole). `name` names the output in errors. Returns the keys written.
pub fn export_swc_to_store(
    src: &TableSource,
    store: &dyn Store,
    key: &str,
    name: &str,
    fragment: Option<u64>,
) -> Result<Vec<String>> {
    let texts = render_swc_fragments(src, fragment)?;
    let key = key.trim_matches('/');
    let put = |k: &str, text: &str| {
        store
            .set(k, Bytes::copy_from_slice(text.as_bytes()))
            .map_err(|e| TableError::store(name, e))
    };
    if is_swc_name(key) {
        put(key, single_fragment(src, &texts)?)?;
        return Ok(vec![key.to_string()]);
    }
    let mut written = Vec::with_capacity(texts.len());
    for (fr, text) in &texts {
        let k = join_key(key, &format!("{fr}.swc"));
        put(&k, text)?;
        written.push(k);
    }
    Ok(written)
}

fn is_swc_name(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && ext.eq_ignore_ascii_case("swc"))
}

/// The one fragment's text of a single-file export.
fn single_fragment<'a>(src: &TableSource, texts: &'a [(u64, String)]) -> Result<&'a str> {
    match texts {
        [(_, text)] => Ok(text),
        [] => Err(TableError::data(src.path(), "the table has no rows")),
        more => Err(TableError::Usage(format!(
            "{} holds {} fragments: give a directory as output, or --fragment ID",
            src.name(),
            more.len()
        ))),
    }
}

/// The SWC text of each fragment of a skeletons table (only `fragment`, when given), in
/// fragment order.
pub fn render_swc_fragments(
    src: &TableSource,
    fragment: Option<u64>,
) -> Result<Vec<(u64, String)>> {
    let input = src.path();
    let schema = src.schema();
    let md = schema.metadata();
    let has = |n: &str| schema.field_with_name(n).is_ok();
    for need in ["sample_id", "fragment_id", "parent_id", "x", "y", "z"] {
        if !has(need) {
            return Err(TableError::data(
                input,
                format!("not a skeletons table: no {need:?} column"),
            ));
        }
    }
    let type_col = format!("{SWC_EXT}:type_id");
    let mut cols: Vec<String> = ["sample_id", "fragment_id", "parent_id", "x", "y", "z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if has("radius") {
        cols.push("radius".into());
    }
    if has(&type_col) {
        cols.push(type_col.clone());
    }
    let mut by_frag: BTreeMap<u64, Vec<SwcSample>> = BTreeMap::new();
    // One fragment: row groups and Hive partitions of other fragments are not read.
    let filter = fragment.map(|f| RowFilter {
        column: "fragment_id".into(),
        values: vec![f],
    });
    for b in src.batches_filtered(&cols, filter.as_ref(), DEFAULT_BATCH_SIZE)? {
        let b = b?;
        let ids = crate::derive::u64_column(input, &b, "sample_id")?;
        let frags = crate::derive::u64_column(input, &b, "fragment_id")?;
        let parents = crate::derive::u64_column(input, &b, "parent_id")?;
        let f64col = |n: &str| -> Result<Option<Float64Array>> {
            match b.column_by_name(n) {
                None => Ok(None),
                Some(c) => c
                    .as_primitive_opt::<Float64Type>()
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| TableError::data(input, format!("column {n:?} is not float64"))),
            }
        };
        let (x, y, z) = (
            f64col("x")?.unwrap_or_else(|| Float64Array::from(Vec::<f64>::new())),
            f64col("y")?.unwrap_or_else(|| Float64Array::from(Vec::<f64>::new())),
            f64col("z")?.unwrap_or_else(|| Float64Array::from(Vec::<f64>::new())),
        );
        let radius = f64col("radius")?;
        let types: Option<Int64Array> =
            match b.column_by_name(&type_col) {
                None => None,
                Some(c) => Some(c.as_primitive_opt::<Int64Type>().cloned().ok_or_else(|| {
                    TableError::data(input, format!("{type_col:?} is not int64"))
                })?),
            };
        for r in 0..b.num_rows() {
            let fr = frags.value(r);
            if fragment.is_some_and(|want| want != fr) {
                continue;
            }
            let offset = md
                .get(&format!("frag:{fr}:swc_id_offset"))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            let rad = radius
                .as_ref()
                .and_then(|a| a.is_valid(r).then(|| a.value(r)))
                .unwrap_or(-1.0);
            by_frag.entry(fr).or_default().push(SwcSample {
                id: ids.value(r).wrapping_sub(offset),
                type_id: types
                    .as_ref()
                    .and_then(|t| t.is_valid(r).then(|| t.value(r)))
                    .unwrap_or(0),
                x: x.value(r),
                y: y.value(r),
                z: z.value(r),
                radius: rad,
                parent: parents
                    .is_valid(r)
                    .then(|| parents.value(r).wrapping_sub(offset)),
            });
        }
    }
    if let Some(f) = fragment {
        if !by_frag.contains_key(&f) {
            return Err(TableError::data(
                input,
                format!("no fragment {f} in the table"),
            ));
        }
    }
    let header_for = |fr: u64| -> Option<String> {
        md.get(&format!("{SWC_EXT}:header:{fr}"))
            .or_else(|| md.get(&format!("{SWC_EXT}:header")))
            .cloned()
    };
    Ok(by_frag
        .iter()
        .map(|(fr, rows)| (*fr, render_swc(header_for(*fr).as_deref(), rows)))
        .collect())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out.swc".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| TableError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| TableError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_swc_plus() {
        let text = "# created by x\n#\n#   indented\n# <swcPlus>\n#  <customTypes>\n#   <marker id=\"16\" name=\"Spine\"/>\n#  </customTypes>\n# </swcPlus>\n1 1 0 0 0 1 -1\n2 16 1.5 0 0 -1 1 # trailing\n";
        let f = parse_swc(text, Path::new("a.swc")).unwrap();
        assert_eq!(
            f.header,
            "created by x\n  indented\n<swcPlus>\n <customTypes>\n  <marker id=\"16\" name=\"Spine\"/>\n </customTypes>\n</swcPlus>"
        );
        assert_eq!(f.custom_types, vec![(16, "Spine".to_string())]);
        assert_eq!(f.samples.len(), 2);
        assert_eq!(f.samples[1].parent, Some(1));
        assert_eq!(f.samples[1].radius, -1.0);
        // Non-ASCII leading whitespace never splits a character.
        let f = parse_swc(
            "#\u{3000}wide\n# narrow\n1 1 0 0 0 1 -1\n",
            Path::new("w.swc"),
        )
        .unwrap();
        assert_eq!(f.header, "\u{3000}wide\n narrow");
    }

    #[test]
    fn bad_lines_are_errors() {
        for t in [
            "1 1 0 0 0 1\n",
            "1 1 0 0 zero 1 -1\n",
            "1 1 0 0 0 1 -2\n",
            "-3 1 0 0 0 1 -1\n",
        ] {
            let e = parse_swc(t, Path::new("bad.swc")).unwrap_err().to_string();
            assert!(e.contains("bad.swc") && e.contains("line 1"), "{e}");
        }
    }
}
