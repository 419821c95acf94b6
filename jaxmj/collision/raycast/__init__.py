"""Many rays at once (a camera's pixels: jaxmj.camera_image and camera rangefinders): the
nearest hit per ray with its normal (trace.py), per-tile culling of primitives (cull.py) and
mesh clusters (mesh_bvh.py), on collision/ray.py's ray-geom functions."""
