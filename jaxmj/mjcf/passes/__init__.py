"""Compiler options that rewrite the body tree: fusestatic, discardvisual, alignfree."""
