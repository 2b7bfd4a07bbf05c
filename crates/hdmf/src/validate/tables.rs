//! The rules hdmf-common states in prose and pynwb enforces when it builds its objects, not
//! in its validator: a DynamicTable's `colnames` name its columns and every column has as many
//! rows as its `id`; a VectorIndex never decreases and stays within its target; a
//! DynamicTableRegion's indices are rows of its table; ElementIdentifiers are unique.
//!
//! Row counts come from array metadata; index, region and id values are streamed slab by slab
//! (whole chunks along the first axis, about a million elements at a time), so memory stays
//! bounded by the slab (plus, for ids, the set of ids seen).

use std::collections::HashMap;

use neurochunk_array::{ArrayBytes, AxisSelection, DataType, Selection};
use serde_json::Value;

use super::check::Checker;
use super::report::Rule;
use crate::file::NwbFile;
use crate::index::{child, NodeKind};
use crate::reference::attribute_reference;

/// Elements per slab of a streamed read.
const SLAB_ELEMENTS: u64 = 1 << 20;

/// The first-axis length of the dataset at `path` (links followed), from its metadata.
fn length_of(file: &NwbFile, path: &str) -> Option<u64> {
    let target = file.resolve(path).ok()?;
    let owner = file.file_of(&target);
    let node = owner.node(&target.path).ok()??;
    let shape = node.array_doc.as_ref()?.get("shape")?.as_array()?.clone();
    match shape.first() {
        Some(n) => n.as_u64(),
        // A 0-d dataset holds one element.
        None => Some(1),
    }
}

/// Read the integers of the dataset at `path` (no links followed) in slabs, calling `each`
/// with the flat index and value until it returns `false`. `Ok(false)`: the dataset does not
/// hold integers (its dtype is reported by the schema checks), nothing was read.
pub(crate) fn stream_integers(
    file: &NwbFile,
    path: &str,
    mut each: impl FnMut(u64, i128) -> bool,
) -> Result<bool, String> {
    let array = file.open_array(path).map_err(|e| e.to_string())?;
    let meta = array.metadata();
    let data_type = meta.data_type.clone();
    let width = match data_type {
        DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 => 4,
        DataType::Int64 | DataType::UInt64 => 8,
        _ => return Ok(false),
    };
    let decode = |b: &[u8]| -> i128 {
        let mut buf = [0u8; 8];
        buf[..width].copy_from_slice(b);
        let raw = u64::from_le_bytes(buf);
        match data_type {
            DataType::Int8 => i128::from(raw as u8 as i8),
            DataType::Int16 => i128::from(raw as u16 as i16),
            DataType::Int32 => i128::from(raw as u32 as i32),
            DataType::Int64 => i128::from(raw as i64),
            _ => i128::from(raw),
        }
    };
    let shape = meta.shape.clone();
    let slabs: Vec<Selection> = if shape.is_empty() {
        vec![Selection::all()]
    } else {
        let row: u64 = shape[1..].iter().product::<u64>().max(1);
        let chunk_rows = meta.chunk_shape.first().copied().unwrap_or(1).max(1) as u64;
        let rows = (SLAB_ELEMENTS / row / chunk_rows).max(1) * chunk_rows;
        (0..shape[0])
            .step_by(rows as usize)
            .map(|start| {
                let mut axes = vec![AxisSelection::Slice {
                    start: Some(start as i64),
                    stop: Some((start + rows).min(shape[0]) as i64),
                    step: None,
                }];
                axes.extend(std::iter::repeat_n(AxisSelection::ALL, shape.len() - 1));
                Selection(axes)
            })
            .collect()
    };
    let mut index = 0u64;
    for selection in slabs {
        let (_, data) = array.read(&selection).map_err(|e| e.to_string())?;
        let ArrayBytes::Fixed(bytes) = data else {
            return Err("expected fixed-size integers".into());
        };
        for element in bytes.chunks_exact(width) {
            if !each(index, decode(element)) {
                return Ok(true);
            }
            index += 1;
        }
    }
    Ok(true)
}

