//! Neuroglancer view states and links: the JSON state that opens a set of layers, and the URL
//! that carries it in its fragment (`CLIENT#!STATE`).

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};

use crate::layers::{Layer, LayerKind};

/// What is encoded in the fragment: controls, space and the characters that are not allowed
/// or mean something in a URL fragment.
const FRAGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'|')
    .add(b'\\')
    .add(b'^')
    .add(b'[')
    .add(b']');

/// A Neuroglancer state opening `layers`, whose files are served at `base_url`
/// (`http://HOST:PORT`, no trailing slash). Segmentations list the segment ids the layer knows
/// of, so that their skeletons and meshes are drawn at once; annotation collections are
/// annotation layers.
pub fn neuroglancer_state(layers: &[Layer], base_url: &str) -> Value {
    let base = base_url.trim_end_matches('/');
    let layers: Vec<Value> = layers
        .iter()
        .map(|layer| {
            let url = if layer.path.is_empty() {
                format!("{base}/")
            } else {
                format!("{base}/{}/", layer.path)
            };
            let source = format!("{}://{url}", layer.format.scheme());
            match layer.kind {
                LayerKind::Image => json!({"type": "image", "source": source, "name": layer.name}),
                LayerKind::Segmentation => json!({
                    "type": "segmentation",
                    "source": source,
                    "name": layer.name,
                    "segments": layer.segments.iter().map(u64::to_string).collect::<Vec<_>>(),
                }),
                LayerKind::Annotation => json!({
                    "type": "annotation",
                    "source": source,
                    "name": layer.name,
                }),
            }
        })
        .collect();
    json!({"layers": layers, "layout": "4panel"})
}

/// The URL of `client` (a Neuroglancer deployment, e.g. `https://neuroglancer-demo.appspot.com/`
/// or the one [`Server`](crate::Server) serves) opening `state`.
pub fn neuroglancer_link(client: &str, state: &Value) -> String {
    let encoded = utf8_percent_encode(&state.to_string(), FRAGMENT).to_string();
    format!("{client}#!{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::SourceFormat;

    #[test]
    fn the_link_carries_every_layer_and_decodes_back() {
        let layers = vec![
            Layer {
                name: "em".into(),
                path: "volumes/em".into(),
                format: SourceFormat::Precomputed,
                kind: LayerKind::Image,
                segments: vec![],
            },
            Layer {
                name: "seg".into(),
                path: "seg.ome.zarr".into(),
                format: SourceFormat::Zarr3,
                kind: LayerKind::Segmentation,
                segments: vec![7, 12],
            },
            Layer {
                name: "synapses".into(),
                path: "synapses".into(),
                format: SourceFormat::Precomputed,
                kind: LayerKind::Annotation,
                segments: vec![],
            },
        ];
        let state = neuroglancer_state(&layers, "http://127.0.0.1:9000");
        assert_eq!(
            state["layers"][0]["source"],
            "precomputed://http://127.0.0.1:9000/volumes/em/"
        );
        assert_eq!(
            state["layers"][1]["source"],
            "zarr3://http://127.0.0.1:9000/seg.ome.zarr/"
        );
        assert_eq!(state["layers"][1]["segments"], json!(["7", "12"]));
        assert_eq!(state["layers"][2]["type"], "annotation");
        assert_eq!(
            state["layers"][2]["source"],
            "precomputed://http://127.0.0.1:9000/synapses/"
        );
        let link = neuroglancer_link("http://127.0.0.1:9000/_neuroglancer/", &state);
        let (client, fragment) = link.split_once("#!").unwrap();
        assert_eq!(client, "http://127.0.0.1:9000/_neuroglancer/");
        assert!(!fragment.contains([' ', '"', '{', '#']));
        let decoded = percent_encoding::percent_decode_str(fragment)
            .decode_utf8()
            .unwrap();
        assert_eq!(serde_json::from_str::<Value>(&decoded).unwrap(), state);
    }
}
