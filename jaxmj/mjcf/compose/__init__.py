"""PyMJCF's object model: build, attach, read and write MJCF in Python."""
