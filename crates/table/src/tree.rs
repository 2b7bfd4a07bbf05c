//! Skeleton trees: id lookup, parent resolution, tree checks and derived fields.
//!
//! Works on compact column vectors (`u64` ids, `u32` row indices), never on
//! per-row allocations. [`IdIndex`] maps sample ids to rows (a direct table for
//! dense ids, the ids themselves when sorted, sorted pairs otherwise) and finds
//! duplicates. [`build_tree`] resolves parents, counts roots per fragment, finds
//! missing/self/cross-fragment parents and cycles, and computes children (CSR),
//! `n_children` and Strahler numbers in one bottom-up sweep.

use rayon::prelude::*;

/// Row index sentinel: no parent (a root).
pub const ROOT: u32 = u32::MAX;
/// Row index sentinel: the parent link is unusable (missing or self).
pub const BROKEN: u32 = u32::MAX - 1;

/// Maps ids to row indices.
#[derive(Debug)]
pub enum IdIndex {
    /// `table[id - min]` is the row, or `u32::MAX`.
    Dense {
        /// Smallest id.
        min: u64,
        /// Row per id offset.
        table: Vec<u32>,
    },
    /// Ids are strictly increasing: binary search the ids themselves.
    Monotonic,
    /// `(id, row)` pairs sorted by id.
    Sorted(Vec<(u64, u32)>),
}

/// A duplicated id: the id and two rows holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duplicate {
    /// The id.
    pub id: u64,
    /// A row holding it.
    pub first: u32,
    /// Another row holding it.
    pub second: u32,
}

impl IdIndex {
    /// Builds an index over `ids` (row = position) and lists duplicates.
    pub fn build(ids: &[u64]) -> (IdIndex, Vec<Duplicate>) {
        let n = ids.len();
        if n == 0 {
            return (IdIndex::Monotonic, vec![]);
        }
        if ids.windows(2).all(|w| w[0] < w[1]) {
            return (IdIndex::Monotonic, vec![]);
        }
        let (min, max) = ids
            .iter()
            .fold((u64::MAX, 0u64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let range = max - min;
        let mut dups = Vec::new();
        if range < (n as u64).saturating_mul(4).saturating_add(1024) {
            let mut table = vec![u32::MAX; range as usize + 1];
            for (row, &id) in ids.iter().enumerate() {
                let slot = &mut table[(id - min) as usize];
                if *slot != u32::MAX {
                    dups.push(Duplicate {
                        id,
                        first: *slot,
                        second: row as u32,
                    });
                } else {
                    *slot = row as u32;
                }
            }
            return (IdIndex::Dense { min, table }, dups);
        }
        let mut pairs: Vec<(u64, u32)> = ids
            .iter()
            .enumerate()
            .map(|(r, &id)| (id, r as u32))
            .collect();
        pairs.par_sort_unstable();
        for w in pairs.windows(2) {
            if w[0].0 == w[1].0 {
                dups.push(Duplicate {
                    id: w[0].0,
                    first: w[0].1,
                    second: w[1].1,
                });
            }
        }
        (IdIndex::Sorted(pairs), dups)
    }

    /// The row of `id` (the first when duplicated; `ids` is the indexed slice).
    #[inline]
    pub fn get(&self, ids: &[u64], id: u64) -> Option<u32> {
        match self {
            IdIndex::Dense { min, table } => {
                let off = id.checked_sub(*min)?;
                let r = *table.get(usize::try_from(off).ok()?)?;
                (r != u32::MAX).then_some(r)
            }
            IdIndex::Monotonic => ids.binary_search(&id).ok().map(|r| r as u32),
            IdIndex::Sorted(pairs) => {
                let i = pairs.partition_point(|p| p.0 < id);
                pairs.get(i).filter(|p| p.0 == id).map(|p| p.1)
            }
        }
    }
}

/// The columns a tree is built from.
pub struct TreeInput<'a> {
    /// `sample_id` per row.
    pub ids: &'a [u64],
    /// `parent_id` per row (value ignored where `parent_valid` is false).
    pub parents: &'a [u64],
    /// Validity of `parent_id` per row (false = null = root).
    pub parent_valid: &'a [bool],
    /// Fragment index per row (into `fragment_ids`).
    pub fragments: &'a [u32],
    /// Distinct fragment ids.
    pub fragment_ids: &'a [u64],
}

/// Problems found while building a tree (rows are row indices).
#[derive(Debug, Default)]
pub struct TreeProblems {
    /// `(fragment id, number of roots, up to 5 root rows)` for fragments with != 1 root.
    pub root_counts: Vec<(u64, u32, Vec<u32>)>,
    /// `(row, parent id)` where the parent id exists nowhere.
    pub missing_parent: Vec<(u32, u64)>,
    /// Rows that are their own parent.
    pub self_parent: Vec<u32>,
    /// `(row, parent row)` where the parent is in another fragment.
    pub cross_fragment: Vec<(u32, u32)>,
    /// Cycles, each as up to 8 member rows plus the cycle length.
    pub cycles: Vec<(Vec<u32>, usize)>,
    /// Total counts, in the order above except roots: missing, self,
    /// cross-fragment, bad root counts, cycles (the vectors may be truncated).
    pub counts: [usize; 5],
}

impl TreeProblems {
    /// True when the tree has no structural error.
    pub fn is_clean(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }
}

/// A resolved forest with derived values.
#[derive(Debug)]
pub struct Tree {
    /// Parent row per row ([`ROOT`] or [`BROKEN`] when none).
    pub parent_row: Vec<u32>,
    /// CSR offsets into `children` (len = rows + 1).
    pub child_offsets: Vec<u32>,
    /// Child rows, grouped by parent, ascending row order within a group.
    pub children: Vec<u32>,
    /// Strahler number per row (0 = not computable: the row is not under a root).
    pub strahler: Vec<u32>,
}

impl Tree {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.parent_row.len()
    }

