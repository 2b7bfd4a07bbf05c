//! `neurochunk serve`: a local directory over HTTP for Neuroglancer, and the link that opens it.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use clap::Args;
use neurochunk_serve::{discover_layers, neuroglancer_link, neuroglancer_state, LayerKind, Server};

use crate::{CmdResult, Failure};

/// The public Neuroglancer deployment used when no local client is found.
const PUBLIC_CLIENT: &str = "https://neuroglancer-demo.appspot.com/";

#[derive(Args)]
pub struct ServeArgs {
    /// The directory to serve (read-only; nothing outside it is reachable).
    path: PathBuf,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// The address to listen on. The default serves this machine only.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// A Neuroglancer client build (a directory holding its index.html, e.g. the output of
    /// `npm run build` in a Neuroglancer checkout) to serve under /_neuroglancer/; the link
    /// opens it.
    #[arg(long, conflicts_with = "no_client")]
    client: Option<PathBuf>,
    /// Do not start a local viewer: the link opens the public Neuroglancer deployment (or
    /// --viewer). By default, when `python3` (or NEUROCHUNK_PYTHON) can import the
    /// `neuroglancer` package, its own viewer server is started on this machine with the layers
    /// loaded, so the view works offline.
    #[arg(long)]
    no_client: bool,
    /// The Neuroglancer deployment the link opens when no local viewer runs.
    #[arg(long, default_value = PUBLIC_CLIENT)]
    viewer: String,
    /// Print one line per request on stderr.
    #[arg(long)]
    log: bool,
}

pub fn serve(args: ServeArgs) -> CmdResult {
    if args.path.to_str().is_some_and(|p| p.contains("://")) {
        return Err(Failure(format!(
            "{}: serve takes a local directory; Neuroglancer reads URLs itself",
            args.path.display()
        )));
    }
    let address = SocketAddr::new(args.host, args.port);
    let server = Server::bind(&args.path, address, args.client.as_deref())?.with_log(args.log);
    let layers = discover_layers(server.root())?;
    let base = server.base_url();
    let state = neuroglancer_state(&layers, &base);
    eprintln!(
        "neurochunk serve: {} at {base}/ (read-only, ranges and CORS; Ctrl-C stops)",
        server.root().display()
    );
    for layer in &layers {
        let what = match layer.kind {
            LayerKind::Image => "image".to_string(),
            LayerKind::Segmentation if layer.segments.is_empty() => "segmentation".to_string(),
            LayerKind::Segmentation => {
                format!("segmentation, {} segments shown", layer.segments.len())
            }
            LayerKind::Annotation => "annotations".to_string(),
        };
        eprintln!(
            "  layer {}: {}://{base}/{} ({what})",
            layer.name,
            layer.format.scheme(),
            layer.path
        );
    }
    if layers.is_empty() {
        eprintln!("  no layers found (precomputed, Zarr, OME-Zarr or N5) below the directory");
    }
    // The local viewer lives as long as this process: it exits when its stdin closes.
    let mut python_viewer = None;
    let link = if let Some(client) = server.client_url() {
        eprintln!("Neuroglancer, served from {}:", client);
        neuroglancer_link(&client, &state)
    } else if let Some((child, url)) = (!args.no_client)
        .then(|| python_viewer_for(&state, args.host))
        .flatten()
    {
        python_viewer = Some(child);
        eprintln!("Neuroglancer, from the neuroglancer Python package on this machine:");
        url
    } else {
        eprintln!("Neuroglancer (public deployment; the data stay on this machine):");
        neuroglancer_link(&args.viewer, &state)
    };
    println!("{link}");
    let served = server.run();
    if let Some(mut child) = python_viewer {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok(served?)
}

/// Starts the `neuroglancer` Python package's viewer server with `state` loaded, when an
/// interpreter has the package; returns the process and the viewer's URL.
fn python_viewer_for(state: &serde_json::Value, host: IpAddr) -> Option<(Child, String)> {
    const SCRIPT: &str = "import json, sys, neuroglancer\n\
        neuroglancer.set_server_bind_address(sys.argv[2])\n\
        viewer = neuroglancer.Viewer()\n\
        viewer.set_state(neuroglancer.ViewerState(json.loads(sys.argv[1])))\n\
        print(viewer.get_viewer_url(), flush=True)\n\
        sys.stdin.read()\n";
    let python = std::env::var("NEUROCHUNK_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .args(["-c", SCRIPT, &state.to_string(), &host.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    let read = child
        .stdout
        .take()
        .map(|out| BufReader::new(out).read_line(&mut line));
    if !matches!(read, Some(Ok(n)) if n > 0) || !line.starts_with("http") {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    Some((child, line.trim().to_string()))
}
