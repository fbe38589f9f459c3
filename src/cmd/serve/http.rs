//! `serve`'s HTTP layer: hyper (HTTP/1.1 only) on a tokio current-thread
//! runtime in one thread, each connection on its own task, with limits that
//! no client can push past (the numbers are the constants below; DESIGN.md
//! says why each):
//!
//! - at most [`max_connections`] open at once; the next one is still
//!   accepted and the connection that waited longest without a request (a
//!   slowloris, an idle attacker) is closed for it — or, when every one has
//!   sent a request, the one idle longest. A scraper that sends its GET is
//!   not the one pushed out by connections that send nothing.
//! - [`HEADER_TIMEOUT`] to send a request's head (also the keep-alive idle
//!   limit), [`MAX_HEADER_BYTES`] of head (431 and close past it), a read
//!   buffer of [`MAX_BUFFER_BYTES`] (pipelined requests wait in it, never
//!   more), no request body (413 and close), and [`CONNECTION_LIFETIME`] for
//!   a connection as a whole, so a client that never reads its replies
//!   holds one task and one fd, no longer, and blocks nobody else.
//! - accept errors (EMFILE, ENFILE, ECONNABORTED, …) never end the server:
//!   it backs off briefly and goes on.
//! - stopping drops every connection at once.
//!
//! A panicking connection task ends that connection only (tokio catches it;
//! the release profile unwinds).

use crate::error::{Error, Facility, Result};
use crate::render::note;
use crate::render::prom::CONTENT_TYPE;
use http_body_util::Full;
use hyper::body::{Body, Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Open connections at most (fewer under a low fd limit: [`max_connections`]).
pub const MAX_CONNECTIONS: usize = 256;
/// Time for a client to send a request's head, counted from the connection
/// or the previous reply; past it the connection is closed.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection's whole life: a reader too slow for its replies is cut here.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// A request's head (request line and headers): 431 past it.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Each connection's read and write buffers (hyper's minimum is 8 KiB).
pub const MAX_BUFFER_BYTES: usize = 16 * 1024;
/// The kernel's queue of connections not yet accepted (capped by
/// net.core.somaxconn): deep enough that a burst of connects while the
/// server thread is off the CPU does not drop a scraper's SYN (a 1 s retry).
const BACKLOG: i32 = 1024;
/// Pause after an accept error that a retry at once would repeat (EMFILE).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

const PAGE: &str = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>vdsoctl exporter</title></head>\n\
<body><h1>vdsoctl exporter</h1>\n<p>Whether this host's processes get the vDSO fast path for their clock reads.</p>\n\
<p><a href=\"/metrics\">Metrics</a></p>\n</body></html>\n";

/// What `/metrics` serves: a copy of the last exposition, never a wait.
pub type Metrics = Arc<dyn Fn() -> String + Send + Sync>;

/// A bound listener, not yet serving.
#[derive(Debug)]
pub struct Server {
    listener: std::net::TcpListener,
    stop: Arc<Notify>,
}

/// Stops a running [`Server`] from any thread (before it runs, too).
#[derive(Debug, Clone)]
pub struct Stopper(Arc<Notify>);

impl Stopper {
    pub fn stop(&self) {
        self.0.notify_one();
    }
}

impl Server {
    /// Listen on the first of `addrs` that binds.
    pub fn bind(addrs: &[SocketAddr], listen: &str) -> Result<Server> {
        let mut last = None;
        for a in addrs {
            match listen_on(a) {
                Ok(listener) => return Ok(Server { listener, stop: Arc::new(Notify::new()) }),
                Err(e) => last = Some(e),
            }
        }
        let last = last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AddrNotAvailable));
        let hint = listen_hint(&last).into();
        Err(Error::Facility { errno: None, what: Facility::Listen { listen: listen.to_string(), source: last }, hint })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    pub fn stopper(&self) -> Stopper {
        Stopper(self.stop.clone())
    }

    /// Serve until stopped; then every connection is dropped.
    pub fn run(self, metrics: Metrics) -> Result<()> {
        let facility = |e: std::io::Error| Error::Facility {
            errno: e.raw_os_error(),
            what: Facility::ServerStart { source: e },
            hint: "raise the fd and task limits (ulimit -n, systemd LimitNOFILE)".into(),
        };
        self.listener.set_nonblocking(true).map_err(facility)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(facility)?;
        let Server { listener, stop } = self;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).map_err(facility)?;
            let mut accepting = tokio::spawn(accept_loop(listener, metrics, max_connections()));
            let mut stopped = std::pin::pin!(stop.notified());
            // The accept loop never returns; had it panicked, the server
            // would be up and deaf: stop, and say so, instead.
            std::future::poll_fn(|cx| {
                use std::future::Future;
                if stopped.as_mut().poll(cx).is_ready() {
                    return std::task::Poll::Ready(Ok(()));
                }
                std::pin::Pin::new(&mut accepting).poll(cx).map(|_| {
                    Err(Error::Facility {
                        errno: None,
                        what: Facility::AcceptStopped,
                        hint: "please report it with the message above; restarting vdsoctl serve recovers".into(),
                    })
                })
            })
            .await
        })?;
        // Dropping the runtime drops every task: the listener and each
        // connection close, whatever state their clients left them in.
        drop(rt);
        Ok(())
    }
}