    /// True for an empty table.
    pub fn is_empty(&self) -> bool {
        self.parent_row.is_empty()
    }

    /// Child rows of `row`.
    #[inline]
    pub fn children_of(&self, row: usize) -> &[u32] {
        &self.children[self.child_offsets[row] as usize..self.child_offsets[row + 1] as usize]
    }
}

const KEEP: usize = 50;

/// Resolves parent ids to parent rows ([`ROOT`] for null, [`BROKEN`] for a
/// missing or self parent) and records those problems. The id columns can be
/// dropped afterwards, before [`build_forest`] allocates the tree.
pub fn resolve_parents(
    ids: &[u64],
    parents: &[u64],
    parent_valid: &[bool],
    index: &IdIndex,
) -> (Vec<u32>, TreeProblems) {
    let n = ids.len();
    let mut pr = TreeProblems::default();
    // Lookups dominate: parallel.
    let parent_row: Vec<u32> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|i| {
            if !parent_valid[i] {
                return ROOT;
            }
            match index.get(ids, parents[i]) {
                Some(r) if r as usize == i => BROKEN,
                Some(r) => r,
                None => BROKEN,
            }
        })
        .collect();
    for (i, &p) in parent_row.iter().enumerate() {
        if p == BROKEN {
            if parents[i] == ids[i] {
                pr.counts[1] += 1;
                if pr.self_parent.len() < KEEP {
                    pr.self_parent.push(i as u32);
                }
            } else {
                pr.counts[0] += 1;
                if pr.missing_parent.len() < KEEP {
                    pr.missing_parent.push((i as u32, parents[i]));
                }
            }
        }
    }
    (parent_row, pr)
}

