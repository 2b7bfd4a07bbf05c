"""The precomputed annotations suite runs in the .peers/py312 environment: Neuroglancer's Python
package (2.41.2: `write_annotations.AnnotationWriter` and `read_precomputed_annotations
.AnnotationReader`, over tensorstore) writes and reads the annotation collections neurochunk
reads and writes."""

import neuroglancer.read_precomputed_annotations  # noqa: F401 - a clear ImportError when missing
