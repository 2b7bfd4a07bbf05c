//! Region selections: per axis an integer or a `start:stop[:step]` slice, as in NumPy basic
//! indexing, resolved against an array's shape into one arithmetic run per axis (first index,
//! step, count), and split arithmetically into the chunks (or inner chunks) they touch.
//! Nothing here is proportional to the number of selected elements.

use neurochunk_codec::nd::AxisMap;

use crate::error::{ArrayError, ArrayResult};

/// The selection along one axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AxisSelection {
    /// One index (negative counts from the end); the axis is dropped from the result shape.
    Index(i64),
    /// `start:stop:step`, each optional, as in NumPy (step may be negative, never zero).
    Slice {
        /// First index (negative counts from the end); `None`: the start in the step's
        /// direction.
        start: Option<i64>,
        /// Index past the last one (exclusive; negative counts from the end); `None`: through
        /// the end in the step's direction.
        stop: Option<i64>,
        /// Step; `None`: 1.
        step: Option<i64>,
    },
    /// Indices already resolved against the axis (as a binding that parsed NumPy indexing
    /// hands them over): only checked against the axis's length.
    Run(IndexRun),
}

/// One axis of a selection resolved against the array's shape: the `count` indices `first`,
/// `first + step`, … (`step` never zero, negative to go backwards), and whether the axis was
/// selected by an integer (`dropped`: it has no axis in the result, and `count` is 1). A
/// binding resolves an index once into these (NumPy's basic indexing) and hands them to the
/// engine as they are ([`Selection::from_runs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexRun {
    /// The first index.
    pub first: u64,
    /// The step between indices.
    pub step: i64,
    /// How many indices.
    pub count: u64,
    /// The axis was selected by an integer and is dropped from the result's shape.
    pub dropped: bool,
}

impl IndexRun {
    /// The last index (`first` for an empty run).
    fn last(&self) -> Option<u64> {
        let span = (self.count.saturating_sub(1) as i128).checked_mul(self.step as i128)?;
        u64::try_from(self.first as i128 + span).ok()
    }
}

impl From<(u64, i64, u64, bool)> for IndexRun {
    /// `(first, step, count, dropped)`.
    fn from((first, step, count, dropped): (u64, i64, u64, bool)) -> Self {
        IndexRun {
            first,
            step,
            count,
            dropped,
        }
    }
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

impl AxisSelection {
    /// `start:stop:step` with every part given (NumPy slice semantics; `step` may be negative,
    /// never zero).
    pub fn slice(start: i64, stop: i64, step: i64) -> Self {
        AxisSelection::Slice {
            start: Some(start),
            stop: Some(stop),
            step: Some(step),
        }
    }

    /// Every `step`-th element of the whole axis (`::step`).
    pub fn every(step: i64) -> Self {
        AxisSelection::Slice {
            start: None,
            stop: None,
            step: Some(step),
        }
    }
}

impl From<i64> for AxisSelection {
    /// One index; the axis is dropped from the result.
    fn from(index: i64) -> Self {
        AxisSelection::Index(index)
    }
}

impl From<std::ops::Range<u64>> for AxisSelection {
    fn from(r: std::ops::Range<u64>) -> Self {
        AxisSelection::range(r.start, r.end)
    }
}

impl From<std::ops::RangeFrom<u64>> for AxisSelection {
    fn from(r: std::ops::RangeFrom<u64>) -> Self {
        AxisSelection::Slice {
            start: Some(r.start as i64),
            stop: None,
            step: None,
        }
    }
}

impl From<std::ops::RangeTo<u64>> for AxisSelection {
    fn from(r: std::ops::RangeTo<u64>) -> Self {
        AxisSelection::Slice {
            start: None,
            stop: Some(r.end as i64),
            step: None,
        }
    }
}

impl From<std::ops::RangeFull> for AxisSelection {
    fn from(_: std::ops::RangeFull) -> Self {
        AxisSelection::ALL
    }
}

/// Build a [`Selection`] in code, one expression per axis: an integer index, a range
/// (`2..5`, `3..`, `..4`, `..`) or an [`AxisSelection`] (e.g. `AxisSelection::every(2)`).
///
/// ```
/// use neurochunk_array::{selection, AxisSelection, Selection};
/// let s = selection![0..10_u64, 5_i64, AxisSelection::every(-2)];
/// assert_eq!(s, "0:10,5,::-2".parse::<Selection>().unwrap());
/// ```
#[macro_export]
macro_rules! selection {
    ($($axis:expr),* $(,)?) => {
        $crate::Selection(vec![$($crate::AxisSelection::from($axis)),*])
    };
}

/// A selection over every axis of an array (missing trailing axes select everything).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection(pub Vec<AxisSelection>);

impl Selection {
    /// The whole array.
    pub fn all() -> Self {
        Selection(Vec::new())
    }

