//! A TCP relay for the remote benchmark (`crates/bench/py/remote_s3.py`): listens on
//! 127.0.0.1, forwards every connection to an upstream server, holds the bytes a client sends
//! for a fixed latency before passing them on (so each HTTP request waits that long, as behind
//! a network with that round-trip time) and counts the HTTP/1.1 requests it relays and the
//! bytes sent back. Plain threads and blocking sockets: it costs the machine far less than the
//! Python fault proxy of the interop suite, which it replaces in the benchmark.
//!
//! ```text
//! latency_relay UPSTREAM_HOST:PORT LATENCY_SECONDS [--206]
//! ```
//!
//! With `--206`, an answer `200 OK` that carries a `Content-Range` header (what
//! `rclone serve s3` sends for a ranged GET: the requested bytes, with status 200) is passed on
//! as `206 Partial Content`, the status HTTP and S3 give it, so that clients that insist on it
//! (object_store, so obstore and zarrs; tensorstore, which otherwise takes the bytes for the
//! whole object) can read ranges from that server. An answer's head is recognised as the first
//! bytes the server sends after a request was passed on: right for clients that wait for an
//! answer before sending the next request on a connection (every client of the benchmark; none
//! pipelines).
//!
//! Prints `{"port": N}` once it listens, then answers commands read from standard input, one a
//! line: `stats` prints `{"requests": R, "bytes": B}` (requests whose head was relayed, bytes
//! of the answers, headers included), `reset` sets both to zero. It exits when standard input
//! closes.
//!
//! Requests are counted by following HTTP/1.1 framing in the client's direction: a head up
//! to its blank line, then `Content-Length` bytes of body. A connection whose request has a
//! chunked body (no reader in the benchmark sends one) is relayed without counting further.

use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUFFER: usize = 256 << 10;

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
}

/// Follows the framing of the requests on one connection and counts their heads.
#[derive(Default)]
struct RequestFraming {
    head: Vec<u8>,
    body_left: u64,
    /// A chunked request body: framing no longer followed on this connection.
    lost: bool,
}

impl RequestFraming {
    /// Feed the next bytes the client sent; returns the requests whose head ended in them.
    fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut heads = 0;
        while !data.is_empty() && !self.lost {
            if self.body_left > 0 {
                let n = (self.body_left as usize).min(data.len());
                self.body_left -= n as u64;
                data = &data[n..];
                continue;
            }
            // Look for the end of the head across what was kept and the new bytes.
            let kept = self.head.len();
            self.head.extend_from_slice(data);
            let from = kept.saturating_sub(3);
            match self.head[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                Some(at) => {
                    let end = from + at + 4;
                    heads += 1;
                    let (length, chunked) = body_of(&self.head[..end]);
                    self.lost = chunked;
                    self.body_left = length;
                    data = &data[end - kept..];
                    self.head.clear();
                }
                None => data = &[],
            }
        }
        heads
    }
}

/// The `Content-Length` of a request head, and whether its body is chunked.
fn body_of(head: &[u8]) -> (u64, bool) {
    let text = String::from_utf8_lossy(head);
    let mut length = 0;
    let mut chunked = false;
    for line in text.split("\r\n").skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().unwrap_or(0);
        } else if name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        }
    }
    (length, chunked)
}

