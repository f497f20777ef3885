// SPDX-License-Identifier: BSD-2-Clause
//! One side of a QUIC connection in virtual time: a quinn-proto `Endpoint` with its one
//! `Connection`, driven by the caller's clock (integer nanoseconds since the transfer began).
//!
//! Nothing here reads a clock: an instant is `base + now_ns`, `base` taken once at construction
//! (quinn-proto only computes with the instants it is handed).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use quinn_proto::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn_proto::{
    AckFrequencyConfig, ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint,
    EndpointConfig, Event, FinishError, FrameStats, IdleTimeout, ReadError, ReadableError,
    ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt, WriteError,
};
use ring::{hkdf, hmac};
use std::time::Instant;

use crate::crypto;
use crate::seeded::{initial_dcid_provider, thread_rng_is_seeded, SeededBbr, SeededCids, Seeds};

pub const MIN_DATAGRAM: u16 = 1200; // RFC 9000 section 14
pub const MAX_DATAGRAM: u16 = 1472; // a 1518-byte Ethernet frame's UDP payload
/// quinn-proto 0.11.19 advertises (and its receiver uses) max_ack_delay = 25 ms, always:
/// TransportConfig has no setting for it.
pub const QUINN_MAX_ACK_DELAY_NS: u64 = 25_000_000;

/// A refusal (ValueError in Python) or a state error (RuntimeError).
#[derive(Debug)]
pub enum Error {
    Value(String),
    State(String),
}

pub type Result<T> = std::result::Result<T, Error>;

fn value<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Value(msg.into()))
}

fn state<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::State(msg.into()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

#[derive(Clone, Copy, Debug)]
pub enum Cc {
    Reno,
    Cubic,
    Bbr,
}

impl Cc {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "reno" => Ok(Cc::Reno),
            "cubic" => Ok(Cc::Cubic),
            "bbr" => Ok(Cc::Bbr),
            _ => value(format!(
                "congestion controller '{name}': one of reno, cubic, bbr"
            )),
        }
    }
}

/// What the peer asks of its peer through draft-ietf-quic-ack-frequency.
#[derive(Clone, Copy, Debug)]
pub struct AckFrequencyRequest {
    pub threshold: u64,
    pub max_ack_delay_ns: u64,
    pub reordering: u64,
}

/// The ranges the settings must lie in, each (lowest, highest) inclusive. They are not this
/// crate's: the host tool declares them once (satemu.quic.settings.quinn_limits, the same
/// table EndpointSettings.check holds) and hands them to every Endpoint it makes.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_datagram: (u64, u64),
    pub initial_window_bytes: (u64, u64),
    pub initial_rtt_ns: (u64, u64),
    pub window: (u64, u64),
}

impl Limits {
    /// The limits as the host tool names them; a name missing, or a range that is empty or
    /// reaches past what QUIC carries, is refused.
    pub fn from_pairs(get: impl Fn(&str) -> Option<(u64, u64)>) -> Result<Self> {
        let range = |name: &str, top: u64| -> Result<(u64, u64)> {
            match get(name) {
                Some((lo, hi)) if lo <= hi && hi <= top => Ok((lo, hi)),
                Some((lo, hi)) => value(format!("limits: {name} ({lo}, {hi}) is not a range \
                                                 within 0..{top}")),
                None => value(format!("limits: {name} is missing")),
            }
        };
        let limits = Limits {
            max_datagram: range("max_datagram", u64::from(u16::MAX))?,
            initial_window_bytes: range("initial_window_bytes", VARINT_MAX)?,
            initial_rtt_ns: range("initial_rtt_ns", u64::MAX)?,
            window: range("window", VARINT_MAX)?,
        };
        Ok(limits)
    }
}

/// The transport settings of one endpoint.
#[derive(Clone, Debug)]
pub struct Settings {
    pub cc: Cc,
    pub initial_window_bytes: Option<u64>,
    pub initial_rtt_ns: u64,
    pub max_datagram: u16,
    pub stream_window: u64,
    pub conn_window: u64,
    pub max_ack_delay_ns: Option<u64>,
    pub ack_frequency: Option<AckFrequencyRequest>,
    pub idle_timeout_ns: u64,
    pub limits: Limits,
}

