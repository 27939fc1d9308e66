"""What the `optimize` command shows and writes: terminal tables, live progress, the gate's Markdown
summary and JUnit XML, and the HTML report. The library packages (worlds, harnesses, evals,
optimizer) return data and never import this; `cli.py` renders with it.
"""