/// A listening socket with a [`BACKLOG`]-deep accept queue (std's is 128).
/// What to do when `--listen` cannot bind, by the real cause: only
/// EADDRINUSE means another process holds the port.
fn listen_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error().map(nix::errno::Errno::from_raw) {
        Some(nix::errno::Errno::EADDRINUSE) => "another process holds the port (`ss -ltnp`); pick another with --listen",
        Some(nix::errno::Errno::EADDRNOTAVAIL) => {
            "no interface here has that address (`ip -brief address`); give one it has, or :PORT for every IPv4 interface"
        }
        Some(nix::errno::Errno::EACCES) => {
            "a port below 1024 needs root or CAP_NET_BIND_SERVICE; pick a port from 1024 up with --listen"
        }
        Some(nix::errno::Errno::EAFNOSUPPORT) => "this host has no IPv6 (or no IPv4): give an address of the other family",
        _ => "pick another address or port with --listen",
    }
}

fn listen_on(addr: &SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&(*addr).into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// [`MAX_CONNECTIONS`], or a quarter of the fd soft limit when that is
/// lower (the trace engine and the rest of the process need fds too).
pub fn max_connections() -> usize {
    use nix::sys::resource::{getrlimit, Resource};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(u64::MAX, |(soft, _)| soft);
    MAX_CONNECTIONS.min(usize::try_from(soft / 4).unwrap_or(usize::MAX)).max(4)
}

/// One open connection as the eviction policy sees it.
#[derive(Debug)]
struct Entry {
    /// Requests it has sent so far.
    requests: u64,
    /// When it connected or last sent a request.
    last: Instant,
    abort: AbortHandle,
}

/// The open connections, by id.
#[derive(Debug, Default)]
struct Table {
    next: u64,
    open: HashMap<u64, Entry>,
}

type Shared = Arc<Mutex<Table>>;

fn lock(t: &Shared) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes its connection from the table however its task ends.
struct Registered {
    table: Shared,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.table).open.remove(&self.id);
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, metrics: Metrics, cap: usize) {
    let table: Shared = Arc::default();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_BUFFER_BYTES)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let mut last_note: Option<Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                accept_error(&e, &mut last_note);
                if !transient(&e) {
                    // Out of fds or memory: free one connection's worth and
                    // give the rest of the process a moment.
                    evict(&table);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                continue;
            }
        };
        if lock(&table).open.len() >= cap {
            evict(&table);
        }
        let _ = stream.set_nodelay(true);
        let id = {
            let mut t = lock(&table);
            t.next += 1;
            t.next
        };
        let (table2, metrics, builder) = (table.clone(), metrics.clone(), builder.clone());
        let task = tokio::spawn(async move {
            let _registered = Registered { table: table2.clone(), id };
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                if let Some(e) = lock(&table2).open.get_mut(&id) {
                    e.requests += 1;
                    e.last = Instant::now();
                }
                let response = respond(&req, &metrics);
                async move { Ok::<_, Infallible>(response) }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            // A client that went away, sent garbage or ran out of time is
            // not an error of the server's: the connection just ends.
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
        });
        let mut t = lock(&table);
        if !task.is_finished() {
            t.open.insert(id, Entry { requests: 0, last: Instant::now(), abort: task.abort_handle() });
        }
    }
}

/// Errors that say nothing about the server (the client left before accept).
fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted | WouldBlock)
        || e.raw_os_error().is_some_and(|n| n == libc::EPROTO || n == libc::EPERM)
}

