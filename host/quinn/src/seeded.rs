// SPDX-License-Identifier: BSD-2-Clause
//! Everything random in one endpoint, derived from its seed and role.
//!
//! quinn-proto draws from the system only where its defaults do: its CID generators, the client's
//! first destination CID, the reset and token keys, and BBR, whose generator is seeded from rand's
//! thread-local generator. Each of these is replaced or fed from [`Seeds`]; BBR through
//! getrandom's custom backend (see [`SeededBbr`]).

use std::cell::RefCell;
use std::io::Read;
use std::sync::{Arc, Mutex};

use quinn_proto::congestion::{BbrConfig, Controller, ControllerFactory};
use std::time::{Duration, Instant};

use quinn_proto::{ConnectionId, ConnectionIdGenerator};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use ring::digest;

/// The bytes of satemu's connection IDs (aioquic's length).
pub const CID_LEN: usize = 8;

/// The root of one endpoint's randomness: SHA-256 over the seed and the role, so the client and
/// the server of one run get distinct streams from the same seed.
#[derive(Clone)]
pub struct Seeds([u8; 32]);

impl Seeds {
    pub fn new(seed: u64, role: &str) -> Self {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(b"satemu-quinn seeds v1\0");
        ctx.update(role.as_bytes());
        ctx.update(b"\0");
        ctx.update(&seed.to_le_bytes());
        Self(to_array(ctx.finish()))
    }

    /// 32 bytes for one purpose, independent of every other purpose's.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(&self.0);
        ctx.update(purpose.as_bytes());
        to_array(ctx.finish())
    }

    pub fn rng(&self, purpose: &str) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.derive(purpose))
    }
}

fn to_array(d: digest::Digest) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// 8-byte connection IDs from a seeded generator (quinn's own generators use the thread's).
pub struct SeededCids(ChaCha20Rng);

impl SeededCids {
    pub fn new(seeds: &Seeds) -> Self {
        Self(seeds.rng("connection ids"))
    }
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut bytes = [0u8; CID_LEN];
        self.0.fill_bytes(&mut bytes);
        ConnectionId::new(&bytes)
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The client's first destination CID (8 bytes, as aioquic's), from the seed.
pub fn initial_dcid_provider(seeds: &Seeds) -> Arc<dyn Fn() -> ConnectionId + Send + Sync> {
    let rng = Mutex::new(seeds.rng("initial destination cid"));
    Arc::new(move || {
        let mut bytes = [0u8; CID_LEN];
        // A poisoned lock only means another call panicked; the generator is still whole.
        rng.lock()
            .unwrap_or_else(|e| e.into_inner())
            .fill_bytes(&mut bytes);
        ConnectionId::new(&bytes)
    })
}

// ---------------------------------------------------------------------------------------------
// BBR

thread_local! {
    /// While set, getrandom on this thread draws from it instead of the system.
    static SOURCE: RefCell<Option<ChaCha20Rng>> = const { RefCell::new(None) };
}

/// getrandom 0.4's custom backend (selected in .cargo/config.toml): the thread's seeded source
/// while [`with_seeded_thread_rng`] runs, the system's (/dev/urandom) otherwise.
///
/// # Safety
/// getrandom calls it with a writable buffer of `len` bytes.
#[unsafe(no_mangle)]
unsafe extern "Rust" fn __getrandom_v03_custom(
    dest: *mut u8,
    len: usize,
) -> Result<(), getrandom::Error> {
    let buf = unsafe {
        core::ptr::write_bytes(dest, 0, len);
        core::slice::from_raw_parts_mut(dest, len)
    };
    let seeded = SOURCE.with(|source| match source.borrow_mut().as_mut() {
        Some(rng) => {
            rng.fill_bytes(buf);
            true
        }
        None => false,
    });
    if seeded {
        return Ok(());
    }
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|_| getrandom::Error::UNEXPECTED)
}

/// Run `f` with rand's thread-local generator freshly reseeded from `seed`.
fn with_seeded_thread_rng<T>(seed: [u8; 32], f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SOURCE.with(|source| *source.borrow_mut() = None);
        }
    }
    // The thread's generator first (its lazy initialization draws from getrandom too), then
    // the seeded source, then the reseed that takes the source's first 32 bytes.
    let mut rng = rand::rng();
    SOURCE.with(|source| *source.borrow_mut() = Some(ChaCha20Rng::from_seed(seed)));
    let _reset = Reset;
    // Without the custom backend this reseeds from the system: see thread_rng_is_seeded().
    let _ = rng.reseed();
    f()
}

/// Whether reseeding rand's thread generator through getrandom really takes our seed (false if
/// the module was built without getrandom's custom backend).
pub fn thread_rng_is_seeded() -> bool {
    let draw =
        || with_seeded_thread_rng([7u8; 32], || rand::RngExt::random::<u64>(&mut rand::rng()));
    draw() == draw()
}

/// quinn-proto's BBR, whose generator (it picks the ProbeBW gain cycle's phase) is seeded from
/// rand's thread generator: each build reseeds that generator from this endpoint's seed first.
pub struct SeededBbr {
    config: Arc<BbrConfig>,
    rng: Mutex<ChaCha20Rng>,
}

impl SeededBbr {
    pub fn new(config: BbrConfig, seeds: &Seeds) -> Self {
        Self {
            config: Arc::new(config),
            rng: Mutex::new(seeds.rng("bbr")),
        }
    }
}

impl ControllerFactory for SeededBbr {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let mut seed = [0u8; 32];
        self.rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .fill_bytes(&mut seed);
        with_seeded_thread_rng(seed, || self.config.clone().build(now, current_mtu))
    }
}
