"""The Efficiency chapter: our training paths against the stock recipes, from the committed benchmarks (no claims:
measurements, each with the machine it ran on)."""
