//! Work on many sessions on all cores, answered in order: each thread takes
//! the next session, and results are handed on in the sessions' order as
//! soon as every session before them is done, so a search can stop as soon
//! as it holds enough hits and a caller can show hits as they come.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

pub use arbor_tree::sessions::Flow;

/// How far ahead of the first unfinished item a thread may start one, per thread.
const AHEAD: usize = 4;

struct State<T> {
    next: usize,
    /// Results not yet handed on, by index.
    done: BTreeMap<usize, T>,
    /// The first index not yet handed on.
    handed: usize,
    stop: bool,
    /// Threads still working.
    running: usize,
}

/// Runs `work(i)` for each `i` in `0..n` on up to `threads` threads and
/// hands each result to `take` in the order of `i`. Once `take` says
/// [`Flow::Stop`], no further item starts; the results of items already
/// started go to `rest`, in any order. A thread works at most `AHEAD`
/// items per thread ahead of the first unfinished one, so results waiting
/// their turn stay few.
pub fn ordered<T: Send>(
    n: usize,
    threads: usize,
    work: impl Fn(usize) -> T + Sync,
    mut take: impl FnMut(usize, T) -> Flow,
    mut rest: impl FnMut(usize, T),
) {
    let threads = threads.clamp(1, 16).min(n.max(1));
    if threads == 1 {
        for i in 0..n {
            if take(i, work(i)) == Flow::Stop {
                return;
            }
        }
        return;
    }
    let state = Mutex::new(State { next: 0, done: BTreeMap::new(), handed: 0, stop: false, running: threads });
    let ready = Condvar::new();
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (work, ready, lock) = (&work, &ready, &lock);
            s.spawn(move || {
                loop {
                    let i = {
                        let mut st = lock();
                        while !st.stop && st.next < n && st.next >= st.handed + threads * AHEAD {
                            st = ready.wait(st).unwrap_or_else(|p| p.into_inner());
                        }
                        if st.stop || st.next >= n {
                            break;
                        }
                        st.next += 1;
                        st.next - 1
                    };
                    let r = work(i);
                    lock().done.insert(i, r);
                    ready.notify_all();
                }
                lock().running -= 1;
                ready.notify_all();
            });
        }
        // Hand results on in order, waiting for each.
        let mut st = lock();
        loop {
            let first = st.handed;
            if let Some(r) = st.done.remove(&first) {
                st.handed += 1;
                drop(st);
                let flow = take(first, r);
                st = lock();
                if flow == Flow::Stop {
                    st.stop = true;
                    ready.notify_all();
                    break;
                }
                ready.notify_all();
                continue;
            }
            if st.handed >= n || (st.running == 0 && st.done.is_empty()) {
                break;
            }
            st = ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        // After a stop: what was started still finishes; it goes to `rest`.
        while st.running > 0 {
            st = ready.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let left = std::mem::take(&mut st.done);
        drop(st);
        for (i, r) in left {
            rest(i, r);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_and_stopping_early() {
        for threads in [1, 2, 3, 8] {
            let mut seen = vec![];
            ordered(
                100,
                threads,
                |i| i * 2,
                |i, r| {
                    seen.push((i, r));
                    Flow::Go
                },
                |_, _| panic!("nothing is left over"),
            );
            assert_eq!(seen, (0..100).map(|i| (i, i * 2)).collect::<Vec<_>>(), "{threads}");
            let (mut taken, mut left) = (vec![], vec![]);
            ordered(
                1000,
                threads,
                |i| i,
                |i, _| {
                    taken.push(i);
                    if i == 10 {
                        Flow::Stop
                    } else {
                        Flow::Go
                    }
                },
                |i, _| left.push(i),
            );
            assert_eq!(taken, (0..=10).collect::<Vec<_>>());
            assert!(left.iter().all(|&i| i > 10 && i <= 10 + threads * AHEAD + threads), "{left:?}");
        }
        let mut none = 0;
        ordered(
            0,
            4,
            |i| i,
            |_, _| {
                none += 1;
                Flow::Go
            },
            |_, _| {},
        );
        assert_eq!(none, 0);
    }
}