/// Checks the forest given resolved parent rows: parents in the same fragment,
/// one root per fragment, no cycles; computes children (CSR) and Strahler numbers.
pub fn build_forest(
    parent_row: Vec<u32>,
    fragments: &[u32],
    fragment_ids: &[u64],
    mut pr: TreeProblems,
) -> (Tree, TreeProblems) {
    let n = parent_row.len();
    // 1. Cross-fragment parents and roots per fragment.
    let nf = fragment_ids.len();
    let mut roots = vec![0u32; nf];
    for (i, &p) in parent_row.iter().enumerate() {
        if p == ROOT {
            roots[fragments[i] as usize] += 1;
        } else if (p as usize) < n && fragments[p as usize] != fragments[i] {
            pr.counts[2] += 1;
            if pr.cross_fragment.len() < KEEP {
                pr.cross_fragment.push((i as u32, p));
            }
        }
    }
    let bad: Vec<usize> = (0..nf).filter(|&f| roots[f] != 1).collect();
    if !bad.is_empty() {
        let mut root_rows: Vec<Vec<u32>> = vec![Vec::new(); nf];
        for i in 0..n {
            let f = fragments[i] as usize;
            if parent_row[i] == ROOT && roots[f] > 1 && root_rows[f].len() < 5 {
                root_rows[f].push(i as u32);
            }
        }
        pr.counts[3] = bad.len();
        for f in bad.into_iter().take(KEEP) {
            pr.root_counts
                .push((fragment_ids[f], roots[f], std::mem::take(&mut root_rows[f])));
        }
    }
    drop(roots);
    // 2. Children (CSR) without a scratch copy: count, inclusive prefix sum (end
    //    pointers), then place rows in reverse so each group ends up ascending.
    let mut child_offsets = vec![0u32; n + 1];
    for &p in &parent_row {
        if (p as usize) < n {
            child_offsets[p as usize] += 1;
        }
    }
    for v in 1..=n {
        child_offsets[v] += child_offsets[v - 1];
    }
    let mut children = vec![0u32; child_offsets[n] as usize];
    for i in (0..n).rev() {
        let p = parent_row[i] as usize;
        if p < n {
            child_offsets[p] -= 1;
            children[child_offsets[p] as usize] = i as u32;
        }
    }
    // 3. Breadth-first order from the roots; rows never reached are below a
    //    broken link or on a cycle.
    let mut order: Vec<u32> = Vec::with_capacity(n);
    order.extend((0..n as u32).filter(|&i| parent_row[i as usize] == ROOT));
    let mut head = 0;
    while head < order.len() {
        let v = order[head] as usize;
        head += 1;
        let (a, b) = (child_offsets[v] as usize, child_offsets[v + 1] as usize);
        order.extend_from_slice(&children[a..b]);
    }
    if order.len() < n {
        find_cycles(&parent_row, &order, &mut pr);
    }
    // 4. Strahler, bottom-up over the BFS order. `strahler[v]` accumulates the
    //    largest child value until v itself is processed; `ties` counts it.
    let mut strahler = vec![0u32; n];
    let mut ties = vec![0u8; n];
    for &v in order.iter().rev() {
        let v = v as usize;
        let s = if child_offsets[v] == child_offsets[v + 1] {
            1
        } else if ties[v] >= 2 {
            strahler[v] + 1
        } else {
            strahler[v]
        };
        strahler[v] = s;
        let p = parent_row[v] as usize;
        if p < n {
            if s > strahler[p] {
                strahler[p] = s;
                ties[p] = 1;
            } else if s == strahler[p] {
                ties[p] = ties[p].saturating_add(1);
            }
        }
    }
    (
        Tree {
            parent_row,
            child_offsets,
            children,
            strahler,
        },
        pr,
    )
}

fn find_cycles(parent_row: &[u32], order: &[u32], pr: &mut TreeProblems) {
    let n = parent_row.len();
    // state: 0 = unknown, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; n];
    for &v in order {
        state[v as usize] = 2;
    }
    let mut walk: Vec<u32> = Vec::new();
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        walk.clear();
        let mut v = start;
        loop {
            if state[v] == 2 {
                break;
            }
            if state[v] == 1 {
                // The walk suffix from v is a cycle.
                let pos = walk.iter().position(|&w| w as usize == v).unwrap_or(0);
                let len = walk.len() - pos;
                pr.counts[4] += 1;
                if pr.cycles.len() < KEEP {
                    pr.cycles
                        .push((walk[pos..].iter().take(8).copied().collect(), len));
                }
                break;
            }
            state[v] = 1;
            walk.push(v as u32);
            let p = parent_row[v];
            if (p as usize) >= n {
                break;
            }
            v = p as usize;
        }
        for &w in &walk {
            state[w as usize] = 2;
        }
    }
}

/// Resolves parents and builds the forest in one call (see [`resolve_parents`]
/// and [`build_forest`] to free the id columns in between).
pub fn build_tree(input: &TreeInput<'_>, index: &IdIndex) -> (Tree, TreeProblems) {
    let (parent_row, pr) = resolve_parents(input.ids, input.parents, input.parent_valid, index);
    build_forest(parent_row, input.fragments, input.fragment_ids, pr)
}

/// Maps fragment ids to small indices, with a cache for runs of equal ids.
#[derive(Debug, Default)]
pub struct FragmentInterner {
    map: std::collections::HashMap<u64, u32>,
    /// Distinct fragment ids in first-seen order.
    pub ids: Vec<u64>,
    last: Option<(u64, u32)>,
}

impl FragmentInterner {
    /// Index of `id`, assigning a new one on first sight.
    #[inline]
    pub fn intern(&mut self, id: u64) -> u32 {
        if let Some((l, i)) = self.last {
            if l == id {
                return i;
            }
        }
        let next = self.ids.len() as u32;
        let i = *self.map.entry(id).or_insert(next);
        if i == next {
            self.ids.push(id);
        }
        self.last = Some((id, i));
        i
    }