/// Client to upstream: each read is held `latency` before it is written on; `forwarded`
/// counts the request heads written.
fn forward_delayed(
    mut client: TcpStream,
    mut upstream: TcpStream,
    latency: Duration,
    counters: Arc<Counters>,
    forwarded: Arc<AtomicU64>,
) {
    let (send, receive) = mpsc::channel::<(Instant, Vec<u8>, u64)>();
    let writer = std::thread::spawn(move || {
        for (due, data, heads) in receive {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            // Counted before the write: the answer may be read before write_all returns.
            forwarded.fetch_add(heads, Ordering::Release);
            if upstream.write_all(&data).is_err() {
                break;
            }
        }
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let mut framing = RequestFraming::default();
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match client.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let heads = framing.feed(&buffer[..n]);
                counters.requests.fetch_add(heads, Ordering::Relaxed);
                if send
                    .send((Instant::now() + latency, buffer[..n].to_vec(), heads))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(send);
    let _ = writer.join();
}

/// Upstream to client, at once, counting the bytes; with `fix_206`, answer heads
/// `200` + `Content-Range` are passed on as `206` (see the module's documentation).
fn forward_back(
    mut upstream: TcpStream,
    mut client: TcpStream,
    counters: Arc<Counters>,
    forwarded: Arc<AtomicU64>,
    fix_206: bool,
) {
    let mut buffer = vec![0u8; BUFFER];
    let mut answered = 0u64;
    let mut head: Vec<u8> = Vec::new();
    loop {
        let n = match upstream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
        let rewritten;
        let data = if fix_206 && (!head.is_empty() || answered < forwarded.load(Ordering::Acquire))
        {
            // The head of the answer to the next request: held until complete.
            head.extend_from_slice(&buffer[..n]);
            let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            answered += 1;
            let mut whole = partial_status(&head[..end + 4]);
            whole.extend_from_slice(&head[end + 4..]);
            head.clear();
            rewritten = whole;
            &rewritten[..]
        } else {
            &buffer[..n]
        };
        if client.write_all(data).is_err() {
            break;
        }
    }
    if !head.is_empty() {
        let _ = client.write_all(&head);
    }
    let _ = client.shutdown(Shutdown::Both);
}

/// An answer's head, with `200 OK` made `206 Partial Content` when it has a `Content-Range`.
fn partial_status(head: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let has_range = text
        .split("\r\n")
        .any(|line| line.to_ascii_lowercase().starts_with("content-range:"));
    match text.split_once("\r\n") {
        Some((status, rest)) if has_range && status.split_whitespace().nth(1) == Some("200") => {
            let version = status.split_whitespace().next().unwrap_or("HTTP/1.1");
            format!("{version} 206 Partial Content\r\n{rest}").into_bytes()
        }
        _ => head.to_vec(),
    }
}

fn relay(
    client: TcpStream,
    upstream: &str,
    latency: Duration,
    counters: Arc<Counters>,
    fix_206: bool,
) {
    let Ok(server) = TcpStream::connect(upstream) else {
        eprintln!("latency_relay: cannot connect to {upstream}");
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let back_counters = counters.clone();
    let forwarded = Arc::new(AtomicU64::new(0));
    let seen = forwarded.clone();
    std::thread::spawn(move || {
        forward_back(server_back, client_back, back_counters, seen, fix_206)
    });
    forward_delayed(client, server, latency, counters, forwarded);
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (upstream, latency, fix_206) = match args.as_slice() {
        [upstream, latency] => (upstream, latency, false),
        [upstream, latency, flag] if flag == "--206" => (upstream, latency, true),
        _ => return Err("usage: latency_relay UPSTREAM_HOST:PORT LATENCY_SECONDS [--206]".into()),
    };
    let seconds: f64 = latency
        .parse()
        .map_err(|e| format!("latency {latency}: {e}"))?;
    if !(0.0..=60.0).contains(&seconds) {
        return Err(format!("latency {latency}: between 0 and 60 seconds"));
    }
    let latency = Duration::from_secs_f64(seconds);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let counters = Arc::new(Counters::default());
    let upstream = upstream.clone();
    let accepted = counters.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (upstream, counters) = (upstream.clone(), accepted.clone());
            std::thread::spawn(move || relay(client, &upstream, latency, counters, fix_206));
        }
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{{\"port\": {port}}}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        match line.trim() {
            "stats" => writeln!(
                out,
                "{{\"requests\": {}, \"bytes\": {}}}",
                counters.requests.load(Ordering::Relaxed),
                counters.bytes.load(Ordering::Relaxed)
            ),
            "reset" => {
                counters.requests.store(0, Ordering::Relaxed);
                counters.bytes.store(0, Ordering::Relaxed);
                writeln!(out, "{{}}")
            }
            other => writeln!(out, "{{\"error\": \"unknown command {other}\"}}"),
        }
        .map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("latency_relay: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{partial_status, RequestFraming};

    #[test]
    fn ranged_answers_with_200_become_206() {
        let head =
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Range: bytes 0-99/500\r\n\r\n";
        assert_eq!(
            partial_status(head),
            b"HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nContent-Range: bytes 0-99/500\r\n\r\n"
        );
        let whole = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
        assert_eq!(partial_status(whole), whole);
        let missing = b"HTTP/1.1 404 Not Found\r\nContent-Range: bytes */0\r\n\r\n";
        assert_eq!(partial_status(missing), missing);
    }

    #[test]
    fn counts_heads_across_reads_and_skips_bodies() {
        let mut f = RequestFraming::default();
        assert_eq!(f.feed(b"GET /a HTTP/1.1\r\nHost: x\r"), 0);
        assert_eq!(f.feed(b"\n\r\nGET /b HTTP/1.1\r\n\r\n"), 2);
        let put = b"PUT /c HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789GET /d HTTP/1.1\r\n\r\n";
        assert_eq!(f.feed(put), 2);
        assert_eq!(
            f.feed(b"PUT /e HTTP/1.1\r\ncontent-length: 4\r\n\r\n\r\n\r\n"),
            1
        );
        assert_eq!(f.feed(b"HEAD /f HTTP/1.1\r\n\r\n"), 1);
    }
}