/// The path a reference attribute of `attrs` leads to (links followed), if it resolves.
fn reference_target(
    file: &NwbFile,
    attrs: &serde_json::Map<String, Value>,
    name: &str,
) -> Option<Result<String, String>> {
    let reference = match attribute_reference(attrs.get(name)?)? {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    Some(
        file.dereference(&reference)
            .map(|t| t.path)
            .map_err(|e| e.to_string()),
    )
}

impl Checker<'_> {
    /// Apply the table rules to every typed object of the relevant types.
    pub fn check_tables(&mut self) {
        let typed = self.typed.clone();
        for (path, kind, def) in &typed {
            let label = def.name.as_str();
            match kind {
                NodeKind::Group if def.is_a("DynamicTable") => self.check_table(path, label),
                NodeKind::Dataset if def.is_a("VectorIndex") => self.check_index(path, label),
                NodeKind::Dataset if def.is_a("DynamicTableRegion") => {
                    self.check_region(path, label)
                }
                NodeKind::Dataset if def.is_a("ElementIdentifiers") => self.check_ids(path, label),
                _ => {}
            }
        }
    }

    fn check_table(&mut self, path: &str, label: &str) {
        let file = self.file;
        let Some(node) = file.node(path).ok().flatten() else {
            return;
        };
        let colnames: Vec<String> = match node.attributes.get("colnames") {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            // A missing or mistyped colnames is reported by the schema checks.
            _ => return,
        };
        // Index datasets of this table by the column they index.
        let mut index_of: HashMap<String, String> = HashMap::new();
        for (p, kind, def) in &self.typed {
            if *kind != NodeKind::Dataset || !def.is_a("VectorIndex") {
                continue;
            }
            if crate::index::split_parent(p).0 != path {
                continue;
            }
            if let Some(Ok(target)) = file
                .node(p)
                .ok()
                .flatten()
                .and_then(|n| reference_target(file, &n.attributes, "target"))
            {
                // Only an index of a column of this table counts.
                if crate::index::split_parent(&target).0 == path {
                    index_of.insert(target, p.clone());
                }
            }
        }
        // An index whose target is missing or wrong (reported by the schema checks) is still
        // found by hdmf's naming convention, `<column>_index`.
        for (p, kind, def) in &self.typed {
            if *kind == NodeKind::Dataset && def.is_a("VectorIndex") {
                let (parent, name) = crate::index::split_parent(p);
                if parent == path {
                    if let Some(column) = name.strip_suffix("_index") {
                        let column = child(path, column);
                        if !index_of.values().any(|i| i == p) {
                            index_of.entry(column).or_insert_with(|| p.clone());
                        }
                    }
                }
            }
        }
        let rows = length_of(file, &child(path, "id"));
        for name in colnames {
            let column = child(path, &name);
            let exists = file
                .resolve(&column)
                .is_ok_and(|t| t.kind == NodeKind::Dataset);
            if !exists {
                self.find(
                    Rule::TableColnames,
                    path,
                    label,
                    Some("colnames"),
                    format!("names column '{name}', which the table does not have"),
                );
                continue;
            }
            // The outermost index of a ragged column gives its rows.
            let mut outer = column.clone();
            let mut hops = 0;
            while let Some(index) = index_of.get(&outer) {
                outer = index.clone();
                hops += 1;
                if hops > 8 {
                    break;
                }
            }
            let (Some(rows), Some(found)) = (rows, length_of(file, &outer)) else {
                continue;
            };
            if found != rows {
                let through = if outer != column {
                    format!(" (through its index '{outer}')")
                } else {
                    String::new()
                };
                self.find(
                    Rule::TableColumnLength,
                    &column,
                    label,
                    None,
                    format!(
                        "column '{name}' has {found} row(s){through}, but the table has {rows} (the length of its id)"
                    ),
                );
            }
        }
    }

    fn check_index(&mut self, path: &str, label: &str) {
        let file = self.file;
        let Some(node) = file.node(path).ok().flatten() else {
            return;
        };
        let (target, target_len) = match reference_target(file, &node.attributes, "target") {
            Some(Ok(t)) => {
                let len = length_of(file, &t);
                (Some(t), len)
            }
            // Missing targets are reported by the schema checks, dangling ones there too.
            _ => (None, None),
        };
        let mut previous: Option<i128> = None;
        let mut problem: Option<String> = None;
        let read = self.stream_or_report(path, label, |i, v| {
            if v < 0 {
                problem = Some(format!("value {v} at row {i} is negative"));
                return false;
            }
            if let Some(p) = previous {
                if v < p {
                    problem = Some(format!(
                        "is not monotonic: value {v} at row {i} is smaller than the {p} before it"
                    ));
                    return false;
                }
            }
            previous = Some(v);
            true
        });
        if !read {
            return;
        }
        if let Some(message) = problem {
            self.find(Rule::VectorIndex, path, label, None, message);
            return;
        }
        if let (Some(last), Some(len), Some(target)) = (previous, target_len, target) {
            if last > i128::from(len) {
                self.find(
                    Rule::VectorIndex,
                    path,
                    label,
                    None,
                    format!(
                        "its last value {last} points past the end of its target '{target}' ({len} elements)"
                    ),
                );
            }
        }
    }

    fn check_region(&mut self, path: &str, label: &str) {
        let file = self.file;
        let Some(node) = file.node(path).ok().flatten() else {
            return;
        };
        let Some(Ok(table)) = reference_target(file, &node.attributes, "table") else {
            return;
        };
        let Some(rows) = length_of(file, &child(&table, "id")) else {
            return;
        };
        let mut problem = None;
        let read = self.stream_or_report(path, label, |i, v| {
            if v < 0 || v >= i128::from(rows) {
                problem = Some(format!(
                    "value {v} at element {i} is not a row of '{table}', which has {rows} row(s)"
                ));
                return false;
            }
            true
        });
        if let (true, Some(message)) = (read, problem) {
            self.find(Rule::TableRegion, path, label, None, message);
        }
    }

    fn check_ids(&mut self, path: &str, label: &str) {
        let mut seen: HashMap<i128, u64> = HashMap::new();
        let mut first: Option<(i128, u64, u64)> = None;
        let mut duplicates = 0u64;
        let read = self.stream_or_report(path, label, |i, v| {
            if let Some(&at) = seen.get(&v) {
                duplicates += 1;
                first.get_or_insert((v, at, i));
            } else {
                seen.insert(v, i);
            }
            true
        });
        if let (true, Some((v, a, b))) = (read, first) {
            self.find(
                Rule::DuplicateIds,
                path,
                label,
                None,
                format!(
                    "ids are not unique: {v} appears at elements {a} and {b} ({duplicates} repeated id(s) in all)"
                ),
            );
        }
    }

    /// Stream the integers of the dataset at `path` into `each` (which returns false to
    /// stop); a dataset whose values cannot be read is reported (`unreadable`): false.
    fn stream_or_report(
        &mut self,
        path: &str,
        label: &str,
        each: impl FnMut(u64, i128) -> bool,
    ) -> bool {
        match stream_integers(self.file, path, each) {
            Ok(_) => true,
            Err(e) => {
                self.find(
                    Rule::Unreadable,
                    path,
                    label,
                    None,
                    format!("its values cannot be read: {e}"),
                );
                false
            }
        }
    }
}
