//! Triangle meshes as two Arrow tables, the form `neurochunk mesh export` writes and `mesh
//! import` reads:
//!
//! * **vertices**: `segment_id` (uint64), `fragment` (uint32), `x`, `y`, `z` (float32), one
//!   row per vertex;
//! * **faces**: `segment_id` (uint64), `fragment` (uint32), `v0`, `v1`, `v2` (uint32), one row
//!   per triangle, the indices counting the segment's vertices in table order from 0 (the
//!   segment's fragments concatenated).
//!
//! The module knows no file format: the precomputed mesh reader and writer live in the array
//! crate (`neurochunk_array::precomputed::mesh`), the CLI joins the two.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float32Array, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::error::{Result, TableError};

/// One fragment of a segment's mesh, triangle indices local to the fragment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshPart {
    /// The segment id.
    pub segment_id: u64,
    /// The fragment number within the segment.
    pub fragment: u32,
    /// Vertex positions.
    pub vertices: Vec<[f32; 3]>,
    /// Triangles, indices into `vertices`.
    pub triangles: Vec<[u32; 3]>,
}

/// The schema of the vertex table.
pub fn vertices_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("segment_id", DataType::UInt64, false),
        Field::new("fragment", DataType::UInt32, false),
        Field::new("x", DataType::Float32, false),
        Field::new("y", DataType::Float32, false),
        Field::new("z", DataType::Float32, false),
    ]))
}

/// The schema of the face table.
pub fn faces_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("segment_id", DataType::UInt64, false),
        Field::new("fragment", DataType::UInt32, false),
        Field::new("v0", DataType::UInt32, false),
        Field::new("v1", DataType::UInt32, false),
        Field::new("v2", DataType::UInt32, false),
    ]))
}

fn arrow_err(e: arrow::error::ArrowError) -> TableError {
    TableError::Arrow {
        path: "mesh table".into(),
        message: e.to_string(),
    }
}

/// The vertex and face tables of `parts` (fragments of one segment may be interleaved with
/// other segments' only if each segment's parts come in fragment order).
pub fn mesh_batches(parts: &[MeshPart]) -> Result<(RecordBatch, RecordBatch)> {
    let mut base: BTreeMap<u64, u64> = BTreeMap::new();
    let nv: usize = parts.iter().map(|p| p.vertices.len()).sum();
    let nf: usize = parts.iter().map(|p| p.triangles.len()).sum();
    let (mut vs, mut vf, mut x, mut y, mut z) = (
        Vec::with_capacity(nv),
        Vec::with_capacity(nv),
        Vec::with_capacity(nv),
        Vec::with_capacity(nv),
        Vec::with_capacity(nv),
    );
    let (mut fs, mut ff, mut v0, mut v1, mut v2) = (
        Vec::with_capacity(nf),
        Vec::with_capacity(nf),
        Vec::with_capacity(nf),
        Vec::with_capacity(nf),
        Vec::with_capacity(nf),
    );
    for part in parts {
        let first = base.entry(part.segment_id).or_insert(0);
        let offset = *first;
        for v in &part.vertices {
            vs.push(part.segment_id);
            vf.push(part.fragment);
            x.push(v[0]);
            y.push(v[1]);
            z.push(v[2]);
        }
        for t in &part.triangles {
            let global = |i: u32| -> Result<u32> {
                if i as usize >= part.vertices.len() {
                    return Err(TableError::Usage(format!(
                        "segment {} fragment {}: a triangle refers to vertex {i} of {}",
                        part.segment_id,
                        part.fragment,
                        part.vertices.len()
                    )));
                }
                u32::try_from(offset + i as u64).map_err(|_| {
                    TableError::Usage(format!(
                        "segment {} has more than 2^32 vertices",
                        part.segment_id
                    ))
                })
            };
            fs.push(part.segment_id);
            ff.push(part.fragment);
            v0.push(global(t[0])?);
            v1.push(global(t[1])?);
            v2.push(global(t[2])?);
        }
        *first += part.vertices.len() as u64;
    }
    let vertices = RecordBatch::try_new(
        vertices_schema(),
        vec![
            Arc::new(UInt64Array::from(vs)) as ArrayRef,
            Arc::new(UInt32Array::from(vf)),
            Arc::new(Float32Array::from(x)),
            Arc::new(Float32Array::from(y)),
            Arc::new(Float32Array::from(z)),
        ],
    )
    .map_err(arrow_err)?;
    let faces = RecordBatch::try_new(
        faces_schema(),
        vec![
            Arc::new(UInt64Array::from(fs)) as ArrayRef,
            Arc::new(UInt32Array::from(ff)),
            Arc::new(UInt32Array::from(v0)),
            Arc::new(UInt32Array::from(v1)),
            Arc::new(UInt32Array::from(v2)),
        ],
    )
    .map_err(arrow_err)?;
    Ok((vertices, faces))
}

/// A segment's rows: each vertex's fragment, the vertices, each face's fragment and indices.
type SegmentRows = (Vec<u32>, Vec<[f32; 3]>, Vec<(u32, [u32; 3])>);

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str, table: &str) -> Result<&'a T> {
    let col = batch.column_by_name(name).ok_or_else(|| TableError::Data {
        path: table.into(),
        message: format!("the {table} table has no column '{name}'"),
    })?;
    if col.null_count() > 0 {
        return Err(TableError::Data {
            path: table.into(),
            message: format!("column '{name}' holds nulls"),
        });
    }
    col.as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| TableError::Data {
            path: table.into(),
            message: format!(
                "column '{name}' is {}, not the type the mesh tables use",
                col.data_type()
            ),
        })
}