    /// True when `id` has been seen.
    pub fn contains(&self, id: u64) -> bool {
        self.map.contains_key(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ids: &[u64], parents: &[Option<u64>], frags: &[u64]) -> (Tree, TreeProblems) {
        let mut fi = FragmentInterner::default();
        let fr: Vec<u32> = frags.iter().map(|&f| fi.intern(f)).collect();
        let pv: Vec<bool> = parents.iter().map(Option::is_some).collect();
        let p: Vec<u64> = parents.iter().map(|p| p.unwrap_or(0)).collect();
        let (idx, d) = IdIndex::build(ids);
        assert!(d.is_empty());
        build_tree(
            &TreeInput {
                ids,
                parents: &p,
                parent_valid: &pv,
                fragments: &fr,
                fragment_ids: &fi.ids,
            },
            &idx,
        )
    }

    #[test]
    fn digest_v2_derived_values() {
        let (t, p) = run(
            &[1, 2, 3, 4, 10, 11],
            &[None, Some(1), Some(2), Some(2), None, Some(10)],
            &[7, 7, 7, 7, 9, 9],
        );
        assert!(p.is_clean());
        assert_eq!(t.strahler, [2, 2, 1, 1, 1, 1]);
        let nc: Vec<usize> = (0..6).map(|r| t.children_of(r).len()).collect();
        assert_eq!(nc, [1, 2, 0, 0, 1, 0]);
        assert_eq!(t.children_of(1), [2, 3]);
    }

    #[test]
    fn strahler_single_child_inherits_and_unequal_branches() {
        // 0 -> 1 -> {2 -> {3, 4}, 5}: node 2 has two leaves (2), node 1 has 2 and 1 -> 2.
        let (t, p) = run(
            &[0, 1, 2, 3, 4, 5],
            &[None, Some(0), Some(1), Some(2), Some(2), Some(1)],
            &[1; 6],
        );
        assert!(p.is_clean());
        assert_eq!(t.strahler, [2, 2, 2, 1, 1, 1]);
    }

    #[test]
    fn detects_problems() {
        // I11: fragment 7 has no root and a 1<->2 cycle.
        let (_, p) = run(
            &[1, 2, 3, 4, 10, 11],
            &[Some(2), Some(1), Some(2), Some(2), None, Some(10)],
            &[7, 7, 7, 7, 9, 9],
        );
        assert_eq!(p.root_counts, vec![(7, 0, vec![])]);
        assert_eq!(p.cycles.len(), 1);
        assert_eq!(p.cycles[0].1, 2);
        // I13: cross-fragment parent.
        let (_, p) = run(
            &[1, 2, 3, 4, 10, 11],
            &[None, Some(1), Some(2), Some(2), None, Some(4)],
            &[7, 7, 7, 7, 9, 9],
        );
        assert_eq!(p.cross_fragment, vec![(5, 3)]);
        assert!(p.root_counts.is_empty() && p.cycles.is_empty());
        // I12 and I14: missing and self parents.
        let (_, p) = run(&[1, 2, 3], &[None, Some(99), Some(3)], &[1, 1, 1]);
        assert_eq!(p.missing_parent, vec![(1, 99)]);
        assert_eq!(p.self_parent, vec![2]);
        // I10: two roots.
        let (_, p) = run(&[1, 2, 3], &[None, None, Some(1)], &[5, 5, 5]);
        assert_eq!(p.root_counts, vec![(5, 2, vec![0, 1])]);
    }

    #[test]
    fn index_kinds_and_duplicates() {
        let ids = [5u64, 3, 9, 3];
        let (idx, d) = IdIndex::build(&ids);
        assert!(matches!(idx, IdIndex::Dense { .. }));
        assert_eq!(
            d,
            vec![Duplicate {
                id: 3,
                first: 1,
                second: 3
            }]
        );
        assert_eq!(idx.get(&ids, 9), Some(2));
        assert_eq!(idx.get(&ids, 4), None);
        assert_eq!(idx.get(&ids, 1), None);
        let ids = [u64::MAX, 1 << 63, 7, 1 << 63];
        let (idx, d) = IdIndex::build(&ids);
        assert!(matches!(idx, IdIndex::Sorted(_)));
        assert_eq!(d.len(), 1);
        assert_eq!(idx.get(&ids, u64::MAX), Some(0));
        let ids = [1u64, 2, 1 << 40];
        let (idx, _) = IdIndex::build(&ids);
        assert!(matches!(idx, IdIndex::Monotonic));
        assert_eq!(idx.get(&ids, 1 << 40), Some(2));
    }
}
