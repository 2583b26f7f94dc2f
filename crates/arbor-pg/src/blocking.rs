//! The driver's blocking client runs a small tokio runtime of its own for
//! every call (and when a connection is dropped), which tokio forbids on a
//! thread that is already driving a runtime: an async caller (the agent's
//! flows, the chat) would panic. [`blocking`] runs such work on a thread of
//! its own in that case, and in place otherwise, so the store is a plain
//! synchronous API wherever it is called from. [`within`] waits for work
//! at most a given time (a frozen server never holds its caller).

use std::time::Duration;

/// Runs `f` in place, or on a scoped thread when this thread is inside a tokio runtime.
pub(crate) fn blocking<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Runs `f` on a thread of its own and waits for it at most `limit` (as
/// long as it takes with `None`, in place or as [`blocking`] does): `None`
/// when it has not finished by then (it goes on, left to that thread).
pub(crate) fn within<T: Send + 'static>(limit: Option<Duration>, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let Some(limit) = limit else { return Some(blocking(f)) };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new().name("arbor-pg-bounded".into()).spawn(move || {
        let _ = tx.send(f());
    });
    match spawned {
        Ok(_) => rx.recv_timeout(limit).ok(),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn work_leaves_a_runtime_thread_and_stays_elsewhere() {
        let here = std::thread::current().id();
        assert_eq!(blocking(|| std::thread::current().id()), here);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let inside = rt.block_on(async { blocking(|| std::thread::current().id()) });
        assert_ne!(inside, here);
        // A runtime started inside, as the driver does, works there.
        let v = rt.block_on(async {
            blocking(|| tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async { 7 }))
        });
        assert_eq!(v, 7);
    }

    #[test]
    fn work_past_its_limit_is_left_to_its_thread() {
        // The work waits for a gate opened only once the caller has stopped waiting for it.
        let (open, gate) = std::sync::mpsc::channel::<()>();
        let (tx, rx) = std::sync::mpsc::channel();
        let slow = within(Some(Duration::from_millis(20)), move || {
            gate.recv().unwrap();
            tx.send(()).unwrap();
        });
        assert!(slow.is_none());
        open.send(()).unwrap();
        // It went on, and finished, on its own thread.
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(within(Some(Duration::from_secs(10)), || 3), Some(3));
        assert_eq!(within(None, || 4), Some(4));
    }
}