/// Say a non-transient accept error, at most once a minute.
fn accept_error(e: &std::io::Error, last: &mut Option<Instant>) {
    if transient(e) || last.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
        return;
    }
    *last = Some(Instant::now());
    note(format_args!("accepting a connection failed ({}); retrying", crate::error::errno_text(e)));
}

/// Close one connection to make room: the oldest of those that never sent a
/// request, else the one idle longest.
fn evict(table: &Shared) {
    let victim = {
        let mut t = lock(table);
        let id = t.open.iter().min_by_key(|(id, e)| (e.requests > 0, e.last, **id)).map(|(id, _)| *id);
        id.and_then(|id| t.open.remove(&id))
    };
    if let Some(e) = victim {
        e.abort.abort();
    }
}

/// The reply to one request.
fn respond(req: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    if !req.body().is_end_stream() {
        // Nothing here takes a body: refuse it unread, and close (the body
        // would otherwise have to be read to find the next request).
        return reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            "text/plain; charset=utf-8",
            "413 request bodies are not accepted\n".into(),
            &[("connection", "close")],
        );
    }
    let (status, content_type, body, allow) = route(req.method(), req.uri().path(), metrics);
    reply(status, content_type, body, if allow { &[("allow", "GET, HEAD")] } else { &[] })
}

fn reply(status: StatusCode, content_type: &str, body: String, extra: &[(&str, &str)]) -> Response<Full<Bytes>> {
    let mut b = Response::builder().status(status).header("content-type", content_type);
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    // The header names and values are constants: the builder cannot fail,
    // but a failure would be a bare 500, not a panic.
    b.body(Full::new(Bytes::from(body))).unwrap_or_else(|_| {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// What a request gets back: (status, content type, body, Allow header).
fn route(method: &Method, path: &str, metrics: &Metrics) -> (StatusCode, &'static str, String, bool) {
    let readable = method == Method::GET || method == Method::HEAD;
    match path {
        "/metrics" | "/" if !readable => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "405 method not allowed: use GET or HEAD\n".into(),
            true,
        ),
        "/metrics" => (StatusCode::OK, CONTENT_TYPE, metrics(), false),
        "/" => (StatusCode::OK, "text/html; charset=utf-8", PAGE.into(), false),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "404 not found: metrics are at /metrics\n".into(),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let metrics: Metrics = Arc::new(|| "# metrics\n".to_string());
        let (status, ty, body, allow) = route(&Method::GET, "/metrics", &metrics);
        assert_eq!((status, ty, body.as_str(), allow), (StatusCode::OK, CONTENT_TYPE, "# metrics\n", false));
        assert_eq!(route(&Method::HEAD, "/", &metrics).0, StatusCode::OK);
        assert_eq!(route(&Method::GET, "/nope", &metrics).0, StatusCode::NOT_FOUND);
        assert_eq!(route(&Method::POST, "/metrics", &metrics).0, StatusCode::METHOD_NOT_ALLOWED);
        assert!(route(&Method::DELETE, "/", &metrics).3);
    }

    /// One request on a fresh connection: the status line, or None when
    /// the connection closed without a reply.
    fn get(addr: SocketAddr, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
        write!(s, "GET {path} HTTP/1.0\r\n\r\n").ok()?;
        let mut reply = String::new();
        let _ = s.read_to_string(&mut reply);
        reply.lines().next().map(str::to_string)
    }

    #[test]
    fn a_panic_ends_one_connection_not_the_server() {
        let server = Server::bind(&["127.0.0.1:0".parse().unwrap()], "127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let stopper = server.stopper();
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let seen = calls.clone();
        let metrics: Metrics = Arc::new(move || {
            if seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
                panic!("the first exposition panics (test)");
            }
            "# ok\n".to_string()
        });
        let running = std::thread::spawn(move || server.run(metrics));
        assert_eq!(get(addr, "/metrics"), None, "the panicking request's connection is closed");
        assert_eq!(get(addr, "/").as_deref(), Some("HTTP/1.0 200 OK"));
        assert_eq!(get(addr, "/metrics").as_deref(), Some("HTTP/1.0 200 OK"));
        stopper.stop();
        assert!(running.join().unwrap().is_ok());
        assert_eq!(get(addr, "/"), None, "nothing listens once stopped");
    }

    #[test]
    fn connection_cap_follows_the_fd_limit() {
        let cap = max_connections();
        assert!((4..=MAX_CONNECTIONS).contains(&cap), "{cap}");
    }
}
