//! Region selections: per axis an integer or a `start:stop[:step]` slice, as in NumPy basic
//! indexing, resolved against an array's shape into the list of indices read or written.

use crate::error::{ArrayError, ArrayResult};

/// The selection along one axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AxisSelection {
    /// One index (negative counts from the end); the axis is dropped from the result shape.
    Index(i64),
    /// `start:stop:step`, each optional, as in NumPy (step may be negative, never zero).
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
}

impl AxisSelection {
    /// The whole axis.
    pub const ALL: AxisSelection = AxisSelection::Slice {
        start: None,
        stop: None,
        step: None,
    };

    /// A `start..stop` range with step 1.
    pub fn range(start: u64, stop: u64) -> Self {
        AxisSelection::Slice {
            start: Some(start as i64),
            stop: Some(stop as i64),
            step: None,
        }
    }
}

/// A selection over every axis of an array (missing trailing axes select everything).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection(pub Vec<AxisSelection>);

impl Selection {
    /// The whole array.
    pub fn all() -> Self {
        Selection(Vec::new())
    }

    /// A box `start[d]..start[d] + shape[d]` with step 1.
    pub fn from_box(start: &[u64], shape: &[u64]) -> Self {
        Selection(
            start
                .iter()
                .zip(shape)
                .map(|(&s, &n)| AxisSelection::range(s, s + n))
                .collect(),
        )
    }
}

/// Parse `"0:10,5,::2"`-style text; an empty string selects everything.
pub fn parse_selection(text: &str) -> Result<Selection, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Selection::all());
    }
    let mut axes = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if !part.contains(':') {
            let index = part.parse::<i64>().map_err(|_| {
                format!("'{part}' is not an integer index or a start:stop[:step] slice")
            })?;
            axes.push(AxisSelection::Index(index));
            continue;
        }
        let pieces: Vec<&str> = part.split(':').collect();
        if pieces.len() > 3 {
            return Err(format!(
                "'{part}' has too many ':' (expected start:stop[:step])"
            ));
        }
        let number = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("'{s}' in '{part}' is not an integer"))
            }
        };
        let start = number(pieces[0])?;
        let stop = number(pieces.get(1).copied().unwrap_or(""))?;
        let step = number(pieces.get(2).copied().unwrap_or(""))?;
        if step == Some(0) {
            return Err(format!("'{part}': slice step cannot be zero"));
        }
        axes.push(AxisSelection::Slice { start, stop, step });
    }
    Ok(Selection(axes))
}

/// A selection resolved against a shape: the array indices chosen along every axis.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedSelection {
    /// For each array axis, the selected indices in output order.
    pub indices: Vec<Vec<u64>>,
    /// The shape of the result (axes selected by an integer are dropped).
    pub output_shape: Vec<usize>,
}

impl ResolvedSelection {
    /// Number of selected elements.
    pub fn len(&self) -> usize {
        self.indices.iter().map(Vec::len).product()
    }

    /// The selected extent on each axis (before integer axes are dropped).
    pub fn extent(&self) -> Vec<usize> {
        self.indices.iter().map(Vec::len).collect()
    }
}

pub(crate) fn resolve(
    selection: &Selection,
    shape: &[u64],
    path: &str,
) -> ArrayResult<ResolvedSelection> {
    let err = |message: String| ArrayError::Selection {
        path: crate::display_path(path),
        message,
    };
    if selection.0.len() > shape.len() {
        return Err(err(format!(
            "selection has {} axes but the array has {} dimensions",
            selection.0.len(),
            shape.len()
        )));
    }
    let mut indices = Vec::with_capacity(shape.len());
    let mut output_shape = Vec::with_capacity(shape.len());
    for (axis, &len) in shape.iter().enumerate() {
        let sel = selection.0.get(axis).unwrap_or(&AxisSelection::ALL);
        let n = len as i64;
        match *sel {
            AxisSelection::Index(i) => {
                let idx = if i < 0 { i + n } else { i };
                if idx < 0 || idx >= n {
                    return Err(err(format!(
                        "index {i} is out of bounds for axis {axis} with size {len}"
                    )));
                }
                indices.push(vec![idx as u64]);
            }
            AxisSelection::Slice { start, stop, step } => {
                let step = step.unwrap_or(1);
                // Python's slice.indices semantics, except that an explicit out-of-bounds stop is an error
                // (silently clipping would hide a caller's mistake).
                for bound in [start, stop].into_iter().flatten() {
                    if bound > n || bound < -n {
                        return Err(err(format!(
                            "slice bound {bound} is out of bounds for axis {axis} with size {len}"
                        )));
                    }
                }
                let norm = |v: i64| if v < 0 { v + n } else { v };
                let list: Vec<u64> = if step > 0 {
                    let s = start.map(norm).unwrap_or(0);
                    let e = stop.map(norm).unwrap_or(n);
                    (s..e.max(s))
                        .step_by(step as usize)
                        .map(|v| v as u64)
                        .collect()
                } else {
                    let s = start.map(norm).unwrap_or(n - 1);
                    let e = stop.map(norm).unwrap_or(-1);
                    let mut out = Vec::new();
                    let mut v = s;
                    while v > e {
                        if v >= 0 && v < n {
                            out.push(v as u64);
                        }
                        v += step;
                    }
                    out
                };
                output_shape.push(list.len());
                indices.push(list);
            }
        }
    }
    Ok(ResolvedSelection {
        indices,
        output_shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_style_text() {
        let sel = parse_selection("1:3, -1, ::2, 5:").unwrap();
        assert_eq!(
            sel.0,
            vec![
                AxisSelection::Slice {
                    start: Some(1),
                    stop: Some(3),
                    step: None
                },
                AxisSelection::Index(-1),
                AxisSelection::Slice {
                    start: None,
                    stop: None,
                    step: Some(2)
                },
                AxisSelection::Slice {
                    start: Some(5),
                    stop: None,
                    step: None
                },
            ]
        );
        assert!(parse_selection("1:2:0").unwrap_err().contains("zero"));
        assert!(parse_selection("a").unwrap_err().contains("'a'"));
        assert!(parse_selection("1:2:3:4").is_err());
    }

    #[test]
    fn resolves_like_numpy() {
        let sel = parse_selection("1:7:2,-1,::-3").unwrap();
        let r = resolve(&sel, &[10, 4, 7], "x").unwrap();
        assert_eq!(r.indices, vec![vec![1, 3, 5], vec![3], vec![6, 3, 0]]);
        assert_eq!(r.output_shape, vec![3, 3]);
        let r = resolve(&parse_selection("-3:").unwrap(), &[5], "x").unwrap();
        assert_eq!(r.indices, vec![vec![2, 3, 4]]);
        let r = resolve(&parse_selection("3:1").unwrap(), &[5], "x").unwrap();
        assert_eq!(r.output_shape, vec![0]);
    }

    #[test]
    fn out_of_bounds_is_an_error_naming_the_array() {
        let e = resolve(&parse_selection("0:11").unwrap(), &[10], "grp/arr").unwrap_err();
        assert!(
            e.to_string().contains("/grp/arr") && e.to_string().contains("11"),
            "{e}"
        );
        let e = resolve(&parse_selection("10").unwrap(), &[10], "a").unwrap_err();
        assert!(e.to_string().contains("out of bounds"), "{e}");
        assert!(resolve(&parse_selection("0,0").unwrap(), &[10], "a").is_err());
    }
}