    /// A selection of resolved runs, one per axis (see [`IndexRun`]).
    pub fn from_runs(runs: &[IndexRun]) -> Self {
        Selection(runs.iter().map(|&r| AxisSelection::Run(r)).collect())
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

impl std::str::FromStr for Selection {
    type Err = String;

    /// Parse NumPy-style text such as `"0:10, 5, ::2"` (see [`parse_selection`]).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_selection(text)
    }
}

impl<A: Into<AxisSelection>> FromIterator<A> for Selection {
    fn from_iter<I: IntoIterator<Item = A>>(axes: I) -> Self {
        Selection(axes.into_iter().map(Into::into).collect())
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

/// A strided run of indices along one axis: the `count` indices `first`, `first + step`, …
/// (`step` is never zero), which are the positions `position`, `position + 1`, … of the
/// selection along that axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AxisRun {
    pub first: u64,
    pub step: i64,
    pub position: u64,
    pub count: u64,
}

impl AxisRun {
    /// The index of element `i` of the run.
    fn index(&self, i: u64) -> u64 {
        (self.first as i128 + i as i128 * self.step as i128) as u64
    }

    /// Split the run at the boundaries of blocks of `block` indices: for each block it
    /// touches, in position order, the block number and the part inside it (`first` relative
    /// to the block's start). One entry per touched block, however many indices it holds.
    pub fn split(&self, block: u64) -> Vec<(u64, AxisRun)> {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.count {
            let index = self.index(i);
            let number = index / block;
            let offset = index - number * block;
            let stride = self.step.unsigned_abs();
            // Indices left in this block in the direction of the step.
            let room = if self.step > 0 {
                (block - 1 - offset) / stride + 1
            } else {
                offset / stride + 1
            };
            let count = room.min(self.count - i);
            parts.push((
                number,
                AxisRun {
                    first: offset,
                    step: self.step,
                    position: self.position + i,
                    count,
                },
            ));
            i += count;
        }
        parts
    }

    /// The copy of this run from a block (source) into the selection (destination).
    pub fn block_to_selection(&self) -> AxisMap {
        AxisMap::new(
            self.first as usize,
            self.step as isize,
            self.position as usize,
            1,
            self.count as usize,
        )
    }
}

/// A selection resolved against a shape: one run per array axis.
#[derive(Clone, Debug)]
pub(crate) struct ResolvedSelection {
    /// For each array axis, the selected indices in output order (positions from 0).
    pub axes: Vec<AxisRun>,
    /// The shape of the result (axes selected by an integer are dropped).
    pub output_shape: Vec<usize>,
}

impl ResolvedSelection {
    /// Number of selected elements.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.count as usize).product()
    }

    /// The selected extent on each axis (before integer axes are dropped).
    pub fn extent(&self) -> Vec<usize> {
        self.axes.iter().map(|a| a.count as usize).collect()
    }
}

/// One block (a chunk, or an inner chunk of a shard) that a selection touches: its grid
/// index and, per axis, the part of the selection inside it.
pub(crate) struct BlockTask {
    pub index: Vec<u64>,
    pub runs: Vec<AxisRun>,
}

impl BlockTask {
    /// The copy from the block (source) into the selection's buffer (destination).
    pub fn block_to_selection(&self) -> Vec<AxisMap> {
        self.runs.iter().map(AxisRun::block_to_selection).collect()
    }

    /// The copy from the selection's buffer (source) into the block (destination).
    pub fn selection_to_block(&self) -> Vec<AxisMap> {
        self.runs
            .iter()
            .map(|r| r.block_to_selection().inverse())
            .collect()
    }

