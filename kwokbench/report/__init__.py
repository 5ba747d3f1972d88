"""Rendering of stored runs: terminal tables, charts, HTML and Markdown."""