/// The parts of the meshes held by a vertex and a face table (the inverse of
/// [`mesh_batches`]): per segment, in ascending order, its fragments in order of first
/// appearance. A segment whose triangles join vertices of different fragments (or lie in
/// another fragment than their vertices) becomes one fragment. Without a `fragment` column
/// every segment is one fragment.
pub fn mesh_from_batches(vertices: &[RecordBatch], faces: &[RecordBatch]) -> Result<Vec<MeshPart>> {
    // Per segment: vertices with their fragment, in table order.
    let mut segs: BTreeMap<u64, SegmentRows> = BTreeMap::new();
    for batch in vertices {
        let s = column::<UInt64Array>(batch, "segment_id", "vertices")?;
        let has_fragment = batch.column_by_name("fragment").is_some();
        let f = if has_fragment {
            Some(column::<UInt32Array>(batch, "fragment", "vertices")?)
        } else {
            None
        };
        let x = column::<Float32Array>(batch, "x", "vertices")?;
        let y = column::<Float32Array>(batch, "y", "vertices")?;
        let z = column::<Float32Array>(batch, "z", "vertices")?;
        for i in 0..batch.num_rows() {
            let entry = segs.entry(s.value(i)).or_default();
            entry.0.push(f.map_or(0, |f| f.value(i)));
            entry.1.push([x.value(i), y.value(i), z.value(i)]);
        }
    }
    for batch in faces {
        let s = column::<UInt64Array>(batch, "segment_id", "faces")?;
        let f = if batch.column_by_name("fragment").is_some() {
            Some(column::<UInt32Array>(batch, "fragment", "faces")?)
        } else {
            None
        };
        let v0 = column::<UInt32Array>(batch, "v0", "faces")?;
        let v1 = column::<UInt32Array>(batch, "v1", "faces")?;
        let v2 = column::<UInt32Array>(batch, "v2", "faces")?;
        for i in 0..batch.num_rows() {
            let seg = s.value(i);
            let entry = segs.get_mut(&seg).ok_or_else(|| TableError::Data {
                path: "faces".into(),
                message: format!("segment {seg} has faces but no vertices"),
            })?;
            let tri = [v0.value(i), v1.value(i), v2.value(i)];
            if let Some(bad) = tri.iter().find(|&&v| v as usize >= entry.1.len()) {
                return Err(TableError::Data {
                    path: "faces".into(),
                    message: format!(
                        "a face of segment {seg} refers to vertex {bad}, the segment has {}",
                        entry.1.len()
                    ),
                });
            }
            entry.2.push((f.map_or(0, |f| f.value(i)), tri));
        }
    }
    let mut parts = Vec::new();
    for (segment_id, (frag_of, verts, tris)) in segs {
        // Fragments in order of first appearance; local index of every vertex.
        let mut order: Vec<u32> = Vec::new();
        let mut slot: BTreeMap<u32, usize> = BTreeMap::new();
        let mut local = Vec::with_capacity(verts.len());
        let mut split: Vec<MeshPart> = Vec::new();
        for (v, &f) in verts.iter().zip(&frag_of) {
            let k = *slot.entry(f).or_insert_with(|| {
                order.push(f);
                split.push(MeshPart {
                    segment_id,
                    fragment: f,
                    ..MeshPart::default()
                });
                split.len() - 1
            });
            local.push(split[k].vertices.len() as u32);
            split[k].vertices.push(*v);
        }
        let mut consistent = true;
        for (f, tri) in &tris {
            let k = slot.get(f).copied();
            match k {
                Some(k) if tri.iter().all(|&v| frag_of[v as usize] == *f) => {
                    split[k].triangles.push(tri.map(|v| local[v as usize]));
                }
                _ => {
                    consistent = false;
                    break;
                }
            }
        }
        if consistent {
            parts.extend(split);
        } else {
            parts.push(MeshPart {
                segment_id,
                fragment: 0,
                vertices: verts,
                triangles: tris.into_iter().map(|(_, t)| t).collect(),
            });
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let parts = vec![
            MeshPart {
                segment_id: 5,
                fragment: 0,
                vertices: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
                triangles: vec![[0, 1, 2]],
            },
            MeshPart {
                segment_id: 5,
                fragment: 1,
                vertices: vec![[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]],
                triangles: vec![[2, 1, 0]],
            },
            MeshPart {
                segment_id: 2,
                fragment: 0,
                vertices: vec![[9.0, 9.0, 9.0]],
                triangles: vec![],
            },
        ];
        let (v, f) = mesh_batches(&parts).unwrap();
        assert_eq!(v.num_rows(), 7);
        assert_eq!(f.num_rows(), 2);
        let v2 = f.column(3).as_any().downcast_ref::<UInt32Array>().unwrap();
        assert_eq!(v2.value(1), 4); // segment 5's vertex 1 of fragment 1
        let back = mesh_from_batches(&[v], &[f]).unwrap();
        assert_eq!(
            back,
            vec![parts[2].clone(), parts[0].clone(), parts[1].clone()]
        );
    }

    #[test]
    fn bad_faces_are_errors() {
        let parts = vec![MeshPart {
            segment_id: 1,
            fragment: 0,
            vertices: vec![[0.0; 3]; 3],
            triangles: vec![[0, 1, 2]],
        }];
        let (v, _) = mesh_batches(&parts).unwrap();
        let bad = MeshPart {
            segment_id: 1,
            fragment: 0,
            vertices: vec![[0.0; 3]; 4],
            triangles: vec![[0, 1, 3]],
        };
        let (_, f) = mesh_batches(&[bad]).unwrap();
        assert!(mesh_from_batches(&[v], &[f]).is_err());
    }
}
