//! Blocking store calls made several at once, for walks whose next step depends on the
//! answers (listing a hierarchy level by level, opening the files of a table): the latency of
//! a remote store, not the CPU, sets their pace.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` applied to every item, on up to `workers` threads at once (the calling thread and
/// `workers - 1` scoped threads; the calling thread alone when `workers` is at most 1 or there
/// is one item), with the results in the items' order. Give `workers` from
/// [`Store::concurrent_reads`](crate::Store::concurrent_reads): a local store gets no threads.
///
/// ```
/// let squares = neurochunk_store::map_concurrent(&[1, 2, 3, 4], 3, |n| n * n);
/// assert_eq!(squares, [1, 4, 9, 16]);
/// ```
pub fn map_concurrent<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = workers.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            done.push((i, f(item)));
        }
        done
    };
    let mut indexed: Vec<(usize, R)> = std::thread::scope(|scope| {
        // A thread the system cannot start leaves its items to the others.
        let helpers: Vec<_> = (1..workers)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
            .collect();
        let mut all = work();
        for helper in helpers {
            all.extend(
                helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        all
    });
    indexed.sort_by_key(|(i, _)| *i);
    indexed.into_iter().map(|(_, r)| r).collect()
}
