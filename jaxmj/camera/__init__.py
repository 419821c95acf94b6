"""A ray-cast camera in pure JAX: images of every world in a batch (jaxmj.camera_image).

frustum: the camera's pose and one ray per pixel; trace: the nearest geom along each ray,
with its surface normal; shade: colours under the model's lights; image: the public entry.
"""