    /// Whether the task selects every element of its block that lies inside an array of
    /// `shape`, for blocks of `block` elements per axis whose grid starts at `origin` (empty:
    /// at 0; a shard's inner chunks start at the shard's first element).
    pub fn covers(&self, block: &[usize], origin: &[u64], shape: &[u64]) -> bool {
        self.runs.iter().enumerate().all(|(d, run)| {
            let start = origin.get(d).copied().unwrap_or(0) + self.index[d] * block[d] as u64;
            let inside = shape[d].saturating_sub(start).min(block[d] as u64);
            run.count == inside
        })
    }
}

/// The blocks a selection touches, enumerated lazily: task `t` is the `t`-th combination, in
/// C order, of the blocks touched along each axis. Storage is one entry per touched block
/// and axis.
pub(crate) struct BlockTasks {
    per_axis: Vec<Vec<(u64, AxisRun)>>,
}

impl BlockTasks {
    pub fn new(runs: &[AxisRun], block_shape: &[usize]) -> BlockTasks {
        BlockTasks {
            per_axis: runs
                .iter()
                .zip(block_shape)
                .map(|(run, &block)| run.split(block as u64))
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.per_axis.iter().map(Vec::len).product()
    }

    /// Whether the block at grid index `index` is one of the tasks.
    pub fn contains(&self, index: &[u64]) -> bool {
        index.len() == self.per_axis.len()
            && self
                .per_axis
                .iter()
                .zip(index)
                .all(|(blocks, i)| blocks.iter().any(|(number, _)| number == i))
    }

    pub fn get(&self, mut t: usize) -> BlockTask {
        let rank = self.per_axis.len();
        let mut index = vec![0; rank];
        let mut runs = Vec::with_capacity(rank);
        for d in (0..rank).rev() {
            let blocks = &self.per_axis[d];
            let (number, run) = blocks[t % blocks.len()];
            t /= blocks.len();
            index[d] = number;
            runs.push(run);
        }
        runs.reverse();
        BlockTask { index, runs }
    }
}

/// A part of a selection read or written on its own ([`slabs`]): its runs and the range of
/// its elements in the whole selection's C-ordered output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slab {
    /// The slab's runs, one per axis.
    pub runs: Vec<IndexRun>,
    /// Its elements' positions in the whole selection's output (C order).
    pub elements: std::ops::Range<usize>,
}

/// Cut the selection `runs` of elements of `elem` bytes into slabs of about `max_bytes`
/// along the first axis that is kept and longer than one element, each slab ending at a
/// boundary of the blocks `block_shape` (chunks, or shards), so that no block is read or
/// written by two slabs. A selection of at most `max_bytes` is one slab. A binding reads and
/// writes large regions slab by slab to stay interruptible (and bounded in what one call
/// holds).
pub fn slabs(runs: &[IndexRun], block_shape: &[usize], elem: usize, max_bytes: usize) -> Vec<Slab> {
    let total: usize = runs
        .iter()
        .filter(|r| !r.dropped)
        .map(|r| r.count as usize)
        .product();
    let whole = vec![Slab {
        runs: runs.to_vec(),
        elements: 0..total,
    }];
    if total.saturating_mul(elem) <= max_bytes {
        return whole;
    }
    let Some(axis) = runs.iter().position(|r| !r.dropped && r.count > 1) else {
        return whole;
    };
    let IndexRun {
        first, step, count, ..
    } = runs[axis];
    let inner: usize = runs[axis + 1..]
        .iter()
        .filter(|r| !r.dropped)
        .map(|r| r.count as usize)
        .product();
    let row_bytes = inner.saturating_mul(elem).max(1);
    let min_rows = (max_bytes / row_bytes).max(1) as u64;
    let block = block_shape.get(axis).copied().unwrap_or(1).max(1) as i64;
    let (first, step) = (first as i64, step);
    let index = |j: u64| first + step * j as i64;
    let mut out = Vec::new();
    let mut j = 0u64;
    while j < count {
        let mut end = (j + min_rows).min(count);
        if end < count {
            // Extend to the first element in another block than element `end - 1`.
            let q = index(end - 1).div_euclid(block);
            let next = if step > 0 {
                ((q + 1) * block - first + step - 1).div_euclid(step)
            } else {
                let s = -step;
                (first - (q * block - 1) + s - 1).div_euclid(s)
            };
            end = (next.max(end as i64) as u64).min(count);
        }
        let mut slab = runs.to_vec();
        slab[axis] = IndexRun {
            first: index(j) as u64,
            step,
            count: end - j,
            dropped: false,
        };
        out.push(Slab {
            runs: slab,
            elements: j as usize * inner..end as usize * inner,
        });
        j = end;
    }
    out
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
    let mut axes = Vec::with_capacity(shape.len());
    let mut output_shape = Vec::with_capacity(shape.len());
    for (axis, &len) in shape.iter().enumerate() {
        let sel = selection.0.get(axis).unwrap_or(&AxisSelection::ALL);
        let n = len as i64;
        let run = |first: i64, step: i64, count: i64| AxisRun {
            first: first.max(0) as u64,
            step,
            position: 0,
            count: count.max(0) as u64,
        };
        match *sel {
            AxisSelection::Run(r) => {
                let inside = r.step != 0
                    && (r.count == 0 || r.last().is_some_and(|last| last < len && r.first < len))
                    && (!r.dropped || r.count == 1);
                if !inside {
                    return Err(err(format!(
                        "run of {} indices from {} by {} does not fit axis {axis} with size {len}",
                        r.count, r.first, r.step
                    )));
                }
                axes.push(run(r.first as i64, r.step, r.count as i64));
                if !r.dropped {
                    output_shape.push(r.count as usize);
                }
            }
            AxisSelection::Index(i) => {
                let idx = if i < 0 { i + n } else { i };
                if idx < 0 || idx >= n {
                    return Err(err(format!(
                        "index {i} is out of bounds for axis {axis} with size {len}"
                    )));
                }
                axes.push(run(idx, 1, 1));
            }
            AxisSelection::Slice { start, stop, step } => {
                let step = step.unwrap_or(1);
                // Python's slice.indices semantics, except that an explicit out-of-bounds
                // bound is an error (silently clipping would hide a caller's mistake).
                for bound in [start, stop].into_iter().flatten() {
                    if bound > n || bound < -n {
                        return Err(err(format!(
                            "slice bound {bound} is out of bounds for axis {axis} with size {len}"
                        )));
                    }
                }
                let norm = |v: i64| if v < 0 { v + n } else { v };
                let axis_run = if step > 0 {
                    let s = start.map(norm).unwrap_or(0);
                    let e = stop.map(norm).unwrap_or(n);
                    run(s, step, if e > s { (e - s - 1) / step + 1 } else { 0 })
                } else {
                    // A start of `n` counts from the last index, as in Python.
                    let s = start.map(norm).unwrap_or(n - 1).min(n - 1);
                    let e = stop.map(norm).unwrap_or(-1);
                    run(s, step, if s > e { (s - e - 1) / -step + 1 } else { 0 })
                };
                output_shape.push(axis_run.count as usize);
                axes.push(axis_run);
            }
        }
    }
    Ok(ResolvedSelection { axes, output_shape })
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

    /// Every index of a resolved selection, per axis.
    fn indices(r: &ResolvedSelection) -> Vec<Vec<u64>> {
        r.axes
            .iter()
            .map(|a| (0..a.count).map(|i| a.index(i)).collect())
            .collect()
    }

    #[test]
    fn resolves_like_numpy() {
        let sel = parse_selection("1:7:2,-1,::-3").unwrap();
        let r = resolve(&sel, &[10, 4, 7], "x").unwrap();
        assert_eq!(indices(&r), vec![vec![1, 3, 5], vec![3], vec![6, 3, 0]]);
        assert_eq!(r.output_shape, vec![3, 3]);
        let r = resolve(&parse_selection("-3:").unwrap(), &[5], "x").unwrap();
        assert_eq!(indices(&r), vec![vec![2, 3, 4]]);
        let r = resolve(&parse_selection("3:1").unwrap(), &[5], "x").unwrap();
        assert_eq!(r.output_shape, vec![0]);
        // Negative steps: a start of `n` is the last index; stops exclude, as in Python.
        for (text, expected) in [
            ("5::-3", vec![4, 1]),
            ("::-1", vec![4, 3, 2, 1, 0]),
            ("3:0:-2", vec![3, 1]),
            ("-1:-5:-1", vec![4, 3, 2, 1]),
            ("1:3:-1", vec![]),
            ("::7", vec![0]),
        ] {
            let r = resolve(&parse_selection(text).unwrap(), &[5], "x").unwrap();
            assert_eq!(indices(&r), vec![expected], "{text}");
        }
        let r = resolve(&parse_selection("::-1").unwrap(), &[0], "x").unwrap();
        assert_eq!(r.len(), 0);
        let r = resolve(&Selection::all(), &[], "x").unwrap();
        assert_eq!((r.len(), r.output_shape.len()), (1, 0), "0-d: one element");
    }

    #[test]
    fn runs_split_at_block_boundaries_without_listing_indices() {
        let run = |first, step, count| AxisRun {
            first,
            step,
            position: 0,
            count,
        };
        let parts = run(1, 3, 5).split(4); // 1 4 7 10 13
        assert_eq!(
            parts,
            vec![
                (0, run(1, 3, 1)),
                (
                    1,
                    AxisRun {
                        position: 1,
                        ..run(0, 3, 2)
                    }
                ),
                (
                    2,
                    AxisRun {
                        position: 3,
                        ..run(2, 3, 1)
                    }
                ),
                (
                    3,
                    AxisRun {
                        position: 4,
                        ..run(1, 3, 1)
                    }
                ),
            ]
        );
        let parts = run(9, -4, 3).split(4); // 9 5 1
        let blocks: Vec<u64> = parts.iter().map(|p| p.0).collect();
        assert_eq!(blocks, vec![2, 1, 0]);
        assert!(parts.iter().all(|p| p.1.first == 1 && p.1.count == 1));
        // A step larger than the array: one block per index, none in between.
        let parts = run(0, 1_000_000_000, 3).split(1);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].0, 2_000_000_000);
        // 10^8 contiguous indices in 10^6-element blocks: 100 parts.
        let parts = run(0, 1, 100_000_000).split(1_000_000);
        assert_eq!(parts.len(), 100);
        assert!(parts
            .iter()
            .all(|p| p.1.count == 1_000_000 && p.1.first == 0));
        let tasks = BlockTasks::new(&[run(0, 1, 6), run(5, -1, 6)], &[4, 3]);
        assert_eq!(tasks.len(), 4);
        let task = tasks.get(1);
        assert_eq!(task.index, vec![0, 0]);
        assert_eq!(
            task.runs[1],
            AxisRun {
                position: 3,
                ..run(2, -1, 3)
            }
        );
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

