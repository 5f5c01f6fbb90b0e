"""The book's tables and plots: the published numbers (`published`), what every chapter shares (`common`: its runs,
the selection seed, mean ± sd, claim rows), one module or package per chapter (`houlsby`, `peft`, `dsp`, `across`),
single runs at a glance (`summaries`) and the throughput benchmark (`efficiency`)."""
