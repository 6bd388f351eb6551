//! The HTTP workload: a hyper HTTP/1.1 server with a request timeout and an
//! idle timeout, loaded by an in-process hyper client over keep-alive
//! connections.
//!
//! The server (a runtime of T workers) accepts on 127.0.0.1:0 and spawns a
//! task per connection running hyper's `serve_connection` over the socket
//! wrapped in [`IdleIo`]. Per request:
//!
//! * **request timeout**: the service awaits
//!   `timeout(5 s, handler(request))`; the handler awaits once
//!   (`yield_now`, standing for a cache or database round trip) and
//!   answers 13 bytes. Its first poll is pending, so the timeout's timer is
//!   armed, and cancelled when the handler completes. A timeout that fires
//!   answers 503.
//! * **idle timeout**: [`IdleIo`] gives the connection a 60 s
//!   read-inactivity deadline, as Go's `net/http` read deadlines and
//!   tokio-io-timeout's `TimeoutReader` do: a read that waits after data
//!   arrived moves the connection's sleep to 60 s from now (one move per
//!   request on a keep-alive connection, counted), and a sleep that fires
//!   while the read waits ends the connection.
//!
//! hyper itself arms no timer: its header read timeout needs a
//! `hyper::rt::Timer`, which is not given.
//!
//! The client (a runtime of its own, T workers, no timers) opens
//! [`CONNS_PER_THREAD`] × T connections and on each issues GET requests one
//! after the other, timing each with [`Instant`] from the send to the last
//! byte of the body. Requests completed during the measured window count
//! and give the latencies; a sample stops early after [`MAX_REQUESTS`].

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

use super::{row, NoTimers, Runs, Summary, Timers, TokioTime, UtimerAsync, Variant, Window};
use super::{FIRED_CASE, MOVES_CASE};
use crate::Record;

/// Client connections per server worker.
pub(crate) const CONNS_PER_THREAD: usize = 16;

/// A sample ends after this many requests even if its time is not up.
const MAX_REQUESTS: u64 = 2_000_000;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
const BODY: &[u8] = b"Hello, world!";

pub(crate) fn case(threads: usize) -> String {
    format!("http_{threads}_threads")
}

/// One sample of one variant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    /// Requests completed per second of the window.
    pub(crate) rps: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    /// Answers other than 200 (request timeouts that fired).
    pub(crate) non_ok: u64,
    /// Idle-timer moves per request served (warm-up included).
    pub(crate) moves_per_request: f64,
}

/// A connection's socket with a read-inactivity deadline on `L`'s sleep.
struct IdleIo<L: Timers> {
    io: TcpStream,
    idle: Pin<Box<L::Sleep>>,
    /// A read returned data since the sleep was last moved.
    progress: bool,
    moves: u64,
    stats: Arc<Stats>,
}

impl<L: Timers> IdleIo<L> {
    fn new(io: TcpStream, stats: Arc<Stats>) -> Self {
        let idle = Box::pin(L::sleep(IDLE_TIMEOUT));
        let (progress, moves) = (false, 0);
        IdleIo {
            io,
            idle,
            progress,
            moves,
            stats,
        }
    }
}

impl<L: Timers> Drop for IdleIo<L> {
    fn drop(&mut self) {
        self.stats.moves.fetch_add(self.moves, Relaxed);
    }
}

impl<L: Timers> AsyncRead for IdleIo<L> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(r) = Pin::new(&mut this.io).poll_read(cx, buf) {
            this.progress = true;
            return Poll::Ready(r);
        }
        if this.progress {
            this.progress = false;
            this.moves += 1;
            L::reset(this.idle.as_mut(), IDLE_TIMEOUT);
        }
        match this.idle.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<L: Timers> AsyncWrite for IdleIo<L> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, b)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The server's counters.
#[derive(Debug, Default)]
struct Stats {
    /// Connections open.
    live: AtomicUsize,
    /// Requests served, added when a connection ends.
    served: AtomicU64,
    moves: AtomicU64,
}

async fn handler(req: Request<Incoming>) -> Response<Full<Bytes>> {
    drop(req);
    tokio::task::yield_now().await;
    Response::new(Full::new(Bytes::from_static(BODY)))
}

