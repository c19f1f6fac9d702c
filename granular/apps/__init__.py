"""Applications over the library: the command line, the viewer, figures, benchmarks."""
