"""Renderers of Summary protobufs: Paddle's text tables for the terminal."""