async fn connection<L: Timers>(stream: TcpStream, stats: Arc<Stats>) {
    let io = TokioIo::new(IdleIo::<L>::new(stream, stats.clone()));
    let served = Arc::new(AtomicU64::new(0));
    let count = served.clone();
    let service = hyper::service::service_fn(move |req| {
        count.fetch_add(1, Relaxed);
        async move {
            let resp = match L::timeout(REQUEST_TIMEOUT, handler(req)).await {
                Ok(resp) => resp,
                Err(_) => {
                    let mut resp = Response::new(Full::new(Bytes::new()));
                    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                    resp
                }
            };
            Ok::<_, Infallible>(resp)
        }
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    // The client closing its connection ends it; errors end it too.
    let _ = conn.await;
    stats.served.fetch_add(served.load(Relaxed), Relaxed);
    stats.live.fetch_sub(1, Relaxed);
}

async fn serve<L: Timers>(listener: TcpListener, stats: Arc<Stats>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        stats.live.fetch_add(1, Relaxed);
        tokio::spawn(connection::<L>(stream, stats.clone()));
    }
}

const WARM: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// A client's count of measured requests, alone on its cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Count(AtomicU64);

/// What the clients share with the thread that runs the sample.
#[derive(Debug)]
struct Control {
    phase: AtomicU8,
    /// Clients connected.
    ready: AtomicUsize,
    counts: Vec<Count>,
}

/// A client's latencies (ns) of the measured requests, and its non-200s.
type ClientOut = (Vec<u64>, u64);

async fn client(addr: SocketAddr, ctl: Arc<Control>, k: usize) -> Result<ClientOut, String> {
    let err = |e: &dyn std::fmt::Display| format!("client: {e}");
    let stream = TcpStream::connect(addr).await.map_err(|e| err(&e))?;
    stream.set_nodelay(true).map_err(|e| err(&e))?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| err(&e))?;
    let conn = tokio::spawn(conn);
    ctl.ready.fetch_add(1, Relaxed);
    let (mut lat, mut non_ok) = (Vec::new(), 0u64);
    while ctl.phase.load(Relaxed) != STOP {
        send.ready().await.map_err(|e| err(&e))?;
        let req = Request::get("/")
            .header(hyper::header::HOST, "127.0.0.1")
            .body(Empty::<Bytes>::new())
            .map_err(|e| err(&e))?;
        let t0 = Instant::now();
        let resp = send.send_request(req).await.map_err(|e| err(&e))?;
        let ok = resp.status() == StatusCode::OK;
        resp.into_body().collect().await.map_err(|e| err(&e))?;
        let ns = t0.elapsed().as_nanos() as u64;
        if ctl.phase.load(Relaxed) == MEASURE {
            non_ok += u64::from(!ok);
            lat.push(ns);
            ctl.counts[k].0.store(lat.len() as u64, Relaxed);
        }
    }
    drop(send);
    let _ = conn.await;
    Ok((lat, non_ok))
}

/// Nearest-rank percentile `p` (0..=1) of `v` in µs; reorders `v`.
fn percentile_us(v: &mut [u64], p: f64) -> f64 {
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    *v.select_nth_unstable(i).1 as f64 / 1e3
}

/// One sample: a server of `L` on `server`, `conns` clients on `client`.
fn sample<L: Timers>(
    server: &Runtime,
    client: &Runtime,
    conns: usize,
    w: Window,
) -> Result<Sample, String> {
    let stats = Arc::new(Stats::default());
    let listener = server
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let accept = server.spawn(serve::<L>(listener, stats.clone()));
    let ctl = Arc::new(Control {
        phase: AtomicU8::new(WARM),
        ready: AtomicUsize::new(0),
        counts: (0..conns).map(|_| Count::default()).collect(),
    });
    let clients: Vec<_> = (0..conns)
        .map(|k| client.spawn(self::client(addr, ctl.clone(), k)))
        .collect();
    // The warm-up starts once every client is connected (or failed).
    let t = Instant::now();
    while ctl.ready.load(Relaxed) < conns
        && !clients.iter().any(|h| h.is_finished())
        && t.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(w.warm);
    ctl.phase.store(MEASURE, Relaxed);
    let t0 = Instant::now();
    let end = t0 + w.run;
    loop {
        let now = Instant::now();
        let total: u64 = ctl.counts.iter().map(|c| c.0.load(Relaxed)).sum();
        if now >= end || total >= MAX_REQUESTS {
            break;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(5)));
    }
    ctl.phase.store(STOP, Relaxed);
    let elapsed = t0.elapsed();
    let (mut lat, mut non_ok, mut failed) = (Vec::new(), 0, None);
    for h in clients {
        match client.block_on(h) {
            Ok(Ok((l, n))) => {
                lat.extend(l);
                non_ok += n;
            }
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(e) => failed = failed.or(Some(format!("a client task failed: {e}"))),
        }
    }
    accept.abort();
    let t = Instant::now();
    while stats.live.load(Relaxed) > 0 && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if lat.is_empty() {
        return Err("no request completed".to_string());
    }
    let served = stats.served.load(Relaxed);
    Ok(Sample {
        rps: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_us: percentile_us(&mut lat, 0.5),
        p99_us: percentile_us(&mut lat, 0.99),
        non_ok,
        moves_per_request: stats.moves.load(Relaxed) as f64 / served.max(1) as f64,
    })
}

