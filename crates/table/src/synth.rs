//! Synthetic neurarrow tables for demos, tests and benchmarks.
//!
//! [`SkeletonSynth`] streams a skeleton table of any size in record batches
//! (memory bounded by the batch): each fragment is a random-looking tree whose
//! parent links only point backwards within the fragment, so it is always valid.

use crate::schema::{Registry, SPEC_VERSION};
use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{Schema, SchemaRef};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A small deterministic hash (splitmix64 finaliser).
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The canonical schema of `name` with the given optional/derived fields and metadata.
pub fn canonical_schema(name: &str, extra: &[&str], metadata: &[(&str, &str)]) -> SchemaRef {
    let registry = Registry::standard();
    let fields = registry
        .effective(name)
        .map(|e| e.arrow_fields(extra))
        .unwrap_or_default();
    let md: BTreeMap<String, String> = metadata
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, md))
}

/// Metadata for a synthetic table.
pub fn base_metadata<'a>(context: &'a str, unit: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut m = vec![("version", SPEC_VERSION), ("context", context)];
    if let Some(u) = unit {
        m.push(("unit", u));
    }
    m
}

/// Streams a valid skeleton table: `rows` samples in `fragments` trees.
pub struct SkeletonSynth {
    rows: u64,
    per_fragment: u64,
    batch: usize,
    next: u64,
    id_base: u64,
    schema: SchemaRef,
}

impl SkeletonSynth {
    /// `rows` samples split evenly over `fragments`, ids starting at `id_base`.
    pub fn new(rows: u64, fragments: u64, batch: usize, id_base: u64, context: &str) -> Self {
        let per_fragment = rows.div_ceil(fragments.max(1)).max(1);
        SkeletonSynth {
            rows,
            per_fragment,
            batch: batch.max(1),
            next: 0,
            id_base,
            schema: canonical_schema(
                "skeletons",
                &["radius"],
                &base_metadata(context, Some("nanometer")),
            ),
        }
    }

    /// The table's schema.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Parent row (global) of `row`, or `None` for a fragment's first row.
    #[inline]
    pub fn parent_of(&self, row: u64) -> Option<u64> {
        let k = row % self.per_fragment;
        if k == 0 {
            return None;
        }
        // Mostly a chain (previous sample), sometimes a branch from up to 16 back.
        let h = mix(row);
        let back = if h % 8 == 0 {
            1 + (h >> 8) % k.min(16)
        } else {
            1
        };
        Some(row - back)
    }
}

impl Iterator for SkeletonSynth {
    type Item = RecordBatch;

    fn next(&mut self) -> Option<RecordBatch> {
        if self.next >= self.rows {
            return None;
        }
        let start = self.next;
        let end = (start + self.batch as u64).min(self.rows);
        self.next = end;
        let n = (end - start) as usize;
        let mut sid = Vec::with_capacity(n);
        let mut frag = Vec::with_capacity(n);
        let mut par: Vec<Option<u64>> = Vec::with_capacity(n);
        let (mut x, mut y, mut z, mut r) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for row in start..end {
            sid.push(self.id_base + row);
            frag.push(row / self.per_fragment);
            par.push(self.parent_of(row).map(|p| self.id_base + p));
            let h = mix(row ^ 0xABCD);
            x.push((h & 0xFFFF) as f64 * 0.5);
            y.push(((h >> 16) & 0xFFFF) as f64 * 0.5);
            z.push(((h >> 32) & 0xFFFF) as f64 * 0.5);
            r.push(1.0 + ((h >> 48) & 0xFF) as f64 / 64.0);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(sid)),
            Arc::new(UInt64Array::from(frag)),
            Arc::new(Float64Array::from(x)),
            Arc::new(Float64Array::from(y)),
            Arc::new(Float64Array::from(z)),
            Arc::new(UInt64Array::from(par)),
            Arc::new(Float64Array::from(r)),
        ];
        RecordBatch::try_new(self.schema.clone(), cols).ok()
    }
}
