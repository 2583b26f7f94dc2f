//! The content hash of the bytes an index covers (docs/format.md, "The
//! index"): what vouches for them when the file has grown since the index
//! was written (the append changed its times).

use arbor_log::scan::ReadAt;

use super::CONTENT_AT;

/// Bytes hashed at once by [`content_hash`], each block on its own.
const CONTENT_BLOCK: u64 = 1 << 20;

/// A hash of the first `len` bytes of `src`, never 0 (0 says "not known"):
/// xxh3 of each 1 MiB block, read and hashed on all cores, then xxh3 of
/// the blocks' hashes in order. What stands for the bytes an index covers
/// when the file has grown since (its times changed with the append).
pub(crate) fn content_hash(src: &dyn ReadAt, len: u64) -> std::io::Result<u64> {
    let blocks = len.div_ceil(CONTENT_BLOCK) as usize;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8).min(blocks.max(1));
    let share = blocks.div_ceil(threads.max(1)).max(1);
    let hash_share = |first: usize| -> std::io::Result<Vec<u64>> {
        let mut buf = vec![0u8; CONTENT_BLOCK as usize];
        let mut out = vec![];
        for b in first..(first + share).min(blocks) {
            let at = b as u64 * CONTENT_BLOCK;
            let want = (len - at).min(CONTENT_BLOCK) as usize;
            let mut got = 0;
            while got < want {
                match src.read_at(&mut buf[got..want], at + got as u64)? {
                    0 => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the file is shorter")),
                    n => got += n,
                }
            }
            out.push(xxhash_rust::xxh3::xxh3_64(&buf[..want]));
        }
        Ok(out)
    };
    let parts: Vec<std::io::Result<Vec<u64>>> = if threads < 2 {
        vec![hash_share(0)]
    } else {
        std::thread::scope(|sc| {
            let handles: Vec<_> = (0..blocks).step_by(share).map(|first| sc.spawn(move || hash_share(first))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("a hash thread failed"))))
                .collect()
        })
    };
    let mut all = Vec::with_capacity(blocks * 8 + 8);
    all.extend_from_slice(&len.to_le_bytes());
    for part in parts {
        for h in part? {
            all.extend_from_slice(&h.to_le_bytes());
        }
    }
    Ok(xxhash_rust::xxh3::xxh3_64(&all).max(1))
}

/// The content hash an index's fixed part records (0: not known).
pub(crate) fn content_of(fixed: &[u8]) -> u64 {
    fixed.get(CONTENT_AT..CONTENT_AT + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes)
}