const VARINT_MAX: u64 = (1 << 62) - 1;

impl Settings {
    pub fn check(&self) -> Result<()> {
        let l = &self.limits;
        let within = |(lo, hi): (u64, u64), v: u64| lo <= v && v <= hi;
        let (lo, hi) = l.max_datagram;
        if !within(l.max_datagram, u64::from(self.max_datagram))
            || self.max_datagram < MIN_DATAGRAM
            || self.max_datagram > MAX_DATAGRAM
        {
            return value(format!(
                "max datagram {} B is outside {lo}..{hi} B",
                self.max_datagram
            ));
        }
        if let Some(w) = self.initial_window_bytes {
            let (lo, hi) = l.initial_window_bytes;
            if !within(l.initial_window_bytes, w) {
                return value(format!("initial window {w} B is outside {lo}..{hi} B"));
            }
        }
        let (lo, hi) = l.initial_rtt_ns;
        if !within(l.initial_rtt_ns, self.initial_rtt_ns) || self.initial_rtt_ns == 0 {
            return value(format!(
                "initial RTT {} ns is outside {lo}..{hi} ns",
                self.initial_rtt_ns
            ));
        }
        for (name, v) in [
            ("stream window", self.stream_window),
            ("conn window", self.conn_window),
        ] {
            let (lo, hi) = l.window;
            if !within(l.window, v) {
                return value(format!("{name} {v} B is outside {lo}..{hi} B"));
            }
        }
        if let Some(d) = self.max_ack_delay_ns {
            if d != QUINN_MAX_ACK_DELAY_NS {
                return value(format!(
                    "max_ack_delay {} ms: quinn-proto 0.11.19 always advertises and uses 25 ms \
                     (its TransportConfig has no max_ack_delay setting)",
                    d as f64 / 1e6
                ));
            }
        }
        if let Some(af) = &self.ack_frequency {
            // draft-ietf-quic-ack-frequency: Request Max Ack Delay in microseconds, at least 1 ms
            // (quinn's receiver refuses less than its min_ack_delay, 1 ms)
            if af.max_ack_delay_ns < 1_000_000 || af.max_ack_delay_ns / 1000 > VARINT_MAX {
                return value(format!(
                    "ack-frequency max_ack_delay {} ns is below 1 ms or too large",
                    af.max_ack_delay_ns
                ));
            }
            if af.threshold > VARINT_MAX || af.reordering > VARINT_MAX {
                return value("ack-frequency threshold or reordering threshold is too large");
            }
        }
        if self.idle_timeout_ns < 1_000_000 || self.idle_timeout_ns / 1_000_000 > VARINT_MAX {
            return value(format!(
                "idle timeout {} ns is below 1 ms or too large",
                self.idle_timeout_ns
            ));
        }
        Ok(())
    }