    #[test]
    fn slabs_cover_the_selection_and_end_at_block_boundaries() {
        let run = |first, step, count, dropped| IndexRun {
            first,
            step,
            count,
            dropped,
        };
        // 100 rows of 10 one-byte elements, blocks of 8 rows, slabs of at least 25 rows.
        for runs in [
            vec![run(0, 1, 100, false), run(0, 1, 10, false)],
            vec![run(99, -3, 34, false), run(0, 1, 10, false)],
            vec![
                run(4, 1, 1, true),
                run(5, 7, 13, false),
                run(0, 2, 5, false),
            ],
        ] {
            let pieces = slabs(&runs, &[8, 8], 1, 250);
            let total: usize = runs
                .iter()
                .filter(|r| !r.dropped)
                .map(|r| r.count as usize)
                .product();
            assert_eq!(pieces.first().map(|p| p.elements.start), Some(0));
            assert_eq!(pieces.last().map(|p| p.elements.end), Some(total));
            for w in pieces.windows(2) {
                assert_eq!(w[0].elements.end, w[1].elements.start);
            }
            let axis = runs.iter().position(|r| !r.dropped && r.count > 1).unwrap();
            // No block of the sliced axis is split between two slabs.
            for w in pieces.windows(2) {
                let a = w[0].runs[axis];
                let b = w[1].runs[axis];
                let last_a = a.first as i64 + a.step * (a.count as i64 - 1);
                assert_ne!(
                    last_a.div_euclid(8),
                    (b.first as i64).div_euclid(8),
                    "{runs:?}"
                );
            }
            // Together they select the same indices, in order.
            let all: Vec<u64> = pieces
                .iter()
                .flat_map(|p| {
                    let r = p.runs[axis];
                    (0..r.count).map(move |i| (r.first as i64 + r.step * i as i64) as u64)
                })
                .collect();
            let want: Vec<u64> = (0..runs[axis].count)
                .map(|i| (runs[axis].first as i64 + runs[axis].step * i as i64) as u64)
                .collect();
            assert_eq!(all, want);
        }
        // Small selections are one slab.
        assert_eq!(slabs(&[run(0, 1, 10, false)], &[4], 8, 1 << 20).len(), 1);
    }
}
