// SPDX-License-Identifier: BSD-2-Clause
//! `satemu_quinn`: quinn-proto 0.11.19 as a sans-I/O QUIC endpoint for Python, in virtual time.
//!
//! ```python
//! ep = satemu_quinn.Endpoint("client", seed, "10.0.0.1:4433", "10.0.0.2:4433", cert_der)
//! ep.connect(0)
//! ep.open_bidi(b"GET 1000\n", True)
//! for data, ack_only in ep.transmit(0): ...        # datagrams to send now
//! ep.receive(datagram, now_ns); ep.handle_timeout(now_ns); ep.timeout() -> ns or None
//! ep.key_log()  # the TLS secrets so far, SSLKEYLOGFILE lines
//! ep.events()  # [("connected",), ("opened", id), ("data", id, bytes, fin), ("reset", id, code),
//!              #  ("stopped", id, code), ("closed", reason)]
//! ```
//! Times are integer nanoseconds since the transfer's start, never decreasing. Misuse raises
//! ValueError (a refused argument) or RuntimeError (a call out of order); a panic inside quinn
//! becomes a RuntimeError and leaves the endpoint unusable.

mod conn;
mod crypto;
mod seeded;

use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use conn::{AckFrequencyRequest, AppEvent, Cc, Driver, Error, Limits, Params, Role, Settings};

fn to_py(e: Error) -> PyErr {
    match e {
        Error::Value(m) => PyValueError::new_err(m),
        Error::State(m) => PyRuntimeError::new_err(m),
    }
}

fn parse_addr(what: &str, text: &str) -> PyResult<SocketAddr> {
    text.parse::<SocketAddr>()
        .map_err(|_| PyValueError::new_err(format!("{what} address {text:?}: expected IPv4:port")))
}

/// One QUIC endpoint (client or server) with its one connection.
#[pyclass(module = "satemu_quinn", name = "Endpoint")]
struct PyEndpoint {
    driver: Option<Driver>,
}

impl PyEndpoint {
    /// Run `f` on the driver; a panic in it becomes a RuntimeError and retires the endpoint.
    fn with<T>(&mut self, f: impl FnOnce(&mut Driver) -> conn::Result<T>) -> PyResult<T> {
        let Some(driver) = self.driver.as_mut() else {
            return Err(PyRuntimeError::new_err(
                "this endpoint failed earlier (quinn-proto panicked) and cannot be used",
            ));
        };
        match catch_unwind(AssertUnwindSafe(|| f(driver))) {
            Ok(result) => result.map_err(to_py),
            Err(panic) => {
                self.driver = None;
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(PyRuntimeError::new_err(format!(
                    "quinn-proto panicked: {msg}"
                )))
            }
        }
    }
}

