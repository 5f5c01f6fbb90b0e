"""The book's tables and plots: the published numbers (`published`), helpers every chapter uses (`common`),
one module per chapter (`houlsby`, `peft`, `dsp`, `across`), single runs at a glance (`summaries`) and the
throughput benchmark (`efficiency`)."""
