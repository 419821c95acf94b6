"""The MJCF (and URDF) reader: schema, parsing, includes, default classes, input checks."""