#[pymethods]
impl PyEndpoint {
    /// Endpoint(role, seed, local, remote, cert_der, key_der=None, *, server_name="satemu-server",
    /// alpn=b"satemu", cc="reno", initial_window_bytes=None, initial_rtt_ns=333_000_000,
    /// max_datagram=1472, stream_window=64 MiB, conn_window=64 MiB, max_ack_delay_ns=None,
    /// ack_frequency=None, idle_timeout_ns=60 s)
    ///
    /// ``role``: "client" or "server"; ``seed``: 0..2^64-1; ``local``/``remote``: "a.b.c.d:port";
    /// ``cert_der``: the server's certificate (the client trusts exactly it); ``key_der``: the
    /// server's P-256 key, PKCS#8 DER. ``ack_frequency``: (threshold, max_ack_delay_ns,
    /// reordering) to ask of the peer (draft-ietf-quic-ack-frequency), or None.
    #[new]
    #[pyo3(signature = (role, seed, local, remote, cert_der, key_der=None, *,
                        server_name=None, alpn=None, cc="reno", initial_window_bytes=None,
                        initial_rtt_ns=333_000_000, max_datagram=1472,
                        stream_window=64 << 20, conn_window=64 << 20, max_ack_delay_ns=None,
                        ack_frequency=None, idle_timeout_ns=60_000_000_000, limits))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        role: &str,
        seed: u64,
        local: &str,
        remote: &str,
        cert_der: &[u8],
        key_der: Option<&[u8]>,
        server_name: Option<String>,
        alpn: Option<Vec<u8>>,
        cc: &str,
        initial_window_bytes: Option<u64>,
        initial_rtt_ns: u64,
        max_datagram: u64,
        stream_window: u64,
        conn_window: u64,
        max_ack_delay_ns: Option<u64>,
        ack_frequency: Option<(u64, u64, u64)>,
        idle_timeout_ns: u64,
        limits: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let role = match role {
            "client" => Role::Client,
            "server" => Role::Server,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "role {role:?}: client or server"
                )))
            }
        };
        let max_datagram = u16::try_from(max_datagram).unwrap_or(u16::MAX);
        let limits = Limits::from_pairs(|name| {
            limits
                .get_item(name)
                .ok()
                .flatten()
                .and_then(|v| v.extract::<(u64, u64)>().ok())
        })
        .map_err(to_py)?;
        let settings = Settings {
            cc: Cc::parse(cc).map_err(to_py)?,
            initial_window_bytes,
            initial_rtt_ns,
            max_datagram,
            stream_window,
            conn_window,
            max_ack_delay_ns,
            ack_frequency: ack_frequency.map(|(threshold, max_ack_delay_ns, reordering)| {
                AckFrequencyRequest {
                    threshold,
                    max_ack_delay_ns,
                    reordering,
                }
            }),
            idle_timeout_ns,
            limits,
        };
        let params = Params {
            role,
            seed,
            local: parse_addr("local", local)?,
            remote: parse_addr("remote", remote)?,
            cert_der,
            key_der,
            server_name: server_name.unwrap_or_else(|| "satemu-server".into()),
            alpn: alpn.unwrap_or_else(|| b"satemu".to_vec()),
            settings,
        };
        match catch_unwind(AssertUnwindSafe(|| Driver::new(params))) {
            Ok(Ok(driver)) => Ok(Self {
                driver: Some(driver),
            }),
            Ok(Err(e)) => Err(to_py(e)),
            Err(_) => Err(PyRuntimeError::new_err(
                "quinn-proto panicked while setting up",
            )),
        }
    }

    /// The connection's TLS secrets so far, as SSLKEYLOGFILE lines (bytes).
    fn key_log<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let lines = self.with(|d| Ok(d.key_log.lines()))?;
        Ok(PyBytes::new(py, &lines))
    }

    /// "client" or "server".
    #[getter]
    fn role(&self) -> &'static str {
        match self.driver.as_ref().map(|d| d.role) {
            Some(Role::Client) => "client",
            Some(Role::Server) => "server",
            None => "failed",
        }
    }

    /// Whether the connection exists (the client's after connect(), the server's after the
    /// client's first Initial).
    #[getter]
    fn has_connection(&self) -> bool {
        self.driver.as_ref().is_some_and(|d| d.has_connection())
    }

    /// Whether the connection is closing, draining or gone.
    #[getter]
    fn is_closed(&self) -> bool {
        self.driver.as_ref().is_some_and(|d| d.is_closed())
    }

    /// The client starts its handshake (its Initial leaves with the next transmit()).
    fn connect(&mut self, now_ns: u64) -> PyResult<()> {
        self.with(|d| d.connect(now_ns))
    }

    /// A datagram from the peer.
    fn receive(&mut self, data: &[u8], now_ns: u64) -> PyResult<()> {
        self.with(|d| d.receive(data, now_ns))
    }

    /// Every datagram to send now: a list of (bytes, ack_only).
    fn transmit(&mut self, py: Python<'_>, now_ns: u64) -> PyResult<Vec<(Py<PyBytes>, bool)>> {
        let out = self.with(|d| d.transmit(now_ns))?;
        Ok(out
            .into_iter()
            .map(|(data, ack_only)| (PyBytes::new(py, &data).unbind(), ack_only))
            .collect())
    }

    /// When handle_timeout() is next due, in ns since the start, or None.
    fn timeout(&mut self) -> PyResult<Option<u64>> {
        self.with(|d| Ok(d.timeout()))
    }

    fn handle_timeout(&mut self, now_ns: u64) -> PyResult<()> {
        self.with(|d| d.handle_timeout(now_ns))
    }

    /// The application events since the last call, in order (tuples, see the module's doc).
    fn events(&mut self, py: Python<'_>) -> PyResult<Vec<PyObject>> {
        let events = self.with(|d| Ok(d.take_events()))?;
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            let obj = match e {
                AppEvent::Connected => ("connected",).into_pyobject(py)?.into_any(),
                AppEvent::Opened(id) => ("opened", id).into_pyobject(py)?.into_any(),
                AppEvent::Data(id, data, fin) => ("data", id, PyBytes::new(py, &data), fin)
                    .into_pyobject(py)?
                    .into_any(),
                AppEvent::Reset(id, code) => ("reset", id, code).into_pyobject(py)?.into_any(),
                AppEvent::Stopped(id, code) => ("stopped", id, code).into_pyobject(py)?.into_any(),
                AppEvent::Closed(reason) => ("closed", reason).into_pyobject(py)?.into_any(),
            };
            out.push(obj.unbind());
        }
        Ok(out)
    }

    /// Open a bidirectional stream as soon as the peer allows, with ``data`` (and FIN if
    /// ``fin``); an ("opened", id) event names it.
    #[pyo3(signature = (data, fin=true))]
    fn open_bidi(&mut self, data: &[u8], fin: bool) -> PyResult<()> {
        let data = data.to_vec();
        self.with(|d| d.open_bidi(data, fin))
    }

    /// Write ``data`` on stream ``stream_id`` (then FIN if ``fin``); buffered in Rust and handed
    /// to quinn as flow control allows. The bytes are copied once.
    #[pyo3(signature = (stream_id, data, fin=false))]
    fn write(&mut self, stream_id: u64, data: &[u8], fin: bool) -> PyResult<()> {
        let data = data.to_vec();
        self.with(|d| d.write(stream_id, data, fin))
    }

    /// Reset stream ``stream_id`` with application error ``code``.
    fn reset(&mut self, stream_id: u64, code: u64) -> PyResult<()> {
        self.with(|d| d.reset(stream_id, code))
    }

    /// The counters, as a dict (see satemu.quic.quinn).
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(|d| Ok(d.stats()))?;
        let dict = PyDict::new(py);
        let c = s.counters;
        for (k, v) in [
            ("datagrams_sent", c.datagrams_sent),
            ("bytes_sent", c.bytes_sent),
            ("datagrams_received", c.datagrams_received),
            ("bytes_received", c.bytes_received),
            ("ack_only_sent", c.ack_only_sent),
            ("ack_only_bytes_sent", c.ack_only_bytes_sent),
            ("ack_frames_sent", s.ack_frames_sent),
            ("ack_frequency_sent", s.ack_frequency_sent),
            ("ack_frequency_received", s.ack_frequency_received),
            ("immediate_ack_sent", s.immediate_ack_sent),
            ("lost_packets", s.lost_packets),
            ("lost_bytes", s.lost_bytes),
            ("congestion_events", s.congestion_events),
            ("sent_packets", s.sent_packets),
            ("cwnd", s.cwnd),
        ] {
            dict.set_item(k, v)?;
        }
        dict.set_item("rtt_ms", s.rtt_ms)?;
        dict.set_item("handshake_lost_packets", s.handshake_lost_packets)?;
        dict.set_item("stack", "quinn")?;
        Ok(dict)
    }
}

#[pymodule]
fn satemu_quinn(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEndpoint>()?;
    m.add("QUINN_PROTO_VERSION", "0.11.19")?;
    m.add("MIN_DATAGRAM", conn::MIN_DATAGRAM)?;
    m.add("MAX_DATAGRAM", conn::MAX_DATAGRAM)?;
    m.add("QUINN_MAX_ACK_DELAY_NS", conn::QUINN_MAX_ACK_DELAY_NS)?;
    Ok(())
}
