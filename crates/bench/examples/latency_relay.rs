//! A TCP relay for the remote benchmark (`crates/bench/py/remote_s3.py`): listens on
//! 127.0.0.1, forwards every connection to an upstream server, holds the bytes a client sends
//! for a fixed latency before passing them on (so each HTTP request waits that long, as behind
//! a network with that round-trip time) and counts the HTTP/1.1 requests it relays and the
//! bytes sent back. Plain threads and blocking sockets: it costs the machine far less than the
//! Python fault proxy of the interop suite, which it replaces in the benchmark.
//!
//! ```text
//! latency_relay UPSTREAM_HOST:PORT LATENCY_SECONDS
//! ```
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

/// Client to upstream: each read is held `latency` before it is written on.
fn forward_delayed(
    mut client: TcpStream,
    mut upstream: TcpStream,
    latency: Duration,
    counters: Arc<Counters>,
) {
    let (send, receive) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, data) in receive {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
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
                    .send((Instant::now() + latency, buffer[..n].to_vec()))
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

/// Upstream to client, at once, counting the bytes.
fn forward_back(mut upstream: TcpStream, mut client: TcpStream, counters: Arc<Counters>) {
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match upstream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
                if client.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = client.shutdown(Shutdown::Both);
}

fn relay(client: TcpStream, upstream: &str, latency: Duration, counters: Arc<Counters>) {
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
    std::thread::spawn(move || forward_back(server_back, client_back, back_counters));
    forward_delayed(client, server, latency, counters);
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [upstream, latency] = args.as_slice() else {
        return Err("usage: latency_relay UPSTREAM_HOST:PORT LATENCY_SECONDS".into());
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
            std::thread::spawn(move || relay(client, &upstream, latency, counters));
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
    use super::RequestFraming;

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
