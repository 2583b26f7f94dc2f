//! Reading many files on all cores while one thread writes the results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

use crate::error::CatalogError;

/// Runs `work` on every job on up to `threads` threads and hands each result
/// to `consume` on the calling thread, as results come. The calling thread
/// is one of the threads: between its own jobs it consumes what the others
/// sent, so no more threads than asked for are busy. The first error (from
/// either side) stops the run and is returned.
pub(crate) fn run_parallel<J: Send, R: Send>(
    jobs: Vec<J>,
    threads: usize,
    work: impl Fn(J) -> Result<R, CatalogError> + Sync,
    mut consume: impl FnMut(R) -> Result<(), CatalogError>,
) -> Result<(), CatalogError> {
    let threads = threads.clamp(1, 16).min(jobs.len());
    if threads <= 1 {
        for job in jobs {
            consume(work(job)?)?;
        }
        return Ok(());
    }
    let queue = Mutex::new(jobs.into_iter());
    // A poisoned queue only means another worker panicked: take what is left.
    let next = || queue.lock().unwrap_or_else(|p| p.into_inner()).next();
    let stop = AtomicBool::new(false);
    // The caller needs room for what the others finish while it reads a large file.
    let (tx, rx) = mpsc::sync_channel::<Result<R, CatalogError>>(threads * 32);
    let helpers = threads - 1;
    std::thread::scope(|s| {
        for _ in 0..helpers {
            let (tx, stop, work, next) = (tx.clone(), &stop, &work, &next);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let Some(job) = next() else { break };
                    if tx.send(work(job)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut first_error = None;
        let mut take = |result: Result<R, CatalogError>| {
            if first_error.is_none() {
                if let Err(e) = result.and_then(&mut consume) {
                    stop.store(true, Ordering::Relaxed);
                    first_error = Some(e);
                }
            }
        };
        // This thread's own share, with what the others sent so far between jobs.
        while !stop.load(Ordering::Relaxed) {
            let Some(job) = next() else { break };
            take(work(job));
            while let Ok(result) = rx.try_recv() {
                take(result);
            }
        }
        for result in rx.iter() {
            take(result);
        }
        first_error.map_or(Ok(()), Err)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_job_once_and_the_first_error_stops() {
        {
            for threads in [1, 2, 3] {
                let mut seen = vec![];
                run_parallel(
                    (0..100).collect(),
                    threads,
                    |j: i32| Ok(j * 2),
                    |r| {
                        seen.push(r);
                        Ok(())
                    },
                )
                .unwrap();
                seen.sort();
                assert_eq!(seen, (0..100).map(|j| j * 2).collect::<Vec<_>>(), "{threads}");
                let err = run_parallel(
                    (0..100).collect(),
                    threads,
                    |j: i32| if j == 50 { Err(CatalogError::Query("boom".into())) } else { Ok(j) },
                    |_| Ok(()),
                );
                assert!(matches!(err, Err(CatalogError::Query(_))), "{threads}");
                let err = run_parallel(
                    (0..100).collect(),
                    threads,
                    |j: i32| Ok(j),
                    |r| if r == 70 { Err(CatalogError::Query("full".into())) } else { Ok(()) },
                );
                assert!(matches!(err, Err(CatalogError::Query(_))), "{threads}");
            }
        }
    }
}