    fn transport(&self, seeds: &Seeds) -> Result<TransportConfig> {
        let mut t = TransportConfig::default();
        let mtu = self.max_datagram;
        t.initial_mtu(mtu)
            .min_mtu(mtu)
            .mtu_discovery_config(None)
            .initial_rtt(std::time::Duration::from_nanos(self.initial_rtt_ns))
            .stream_receive_window(varint(self.stream_window)?)
            .receive_window(varint(self.conn_window)?)
            .send_window(self.conn_window.max(64 << 20))
            .max_idle_timeout(Some(IdleTimeout::from(varint(
                self.idle_timeout_ns / 1_000_000,
            )?)))
            .keep_alive_interval(None)
            .datagram_receive_buffer_size(None)
            .enable_segmentation_offload(false);
        match self.cc {
            Cc::Reno => {
                let mut c = NewRenoConfig::default();
                if let Some(w) = self.initial_window_bytes {
                    c.initial_window(w);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            Cc::Cubic => {
                let mut c = CubicConfig::default();
                if let Some(w) = self.initial_window_bytes {
                    c.initial_window(w);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            Cc::Bbr => {
                if !thread_rng_is_seeded() {
                    return state(
                        "this satemu_quinn was built without getrandom's custom backend \
                         (host/quinn/.cargo/config.toml), so BBR would not repeat: rebuild it \
                         with scripts/build_quinn.sh",
                    );
                }
                let mut c = BbrConfig::default();
                if let Some(w) = self.initial_window_bytes {
                    c.initial_window(w);
                }
                t.congestion_controller_factory(Arc::new(SeededBbr::new(c, seeds)));
            }
        }
        if let Some(af) = &self.ack_frequency {
            let mut c = AckFrequencyConfig::default();
            c.ack_eliciting_threshold(varint(af.threshold)?)
                .max_ack_delay(Some(std::time::Duration::from_nanos(af.max_ack_delay_ns)))
                .reordering_threshold(varint(af.reordering)?);
            t.ack_frequency_config(Some(c));
        }
        Ok(t)
    }
}

fn varint(v: u64) -> Result<VarInt> {
    VarInt::from_u64(v).or_else(|_| value(format!("{v} does not fit a QUIC varint")))
}

/// What the application sees, in order.
#[derive(Debug)]
pub enum AppEvent {
    /// The handshake completed.
    Connected,
    /// A stream we asked for (open_bidi) was opened with this id.
    Opened(u64),
    /// Stream data in order, and whether the stream ended with it.
    Data(u64, Vec<u8>, bool),
    /// The peer reset a stream we receive on (error code).
    Reset(u64, u64),
    /// The peer asked us to stop sending on a stream (error code).
    Stopped(u64, u64),
    /// The connection is closed (the reason).
    Closed(String),
}

/// Bytes written by the application that quinn has not taken yet.
#[derive(Default)]
struct PendingSend {
    chunks: VecDeque<Bytes>,
    fin: bool,
}

#[derive(Default, Clone, Copy)]
pub struct Counters {
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    pub ack_only_sent: u64,
    pub ack_only_bytes_sent: u64,
}

/// Every frame count but ACK's (PADDING is not counted by quinn).
fn non_ack_frames(f: &FrameStats) -> u64 {
    f.ack_frequency
        + f.crypto
        + f.connection_close
        + f.data_blocked
        + f.datagram
        + u64::from(f.handshake_done)
        + f.immediate_ack
        + f.max_data
        + f.max_stream_data
        + f.max_streams_bidi
        + f.max_streams_uni
        + f.new_connection_id
        + f.new_token
        + f.path_challenge
        + f.path_response
        + f.ping
        + f.reset_stream
        + f.retire_connection_id
        + f.stream_data_blocked
        + f.streams_blocked_bidi
        + f.streams_blocked_uni
        + f.stop_sending
        + f.stream
}

pub struct Driver {
    pub role: Role,
    base: std::time::Instant,
    last_now_ns: u64,
    endpoint: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    drained: bool,
    client_config: Option<ClientConfig>,
    server_name: String,
    remote: SocketAddr,
    /// Datagrams the endpoint itself answered with (version negotiation, stateless reset, ...).
    responses: VecDeque<Vec<u8>>,
    events: VecDeque<AppEvent>,
    requests: VecDeque<(Bytes, bool)>,
    sends: BTreeMap<u64, PendingSend>,
    pub counters: Counters,
    handshake_lost_packets: Option<u64>,
    buf: Vec<u8>,
    /// The connection's TLS secrets, as SSLKEYLOGFILE lines.
    pub key_log: Arc<crypto::KeyLogLines>,
}

pub struct Params<'a> {
    pub role: Role,
    pub seed: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub cert_der: &'a [u8],
    pub key_der: Option<&'a [u8]>,
    pub server_name: String,
    pub alpn: Vec<u8>,
    pub settings: Settings,
}

impl Driver {
    pub fn new(p: Params<'_>) -> Result<Self> {
        p.settings.check()?;
        if !p.local.is_ipv4() || !p.remote.is_ipv4() {
            return value("local and remote must be IPv4 addresses");
        }
        if p.remote.port() == 0 || p.local.port() == 0 {
            return value("local and remote need a UDP port");
        }
        if p.alpn.is_empty() || p.alpn.len() > 255 {
            return value("ALPN must be 1..255 bytes");
        }
        let role_name = match p.role {
            Role::Client => "client",
            Role::Server => "server",
        };
        let seeds = Seeds::new(p.seed, role_name);
        let transport = Arc::new(p.settings.transport(&seeds)?);

        let reset_key = hmac::Key::new(hmac::HMAC_SHA256, &seeds.derive("reset key"));
        let mut endpoint_config = EndpointConfig::new(Arc::new(reset_key));
        let cid_seeds = seeds.clone();
        endpoint_config
            .cid_generator(move || Box::new(SeededCids::new(&cid_seeds)))
            .rng_seed(Some(seeds.derive("endpoint")))
            .max_udp_payload_size(p.settings.max_datagram)
            .map_err(|e| Error::Value(format!("max datagram: {e}")))?;

        let key_log = Arc::new(crypto::KeyLogLines::default());
        let (server_config, client_config) = match p.role {
            Role::Server => {
                let key = match p.key_der {
                    Some(k) => k,
                    None => return value("a server needs its private key (key_der)"),
                };
                let tls = crypto::server_config(&seeds, p.cert_der, key, &p.alpn, key_log.clone())
                    .map_err(Error::Value)?;
                let token_key =
                    hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &seeds.derive("token key"));
                let mut config = ServerConfig::new(Arc::new(tls), Arc::new(token_key));
                config
                    .transport_config(transport)
                    .migration(false)
                    .time_source(Arc::new(FixedTime));
                config.validation_token.sent(0);
                (Some(Arc::new(config)), None)
            }
            Role::Client => {
                if p.key_der.is_some() {
                    return value("a client takes no private key");
                }
                if p.server_name.is_empty() {
                    return value("a client needs the server's name");
                }
                let tls =
                    crypto::client_config(&seeds, p.cert_der, &p.alpn, key_log.clone())
                        .map_err(Error::Value)?;
                let mut config = ClientConfig::new(Arc::new(tls));
                config
                    .transport_config(transport)
                    .initial_dst_cid_provider(initial_dcid_provider(&seeds));
                (None, Some(config))
            }
        };
        let endpoint = Endpoint::new(Arc::new(endpoint_config), server_config, false, None);
        Ok(Self {
            role: p.role,
            base: std::time::Instant::now(),
            last_now_ns: 0,
            endpoint,
            conn: None,
            drained: false,
            client_config,
            server_name: p.server_name,
            remote: p.remote,
            responses: VecDeque::new(),
            events: VecDeque::new(),
            requests: VecDeque::new(),
            sends: BTreeMap::new(),
            counters: Counters::default(),
            handshake_lost_packets: None,
            buf: Vec::with_capacity(usize::from(MAX_DATAGRAM)),
            key_log,
        })
    }

    fn instant(&mut self, now_ns: u64) -> Result<Instant> {
        if now_ns < self.last_now_ns {
            return value(format!(
                "time went backwards: {now_ns} ns after {} ns",
                self.last_now_ns
            ));
        }
        self.last_now_ns = now_ns;
        Ok(self.base + std::time::Duration::from_nanos(now_ns))
    }

    pub fn has_connection(&self) -> bool {
        self.conn.is_some()
    }

    pub fn is_closed(&self) -> bool {
        self.conn.as_ref().is_some_and(|(_, c)| c.is_closed())
    }

    // ---- the sans-I/O entry points -------------------------------------------------------

    pub fn connect(&mut self, now_ns: u64) -> Result<()> {
        let now = self.instant(now_ns)?;
        let config = match (&self.role, &self.client_config) {
            (Role::Client, Some(c)) => c.clone(),
            _ => {
                return value(
                    "connect() is for the client; a server waits for the client's Initial",
                )
            }
        };
        if self.conn.is_some() {
            return state("connect() was called already");
        }
        let (ch, conn) = self
            .endpoint
            .connect(now, config, self.remote, &self.server_name)
            .map_err(|e| Error::Value(format!("cannot connect: {e}")))?;
        self.conn = Some((ch, conn));
        self.process();
        Ok(())
    }

    pub fn receive(&mut self, data: &[u8], now_ns: u64) -> Result<()> {
        let now = self.instant(now_ns)?;
        if self.role == Role::Client && self.conn.is_none() {
            return state("receive() before connect(): the client has no connection yet");
        }
        self.counters.datagrams_received += 1;
        self.counters.bytes_received += data.len() as u64;
        self.buf.clear();
        let event = self.endpoint.handle(
            now,
            self.remote,
            None,
            None,
            BytesMut::from(data),
            &mut self.buf,
        );
        match event {
            None => {}
            Some(DatagramEvent::ConnectionEvent(ch, event)) => {
                if let Some((mine, conn)) = self.conn.as_mut() {
                    if *mine == ch {
                        conn.handle_event(event);
                    }
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.conn.is_some() || self.role == Role::Client {
                    self.endpoint.ignore(incoming); // one connection per endpoint
                } else {
                    self.buf.clear();
                    match self.endpoint.accept(incoming, now, &mut self.buf, None) {
                        Ok((ch, conn)) => self.conn = Some((ch, conn)),
                        Err(e) => {
                            if let Some(t) = e.response {
                                self.responses.push_back(self.buf[..t.size].to_vec());
                            }
                            self.events
                                .push_back(AppEvent::Closed(format!("refused: {}", e.cause)));
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                self.responses.push_back(self.buf[..t.size].to_vec())
            }
        }
        self.process();
        Ok(())
    }

    pub fn handle_timeout(&mut self, now_ns: u64) -> Result<()> {
        let now = self.instant(now_ns)?;
        if let Some((_, conn)) = self.conn.as_mut() {
            conn.handle_timeout(now);
        }
        self.process();
        Ok(())
    }

    /// When handle_timeout() is next due (ns since the start), or None.
    pub fn timeout(&mut self) -> Option<u64> {
        let (_, conn) = self.conn.as_mut()?;
        let t = conn.poll_timeout()?;
        Some(
            t.saturating_duration_since(self.base)
                .as_nanos()
                .min(u128::from(u64::MAX)) as u64,
        )
    }

    /// Every datagram to send at `now_ns`, each with whether it carries only ACKs (and padding).
    pub fn transmit(&mut self, now_ns: u64) -> Result<Vec<(Vec<u8>, bool)>> {
        let now = self.instant(now_ns)?;
        let mut out: Vec<(Vec<u8>, bool)> = self.responses.drain(..).map(|d| (d, false)).collect();
        for _round in 0..64 {
            self.process();
            let Some((_, conn)) = self.conn.as_mut() else {
                break;
            };
            let mut sent = 0;
            loop {
                let before = conn.stats().frame_tx;
                self.buf.clear();
                let Some(t) = conn.poll_transmit(now, 1, &mut self.buf) else {
                    break;
                };
                let after = conn.stats().frame_tx;
                let ack_only = after.acks > before.acks
                    && non_ack_frames(&after) == non_ack_frames(&before)
                    && !conn.is_closed();
                out.push((self.buf[..t.size].to_vec(), ack_only));
                sent += 1;
            }
            if sent == 0 {
                break;
            }
        }
        for (d, ack_only) in &out {
            self.counters.datagrams_sent += 1;
            self.counters.bytes_sent += d.len() as u64;
            if *ack_only {
                self.counters.ack_only_sent += 1;
                self.counters.ack_only_bytes_sent += d.len() as u64;
            }
        }
        Ok(out)
    }

    pub fn take_events(&mut self) -> Vec<AppEvent> {
        self.events.drain(..).collect()
    }

    // ---- application operations -----------------------------------------------------------

    /// Open a bidirectional stream as soon as the peer allows one, and write `data` on it
    /// (finishing it if `fin`); AppEvent::Opened tells the stream's id.
    pub fn open_bidi(&mut self, data: Vec<u8>, fin: bool) -> Result<()> {
        if self.conn.is_none() {
            return state("open_bidi() before there is a connection");
        }
        self.requests.push_back((Bytes::from(data), fin));
        self.process();
        Ok(())
    }

    fn stream_id(&self, id: u64, sending: bool) -> Result<StreamId> {
        let sid = StreamId::from(varint(id)?);
        let mine = match self.role {
            Role::Client => quinn_proto::Side::Client,
            Role::Server => quinn_proto::Side::Server,
        };
        if sending && sid.dir() == Dir::Uni && sid.initiator() != mine {
            return value(format!(
                "stream {id} is the peer's unidirectional stream: we cannot send on it"
            ));
        }
        Ok(sid)
    }

    /// Write `data` on stream `id` (finishing it if `fin`): buffered here, handed to quinn as
    /// flow control and the send window allow.
    pub fn write(&mut self, id: u64, data: Vec<u8>, fin: bool) -> Result<()> {
        let sid = self.stream_id(id, true)?;
        let Some((_, conn)) = self.conn.as_mut() else {
            return state("write() before there is a connection");
        };
        if conn.send_stream(sid).stopped().is_err() {
            return value(format!("stream {id} is not open for sending"));
        }
        let pending = self.sends.entry(id).or_default();
        if pending.fin {
            return value(format!("stream {id} was finished already"));
        }
        if !data.is_empty() {
            pending.chunks.push_back(Bytes::from(data));
        }
        pending.fin = fin;
        self.process();
        Ok(())
    }

    /// Reset stream `id` with `code` (RESET_STREAM); unsent bytes are dropped.
    pub fn reset(&mut self, id: u64, code: u64) -> Result<()> {
        let sid = self.stream_id(id, true)?;
        let code = varint(code)?;
        let Some((_, conn)) = self.conn.as_mut() else {
            return state("reset() before there is a connection");
        };
        self.sends.remove(&id);
        conn.send_stream(sid)
            .reset(code)
            .map_err(|_| Error::Value(format!("stream {id} is not open for sending")))?;
        self.process();
        Ok(())
    }

    // ---- internals ------------------------------------------------------------------------

    /// Exchange endpoint events, take the application events, open asked-for streams and hand
    /// quinn the buffered writes, until nothing changes.
    fn process(&mut self) {
        for _ in 0..1000 {
            let Some((ch, conn)) = self.conn.as_mut() else {
                return;
            };
            let ch = *ch;
            while let Some(event) = conn.poll_endpoint_events() {
                if self.drained {
                    continue;
                }
                let drained = event.is_drained();
                if let Some(reply) = self.endpoint.handle_event(ch, event) {
                    conn.handle_event(reply);
                }
                self.drained |= drained;
            }
            let mut events = Vec::new();
            while let Some(event) = conn.poll() {
                events.push(event);
            }
            let mut changed = !events.is_empty();
            for event in events {
                self.on_event(event);
            }
            changed |= self.open_requested();
            self.flush();
            if !changed {
                return;
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        match event {
            Event::Connected => {
                self.handshake_lost_packets = Some(conn.stats().path.lost_packets);
                self.events.push_back(AppEvent::Connected);
            }
            Event::ConnectionLost { reason } => {
                self.sends.clear();
                self.events.push_back(AppEvent::Closed(reason.to_string()));
            }
            Event::Stream(StreamEvent::Opened { dir }) => {
                let mut opened = Vec::new();
                while let Some(id) = conn.streams().accept(dir) {
                    opened.push(id);
                }
                for id in opened {
                    self.read(id);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => self.read(id),
            Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                self.sends.remove(&u64::from(id));
                self.events
                    .push_back(AppEvent::Stopped(id.into(), error_code.into_inner()));
            }
            Event::Stream(_)
            | Event::HandshakeDataReady
            | Event::DatagramReceived
            | Event::DatagramsUnblocked => {}
        }
    }

    fn read(&mut self, id: StreamId) {
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let (mut data, mut fin, mut reset) = (Vec::new(), false, None);
        let mut stream = conn.recv_stream(id);
        let mut chunks = match stream.read(true) {
            Ok(chunks) => chunks,
            Err(ReadableError::ClosedStream) | Err(ReadableError::IllegalOrderedRead) => return,
        };
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => data.extend_from_slice(&chunk.bytes),
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    reset = Some(code.into_inner());
                    break;
                }
            }
        }
        let _ = chunks.finalize(); // any MAX_STREAM_DATA goes out with the next transmit()
        if !data.is_empty() || fin {
            self.events.push_back(AppEvent::Data(id.into(), data, fin));
        }
        if let Some(code) = reset {
            self.events.push_back(AppEvent::Reset(id.into(), code));
        }
    }

    fn open_requested(&mut self) -> bool {
        let mut opened = false;
        while !self.requests.is_empty() {
            let Some((_, conn)) = self.conn.as_mut() else {
                break;
            };
            let Some(id) = conn.streams().open(Dir::Bi) else {
                break;
            };
            let (data, fin) = self.requests.pop_front().expect("not empty");
            let pending = self.sends.entry(id.into()).or_default();
            if !data.is_empty() {
                pending.chunks.push_back(data);
            }
            pending.fin = fin;
            self.events.push_back(AppEvent::Opened(id.into()));
            opened = true;
        }
        opened
    }

    fn flush(&mut self) {
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let mut done = Vec::new();
        for (&id, pending) in self.sends.iter_mut() {
            let sid = StreamId::from(VarInt::from_u64(id).expect("stream ids are varints"));
            let mut stream = conn.send_stream(sid);
            let mut gone = false;
            while let Some(front) = pending.chunks.front_mut() {
                match stream.write_chunks(std::slice::from_mut(front)) {
                    Ok(_) if front.is_empty() => {
                        pending.chunks.pop_front();
                    }
                    Ok(w) if w.bytes > 0 => {}
                    Ok(_) | Err(WriteError::Blocked) => break,
                    Err(WriteError::Stopped(_)) | Err(WriteError::ClosedStream) => {
                        gone = true;
                        break;
                    }
                }
            }
            if gone {
                done.push(id);
            } else if pending.chunks.is_empty() && pending.fin {
                match stream.finish() {
                    Ok(()) | Err(FinishError::Stopped(_)) | Err(FinishError::ClosedStream) => {
                        done.push(id)
                    }
                }
            } else if pending.chunks.is_empty() {
                done.push(id); // nothing left, stream stays open
            }
        }
        for id in done {
            self.sends.remove(&id);
        }
    }

    // ---- statistics -------------------------------------------------------------------------

    pub fn stats(&self) -> Stats {
        let mut s = Stats {
            counters: self.counters,
            ..Stats::default()
        };
        if let Some((_, conn)) = self.conn.as_ref() {
            let c = conn.stats();
            s.ack_frames_sent = c.frame_tx.acks;
            s.ack_frequency_sent = c.frame_tx.ack_frequency;
            s.ack_frequency_received = c.frame_rx.ack_frequency;
            s.immediate_ack_sent = c.frame_tx.immediate_ack;
            s.lost_packets = c.path.lost_packets;
            s.lost_bytes = c.path.lost_bytes;
            s.congestion_events = c.path.congestion_events;
            s.sent_packets = c.path.sent_packets;
            s.cwnd = c.path.cwnd;
            s.rtt_ms = c.path.rtt.as_secs_f64() * 1e3;
            s.handshake_lost_packets = self.handshake_lost_packets;
        }
        s
    }
}

#[derive(Default)]
pub struct Stats {
    pub counters: Counters,
    pub ack_frames_sent: u64,
    pub ack_frequency_sent: u64,
    pub ack_frequency_received: u64,
    pub immediate_ack_sent: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub congestion_events: u64,
    pub sent_packets: u64,
    pub cwnd: u64,
    pub rtt_ms: f64,
    pub handshake_lost_packets: Option<u64>,
}

/// The server's wall clock for tokens (which it sends none of): a fixed instant.
struct FixedTime;

impl quinn_proto::TimeSource for FixedTime {
    fn now(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_067_200) // 2024-01-01
    }
}
