//! Multiscale images: `pyramid` (build one from an array), `ome validate` and `ome info`, and
//! the multiscale part of `convert`, `tree` and `info`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use neurochunk_array::{Array, Store};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_ome::{
    add_label, build_pyramid, container_images, convert_container_images, convert_image,
    label_path, label_pyramid_options, pyramid_chunk_count, validate, ContainerKind,
    ConvertImageOptions, Factors, Layout, Method, MultiscaleImage, PyramidOptions, Severity,
};
use serde_json::{json, Value};

use crate::arrays::{local_only_fsync, staged_destination, AxisOrderOpt, FormatArg};
use crate::progress;
use crate::store_args::Location;
use crate::store_args::{ReplaceArgs, WriteArgs};
use crate::{CmdResult, Failure};

/// The N5 multiscale layout to write.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum N5LayoutArg {
    /// BigDataViewer: `setup0/timepoint0/s0..sN`, `downsamplingFactors`, a `dataset.xml`.
    Bdv,
    /// n5-viewer: `s0..sN`, `scales`, `pixelResolution`, `downsamplingFactors` per level.
    N5Viewer,
}

/// The layout a `--format` (and `--n5-layout`) choice writes; N5 defaults to BigDataViewer
/// for 3-D spatial images and n5-viewer otherwise.
pub(crate) fn target_layout(
    format: FormatArg,
    n5: Option<N5LayoutArg>,
    bdv_fits: bool,
) -> Result<Layout, Failure> {
    Ok(match (format, n5) {
        (FormatArg::Zarr2, _) => Layout::OmeZarr04,
        (FormatArg::Zarr3 | FormatArg::Icechunk, _) => Layout::OmeZarr05,
        (FormatArg::N5, Some(N5LayoutArg::Bdv)) => Layout::N5Bdv,
        (FormatArg::N5, Some(N5LayoutArg::N5Viewer)) => Layout::N5Viewer,
        (FormatArg::N5, None) if bdv_fits => Layout::N5Bdv,
        (FormatArg::N5, None) => Layout::N5Viewer,
        (FormatArg::Precomputed, _) => Layout::Precomputed,
    })
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum MethodArg {
    /// Block mean (integers rounded to nearest, ties to even): intensities.
    Mean,
    /// Most frequent value, ties to the smallest: label images.
    Mode,
    /// The block's first voxel (subsampling).
    Stride,
    /// Block minimum.
    Min,
    /// Block maximum.
    Max,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Method {
        match m {
            MethodArg::Mean => Method::Mean,
            MethodArg::Mode => Method::Mode,
            MethodArg::Stride => Method::Stride,
            MethodArg::Min => Method::Min,
            MethodArg::Max => Method::Max,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct PyramidArgs {
    /// The single-scale source array: a directory or a URL.
    src: Location,
    /// The multiscale image to create: a directory or a URL (replaced if it exists). With
    /// --label: the existing OME-Zarr image the label belongs to.
    dst: Location,
    /// Number of levels, level 0 (the copy of the source) included (with --label: default
    /// the image's).
    #[arg(long, value_name = "N", required_unless_present = "label")]
    levels: Option<usize>,
    /// How a block of voxels becomes one voxel of the next level (default mean; mode with
    /// --label).
    #[arg(long, value_enum)]
    method: Option<MethodArg>,
    /// Build a label image (a segmentation) of the OME-Zarr image DST instead: written at
    /// DST/labels/NAME on the image's grid (its layout, axes, units, voxel size, translation
    /// and level factors), listed by DST/labels and marked with `image-label` metadata.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with_all = ["factors", "format", "n5_layout", "axes", "axis_types", "units", "scale", "translation", "name"]
    )]
    label: Option<String>,
    /// Downsampling factors per axis at every level (`2,2,2`), or `auto-isotropic`: halve the
    /// finest spatial axes first until voxels are near-isotropic, then all spatial axes.
    /// Default: 2 on spatial axes, 1 on others.
    #[arg(long, value_name = "F,F,...|auto-isotropic")]
    factors: Option<String>,
    /// The layout: zarr2 = OME-Zarr 0.4, zarr3 = OME-Zarr 0.5, n5 = BigDataViewer or
    /// n5-viewer N5 (see --n5-layout), icechunk = OME-Zarr 0.5 in an Icechunk repository.
    #[arg(long, value_enum, default_value = "zarr3")]
    format: FormatArg,
    /// The N5 layout (default: bdv for 3-D spatial images, n5-viewer otherwise).
    #[arg(long, value_enum)]
    n5_layout: Option<N5LayoutArg>,
    /// Chunk shape of every level, clipped to the level (with --shards: the inner chunks).
    /// Default 64 on spatial axes (256 for 2-D images), 1 on others.
    #[arg(long, value_name = "N,N,...")]
    chunks: Option<String>,
    /// Shard shape (zarr3 only), clipped likewise.
    #[arg(long, value_name = "N,N,...")]
    shards: Option<String>,
    /// Compression and checksum codecs, as for `put` (e.g. `zstd:3,crc32c`).
    #[arg(long, value_name = "SPEC")]
    codec: Option<String>,
    /// Axis names (default: the source's dimension names, else ... t, c, z, y, x).
    #[arg(long, value_name = "NAME,...")]
    axes: Option<String>,
    /// Axis types: space, time, channel or custom (default from the names).
    #[arg(long, value_name = "TYPE,...")]
    axis_types: Option<String>,
    /// Units per axis, e.g. `micrometer,micrometer,micrometer` (empty: none).
    #[arg(long, value_name = "UNIT,...")]
    units: Option<String>,
    /// Voxel size of level 0 per axis (default 1).
    #[arg(long, value_name = "S,S,...", allow_hyphen_values = true)]
    scale: Option<String>,
    /// Translation of level 0 per axis (default none).
    #[arg(long, value_name = "T,T,...", allow_hyphen_values = true)]
    translation: Option<String>,
    /// The image name.
    #[arg(long)]
    name: Option<String>,
    /// Report progress on stderr even when it is not a terminal (a line per tenth).
    #[arg(long)]
    progress: bool,
    #[command(flatten)]
    axis_order: AxisOrderOpt,
    #[command(flatten)]
    write: WriteArgs,
    #[command(flatten)]
    replace: ReplaceArgs,
}

fn list(text: &Option<String>) -> Option<Vec<String>> {
    text.as_ref()
        .map(|t| t.split(',').map(|s| s.trim().to_string()).collect())
}

fn numbers<T: std::str::FromStr>(
    text: &Option<String>,
    what: &str,
) -> Result<Option<Vec<T>>, Failure> {
    list(text)
        .map(|items| {
            items
                .iter()
                .map(|s| {
                    s.parse::<T>()
                        .map_err(|_| Failure(format!("{what}: '{s}' is not a number")))
                })
                .collect()
        })
        .transpose()
}

/// A progress callback: the bar, plus with `--progress` a line per tenth when the bar is not
/// drawn.
fn reporter(total: u64, lines: bool, what: &'static str) -> (progress::Bar, impl Fn(u64) + Sync) {
    let bar = progress::bar(total, what);
    let done = AtomicU64::new(0);
    let handle = bar.clone();
    let lines = lines && bar.is_hidden() && !progress::quiet();
    let report = move |n: u64| {
        handle.inc(n);
        let before = done.fetch_add(n, Ordering::Relaxed);
        if lines && total > 0 {
            let (a, b) = (before * 10 / total, (before + n) * 10 / total);
            if b > a {
                eprintln!(
                    "neurochunk: {what}: {}% ({} of {total} chunks)",
                    b * 10,
                    before + n
                );
            }
        }
    };
    (bar, report)
}

pub(crate) fn pyramid(args: PyramidArgs) -> CmdResult {
    let precomputed = matches!(args.format, FormatArg::Precomputed);
    if precomputed && args.label.is_some() {
        return Err(Failure(
            "--label adds a label image to an OME-Zarr image; a precomputed segmentation is a \
             layer of its own (pyramid LABELS LAYER --format precomputed --method mode)"
                .into(),
        ));
    }
    local_only_fsync(&args.write, &args.dst)?;
    crate::repo_cmd::prepare(Some(args.format), &args.dst)?;
    let src_store = args.src.open_read()?;
    let src = Array::open_with(src_store, "", &args.axis_order.open_options())
        .map_err(|e| Failure(format!("{}: {e}", args.src.display())))?;
    if let Some(label) = &args.label {
        return label_pyramid(&args, &src, label);
    }
    let rank = src.shape().len();
    let levels = args
        .levels
        .ok_or_else(|| Failure("--levels is required".into()))?;
    let layout = match precomputed {
        // Built as OME-Zarr 0.5 first (the engine's levels keep the source's axis order), then
        // converted: the axes become x, y, z, channel and the scales the layer's resolutions.
        true => Layout::OmeZarr05,
        false => target_layout(args.format, args.n5_layout, rank == 3)?,
    };
    let mut options = PyramidOptions::new(
        levels,
        args.method.unwrap_or(MethodArg::Mean).into(),
        layout,
    );
    options.factors = args
        .factors
        .as_deref()
        .map(Factors::parse)
        .transpose()
        .map_err(|e| Failure(format!("--factors: {e}")))?;
    set_storage_options(&mut options, &args)?;
    options.axes = list(&args.axes);
    options.axis_types = list(&args.axis_types);
    options.units = list(&args.units);
    options.scale = numbers(&args.scale, "--scale")?;
    options.translation = numbers(&args.translation, "--translation")?;
    options.name = args.name.clone();
    if precomputed {
        return write_precomputed_pyramid(&args, &src, options);
    }
    write_pyramid(&args, &src, &options, &args.dst)?;
    Ok(())
}

/// `pyramid --format precomputed`: the levels built as an uncompressed OME-Zarr 0.5 image in a
/// temporary directory beside the destination (or in the system's for a URL), then converted
/// into the layer with the command line's chunks and encoding (`--codec raw`,
/// `compressed_segmentation`, `jpeg`, `png`), staged and published like every output.
fn write_precomputed_pyramid(
    args: &PyramidArgs,
    src: &Array,
    mut options: PyramidOptions,
) -> CmdResult {
    let name = format!("{} -> {}", args.src.display(), args.dst.display());
    let fail = |e: neurochunk_ome::OmeError| Failure(format!("{name}: {e}"));
    let encoding = options.codecs.take();
    let chunks = options.chunks.take();
    options.codecs = Some(Vec::new());
    options.shards = None;
    let total = pyramid_chunk_count(src, &options).map_err(fail)?;
    let beside = args
        .dst
        .local()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .filter(|p| p.as_os_str().is_empty() || p.is_dir());
    let scratch = match beside {
        Some(dir) if !dir.as_os_str().is_empty() => tempfile::Builder::new()
            .prefix(".neurochunk-pyramid-")
            .tempdir_in(dir),
        _ => tempfile::Builder::new()
            .prefix("neurochunk-pyramid-")
            .tempdir(),
    }
    .map_err(|e| Failure(format!("{name}: a temporary directory for the levels: {e}")))?;
    let scratch_store: Arc<dyn Store> = Arc::new(neurochunk_store::FsStore::new(scratch.path()));
    let (bar, report) = reporter(total, args.progress, "pyramid");
    let image = build_pyramid(src, scratch_store, "", &options, &report).map_err(fail)?;
    bar.finish_and_clear();
    let mut convert = ConvertImageOptions::new(Layout::Precomputed);
    convert.codecs = encoding;
    convert.chunks = chunks;
    let (dst_store, staged) = staged_destination(&args.dst, &args.write, args.replace.policy())?;
    let total = (0..image.levels().len())
        .filter_map(|k| image.level_array(k).ok())
        .map(|a| neurochunk_array::convert::chunk_count(a.metadata()))
        .sum();
    let (bar, report) = reporter(total, args.progress, "precomputed");
    let layer = convert_image(&image, dst_store, "", &convert, &report).map_err(fail)?;
    bar.finish_and_clear();
    publish_and_describe(&layer, staged, &args.dst, "scales")
}

/// `pyramid --label NAME`: a label pyramid on the grid of the image at DST, registered there.
fn label_pyramid(args: &PyramidArgs, src: &Array, label: &str) -> CmdResult {
    let fail = |e: neurochunk_ome::OmeError| Failure(format!("{}: {e}", args.dst.display()));
    let relative = label_path("", label).map_err(fail)?;
    // The image gets a label: written to, not only read.
    let image_store = args.write.store_at(&args.dst)?;
    let image = MultiscaleImage::open(image_store.clone(), "").map_err(fail)?;
    let method = args.method.unwrap_or(MethodArg::Mode).into();
    let mut options =
        label_pyramid_options(&image, src.shape(), args.levels, method).map_err(|e| {
            Failure(format!(
                "{} -> {}: {e}",
                args.src.display(),
                args.dst.display()
            ))
        })?;
    set_storage_options(&mut options, args)?;
    options.name = Some(label.to_string());
    let target = args.dst.child(&relative)?;
    write_pyramid(args, src, &options, &target)?;
    add_label(&image_store, "", label).map_err(fail)?;
    Ok(())
}

/// The chunks, shards and codecs the command line asks for.
fn set_storage_options(options: &mut PyramidOptions, args: &PyramidArgs) -> CmdResult {
    options.chunks = numbers(&args.chunks, "--chunks")?;
    options.shards = numbers(&args.shards, "--shards")?;
    options.codecs = args
        .codec
        .as_deref()
        .map(crate::codec_spec::parse_codecs)
        .transpose()
        .map_err(|e| Failure(format!("--codec: {e}")))?;
    Ok(())
}

/// Build the pyramid of `src` at `dst` (staged and published when local), with a progress bar
/// and a line describing the levels.
fn write_pyramid(
    args: &PyramidArgs,
    src: &Array,
    options: &PyramidOptions,
    dst: &Location,
) -> CmdResult {
    let name = format!("{} -> {}", args.src.display(), dst.display());
    let fail = |e: neurochunk_ome::OmeError| Failure(format!("{name}: {e}"));
    // Refuse bad options before the destination is touched.
    let total = pyramid_chunk_count(src, options).map_err(fail)?;
    let (dst_store, staged) = staged_destination(dst, &args.write, args.replace.policy())?;
    let (bar, report) = reporter(total, args.progress, "pyramid");
    let image = build_pyramid(src, dst_store, "", options, &report).map_err(fail)?;
    bar.finish_and_clear();
    publish_and_describe(&image, staged, dst, "levels")
}

/// Publish a staged pyramid (when local) and say what it holds: its layout and the shape of
/// each level. The shapes are read before publishing, from the staging directory.
fn publish_and_describe(
    image: &MultiscaleImage,
    staged: Option<neurochunk_store::staging::StagedDir>,
    dst: &Location,
    levels: &str,
) -> CmdResult {
    let shapes: Vec<String> = (0..image.levels().len())
        .filter_map(|k| image.level_array(k).ok())
        .map(|a| format!("{:?}", a.shape()))
        .collect();
    if let Some(staged) = staged {
        staged
            .publish()
            .map_err(|e| Failure(format!("{}: {e}", dst.display())))?;
    }
    if !progress::quiet() {
        eprintln!(
            "neurochunk: {}: {} with {} {levels}: {}",
            dst.display(),
            image.layout(),
            shapes.len(),
            shapes.join(" ")
        );
    }
    Ok(())
}

/// `convert` of a multiscale image into another layout; `Ok(false)` when the source is not a
/// multiscale image or the target layout is the source's (a plain hierarchy copy keeps it).
/// What `convert` does with a multiscale source going to another layout.
pub(crate) enum MultiscalePlan {
    /// One image, into the `target` layout.
    Image {
        image: Box<MultiscaleImage>,
        layout: Layout,
        target: Layout,
    },
    /// A container of several images (BigDataViewer setups and time points, an OME-Zarr
    /// bioformats2raw group), every image into `target`, as a bioformats2raw container.
    Container {
        kind: ContainerKind,
        images: Vec<MultiscaleImage>,
        target: Layout,
    },
}

/// The multiscale conversion `convert` of the group `src` with these flags makes, or `None`
/// when the source is no multiscale image or stays in its layout (an ordinary copy then).
pub(crate) fn multiscale_plan(
    src: &Location,
    src_store: &Arc<dyn Store>,
    (format, n5_layout): (Option<FormatArg>, Option<N5LayoutArg>),
) -> Result<Option<MultiscalePlan>, Failure> {
    let fail = |e: neurochunk_ome::OmeError| Failure(format!("{}: {e}", src.display()));
    let container = container_images(src_store.as_ref(), "")
        .map_err(fail)?
        .filter(|(kind, images)| *kind == ContainerKind::Bioformats2Raw || images.len() > 1);
    if let Some((kind, paths)) = container {
        let source_format = neurochunk_array::open_node(src_store.as_ref(), "")
            .ok()
            .and_then(|n| match n.metadata {
                neurochunk_array::NodeMetadata::Group(g) => Some(g.format),
                neurochunk_array::NodeMetadata::Array(_) => None,
            });
        let target = match format {
            Some(f) if Some(neurochunk_array::ZarrFormat::from(f)) != source_format => {
                target_layout(f, n5_layout, true)?
            }
            _ => return Ok(None),
        };
        let images = paths
            .iter()
            .map(|path| MultiscaleImage::open(src_store.clone(), path))
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        return Ok(Some(MultiscalePlan::Container {
            kind,
            images,
            target,
        }));
    }
    let Some(layout) = MultiscaleImage::detect(src_store.as_ref(), "") else {
        return Ok(None);
    };
    let image = MultiscaleImage::open(src_store.clone(), "").map_err(fail)?;
    let bdv_fits = image.axes().len() == 3 && image.axes().iter().all(|a| a.is_spatial());
    let target = match format {
        Some(f) => target_layout(f, n5_layout, bdv_fits)?,
        None => match n5_layout {
            Some(n) if layout.format() == neurochunk_array::ZarrFormat::N5 => {
                target_layout(FormatArg::N5, Some(n), bdv_fits)?
            }
            _ => layout,
        },
    };
    Ok((target != layout).then(|| MultiscalePlan::Image {
        image: Box::new(image),
        layout,
        target,
    }))
}

/// Carry out `plan` into `dst_store` (the destination `convert` prepared: staged, resumed or
/// remote), with `shaping`'s chunks, shards, codecs and `resume`.
pub(crate) fn write_multiscale(
    plan: &MultiscalePlan,
    (src, src_store): (&Location, &Arc<dyn Store>),
    dst: &Location,
    dst_store: Arc<dyn Store>,
    shaping: &neurochunk_array::convert::ConvertOptions,
) -> CmdResult {
    let fail = |e: neurochunk_ome::OmeError| {
        Failure(format!("{} -> {}: {e}", src.display(), dst.display()))
    };
    let target = match plan {
        MultiscalePlan::Image { target, .. } | MultiscalePlan::Container { target, .. } => *target,
    };
    let mut options = ConvertImageOptions::new(target);
    options.chunks = shaping.chunks.clone();
    options.shards = shaping.shards.clone();
    options.codecs = shaping.compressors.clone();
    options.resume = shaping.resume;
    let images: Vec<&MultiscaleImage> = match plan {
        MultiscalePlan::Image { image, .. } => vec![image.as_ref()],
        MultiscalePlan::Container { images, .. } => images.iter().collect(),
    };
    let total = images
        .iter()
        .flat_map(|image| (0..image.levels().len()).filter_map(|k| image.level_array(k).ok()))
        .map(|a| neurochunk_array::convert::chunk_count(a.metadata()))
        .sum();
    let (bar, report) = reporter(total, false, "converting");
    match plan {
        MultiscalePlan::Image { image, .. } => {
            convert_image(image, dst_store, "", &options, &report).map_err(fail)?;
        }
        MultiscalePlan::Container { kind, images, .. } => {
            convert_container_images(*kind, "", images, dst_store, "", &options, &report)
                .map_err(fail)?;
        }
    }
    bar.finish_and_clear();
    if progress::quiet() {
        return Ok(());
    }
    match plan {
        MultiscalePlan::Image { image, layout, .. } => {
            eprintln!(
                "neurochunk: note: {}: multiscale image {layout} written as {target}",
                dst.display()
            );
            // Arrays of the source that are neither levels nor label images are not carried.
            let levels: Vec<&str> = image.levels().iter().map(|l| l.path.as_str()).collect();
            let left: Vec<String> = neurochunk_array::list_nodes(src_store.as_ref(), "")
                .unwrap_or_default()
                .into_iter()
                .filter(|n| matches!(n.metadata, neurochunk_array::NodeMetadata::Array(_)))
                .filter(|n| !levels.contains(&n.path.as_str()) && !n.path.starts_with("labels/"))
                .map(|n| format!("/{}", n.path))
                .collect();
            if !left.is_empty() {
                eprintln!(
                    "neurochunk: note: {}: not part of the image, not copied: {}",
                    dst.display(),
                    left.join(", ")
                );
            }
        }
        MultiscalePlan::Container { kind, images, .. } => eprintln!(
            "neurochunk: note: {}: {} images of the {kind} container written as {target} \
             series 0..{} (bioformats2raw layout)",
            dst.display(),
            images.len(),
            images.len().saturating_sub(1)
        ),
    }
    Ok(())
}

#[derive(Subcommand, Debug)]
pub(crate) enum OmeCommand {
    /// Check multiscale images against the NGFF rules of OME-Zarr 0.4 / 0.5 (and the N5
    /// layouts' conventions). Exit status 0 valid, 1 invalid, 2 unreadable.
    #[command(after_help = crate::store_args::URL_FORMS)]
    Validate(ValidateArgs),
    /// Describe a multiscale image: layout, axes, levels with shapes, scales and units.
    #[command(after_help = crate::store_args::URL_FORMS)]
    Info(InfoArgs),
}

#[derive(Args, Debug)]
pub(crate) struct ValidateArgs {
    /// The image groups (directories or URLs).
    #[arg(required = true)]
    paths: Vec<Location>,
    /// Print the problems of all images as one JSON list of {file, severity, path, rule,
    /// message}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    /// The image group: a directory or a URL.
    path: Location,
    /// Print the normalised description as JSON.
    #[arg(long)]
    json: bool,
}

/// Run an `ome` subcommand; the exit status.
pub(crate) fn run(command: OmeCommand) -> u8 {
    match command {
        OmeCommand::Validate(args) => run_validate(args),
        OmeCommand::Info(args) => match info(args) {
            Ok(()) => 0,
            Err(Failure(message)) => {
                eprintln!("neurochunk: error: {message}");
                1
            }
        },
    }
}

fn run_validate(args: ValidateArgs) -> u8 {
    let mut status = 0u8;
    let mut all = Vec::new();
    for path in &args.paths {
        let result = path
            .open_read()
            .map_err(|f| f.0)
            .and_then(|store| validate(store, "").map_err(|e| format!("{}: {e}", path.display())));
        match result {
            Err(message) => {
                eprintln!("neurochunk: error: {message}");
                status = status.max(2);
                if args.json {
                    all.push(json!({"file": path.display(), "severity": "error", "path": "/", "rule": "unreadable", "message": message}));
                }
            }
            Ok(problems) => {
                let errors = problems
                    .iter()
                    .filter(|p| p.severity == Severity::Error)
                    .count();
                if errors > 0 {
                    status = status.max(1);
                }
                if args.json {
                    all.extend(problems.iter().map(|p| {
                        json!({"file": path.display(), "severity": p.severity.name(), "path": p.path, "rule": p.rule, "message": p.message})
                    }));
                    continue;
                }
                let warnings = problems.len() - errors;
                let verdict = if errors == 0 { "valid" } else { "INVALID" };
                outln!(
                    "{}: {verdict} ({errors} error{}, {warnings} warning{})",
                    path.display(),
                    if errors == 1 { "" } else { "s" },
                    if warnings == 1 { "" } else { "s" }
                );
                // Errors first.
                for p in problems
                    .iter()
                    .filter(|p| p.severity == Severity::Error)
                    .chain(problems.iter().filter(|p| p.severity == Severity::Warning))
                {
                    outln!(
                        "  {} [{}] {}: {}",
                        p.severity.name(),
                        p.rule,
                        p.path,
                        p.message
                    );
                }
            }
        }
    }
    if args.json {
        outln!(
            "{}",
            to_python_json(&Value::Array(all), PyJsonStyle::ZARR_PYTHON3)
        );
    }
    status
}

fn info(args: InfoArgs) -> CmdResult {
    let store = args.path.open_read()?;
    let image = MultiscaleImage::open(store, "")
        .map_err(|e| Failure(format!("{}: {e}", args.path.display())))?;
    if args.json {
        outln!(
            "{}",
            to_python_json(&image.to_json(), PyJsonStyle::ZARR_PYTHON3)
        );
        return Ok(());
    }
    outln!("path:        {}", args.path.display());
    print_image(&image, "");
    Ok(())
}

/// The text description of a multiscale image (for `ome info` and `info`).
pub(crate) fn print_image(image: &MultiscaleImage, indent: &str) {
    let version = image
        .version()
        .map(|v| format!(" (version {v})"))
        .unwrap_or_default();
    outln!("{indent}multiscale:  {}{version}", image.layout());
    if let Some(name) = image.name() {
        outln!("{indent}name:        {name}");
    }
    if let Some(method) = image.method() {
        outln!("{indent}method:      {method}");
    }
    let axes: Vec<String> = image
        .axes()
        .iter()
        .map(|a| {
            let details: Vec<&str> = [a.kind.as_deref(), a.unit.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            if details.is_empty() {
                a.name.clone()
            } else {
                format!("{} ({})", a.name, details.join(", "))
            }
        })
        .collect();
    outln!("{indent}axes:        {}", axes.join(", "));
    outln!("{indent}levels:");
    for (k, level) in image.levels().iter().enumerate() {
        let array = image.level_array(k);
        let shape = match &array {
            Ok(a) => format!("{:?} {}", a.shape(), a.metadata().data_type_name()),
            Err(e) => format!("[error: {e}]"),
        };
        let translation = level
            .translation
            .as_ref()
            .map(|t| format!("  translation {t:?}"))
            .unwrap_or_default();
        outln!(
            "{indent}  {k}  {}  {shape}  scale {:?}{translation}",
            level.path,
            level.scale
        );
    }
    if !image.labels().is_empty() {
        outln!("{indent}labels:      {}", image.labels().join(", "));
    }
    if let Some(channels) = image
        .omero()
        .and_then(|o| o.get("channels"))
        .and_then(Value::as_array)
    {
        let labels: Vec<&str> = channels
            .iter()
            .map(|c| c.get("label").and_then(Value::as_str).unwrap_or("?"))
            .collect();
        outln!("{indent}channels:    {}", labels.join(", "));
    }
}

/// One line's summary of the multiscale image at `path` of `store` (a group detected as
/// one), for `tree`.
pub(crate) fn tree_summary(store: &Arc<dyn Store>, path: &str) -> String {
    let image = match MultiscaleImage::open(store.clone(), path) {
        Ok(image) => image,
        Err(e) => return format!("multiscale image [error: {e}]"),
    };
    let axes: Vec<String> = image
        .axes()
        .iter()
        .map(|a| match &a.unit {
            Some(u) => format!("{} {u}", a.name),
            None => a.name.clone(),
        })
        .collect();
    let scales: Vec<String> = image
        .levels()
        .iter()
        .map(|l| format!("{:?}", l.scale))
        .collect();
    format!(
        "multiscale {}: {} levels, axes {}, scales {}",
        image.layout(),
        image.levels().len(),
        axes.join(", "),
        scales.join(" ")
    )
}

/// The normalised description of the multiscale image at `path` (a group detected as one),
/// or the error opening it.
pub(crate) fn multiscale_json(store: &Arc<dyn Store>, path: &str) -> Value {
    match MultiscaleImage::open(store.clone(), path) {
        Ok(image) => image.to_json(),
        Err(e) => json!({"error": e.to_string()}),
    }
}