/// `reps` samples of each variant with a server of `threads` workers.
pub(crate) fn measure(threads: usize, reps: usize, w: Window) -> Runs<Sample> {
    let build = |io_only: bool| {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads).enable_io();
        if !io_only {
            b.enable_time();
        }
        b.build()
            .map_err(|e| format!("cannot build a tokio runtime: {e}"))
    };
    let rts = build(false).and_then(|s| Ok((s, build(true)?)));
    let conns = CONNS_PER_THREAD * threads;
    Runs::measure(reps, |v| {
        let (server, client) = rts.as_ref().map_err(Clone::clone)?;
        match v {
            Variant::Utimer => sample::<UtimerAsync>(server, client, conns, w),
            Variant::Tokio => sample::<TokioTime>(server, client, conns, w),
            Variant::None => sample::<NoTimers>(server, client, conns, w),
        }
    })
}

/// The `/latency` case: p50 and p99 rows per variant, in µs.
pub(crate) fn latency_rows(case: &str, mode: &str, runs: &Runs<Sample>) -> Vec<Record> {
    let mut rows = Vec::new();
    for (i, v) in Variant::ALL.iter().enumerate() {
        let err = runs.errors[i].as_deref();
        for (label, f) in [("p50", 0.5), ("p99", 0.99)] {
            let values = runs.of(i, |s| if f == 0.5 { s.p50_us } else { s.p99_us });
            let name = format!("{} {label}", v.name());
            rows.push(row(case, &name, mode, &values, "µs", err));
        }
    }
    rows
}

/// The request timeouts that fired (503s, over all samples) and the
/// idle-timer moves per request, of the two libraries.
pub(crate) fn summary_rows(label: &str, mode: &str, runs: &Runs<Sample>, out: &mut Summary) {
    for (i, v) in Variant::ALL[..2].iter().enumerate() {
        let err = runs.errors[i].as_deref();
        let name = format!("{label}, {}", v.name());
        let fired: f64 = runs.of(i, |s| s.non_ok as f64).iter().sum();
        let fired = row(FIRED_CASE, &name, mode, &[fired], "fired", err);
        out.fired.push(fired);
        let moves = runs.of(i, |s| s.moves_per_request);
        out.moves
            .push(row(MOVES_CASE, &name, mode, &moves, "moves/req", err));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_serves_with_one_idle_move_per_request() {
        let w = Window {
            warm: Duration::from_millis(5),
            run: Duration::from_millis(30),
        };
        let rt = |time: bool| {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2).enable_io();
            if time {
                b.enable_time();
            }
            b.build().unwrap()
        };
        let (server, client) = (rt(true), rt(false));
        for v in Variant::ALL {
            let s = match v {
                Variant::Utimer => sample::<UtimerAsync>(&server, &client, 4, w),
                Variant::Tokio => sample::<TokioTime>(&server, &client, 4, w),
                Variant::None => sample::<NoTimers>(&server, &client, 4, w),
            }
            .unwrap();
            assert!(s.rps > 0.0 && s.non_ok == 0, "{v:?}: {s:?}");
            assert!(s.p50_us > 0.0 && s.p99_us >= s.p50_us, "{v:?}: {s:?}");
            if v != Variant::None {
                assert!((0.5..1.5).contains(&s.moves_per_request), "{v:?}: {s:?}");
            }
        }
    }
}
