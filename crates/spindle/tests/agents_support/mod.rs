//! A loopback HTTP/1.1 server for the `spindle agents` tests (archives, npm packuments and
//! tarballs, a PEP 503 index), and the archives they serve.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, mpsc};

/// What a path answers.
pub enum Body {
    /// The bytes, with their length.
    Full(Vec<u8>),
    /// The bytes the first time, then 503 (a registry that went away).
    Once(std::sync::Mutex<Option<Vec<u8>>>),
    /// `declared` as Content-Length, then `body` (shorter), then the connection closes.
    Short { declared: u64, body: Vec<u8> },
    /// `declared` as Content-Length, then `first`, a message on `sent`, then nothing, ever.
    Stall {
        declared: u64,
        first: Vec<u8>,
        sent: mpsc::Sender<()>,
    },
}

/// The server; serves until the test process ends.
pub struct Server {
    port: u16,
}

impl Server {
    pub fn start(routes: Vec<(&str, Body)>) -> Server {
        let routes: Vec<(String, Body)> =
            routes.into_iter().map(|(p, b)| (p.to_owned(), b)).collect();
        Server::start_with(move |_| routes)
    }

    /// Starts with the routes `make` returns given the server's base URL (`http://127.0.0.1:PORT`).
    pub fn start_with(make: impl FnOnce(&str) -> Vec<(String, Body)>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes = Arc::new(make(&format!("http://127.0.0.1:{port}")));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let routes = routes.clone();
                std::thread::spawn(move || serve(stream, &routes));
            }
        });
        Server { port }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn serve(mut stream: TcpStream, routes: &[(String, Body)]) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
        }
        let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
        // A PEP 503 page (its path ends with '/') must say it is HTML.
        let content_type = if path.ends_with('/') {
            "text/html"
        } else {
            "application/octet-stream"
        };
        let head = |status: &str, len: u64| {
            format!(
                "HTTP/1.1 {status}\r\nContent-Length: {len}\r\nContent-Type: {content_type}\r\n\r\n"
            )
        };
        match routes.iter().find(|(p, _)| *p == path).map(|(_, b)| b) {
            Some(Body::Full(bytes)) => {
                if stream
                    .write_all(head("200 OK", bytes.len() as u64).as_bytes())
                    .and_then(|()| stream.write_all(bytes))
                    .is_err()
                {
                    return;
                }
            }
            Some(Body::Once(once)) => {
                let taken = once.lock().unwrap().take();
                let sent = match taken {
                    Some(bytes) => stream
                        .write_all(head("200 OK", bytes.len() as u64).as_bytes())
                        .and_then(|()| stream.write_all(&bytes)),
                    None => stream.write_all(head("503 Service Unavailable", 0).as_bytes()),
                };
                if sent.is_err() {
                    return;
                }
            }
            Some(Body::Short { declared, body }) => {
                let _ = stream.write_all(head("200 OK", *declared).as_bytes());
                let _ = stream.write_all(body);
                return;
            }
            Some(Body::Stall {
                declared,
                first,
                sent,
            }) => {
                let _ = stream.write_all(head("200 OK", *declared).as_bytes());
                let _ = stream.write_all(first);
                let _ = stream.flush();
                let _ = sent.send(());
                loop {
                    std::thread::park();
                }
            }
            None => {
                let _ = stream.write_all(head("404 Not Found", 0).as_bytes());
            }
        }
    }
}

/// A `.tar.gz` (stored, not compressed: the tests pack a large binary) of (name, bytes, mode).
pub fn tar_gz(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    let mut tar = tar::Builder::new(gz);
    for (name, bytes, mode) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(*mode);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
