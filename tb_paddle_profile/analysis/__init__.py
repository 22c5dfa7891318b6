"""Analyses over the event tree: one module per question, each filling its part of the Summary."""
